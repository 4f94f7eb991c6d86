//! Tests of the judgements made for held-out-15's classes (`secret_binary` and
//! `secret_protocol`): base64 that decodes to structured binary (a zero run, a COSE
//! key, a public DER structure), the keyword `auth` inside a protocol's word, a
//! timestamp, and a value that is its name qualified. Each false positive is shown not
//! firing, a near miss of the same shape holding random bytes firing, and the last test
//! counts how often random values take the new shapes.

use super::redact::Redactor;
use super::secret_binary::{
    has_zero_run, holds_cose_key, is_base64url_run, is_public_der, is_structured_binary,
};
use super::secret_protocol::{auth_in_protocol_word, is_timestamp};
use super::secret_script::{ends_with_name, is_setting_with_query};
use super::test_random::{random, xorshift, B64URL, BASE62, BASE64};

/// Whether the redactor leaves `text` as it is.
fn kept(r: &Redactor, text: &str) -> bool {
    r.redact(text).unwrap().text == text
}

/// Whether the redactor removes `secret` from `text`.
fn caught(r: &Redactor, text: &str, secret: &str) -> bool {
    !r.redact(text).unwrap().text.contains(secret)
}

/// `bytes` in base64 (`url`: the URL-safe alphabet, unpadded; else padded).
fn encode(bytes: &[u8], url: bool) -> String {
    let alphabet = if url { B64URL } else { BASE64 };
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &b)| n | (u32::from(b) << (16 - 8 * i)));
        for i in 0..=chunk.len() {
            out.push(alphabet[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
        if !url {
            for _ in chunk.len()..3 {
                out.push('=');
            }
        }
    }
    out
}

/// `len` random bytes, none zero (so a test's own structure is the only one).
fn bytes(next: &mut impl FnMut() -> u64, len: usize) -> Vec<u8> {
    (0..len).map(|_| (next() % 255 + 1) as u8).collect()
}

/// A DER element: `tag`, a definite length, `content`.
fn der(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    match content.len() {
        n @ 0..=0x7f => out.push(n as u8),
        n @ 0x80..=0xff => out.extend([0x81, n as u8]),
        n => out.extend([0x82, (n >> 8) as u8, n as u8]),
    }
    out.extend_from_slice(content);
    out
}

#[test]
fn authenticator_data_with_a_zero_run_is_data() {
    let r = Redactor::builtin().unwrap();
    // WebAuthn test vectors: a 32-byte RP id hash, flags, a counter `00 00 00 05`.
    for text in [
        "token = \"SZYN5YgOjGh0NBcPZHZgW4_krrmihjLHmVzzuoMdl2MBAAAABQ\"\n",
        "auth_data = \"dKbqkhPJnC90siSSsyDPQCYqlMGpUKA5fyklC2CEHvABAAAAAA\"\n",
        "    \"authenticatorData\": \"SZYN5YgOjGh0NBcPZHZgW4_krrmihjLHmVzzuoMdl2MFAAAAAQ\",\n",
        "secret: AAAAB3NzaC1yc2EAAAADAQABAAABAQC7VJTUt9Us8cKjMzEfYyjiWA4R4\n",
    ] {
        assert!(kept(r, text), "{text}");
    }
    let mut next = xorshift(0x2545_F491_4F6C_DD1D);
    // The same shape with random bytes where the counter was is a key.
    for _ in 0..20 {
        let key = encode(&bytes(&mut next, 37), true);
        assert!(!is_structured_binary(&key), "{key}");
        assert!(caught(r, &format!("token = \"{key}\"\n"), &key), "{key}");
        let std = encode(&bytes(&mut next, 32), false);
        assert!(caught(r, &format!("auth_key: {std}\n"), &std), "{std}");
    }
    assert!(has_zero_run(&[7, 0, 0, 0, 5]));
    assert!(!has_zero_run(&[7, 0, 0, 9, 0, 0]));
    // Three zero bytes inside a value are chance; at its ends, a record's fields.
    assert!(!has_zero_run(&[7, 1, 0, 0, 0, 2, 3, 4, 5, 6, 7]));
    assert!(has_zero_run(&[0, 0, 0, 7, 1, 2, 3, 4, 5, 6, 7]));
    assert!(has_zero_run(&[1, 2, 3, 4, 5, 6, 7, 0, 0, 0, 1]));
    assert!(has_zero_run(&[7, 1, 0, 0, 0, 0, 3, 4, 5, 6, 7]));
    assert!(!is_structured_binary("A9e5kPW7vn3IG51eGn2oNqMAAADIoHxR"));
    // Upper-case hex is no base64: `AAAA` there is no zero run.
    assert!(!is_structured_binary("DEADBEEFAAAA1234DEADBEEFAAAA1234"));
}

#[test]
fn cose_keys_and_base64url_runs_are_no_bearer_tokens() {
    let r = Redactor::builtin().unwrap();
    for text in [
        "        \"AAAAAAAAAAAAAAAAAAAAAAAAAAABAlrjqbPdLbWXTJ2sFIreka9aWd2ED-SDx_VAgBAh4XmCJgjCjudEjoi42pGQd-_Bi6nNPQ3T7-xOEgty2I3m7c6UBAgMmIAEhWCDpQmUwrGnn3mk-T27A6awwL4HJG62Plj8Hz-lL0KltuiJYILwFIu48iEB8Ov6mEAqtCxn3mQOoaGIG4eidiWyLRg05\"\n",
        "        \"AAAAAAAAAAAAAAAAAAAAAAAAAAAAQOKIlIICnK6USJQfnBcxW35MfwTXjO1AJ898Du2aU-CNhi_5_oPEyAsiUx4NdZdMMnPlZEFFZydMjNPPtQ-aF5-lAQIDJiABIVggFo08FM4Je1yfCSuPsxP6h0zvlJSjfocUk75EvXw2oSMiWCArRwLD8doar0bACWS1PgVJKzp_wStyvOkTd4NlWHW8rQ\"\n",
    ] {
        assert!(kept(r, text), "{text}");
    }
    // A COSE EC2 key (`a5 01 02 03 26 20 01 21 58 20 …`) after zero bytes, in standard
    // base64 with no `-` or `_`: the COSE key alone tells it from a token.
    let mut next = xorshift(0x94D0_49BB_1331_11EB);
    let (data, blob) = loop {
        let mut data = vec![0u8; 18];
        data.extend([0xa5, 0x01, 0x02, 0x03, 0x26, 0x20, 0x01, 0x21, 0x58, 0x20]);
        data.extend(bytes(&mut next, 41));
        let blob = encode(&data, false);
        if blob.bytes().all(|b| b.is_ascii_alphanumeric()) {
            break (data, blob);
        }
    };
    assert!(holds_cose_key(&data));
    assert!(kept(r, &format!("x = {blob}\n")), "{blob}");
    // Issued tokens are still caught: the rule's sample and random bodies.
    let issued = "AAAAAAAAAAAAAAAAAAAAAMLheAAAAAAA0%2BuSeid%2BULvsea4JtiGRiSDSJSI%3DEUifiRBkKG5E2XzMDjRfl76ZC9Ub0wnz4XsNiRVBChTYbJcE3F";
    assert!(caught(r, &format!("TWITTER_BEARER={issued}\n"), issued));
    for _ in 0..20 {
        let token = format!("AAAAAAAAAAAAAAAAAAAAA{}", random(&mut next, BASE62, 80));
        assert!(!is_base64url_run(token.as_bytes()));
        assert!(caught(r, &format!("bearer = {token}\n"), &token), "{token}");
    }
}

#[test]
fn public_der_is_data_and_private_der_a_key() {
    let r = Redactor::builtin().unwrap();
    let mut next = xorshift(0xD6E8_FEB8_6659_FD93);
    let rsa_oid = [
        0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01, 0x05, 0x00,
    ];
    let alg = der(0x30, &rsa_oid);
    // A certificate's shape: SEQUENCE { tbs SEQUENCE, algorithm, signature BIT STRING }.
    let mut tbs = der(0xa0, &der(0x02, &[2]));
    tbs.extend(der(0x02, &bytes(&mut next, 16)));
    tbs.extend(bytes(&mut next, 300));
    let mut cert = der(0x30, &tbs);
    cert.extend(&alg);
    cert.extend(der(0x03, &bytes(&mut next, 257)));
    let cert = der(0x30, &cert);
    assert!(is_public_der(&cert));
    let cert = encode(&cert, false);
    assert!(
        kept(r, &format!("auth_certificate = \"{cert}\"\n")),
        "{cert}"
    );
    // A public key: SEQUENCE { algorithm, BIT STRING }.
    let mut spki = alg.clone();
    spki.extend(der(0x03, &bytes(&mut next, 65)));
    let spki = encode(&der(0x30, &spki), false);
    assert!(kept(r, &format!("token: \"{spki}\"\n")), "{spki}");
    // A PKCS#8 private key (INTEGER 0 first) and an encrypted one (OCTET STRING, no
    // BIT STRING) are still keys.
    let mut p8 = der(0x02, &[0]);
    p8.extend(&alg);
    p8.extend(der(0x04, &bytes(&mut next, 600)));
    let p8 = der(0x30, &p8);
    assert!(!is_public_der(&p8));
    let p8 = encode(&p8, false);
    assert!(caught(r, &format!("private_key = \"{p8}\"\n"), &p8));
    let mut enc = alg;
    enc.extend(der(0x04, &bytes(&mut next, 600)));
    let enc = der(0x30, &enc);
    assert!(!is_public_der(&enc));
    let enc = encode(&enc, false);
    assert!(caught(r, &format!("private_key = \"{enc}\"\n"), &enc));
}

#[test]
fn auth_inside_a_protocol_word_names_no_credential() {
    let r = Redactor::builtin().unwrap();
    for text in [
        "Default: ``{\"code\": \"x.CodeTfPlugin\", \"webauthn\": \"flask_security.webauthn.WebAuthnTfPlugin\",}``\n",
        "BACKOFF_CACHE_PREFIX = \"oauth2_provider:cimd:backoff:\"\n",
        "    MSG_USERAUTH_PK_OK: \"userauth-60(pk-ok/info-request)\",\n",
        "    AUTHN = MFALoginStageKey.MFA_SIGNUP_WEBAUTHN.value\n",
        "        authn: WebAuthnMixin\n",
        "  \"authenticated_at\": \"2019-03-11T11:25:22Z\",\n",
    ] {
        assert!(kept(r, text), "{text}");
    }
    let at = |text: &str, value: &str| {
        let start = text.to_ascii_lowercase().find("auth").unwrap();
        let ident: String = text[start..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
            .collect();
        auth_in_protocol_word(text, start, &ident, value)
    };
    assert!(at("x.authenticatorData", "webauthn.helpers.parse"));
    assert!(at("OAuth2Provider", "WebAuthnMixin"));
    assert!(!at("OAuth2Provider", "WebAuthnMixin2"));
    assert!(!at("OAuth2Provider", "Zk5Hc9Jd0Pa6Sg2Ue4Ti8Ox"));
    assert!(!at("WebAuthnToken", "webauthn.helpers.parse"));
    assert!(!at("oauth_token", "webauthn.helpers.parse"));
    assert!(!at("basicauth", "webauthn.helpers.parse"));
    assert!(!at("authtoken", "webauthn.helpers.parse"));
    assert!(!at("AUTH_KEY", "webauthn.helpers.parse"));
    // A credential-named identifier holding such a word is still judged, and so is a
    // bare random token under a protocol's word (the near misses of `secret_protocol`'s other tests).
    let mut next = xorshift(0xBF58_476D_1CE4_E5B9);
    for _ in 0..10 {
        let v = random(&mut next, BASE62, 32);
        for name in [
            "oauth_token",
            "webauthn_secret",
            "oauth_verifier",
            "authToken",
            "auth",
            "authtoken",
            "basicauth",
            "authn",
            "authenticatorData",
        ] {
            let text = format!("{name} = \"{v}\"\n");
            assert!(caught(r, &text, &v), "{text}");
        }
    }
}

#[test]
fn timestamps_and_qualified_names_are_no_secrets() {
    let r = Redactor::builtin().unwrap();
    for text in [
        "AuthnInstant=\"2023-07-08T08:24:14.094Z\"\n",
        "    \"token_issued\": \"2024-01-31T12:00:00+02:00\",\n",
        "    AUTH_SIGNED = \"TPM_ST_AUTH_SIGNED\"\n",
        "                On spa-error-invalid-token: SECURITY_LOGIN_ERROR_VIEW?error={msg}\n",
    ] {
        assert!(kept(r, text), "{text}");
    }
    assert!(is_timestamp("2019-03-11T11:25:22Z"));
    assert!(!is_timestamp("2019-03-11Tx1:25:22Z"));
    assert!(!is_timestamp("2019-03-11T11:25:22Zk9Hc"));
    assert!(ends_with_name("AUTH_SIGNED", "TPM_ST_AUTH_SIGNED"));
    assert!(!ends_with_name("AUTH_SIGNED", "TPM_ST_AUTH_SIGNEDX"));
    assert!(!ends_with_name("AUTH_SIGNED", "AUTH_SIGNED"));
    assert!(is_setting_with_query("SECURITY_RESET_ERROR_VIEW?error="));
    assert!(!is_setting_with_query("SECURITY?error="));
    assert!(!is_setting_with_query("X7QK_Zk5Hc9Jd0Pa?x=1"));
    let secret = "Zk5Hc9Jd0Pa6Sg2Ue4Ti8Ox1";
    assert!(caught(r, &format!("AUTH_SIGNED = \"{secret}\"\n"), secret));
    assert!(caught(
        r,
        &format!("AUTH_SIGNED = \"X7QK_{secret}\"\n"),
        secret
    ));
}

/// How often random values take the new shapes. A zero run of three bytes: about
/// `(n - 2) / 2^24` per value of `n` bytes, so about 0.4 expected in these 200,000
/// values of 12 to 63 bytes; a COSE key's opening and a consistent DER SEQUENCE:
/// never. Random base64 values of 16 to 87 characters decode to structure about as
/// often as their bytes do.
#[test]
fn random_values_rarely_decode_to_structure() {
    let mut next = xorshift(0x9E37_79B9_7F4A_7C15);
    let mut hits = [0usize; 3];
    for i in 0..200_000 {
        let b: Vec<u8> = (0..12 + i % 52).map(|_| (next() >> 40) as u8).collect();
        hits[0] += usize::from(has_zero_run(&b));
        hits[1] += usize::from(holds_cose_key(&b));
        hits[2] += usize::from(is_public_der(&b));
    }
    assert!(hits[0] <= 2, "zero runs: {}", hits[0]);
    assert_eq!(hits[1..], [0, 0], "COSE key, public DER");
    let mut structured = 0;
    for i in 0..100_000 {
        for alphabet in [BASE62, BASE64, B64URL] {
            structured += usize::from(is_structured_binary(&random(
                &mut next,
                alphabet,
                16 + i % 72,
            )));
        }
    }
    assert!(structured <= 3, "random base64 read as data: {structured}");
}
