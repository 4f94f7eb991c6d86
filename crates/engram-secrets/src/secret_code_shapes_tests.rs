//! Tests of judgements spread over the modules that own them: a camel-case
//! name of words and a module-qualified type (`secret_code`), a member sharing the
//! assigned name's end, an empty string followed by code (`secret_keyword`), base64 of
//! an X.509 certificate (`secret_shape`), a JWT whose signature is a word
//! (`secret_inert`), a service account whose `private_key` is a placeholder
//! (`secret_framing`) and two words run together (`secret_made_up`). Each shape is
//! shown, and so is what it lets through: how often random values of the alphabets a
//! secret is drawn from take it.

use super::redact::Redactor;
use super::secret_code::{is_camel_words, is_same_name_binding, is_type_name};
use super::secret_framing::near_private_key_field;
use super::secret_inert::is_unsigned_jwt;
use super::secret_made_up::is_two_words;
use super::secret_shape::is_der_certificate;
use super::secret_value::looks_secret;
use super::test_random::{random, xorshift, B64URL, BASE62, BASE64, LOWER, PASSWORD};

fn base64(bytes: &[u8]) -> String {
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
        for i in 0..=chunk.len() {
            out.push(BASE64[(n >> (18 - 6 * i) & 63) as usize] as char);
        }
    }
    while !out.len().is_multiple_of(4) {
        out.push('=');
    }
    out
}

#[test]
fn names_certificates_and_word_signatures_are_no_secrets() {
    // Names in camel humps of words, or of the assigned name; a type behind a module.
    assert!(is_camel_words("Curve25519SeedBin", "private_key"));
    assert!(is_camel_words("_PassphraseArg", "passphrase"));
    assert!(!is_camel_words("_PassphraseArg", "password"));
    assert!(!is_camel_words("Zk5Hc9Jd0Pa6Sg2Ue4Ti8Ox", "token"));
    assert!(!is_camel_words("SeedZkq", "token"));
    assert!(!is_camel_words("Seed", "token"));
    assert!(is_type_name("sts.StsCredentials"));
    assert!(!is_type_name("sts.Zk5Hc9Jd0Pa6"));
    assert!(!is_type_name("Zk5.StsCredentials"));
    // The same name under another prefix.
    assert!(is_same_name_binding(
        "old_use_webauthn",
        "asyncssh.sk.sk_use_webauthn"
    ));
    assert!(!is_same_name_binding(
        "old_use_webauthn",
        "asyncssh.sk.sk_use_webauth"
    ));
    // A certificate's base64 (built here: the DER header of a v3 certificate, then
    // random bytes) is public; a PKCS#8 key's is not.
    let mut next = xorshift(0x2545_F491_4F6C_DD1D);
    let mut body: Vec<u8> = vec![
        0x30, 0x82, 0x02, 0xb0, 0x30, 0x82, 0x02, 0x19, 0xa0, 0x03, 0x02, 0x01, 0x02, 0x02,
    ];
    body.extend((0..200).map(|_| next() as u8));
    assert!(is_der_certificate(&base64(&body)));
    let mut key: Vec<u8> = vec![0x30, 0x82, 0x04, 0xbd, 0x02, 0x01, 0x00, 0x30, 0x0d];
    key.extend((0..200).map(|_| next() as u8));
    assert!(!is_der_certificate(&base64(&key)));
    // JWTs whose signature is a word; a real signature is kept.
    let jwt =
        "eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIn0";
    for sig in ["fake", "wrong", "invalid", "SIGNATURE"] {
        assert!(is_unsigned_jwt(&format!("{jwt}.{sig}")), "{sig}");
    }
    for sig in [
        "Fake",
        "zqxv",
        "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    ] {
        assert!(!is_unsigned_jwt(&format!("{jwt}.{sig}")), "{sig}");
    }
    // A service account's template, against one with a key.
    let template =
        br#"{"type": "service_account", "private_key": "your-private-key", "client_email": "x"}"#;
    assert!(!near_private_key_field(template, 2));
    let keyed = b"{\"type\": \"service_account\", \"private_key\": \"-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\\n-----END PRIVATE KEY-----\\n\"}";
    assert!(near_private_key_field(keyed, 2));
    // Two words run together.
    assert!(is_two_words("totallybogus"));
    assert!(!is_two_words("totallyboguz"));
    assert!(!is_two_words("Totallybogus"));
    // A name that says GUID.
    assert!(!looks_secret(
        "auth_yahoo_guid",
        "UQIDWJNWVNQD4GXZ5NGMZUSTQ4",
        true,
        None
    ));
}

/// `token = "".join(…)` is code; a triple-quoted or plain literal, or one that starts
/// with a quote, is still judged.
#[test]
fn an_empty_string_is_no_value_but_triple_quotes_are() {
    let r = Redactor::builtin().unwrap();
    let code = "token = \"\".join(__version__.split(\".\"))\n";
    assert_eq!(r.redact(code).unwrap().text, code);
    let mut next = xorshift(0xBF58_476D_1CE4_E5B9);
    for _ in 0..200 {
        let secret = random(&mut next, BASE62, 32);
        for text in [
            format!("SECRET_KEY = \"\"\"{secret}\"\"\"\n"),
            format!("token = '{secret}'\n"),
            format!("\"token\": \"{secret}\"\n"),
            // A password that starts with the quote character (the secrets corpus's
            // `password = "\S{14,28}"`).
            format!("password = \"\"{secret}\"\n"),
            format!("password = \"\".{secret}\"\n"),
        ] {
            let out = r.redact(&text).unwrap().text;
            assert!(!out.contains(&secret), "{text}");
        }
    }
}

/// What the shapes let through, over random values: none for the camel-case names,
/// the qualified types, the shared-ending members, certificates, worded signatures,
/// placeholder service accounts and run-together words at every alphabet and length
/// measured (200,000 values each).
#[test]
fn random_values_never_take_these_shapes() {
    let mut next = xorshift(0x94D0_49BB_1331_11EB);
    let printable: Vec<u8> = (b'!'..=b'~').collect();
    let names = [
        "token",
        "client_secret",
        "apiKey",
        "db_password",
        "private_key",
    ];
    for alphabet in [BASE62, BASE64, PASSWORD, LOWER, &printable[..]] {
        for len in [8usize, 12, 16, 24, 40] {
            let tries = 200_000;
            let mut passed = 0;
            for i in 0..tries {
                let v = random(&mut next, alphabet, len);
                let name = names[i % names.len()];
                passed += usize::from(
                    is_camel_words(&v, name)
                        || is_type_name(&format!("sts.{v}"))
                        || is_same_name_binding("old_use_webauthn", &format!("mod.{v}"))
                        || is_der_certificate(&v)
                        || is_two_words(&v),
                );
            }
            assert_eq!(passed, 0, "{len} of {} characters", alphabet.len());
        }
    }
    // Random base64 long enough to be read as a certificate, and random signed JWTs.
    let mut inert = 0;
    for _ in 0..200_000 {
        inert += usize::from(is_der_certificate(&random(&mut next, BASE64, 120)));
        let jwt = format!(
            "eyJhbGciOiJIUzI1NiJ9.eyJ{}.{}",
            random(&mut next, B64URL, 40),
            random(&mut next, B64URL, 43)
        );
        inert += usize::from(is_unsigned_jwt(&jwt));
    }
    assert_eq!(inert, 0);
    // A service account's `private_key` holding a random value is kept.
    let mut kept = 0;
    for _ in 0..20_000 {
        let v = random(&mut next, BASE64, 40);
        let text = format!("{{\"type\": \"service_account\", \"private_key\": \"{v}\"}}");
        kept += usize::from(near_private_key_field(text.as_bytes(), 2));
    }
    assert_eq!(kept, 20_000);
}

/// A real signature wrapped after its first few characters, the way a word could
/// stand in its place: how often those characters read as a word, by length. Real
/// signatures are 43 characters or more; this is the rate for a cut one.
#[test]
fn cut_signatures_rarely_read_as_words() {
    let mut next = xorshift(0xD6E8_FEB8_6659_FD93);
    let jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0";
    for len in [3usize, 4, 6, 8, 12] {
        let mut words = 0;
        for _ in 0..200_000 {
            let sig = random(&mut next, B64URL, len);
            words += usize::from(is_unsigned_jwt(&format!("{jwt}.{sig}")));
        }
        eprintln!("signatures cut at {len} characters read as a word: {words} of 200,000");
        let bound = match len {
            3 => 2_000,
            4 => 400,
            _ => 10,
        };
        assert!(words <= bound, "{len}: {words}");
    }
}
