//! Tests of `secret_made_up.rs`'s judgements: the shapes they take and the
//! false-negative rates its module comment states, over random values.

use super::*;
use crate::test_random::{random, xorshift, BASE62, CAPS, PASSWORD};

#[test]
fn constants_claims_accents_and_repeats_are_made_up() {
    for v in [
        "AuthMode.SYSASM",
        "DPI_OCI_AUTH",
        "DPI_OCI_AUTH;",
        "TNS_AUTH_MODE_LOGON",
    ] {
        assert!(is_constant_reference(v), "{v}");
    }
    for v in [
        "Zk5Hc9Jd0Pa6Sg2Ue4Ti8Ox",
        "AUTH_TOKEN",
        "Zk5Hc.SYSASM",
        "AuthMode.sysasm",
        "QXJ_PLM_ZWK",
        "ZK5HC9JD0PA6SG2UE4",
    ] {
        assert!(!is_constant_reference(v), "{v}");
    }
    assert!(is_claims_only_jwt(
        "eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJodHRwczovL3NlcnZlci5leGFtcGxlLmNvbSIsImF"
    ));
    assert!(!is_claims_only_jwt(
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
    ));
    assert!(!is_claims_only_jwt(
        "eyJhbGciOiJSUzI1NiJ9.Zk5Hc9Jd0Pa6Sg2Ue4Ti8Ox"
    ));
    assert!(is_accented_sample("café-pässwörd'"));
    assert!(!is_accented_sample("cafe-password"));
    assert!(!is_accented_sample("qéxzvkjwq-pöl7"));
    assert!(is_repeated_unit(b"BLAHBLAHBLAH"));
    assert!(is_repeated_unit(
        b"ffffffffffffffffffffffffffffffffffffffff"
    ));
    assert!(!is_repeated_unit(b"BLAHBLAH"));
    assert!(!is_repeated_unit(
        b"3f2a9c0d81e4b5a6c7d8e9f00112233445566778"
    ));
    assert!(is_made_up_tail(
        b"\"private_key_id\": \"ffffffffffffffffffffffffffffffffffffffff\""
    ));
    assert!(!is_made_up_tail(
        b"\"private_key_id\": \"3f2a9c0d81e4b5a6c7d8e9f00112233445566778\""
    ));
}

/// The rates of the module comment: random values of the alphabets a secret is drawn
/// from are never a constant, a claims-only JWT, an accented sample or a repeated unit.
#[test]
fn random_values_are_never_made_up() {
    let mut next = xorshift(0x9E37_79B9_7F4A_7C15);
    let printable: Vec<u8> = (b'!'..=b'~').collect();
    for alphabet in [BASE62, PASSWORD, CAPS, &printable[..]] {
        for len in [8usize, 12, 16, 40] {
            let tries = 200_000;
            let mut made_up = 0;
            for _ in 0..tries {
                let v = random(&mut next, alphabet, len);
                made_up += usize::from(
                    is_constant_reference(&v)
                        || is_claims_only_jwt(&v)
                        || is_accented_sample(&v)
                        || is_repeated_unit(v.as_bytes())
                        || is_made_up_tail(v.as_bytes()),
                );
            }
            assert_eq!(made_up, 0, "{len} of {} characters", alphabet.len());
        }
    }
    // JWT-shaped values: a real header, then a random payload and signature, or a
    // random `eyJ…` payload cut short with no signature.
    let b64url = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut claims = 0;
    for _ in 0..200_000 {
        let payload = random(&mut next, b64url, 40);
        let sig = random(&mut next, b64url, 43);
        claims += usize::from(is_claims_only_jwt(&format!(
            "eyJhbGciOiJIUzI1NiJ9.eyJ{payload}.{sig}"
        )));
        claims += usize::from(is_claims_only_jwt(&format!(
            "eyJ{}.eyJ{payload}",
            random(&mut next, b64url, 17)
        )));
    }
    assert_eq!(claims, 0);
    // Lower-case words with accented letters mixed in: random ones do not read as words.
    let latin = "abcdefghijklmnopqrstuvwxyzéäöüèàçñ-"
        .chars()
        .collect::<Vec<_>>();
    for len in [8usize, 12, 14] {
        let mut samples = 0;
        for _ in 0..200_000 {
            let v: String = (0..len)
                .map(|_| latin[(next() % latin.len() as u64) as usize])
                .collect();
            samples += usize::from(is_accented_sample(&v));
        }
        assert!(samples <= 200, "{len}: {samples} of 200,000");
        eprintln!("accented samples of {len} random Latin letters: {samples} of 200,000");
    }
}
