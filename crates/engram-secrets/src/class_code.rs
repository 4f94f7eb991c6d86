//! Value class "identifier or code": the value is a name, a type, a path, an
//! expression or words, not a literal secret (`token = options.token`,
//! `passphrase: _PassphraseArg`, `password = keystoneauth1.loading:Saml2Password`).
//! Each shape is judged by the module that owns it (`secret_code`, `secret_named`,
//! `secret_composed`, `secret_script`, `secret_protocol`, `secret_context`,
//! `secret_sample`, `secret_marker`, `secret_locator`, `secret_fixture`); this file
//! only says which of them make this class. It only turns values down.

use super::secret_code::{
    is_camel_words, is_fallback_chain, is_member_expression, is_same_name_binding, is_type_name,
};
use super::secret_composed::is_identifier_words;
use super::secret_context::{is_keyword_argument, is_type_expression};
use super::secret_fixture::{is_query_path, is_shape_id};
use super::secret_locator::{is_defaulted_binding, is_entry_point, is_named_type, is_xpath};
use super::secret_made_up::is_constant_reference;
use super::secret_marker::{is_dotted_path, is_file_name, is_module_constant, is_prefix_list};
use super::secret_named::{is_derived_name, is_error_code};
use super::secret_protocol::auth_in_protocol_word;
use super::secret_sample::{closes_message_literal, is_name_list};
use super::secret_script::{
    ends_with_name, is_other_script_text, is_setting_with_query, spells_name,
};
use super::value_class::Assignment;

/// Whether `a`'s value is code: a binding, a member, a type, a constant, a path, an
/// entry point, a query, a message string, a name derived from the assigned one, or
/// words (identifier words, text in another script).
pub(super) fn is_code(a: &Assignment<'_>) -> bool {
    let (v, name) = (a.value, a.assigned.as_str());
    // Unquoted, a name or an expression is code; quoted, it is a string's text.
    let unquoted_code = !a.quoted
        && (is_derived_name(name, v)
            || is_same_name_binding(name, v)
            || is_fallback_chain(name, v)
            || is_member_expression(v)
            || is_type_name(v)
            || is_constant_reference(v)
            || is_camel_words(v, name)
            || is_keyword_argument(v, a.next)
            || is_module_constant(v)
            || is_defaulted_binding(name, v));
    unquoted_code
        || (a.quoted && is_dotted_path(v))
        || (a.comma && (is_name_list(v, name) || is_prefix_list(name, v)))
        || is_error_code(v, &a.text[a.end..])
        || is_identifier_words(v)
        || is_other_script_text(v)
        || spells_name(name, v)
        || auth_in_protocol_word(a.text, a.start, a.ident, v)
        || ends_with_name(name, v)
        || is_setting_with_query(v)
        || is_type_expression(v)
        || closes_message_literal(a.text, a.start, v, a.opener)
        || is_file_name(v)
        || is_entry_point(v)
        || is_named_type(name, v)
        || is_xpath(v)
        || is_shape_id(v)
        || is_query_path(v)
}

#[cfg(test)]
mod tests {
    use crate::value_class::test_support::classify_text;
    use crate::value_class::ValueClass;

    #[test]
    fn names_types_paths_and_expressions_are_code() {
        for (text, keyword) in [
            ("token = options.token", "token"),
            ("auth: BedrockAwsAuth", "auth"),
            ("passphrase: _PassphraseArg", "passphrase"),
            (
                "password = keystoneauth1.extras._saml2._loading:Saml2Password",
                "password",
            ),
            ("\"auth_type\": \"smithy.api#httpBearerAuth\"", "auth"),
            ("\"output_token\": \"Jobs[-1].JobId\"", "token"),
            ("PwdOtpPhoneFl = \"PWD_OTP_PHONE_FL\"", "Pwd"),
        ] {
            assert_eq!(classify_text(text, keyword), ValueClass::Code, "{text}");
        }
        // A random value in the same places is not code.
        assert_ne!(
            classify_text("token = 'Zk5Hc9Jd0Pa6Sg2Ue4Ti8Ox1Qb3Vc7Nm'", "token"),
            ValueClass::Code
        );
    }
}
