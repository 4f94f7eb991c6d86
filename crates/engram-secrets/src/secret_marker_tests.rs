//! Tests of the judgements made for held-out-18's classes (`secret_marker`): a token
//! kind's marker, a list of token prefixes (a mock object's random values still caught), sample passwords
//! (a respelled credential word, a sentence in camel humps, keyboard runs), a file's
//! name, a class constant behind its module, a list of a few bytes and a keyword token
//! cut from a type's name. Each false positive is shown not firing, a real secret of
//! the same shape firing, and the last test counts how often random values take the
//! new shapes.

use super::allowlist;
use super::redact::Redactor;
use super::secret_marker::{
    holds_respelled_credential, is_camel_sentence, is_dotted_path, is_file_name,
    is_keyword_type_name, is_module_constant, is_prefix_list, is_sequence_sample,
    is_short_byte_list, says_wrong, without_trailing_escape, words,
};
use super::test_random::{random, xorshift, B64URL, BASE62, LOWER, PASSWORD};

/// Whether the redactor leaves `text` as it is.
fn kept(r: &Redactor, text: &str) -> bool {
    r.redact(text).unwrap().text == text
}

/// Whether the redactor removes `secret` from `text`.
fn caught(r: &Redactor, text: &str, secret: &str) -> bool {
    !r.redact(text).unwrap().text.contains(secret)
}

#[test]
fn a_token_kinds_marker_and_prefix_lists_are_public() {
    let r = Redactor::builtin().unwrap();
    for text in [
        "export declare const JWT_CATEGORY_SESSION_TOKEN = \"cl_B7d4PD111AAA\";\nexport declare const JWT_CATEGORY_M2M_TOKEN = \"cl_B7d4PD333AAA\";\n",
        "{\"sourcesContent\":[\"// see jwt.go).\\nexport const JWT_CATEGORY_SESSION_TOKEN = 'cl_B7d4PD111AAA';\\n\"]}\n",
        " * (e.g. \"org_a_m2m_\", \"org_a_oauth_access_\", \"org_a_api_key_\")\n",
        "{\"sourcesContent\":[\" * (e.g. \\\"org_a_m2m_\\\", \\\"org_a_oauth_access_\\\", \\\"org_a_api_key_\\\")\\n\"]}\n",
    ] {
        assert!(kept(r, text), "{text}");
    }
    let marker = |name: &str, value: &str| allowlist::get().is_marker(&words(name), value);
    assert!(marker("JWT_CATEGORY_SESSION_TOKEN", "cl_B7d4PD111AAA"));
    assert!(marker("tokenKind", "cl_B7d4PD111AAA"));
    assert!(!marker("SESSION_TOKEN", "cl_B7d4PD111AAA"));
    assert!(is_prefix_list("org_a_oauth_access_", "org_a_api_key_"));
    assert!(!is_prefix_list("org_a_oauth_access_", "org_a_api_key"));
    let mut next = xorshift(0x243F_6A88_85A3_08D3);
    for _ in 0..20 {
        // An issued token under a kind's name is longer than a marker: caught.
        let token = format!("cl_{}", random(&mut next, BASE62, 37));
        let text = format!("export const JWT_CATEGORY_SESSION_TOKEN = \"{token}\";\n");
        assert!(caught(r, &text, &token), "{text}");
        // A short token under a token's own name is caught too.
        let short = random(&mut next, BASE62, 16);
        let text = format!("export const SESSION_TOKEN = \"{short}\";\n");
        assert!(caught(r, &text, &short), "{text}");
        // A prefix's name paired with a token (no trailing separator) is caught.
        let body = random(&mut next, BASE62, 32);
        let pair = format!("(\"org_a_api_key_\", \"{body}\")\n");
        assert!(caught(r, &pair, &body), "{pair}");
    }
}

#[test]
fn a_mock_objects_random_values_are_still_caught() {
    // A random value of 32 characters or more after a credential keyword is caught
    // whatever its object is named: a mocked response may hold a real one.
    let r = Redactor::builtin().unwrap();
    let key = "ak_LCWGdaM8mv8K4PC/57IICZQXAeWfCgF30DZaFXHoGn9=";
    let text =
        format!("export declare const mockTokens: {{\n    readonly api_key: \"{key}\";\n}};\n");
    assert!(caught(r, &text, key), "{text}");
    let pw = "?@09AZSen9TzUwK7ZhafS7B0GuWGraQjfWEna5SwnmF/tVaKFqjXhhGV/Z0v/pBJ";
    let text = format!(
        "        mock_response = {{\n            \"last_password\": \"{pw}\",\n        }}\n"
    );
    assert!(caught(r, &text, pw), "{text}");
}

#[test]
fn sample_passwords_say_what_they_are() {
    let r = Redactor::builtin().unwrap();
    for text in [
        "    responses:\n      (?i)password: \"MySekretPa$$word\"\n",
        "      set_fact:\n        password: 'iWishIWereCoolEnoughForRoot!'\n",
        "    win_user:\n      name: S-1-0-0\n      password: AbcDef123!@#\n",
    ] {
        assert!(kept(r, text), "{text}");
    }
    assert!(holds_respelled_credential("MySekretPa$$word"));
    assert!(holds_respelled_credential("s3cret-for-tests"));
    assert!(!holds_respelled_credential("mypasswordXk9Lm2"));
    assert!(is_camel_sentence("iWishIWereCoolEnoughForRoot!"));
    assert!(is_camel_sentence("ThisIsMyPassword1"));
    assert!(!is_camel_sentence("iWishXkqzvWereCool!"));
    assert!(is_sequence_sample("AbcDef123!@#"));
    assert!(is_sequence_sample("xyz789"));
    assert!(!is_sequence_sample("AbcDef12!@#"));
    assert!(!is_sequence_sample("Abc"));
    let mut next = xorshift(0xA409_3822_299F_31D0);
    for _ in 0..20 {
        // Random passwords in the same places are caught.
        let pw = random(&mut next, PASSWORD, 16);
        for text in [
            format!("    responses:\n      (?i)password: \"{pw}\"\n"),
            format!("      set_fact:\n        password: '{pw}'\n"),
            format!("    win_user:\n      password: {pw}\n"),
        ] {
            assert!(caught(r, &text, &pw), "{text}");
        }
        // A random password after a keyboard run or a plain credential word is caught.
        let run = format!("Abc123{}", random(&mut next, BASE62, 12));
        let text = format!("password: \"{run}\"\n");
        assert!(caught(r, &text, &run), "{text}");
        let worded = format!("password{}", random(&mut next, BASE62, 14));
        let text = format!("secret: \"{worded}\"\n");
        assert!(caught(r, &text, &worded), "{text}");
    }
}

#[test]
fn file_names_constants_byte_lists_and_type_names_are_no_values() {
    let r = Redactor::builtin().unwrap();
    for text in [
        "Import-CSharpUtil -Name 'Ansible.AccessToken.cs', 'Ansible.Become.cs', 'Ansible.Process.cs'\n",
        "USM_AUTH_HMAC96_MD5 = hmacmd5.HmacMd5.SERVICE_ID\nUSM_AUTH_HMAC128_SHA224 = hmacsha2.HmacSha2.SHA224_SERVICE_ID\n",
        "        let encoded_signing_key_too_long = \"[62,70,27,163]\";\n",
        "            confluence_options=_from_dict(d, \"confluence_options\", ConfluenceConnectorOptions),\n",
    ] {
        assert!(kept(r, text), "{text}");
    }
    assert!(is_file_name("Ansible.Become.cs"));
    assert!(is_file_name("access_token.json"));
    assert!(!is_file_name("Xk9Lm2Qp.cs"));
    assert!(!is_file_name("eyJhbGciOi.eyJzdWIi.json"));
    assert!(is_module_constant("hmacmd5.HmacMd5.SERVICE_ID"));
    assert!(!is_module_constant("hmacmd5.HmacMd5.ID"));
    assert!(!is_module_constant("Xk9.Lm2.QPZ_7"));
    assert!(is_short_byte_list("[62,70,27,163]"));
    assert!(!is_short_byte_list("[62,70,27,163,92,182,11,3]"));
    assert!(!is_short_byte_list("[62,70,27,263]"));
    assert!(is_keyword_type_name(
        b"confluence_options\", ConfluenceConnectorOptions"
    ));
    assert!(!is_keyword_type_name(
        b"confluence_token = Xk2Lm4Nn7Rt1Yw3Zk5Hc9Jd0"
    ));
    let mut next = xorshift(0x082E_FA98_EC4E_6C89);
    for _ in 0..20 {
        // A key's 32 bytes as a list are caught.
        let bytes: Vec<String> = (0..32).map(|_| (next() % 256).to_string()).collect();
        let list = format!("[{}]", bytes.join(","));
        let text = format!("let encoded_signing_key = \"{list}\";\n");
        assert!(caught(r, &text, &list), "{text}");
        // An Atlassian token after its keyword is caught.
        let token = random(&mut next, BASE62, 24);
        let text = format!("confluence_token = '{token}'\n");
        assert!(caught(r, &text, &token), "{text}");
        // A secret paired with a file's name, and an unquoted random value, are caught.
        let secret = random(&mut next, BASE62, 24);
        let pair = format!("('Ansible.AccessToken.cs', '{secret}')\n");
        assert!(caught(r, &pair, &secret), "{pair}");
        let text = format!("AUTH_KEY = {secret}\n");
        assert!(caught(r, &text, &secret), "{text}");
    }
}

#[test]
fn wrong_passwords_escapes_runs_and_dotted_paths_are_samples() {
    let r = Redactor::builtin().unwrap();
    for text in [
        "    let conn_str =\n        \"server=tcp:localhost,1433;user=SA;password=ObviouslyWrong;TrustServerCertificate=true\";\n",
        "    slog.write(\"password=plaintext\\n\")\n",
        "        self.assertIn(\"password=123456\", body)\n",
        "  <div data-webauthn-auth-onload=\"allauth.webauthn.forms.signupForm\"></div>\n",
    ] {
        assert!(kept(r, text), "{text}");
    }
    assert!(says_wrong("ObviouslyWrong"));
    assert!(says_wrong("badPassword"));
    assert!(!says_wrong("WrongXkqzvb"));
    assert!(!says_wrong("Wrong"));
    assert!(is_dotted_path("allauth.webauthn.forms.signupForm"));
    assert!(!is_dotted_path("allauth.forms"));
    assert!(!is_dotted_path("aXkq.zvbT.qwpl"));
    assert_eq!(without_trailing_escape("plaintext\\n"), "plaintext");
    assert_eq!(without_trailing_escape("plain\\ntext"), "plain\\ntext");
    let mut next = xorshift(0xBE54_66CF_34E9_0C6C);
    for _ in 0..20 {
        // Random passwords in the same frames are caught, escape or not.
        let pw = random(&mut next, BASE62, 16);
        for text in [
            format!(
                "    let conn_str = \"server=tcp:localhost;user=SA;password={pw};Trust=true\";\n"
            ),
            format!("    slog.write(\"password={pw}\\n\")\n"),
            format!("        self.assertIn(\"password={pw}\", body)\n"),
            format!("  <div data-auth=\"{pw}\"></div>\n"),
        ] {
            assert!(caught(r, &text, &pw), "{text}");
        }
        // A random password after a wrong word, or a counting run, is caught.
        let tail = random(&mut next, BASE62, 14);
        for text in [
            format!("password=Wrong{tail};\n"),
            format!("password=\"123{tail}\"\n"),
        ] {
            assert!(caught(r, &text, &tail), "{text}");
        }
    }
}

#[test]
fn random_values_rarely_take_these_shapes() {
    let mut next = xorshift(0x4528_21E6_38D0_1377);
    let (mut respelled, mut sentence, mut sequence, mut file, mut constant, mut typed) =
        (0, 0, 0, 0, 0, 0);
    let (mut prefixes, mut wrong, mut dotted_paths) = (0, 0, 0);
    for _ in 0..200_000 {
        let pw = random(&mut next, PASSWORD, 16);
        respelled += usize::from(holds_respelled_credential(&pw));
        sequence += usize::from(is_sequence_sample(&random(&mut next, PASSWORD, 8)));
        // Letters only, camel humps as often as chance gives them.
        let letters = random(&mut next, &BASE62[..52], 18);
        sentence += usize::from(is_camel_sentence(&letters));
        wrong += usize::from(says_wrong(&letters));
        wrong += usize::from(says_wrong(&format!("Wrong{}", &letters[..10])));
        typed += usize::from(is_keyword_type_name(
            format!("confluence_token = {}", &random(&mut next, BASE62, 24)).as_bytes(),
        ));
        // Dotted values: letters, digits and dots.
        let mut dotted = random(
            &mut next,
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._",
            20,
        );
        file += usize::from(is_file_name(&dotted));
        dotted.push_str(".cs");
        file += usize::from(is_file_name(&dotted));
        constant += usize::from(is_module_constant(&dotted));
        let path = random(&mut next, b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJ..", 24);
        dotted_paths += usize::from(is_dotted_path(&path));
        // Token bodies that end in `_` (base64url), and lower-case ones.
        let body = format!("{}_", random(&mut next, B64URL, 31));
        prefixes += usize::from(is_prefix_list("org_a_api_key_", &body));
        let lower = format!("{}_", random(&mut next, LOWER, 31));
        prefixes += usize::from(is_prefix_list("org_a_api_key_", &lower));
    }
    assert_eq!(respelled, 0);
    assert_eq!(sentence, 0);
    assert_eq!(sequence, 0);
    assert_eq!(file, 0);
    assert_eq!(constant, 0);
    assert_eq!(typed, 0);
    assert_eq!(prefixes, 0);
    assert_eq!(wrong, 0);
    assert_eq!(dotted_paths, 0);
}
