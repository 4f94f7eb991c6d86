//! Tests of the judgements made for held-out-13's classes: values a person composed
//! (`secret_composed`), base32 of text and JWT-shaped values that are no JWT
//! (`secret_inert`), a URN as the value (`secret_named`), a regex class cut at its
//! first escape (`secret_value`) and a Python union with `None` (`secret_keyword`).
//! Each false positive is shown not firing, a near miss holding a random secret firing,
//! and the last test counts how often random values take the new shapes.

use super::redact::Redactor;
use super::secret_composed::{is_identifier_words, is_repeated_half, is_worded_password};
use super::secret_inert::{is_malformed_jwt, is_text_base32};
use super::secret_named::is_urn;
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
fn identifier_words_are_names() {
    let r = Redactor::builtin().unwrap();
    for text in [
        "    \"FlowsVaultConnectioSetupBigqueryOauthJwt\": \".flows_vault_connectio_setup_bigquery_oauth_jwt\",\n",
        "    \"FlowsVaultConnectioSetupMailjetApiKey\": \".flows_vault_connectio_setup_mailjet_api_key\",\n",
        "    \"ConnectionTwilioTokenSms\": \".connection_twilio_token_sms\",\n",
        "    typing.Literal[\"access_token\", \"access_token_authz\", \"rfc9068_profile\", \"rfc9068_profile_authz\"], typing.Any\n",
    ] {
        assert!(kept(r, text), "{text}");
    }
    assert!(is_identifier_words(
        ".flows_vault_connectio_setup_oauth_jwt"
    ));
    assert!(is_identifier_words("rfc9068_profile"));
    assert!(is_identifier_words("connection-twilio-token-sms"));
    assert!(!is_identifier_words("qoiaikneobbm_i469"));
    assert!(!is_identifier_words("Flows_Vault_Setup"));
    // A random part among the words is still caught.
    for (text, secret) in [
        (
            "    \"ApiKey\": \"setup_api_key_x7qk2vz9wp4mr8tj\",\n",
            "x7qk2vz9wp4mr8tj",
        ),
        (
            "access_token = \"qzkv7wxp_mrtj3b9f_ydgh\"\n",
            "qzkv7wxp_mrtj3b9f_ydgh",
        ),
    ] {
        assert!(caught(r, text, secret), "{text}");
    }
}

#[test]
fn worded_passwords_are_samples() {
    let r = Redactor::builtin().unwrap();
    for text in [
        "    password=\"SecurePass123!\",\n",
        "const password = 'WelcomeHome2024';\n",
        "    passwd: \"MyPassIsSecure1\",\n",
    ] {
        assert!(kept(r, text), "{text}");
    }
    assert!(is_worded_password("SecurePass123!"));
    assert!(!is_worded_password("SecurePass12345!"));
    assert!(!is_worded_password("SecureQxvt123!"));
    assert!(!is_worded_password("securePass123!"));
    for (text, secret) in [
        (
            "password=\"SecurePass123!Xq7vK2\"\n",
            "SecurePass123!Xq7vK2",
        ),
        ("password=\"Kq7XvZ2pWm9Rt4Ls\"\n", "Kq7XvZ2pWm9Rt4Ls"),
    ] {
        assert!(caught(r, text, secret), "{text}");
    }
}

#[test]
fn base32_of_text_and_repeated_halves_are_test_keys() {
    let r = Redactor::builtin().unwrap();
    for text in [
        "        valid_secret = \"GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ\"\n",
        "        otp = pyotp.parse_uri(\"otpauth://totp/Big%20Corp:bob?secret=GEZDGNBVGY3TQOJQGEZDGNBV&issuer=Big%20Corp\")\n",
        "            \"http://totp/GitHub:test?issuer=GitHub&secret=KRSXG5CTMVRXEZLUKN2XAZLSKNSWG4TFOQ&digits=8&period=60&algorithm=SHA256\",\n",
        "        self.assertEqual(dict(parse_qsl(url.query)), {\"secret\": \"wrn3pqx5uqxqvnqrwrn3pqx5uqxqvnqr\", \"counter\": \"0\"})\n",
    ] {
        assert!(kept(r, text), "{text}");
    }
    assert!(is_text_base32("GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ"));
    assert!(is_text_base32("KRSXG5CTMVRXEZLUKN2XAZLSKNSWG4TFOQ"));
    assert!(is_text_base32("krsxg5ctmvrxezlukn2xazlsknswg4tfoq"));
    assert!(is_text_base32("GEZDGNBVGY3TQOJQ"));
    assert!(!is_text_base32("JDDK4U3IN5HUYMS3"));
    assert!(is_repeated_half("wrn3pqx5uqxqvnqrwrn3pqx5uqxqvnqr"));
    assert!(!is_repeated_half("wrn3pqx5uqxqvnqrwrn3pqx5uqxqvnqs"));
    // Random TOTP keys, and one only half of which repeats, are caught.
    for (text, secret) in [
        (
            "        secret = \"JDDK4U3IN5HUYMS3KQ4GCVZTMRYGK3DQ\"\n",
            "JDDK4U3IN5HUYMS3KQ4GCVZTMRYGK3DQ",
        ),
        (
            "    \"url\": \"totp?secret=4NOT34Z4NW47QAIL7XZQ4U3KDYWTE7S3&issuer=Acme\",\n",
            "4NOT34Z4NW47QAIL7XZQ4U3KDYWTE7S3",
        ),
        (
            "        {\"secret\": \"wrn3pqx5uqxqvnqrk7d2mzq4bt6yhc3j\"}\n",
            "wrn3pqx5uqxqvnqrk7d2mzq4bt6yhc3j",
        ),
    ] {
        assert!(caught(r, text, secret), "{text}");
    }
}

#[test]
fn urns_regex_classes_and_union_types_are_no_values() {
    let r = Redactor::builtin().unwrap();
    for text in [
        "PASSWORD = \"urn:oasis:names:tc:SAML:2.0:ac:classes:Password\"\n",
        "TIMESYNCTOKEN = \"urn:oasis:names:tc:SAML:2.0:ac:classes:TimeSyncToken\"\n",
        "STATUS_NO_AUTHN_CONTEXT = \"urn:oasis:names:tc:SAML:2.0:status:NoAuthnContext\"\n",
        "const tokenMatch = \"[a-zA-Z0-9!#$%&\\\\'\\\\*\\\\+\\\\-\\\\.\\\\^_`\\\\|~]+\";\n",
        "        self._passphrase_helper: _PassphraseHelper | None = None\n",
    ] {
        assert!(kept(r, text), "{text}");
    }
    assert!(is_urn("urn:ietf:params:oauth:token-type:jwt"));
    assert!(!is_urn("urn:"));
    assert!(!is_urn("urnXq7vK2pWm9Rt4Ls"));
    for (text, secret) in [
        ("PASSWORD = \"urnXq7vK2pWm9Rt4Ls\"\n", "urnXq7vK2pWm9Rt4Ls"),
        ("token = \"[a7Qz!x9Kp2Vw#m4R\"\n", "[a7Qz!x9Kp2Vw#m4R"),
        (
            "self._passphrase_helper = \"Xq7vK2pWm9Rt4Ls3\"\n",
            "Xq7vK2pWm9Rt4Ls3",
        ),
    ] {
        assert!(caught(r, text, secret), "{text}");
    }
}

#[test]
fn malformed_jwts_are_no_tokens() {
    let r = Redactor::builtin().unwrap();
    for text in [
        "    token = \"eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9A.eyJhIjoiYiJ9.jiMyrsmD8AoHWeQgmxZ5yq8z0lXS67_QGs52AzC8Ru8\"\n",
        "    token = \"dGVzdA.eyJhIjoiYiJ9.jiMyrsmD8AoHWeQgmxZ5yq8z0lXS67_QGs52AzC8Ru8\"\n",
        "    token = \"eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.AeyJhIjoiYiJ9.jiMyrsmD8AoHWeQgmxZ5yq8z0lXS67_QGs52AzC8Ru8\"\n",
        "    token = \"eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.dGVzdA.jiMyrsmD8AoHWeQgmxZ5yq8z0lXS67_QGs52AzC8Ru8\"\n",
        "    token = \"WyJ0ZXN0Il0.eyJhIjoiYiJ9.jiMyrsmD8AoHWeQgmxZ5yq8z0lXS67_QGs52AzC8Ru8\"\n",
        "    token = \"eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.WyJ0ZXN0Il0.jiMyrsmD8AoHWeQgmxZ5yq8z0lXS67_QGs52AzC8Ru8\"\n",
        "    token = \"eyJhbGciOiAiSFMyNTYiLCAidHlwIjogIkpXVCJ9.eyJoZWxsbyI6ICJ3b3JsZCJ9.aatvagLDLoaiJKxOKqpBXSEGy7SYSifZhjntgm9ctpyj8\"\n",
        "        token = \"eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.iOJ5SiNfaNO_pa2J4Umtb3b3zmk5C18-mhTCVNsjnck\"\n",
        "        token = \"eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.aW52YWxpZCBjbGFpbQ.iOJ5SiNfaNO_pa2J4Umtb3b3zmk5C18-mhTCVNsjnck\"\n",
        "        token = \"eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.WyJpbnZhbGlkIiwgImNsYWltcyJd.nZvw_Rt1FfUPb5OiVbrSYZGtWSE5c-gdJ6nQnTTBkYo\"\n",
    ] {
        assert!(kept(r, text), "{text}");
    }
    // A well-formed JWT is caught, quoted or not, and so is a malformed-looking one
    // that a line wrap may have cut (no closing quote right after it).
    let good = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U";
    assert!(!is_malformed_jwt(good, true));
    for text in [
        format!("    token = \"{good}\"\n"),
        format!("Authorization: Bearer {good}\n"),
        format!("{good}\n"),
    ] {
        assert!(
            caught(r, &text, "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"),
            "{text}"
        );
    }
    let cut = "eyJhbGciOiAiSFMyNTYiLCAidHlwIjogIkpXVCJ9.eyJoZWxsbyI6ICJ3b3JsZCJ9.aatvagLDLoaiJKxOKqpBXSEGy7SYSifZhjntgm9ctpyj8";
    assert!(is_malformed_jwt(cut, true));
    assert!(!is_malformed_jwt(cut, false));
    assert!(caught(
        r,
        &format!("{cut}\n"),
        "aatvagLDLoaiJKxOKqpBXSEGy7SYSifZhjntgm9ctpyj8"
    ));
    // A signed cookie (`itsdangerous`: JSON without `alg`, then a signature) is judged
    // as before, not as a malformed JWT.
    assert!(!is_malformed_jwt(
        "eyJ1c2VyX2lkIjo0Mn0.nZvw_Rt1FfUPb5OiVbrSYZGtWSE5c-gdJ6nQnTTBkYo",
        true
    ));
}

/// Unpadded base64url of `data`.
fn b64url(data: &[u8]) -> String {
    let mut out = String::new();
    for chunk in data.chunks(3) {
        let n =
            chunk.iter().fold(0u32, |acc, &b| (acc << 8) | u32::from(b)) << (8 * (3 - chunk.len()));
        for k in 0..=chunk.len() {
            out.push(B64URL[((n >> (18 - 6 * k)) & 63) as usize] as char);
        }
    }
    out
}

/// How often random values take the new shapes: never, at these counts. Random JWTs
/// have the JSON header and claims every issued one has, and a random signature.
#[test]
fn random_values_are_rarely_composed() {
    let mut next = xorshift(0x2545_F491_4F6C_DD1D);
    let base32 = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    let lower_snake = b"abcdefghijklmnopqrstuvwxyz0123456789__--.";
    let mut hits = [0usize; 6];
    for i in 0..200_000 {
        let len = 12 + i % 29;
        for alphabet in [BASE62, PASSWORD, LOWER, &lower_snake[..]] {
            let v = random(&mut next, alphabet, len);
            hits[0] += usize::from(is_identifier_words(&v));
            hits[1] += usize::from(is_worded_password(&v));
            hits[2] += usize::from(is_repeated_half(&v));
            hits[4] += usize::from(is_urn(&v));
        }
        let b32 = random(&mut next, base32, 16 + i % 17);
        hits[3] += usize::from(is_text_base32(&b32));
        let jwt = format!(
            "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.{}.{}",
            b64url(format!("{{\"sub\":\"{}\"}}", random(&mut next, BASE62, 10)).as_bytes()),
            random(&mut next, B64URL, 43)
        );
        hits[5] += usize::from(is_malformed_jwt(&jwt, true));
    }
    assert_eq!(
        hits,
        [0, 0, 0, 0, 0, 0],
        "identifier words, worded password, repeated half, text base32, urn, malformed jwt"
    );
}

#[test]
fn a_keyword_inside_a_rejected_value_is_judged_on_its_own() {
    let r = Redactor::builtin().unwrap();
    for (text, secret) in [
        (
            "otpauth://totp/Acme:alice?secret=4NOT34Z4NW47QAIL7XZQ4U3KDYWTE7S3&issuer=Acme\n",
            "4NOT34Z4NW47QAIL7XZQ4U3KDYWTE7S3",
        ),
        (
            "    url = \"otpauth://totp/Acme:alice?secret=4NOT34Z4NW47QAIL7XZQ4U3KDYWTE7S3&issuer=Acme\"\n",
            "4NOT34Z4NW47QAIL7XZQ4U3KDYWTE7S3",
        ),
        (
            "auth_url = \"https://hooks.example.com/cb?access_token=Zk5Hc9Jd0Pa6Sg2Ue4Ti8Ox1\"\n",
            "Zk5Hc9Jd0Pa6Sg2Ue4Ti8Ox1",
        ),
    ] {
        assert!(caught(r, text, secret), "{text}");
    }
    // The TOTP documentation's own key stays what it was.
    assert!(kept(
        r,
        "otpauth://totp/Example:alice@google.com?secret=JBSWY3DPEHPK3PXP&issuer=Example\n"
    ));
}
