//! Judging a keyword rule's match (`DB_PASSWORD = "…"`, `token: …`, `Bearer …`): it
//! splits the match into the identifier and the assigned value, turns down what the
//! text around the value says is code (paths like `token::Brace`, argument lists,
//! union types, optional chaining, a qualifier such as `page_token`), and hands the
//! value to `secret_value::looks_secret`, after the inert shapes of `secret_inert`
//! and the sample phrases of `secret_placeholder`. It never widens a span and never
//! fails: any match gives a yes or a no.

use super::allowlist;
use super::bytes::{ceil_boundary, find, floor_boundary};
use super::secret_binary::is_structured_binary;
use super::secret_code::{
    is_camel_words, is_fallback_chain, is_member_expression, is_same_name_binding, is_type_name,
};
use super::secret_composed::{is_identifier_words, is_repeated_half, is_worded_password};
use super::secret_context::{
    in_acme_challenge, is_keyword_argument, is_push_subscription_auth, is_type_expression,
};
use super::secret_fixture::{
    is_cache_key_digest, is_cut_signing_scope, is_query_path, is_shape_id,
};
use super::secret_inert::{
    is_malformed_jwt, is_sigv4_scope, is_text_base32, is_unsigned_jwt, is_worded_base32,
};
use super::secret_locator::{
    is_defaulted_binding, is_entry_point, is_host_setting, is_named_type, is_shell_pwd,
    is_worded_counter, is_xpath,
};
use super::secret_made_up::{
    is_accented_sample, is_claims_only_jwt, is_constant_reference, is_two_words,
};
use super::secret_marker::{
    holds_respelled_credential, is_camel_sentence, is_dotted_path, is_file_name,
    is_module_constant, is_prefix_list, is_sequence_sample, is_short_byte_list, says_wrong, words,
};
use super::secret_named::{
    in_urn, is_counting_sample, is_derived_name, is_error_code, is_urn, names_public_value,
};
use super::secret_placeholder::is_sample_phrase;
use super::secret_protocol::{auth_in_protocol_word, is_timestamp};
use super::secret_reference::{is_elided, is_format_template, is_path_template};
use super::secret_sample::{
    closes_message_literal, in_known_answer_vector, is_disowned, is_name_list, is_possessive_name,
    of_fake_account,
};
use super::secret_script::{
    ends_with_name, is_other_script_text, is_setting_with_query, spells_name,
};
use super::secret_shape::is_hex_digest;
use super::secret_value::{looks_secret, qualifier_says_not_secret};
use super::secret_words::is_code_like;

/// Split a keyword match (`DB_PASSWORD = "…"`, `token: …`, `Bearer …`) into its
/// identifier and value, and judge the value.
pub(super) fn keyword_secret(text: &str, start: usize, end: usize) -> bool {
    let Some(m) = text.get(start..end) else {
        // A match ending inside a UTF-8 character: the value holds non-ASCII text;
        // judge what is there rather than guess.
        return keyword_secret_lossy(text, start, end);
    };
    let b = m.as_bytes();
    let mut i = 0;
    while i < b.len() && (b[i].is_ascii_alphanumeric() || matches!(b[i], b'_' | b'.' | b'-')) {
        i += 1;
    }
    let ident = &m[..i];
    // `NextContinuationToken`, `page_token`: the word before the keyword says what
    // kind of token it is.
    if qualifier_says_not_secret(&text[..start]) {
        return false;
    }
    let mut name_quoted = false;
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\'' | b'"') {
        name_quoted |= b[i] != b' ' && b[i] != b'\t';
        i += 1;
    }
    // `token::Brace`, `crate::token::Custom`: a path, not an assignment.
    if m[i..].starts_with("::") {
        return false;
    }
    let mut comma = false;
    for op in [":=", "=>", "?=", "=", ":", ","] {
        if m[i..].starts_with(op) {
            i += op.len();
            comma = op == ",";
            break;
        }
    }
    let mut quoted = false;
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\'' | b'"' | b'`') {
        // `token = "".join(…)`: an empty string whose method is called, code that
        // builds the value; `password=""}` or `secret = "";`, an empty
        // string and more code. Not a triple-quoted string's opening, and not a
        // value that merely starts with the quote character: a random password does
        // so and then reads `.name(` about 10^-6 of the time.
        if quoted
            && b[i] == b[i - 1]
            && matches!(b[i], b'\'' | b'"' | b'`')
            && b.get(i + 1) != Some(&b[i])
            && (i < 2 || b[i - 2] != b[i])
            && text
                .get(start + i + 1..)
                .is_some_and(|rest| is_method_call(rest) || ends_expression(rest))
        {
            return false;
        }
        quoted |= b[i] != b' ' && b[i] != b'\t';
        i += 1;
    }
    // `("TOKEN", "value")` pairs a name with a literal; `parser, token, func=…` is an
    // argument list, and `[Events.AcquireToken, "label"]` an enum member with a label.
    if comma && !(quoted && name_quoted) {
        return false;
    }
    // The quote that opened the value, when one did.
    let opener = if quoted { b[i - 1] } else { 0 };
    let mut value = &m[i..];
    // The quoted value ran to its closing quote, uncut (malformed JWTs,
    // `secret_inert::is_malformed_jwt`, are judged only so).
    let closed = quoted && value.ends_with(['\'', '"', '`']) && !value.contains('\\');
    // `None\r\nAccess-…` in a literal: the escape ends the value here (the decoded
    // reading of the text judges what follows it on its own line).
    if let Some(at) = find(value.as_bytes(), b"\\") {
        value = &value[..at];
    }
    let value = value.trim_end_matches(['\'', '"', '`']);
    // `access_token=abc&expires_in=…`: in a query string, `&` ends the value.
    let value = if quoted {
        value
    } else {
        value.split('&').next().unwrap_or(value)
    };
    let next = text[end..].chars().next();
    // `cred: CcsCredential | undefined`, `private_key: Ed25519PrivateKey | Ed448PrivateKey`:
    // a union type (TypeScript, Python), not a value.
    if !quoted {
        let after = text[end..].trim_start_matches([' ', '\t']);
        let after = after.strip_prefix('|').unwrap_or("").trim_start();
        // A name made of words with a number or two in it (`Ed25519PrivateKey`), not
        // any capitalised run: a random token before a table cell's `|`
        // (`Bearer Zk5Hc9Jd0…\t|A`) scatters its digits and spells no words.
        let type_name = value.starts_with(|c: char| c.is_ascii_uppercase())
            && value.bytes().all(|b| b.is_ascii_alphanumeric())
            && value
                .split(|c: char| !c.is_ascii_digit())
                .filter(|run| !run.is_empty())
                .count()
                <= 2
            && is_code_like(&value.replace(|c: char| c.is_ascii_digit(), ""));
        // Python's `X | None` too (`_passphrase_helper: _PassphraseHelper | None`).
        if after.starts_with("undefined")
            || after.starts_with("null")
            || after.starts_with("None")
            || (type_name && after.starts_with(|c: char| c.is_ascii_uppercase()))
        {
            return false;
        }
    }
    // `x = options.x`, `exports.X = X`, `credentials:this.opts.withCredentials?`,
    // `authn: MFAVerifyWebauthnParams`: a name, a receiver's member or a type, code
    // rather than a literal (`secret_code`).
    // `Curve25519SeedBin`, `passphrase: _PassphraseArg`: a name in camel humps of
    // words, or of the assigned name.
    let assigned = assigned_name(text, start, ident);
    let allow = allowlist::get();
    // `("password", '5f4dcc3b…')`: a test vector pairing a plaintext, one
    // lower-case word, with its hex digest. A setting's name in a pair (`"DB_PASSWORD"`,
    // `"db_password"`) is no plaintext, and its hex value is still judged.
    if comma
        && assigned.len() == ident.len()
        && ident.bytes().all(|b| b.is_ascii_lowercase())
        && is_hex_digest(value)
    {
        return false;
    }
    // (`secret_named`) `JWE_Authentication_Tag_5_1_4 = "…"` (an AEAD tag,
    // public) and `auth_failed: "KDC_ERR_…"` (an outcome) by the name's last word;
    // `token: AADSTS50076: Due to …` (an error code heading a message);
    // `urn:ietf:params:oauth:jwk-thumbprint:` (a URN's segments);
    // `BackchannelAuthenticationRequest: BackchannelAuthenticationRequestTTL` (a name
    // derived from the setting's); `"glpat-abc123"` (a prefix and a counting sample).
    if names_public_value(&assigned)
        || is_error_code(value, &text[end..])
        || in_urn(text, start)
        || (!quoted && is_derived_name(&assigned, value))
        || is_counting_sample(value)
    {
        return false;
    }
    if !quoted
        && (is_same_name_binding(&assigned, value)
            || is_fallback_chain(&assigned, value)
            || is_member_expression(value)
            || is_type_name(value)
            || is_constant_reference(value)
            || is_camel_words(value, &assigned))
    {
        return false;
    }
    // `token = "eyJ….e30."` (no signature), `Credential=AKID/…/aws4_request` (a SigV4
    // scope): nothing there authenticates anyone (`secret_inert`); `'p@ss;word=42'`:
    // sample words and numbers joined by punctuation (`secret_placeholder`);
    // `"ya29.c.b0Aaekm…..."` (cut short) and `"admin/realms/{realm-name}/credentials"`
    // (a route template) stand for no value in the text (`secret_reference`).
    // `"eyJ….eyJ…\` (claims only, the signature on another line) and `'café-pässwörd'`
    // (an accented sample word) and `'totallybogus'` (two words run together) are
    // `secret_made_up`'s; `"dpapi_machinekey:0x{0}\n…"` (a format string's fields) is
    // `secret_reference`'s and `JBSWY3DPEHPK3PXP` (base32 of a word, a documented TOTP
    // key) `secret_inert`'s.
    if is_unsigned_jwt(value)
        || is_claims_only_jwt(value)
        || is_accented_sample(value)
        || is_two_words(value)
        || is_sigv4_scope(value)
        || is_sample_phrase(value)
        || is_elided(value)
        || is_path_template(value)
        || cut_at_field(text, end).is_some_and(|f| is_format_template(&format!("{value}{f}")))
        || is_worded_base32(value)
    {
        return false;
    }
    // (`secret_composed`, `secret_inert`, `secret_named`) values a person
    // composed. `".flows_vault_connectio_setup_oauth_jwt"` (identifier words),
    // `"SecurePass123!"` (capitalised words, digits, a symbol), `"wrn3pqx5…wrn3pqx5…"`
    // (one part written twice), `GEZDGNBVGY3TQOJQ…` (base32 of text, "1234567890…"),
    // `"urn:oasis:names:tc:SAML:2.0:ac:classes:Password"` (a URN), and a JWT-shaped
    // value that is no JWT (`"eyJ….dGVzdA.…"`: a JOSE library's rejection test).
    if is_identifier_words(value)
        || is_worded_password(value)
        || is_repeated_half(value)
        || is_text_base32(value)
        || is_urn(value)
        || is_malformed_jwt(value, closed)
    {
        return false;
    }
    // (`secret_script`) `passphrase-prompt = 密码短语` (text in a script other
    // than Latin, a translation catalog's) and `PwdOtpPhoneFl = "PWD_OTP_PHONE_FL"` (an
    // enum member whose value spells its name).
    if is_other_script_text(value) || spells_name(&assigned, value) {
        return false;
    }
    // (`secret_binary`, `secret_protocol`) base64 that decodes to structured
    // binary (`"SZYN5Yg…l2MBAAAABQ"`, WebAuthn authenticator data ending in a zero-run
    // counter; a COSE key; a certificate's DER), the keyword `auth` inside a protocol's
    // word with a value that reads as code (`"webauthn": "flask_security.…"`,
    // `oauth2_provider:cimd:…`, `authn: WebAuthnMixin`), a timestamp
    // (`authenticated_at: "2019-03-11T11:25:22Z"`) and an enum member whose value is its
    // qualified name (`AUTH_SIGNED = "TPM_ST_AUTH_SIGNED"`) or a setting's name with a
    // query (`token: SECURITY_LOGIN_ERROR_VIEW?error=`, `secret_script`).
    if is_structured_binary(value)
        || auth_in_protocol_word(text, start, ident, value)
        || is_timestamp(value)
        || ends_with_name(&assigned, value)
        || is_setting_with_query(value)
    {
        return false;
    }
    // (`secret_context`) a type in a string (`input_tokens: "Optional[int]"`,
    // Python's forward references), an ACME challenge's public `token`, a Web Push
    // subscription's `auth` beside its `p256dh`, and a keyword argument's name
    // (`authenticate": description="…"`).
    if is_type_expression(value)
        || in_acme_challenge(text, start, &assigned, value)
        || is_push_subscription_auth(text, start, &assigned, value)
        || (!quoted && is_keyword_argument(value, next))
    {
        return false;
    }
    // (`secret_sample`) a token in a known-answer test vector (`"key"` before
    // it, `"payload"` after it), a value that says it does not work (`revoked…`,
    // `invalid…`), credentials beside an account named as made up (`username="fakebot3"`),
    // `yourPassphrase`, a message string's keyword followed by concatenation
    // (`"wrong hex password: "+h.hex}`), and a pair of lower camel-case names.
    if in_known_answer_vector(text, start, &assigned)
        || is_disowned(value)
        || of_fake_account(text, start, end)
        || is_possessive_name(value, &assigned)
        || closes_message_literal(text, start, value, opener)
        || (comma && is_name_list(value, &assigned))
    {
        return false;
    }
    // (`secret_marker`; markers: `allowlist.toml`) a kind's short marker
    // (`JWT_CATEGORY_SESSION_TOKEN = "cl_B7d4PD111AAA"`), a list of token prefixes (`"org_a_oauth_access_",
    // "org_a_api_key_"`), a respelled credential word (`MySekretPa$$word`), a sentence
    // in camel humps
    // (`iWishIWereCoolEnoughForRoot!`), keyboard runs (`AbcDef123!@#`), a file's name
    // (`'Ansible.Become.cs'`), a class constant behind its module
    // (`hmacmd5.HmacMd5.SERVICE_ID`), a list of fewer than eight bytes, camel words
    // saying the value is wrong (`ObviouslyWrong`) and a quoted dotted path of names.
    if allow.is_marker(&words(&assigned), value)
        || (comma && is_prefix_list(&assigned, value))
        || holds_respelled_credential(value)
        || is_camel_sentence(value)
        || is_sequence_sample(value)
        || is_file_name(value)
        || (!quoted && is_module_constant(value))
        || is_short_byte_list(value)
        || says_wrong(value)
        || (quoted && is_dotted_path(value))
    {
        return false;
    }
    // (`secret_locator`) a Python entry point (`password =
    // keystoneauth1.extras._saml2._loading:Saml2Password`), words and a counting run
    // (`"hf_oauth_123"`), a host name under a host's name (`AUTH_HOST =
    // "mtls.auth.openai.com"`), the shell's `$PWD`, a type named after the credential
    // word (`auth: BedrockAwsAuth`), an XPath query (`'/String/Key[text()="'`) and a
    // minified setting falling back to `null`.
    if is_entry_point(value)
        || is_worded_counter(value)
        || is_host_setting(&assigned, value)
        || is_shell_pwd(text, start, ident)
        || is_named_type(&assigned, value)
        || is_xpath(value)
        || (!quoted && is_defaulted_binding(&assigned, value))
    {
        return false;
    }
    // (`secret_fixture`) an SDK's tests and service models. A hex digest keying
    // a cache (`token_cache_key = 'f395…'`), a SigV4 scope cut where its literal ends
    // (`X-Amz-Credential=akid%2F20161107%2F`), a Smithy shape id (`"smithy.api#noAuth"`), an AWS
    // resource name (`arn:aws:secretsmanager:…:secret:snowflake-XHb67j`, rows of
    // `allowlist.toml`) and a
    // paginator's JMESPath query (`"output_token": "Jobs[-1].JobId"`).
    if is_cache_key_digest(&assigned, value)
        || is_cut_signing_scope(value)
        || is_shape_id(value)
        || allow.allows_value(value)
        || allow.allows_token(text, start)
        || is_query_path(value)
    {
        return false;
    }
    looks_secret(ident, value, quoted, next)
}

/// The whole identifier the keyword's match starts inside (`gcsUseDownscopedCredential`
/// for a match at `Credential`; `isWebAuthnError` for `exports.isWebAuthnError`): the
/// identifier characters before `start`, then `ident`, from its last `.` on.
fn assigned_name(text: &str, start: usize, ident: &str) -> String {
    let before = &text.as_bytes()[..start];
    let from = before
        .iter()
        .rposition(|&b| !(b.is_ascii_alphanumeric() || b == b'_' || b == b'$'))
        .map_or(0, |i| i + 1);
    let whole = format!("{}{ident}", &text[from..start]);
    match whole.rfind('.') {
        Some(dot) => whole[dot + 1..].to_string(),
        None => whole,
    }
}

/// The replacement field (`{0}`, `{}`, `{name}`, at most 24 characters inside) that
/// opens the text after a match cut at its `{`, as an unquoted value is cut: the value
/// goes on as a format string's literal (`"dpapi_machinekey:0x{0}` with the escape
/// decoded).
fn cut_at_field(text: &str, end: usize) -> Option<&str> {
    let rest = text.get(end..)?;
    let close = rest.strip_prefix('{')?.find('}')?;
    (close <= 24).then(|| &rest[..close + 2])
}

/// Whether `rest`, after an empty string literal, ends the expression (`password=""}`,
/// `secret = "";`, `("token", "")`): the value is the empty string, and what follows
/// is more code, not the value (`password=""}if(wordlist==null){…` in a
/// minified bundle).
fn ends_expression(rest: &str) -> bool {
    rest.starts_with(['}', ')', ']', ';', ','])
}

/// Whether `rest` opens with a method call: `.`, an identifier, `(` (`.join(`).
fn is_method_call(rest: &str) -> bool {
    let Some(after_dot) = rest.strip_prefix('.') else {
        return false;
    };
    let name = after_dot
        .bytes()
        .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_')
        .count();
    name >= 1
        && after_dot.as_bytes()[0].is_ascii_alphabetic()
        && after_dot.as_bytes().get(name) == Some(&b'(')
}

fn keyword_secret_lossy(text: &str, start: usize, end: usize) -> bool {
    let s = floor_boundary(text, start);
    let e = ceil_boundary(text, end);
    text.get(s..e)
        .is_some_and(|m| keyword_secret(m, 0, m.len()))
}
