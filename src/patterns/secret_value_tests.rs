//! Tests of the secret-value judgement (`secret_value.rs`).

use super::*;

#[test]
fn the_threshold_separates_defaults_from_random_values() {
    assert!(entropy("changeme") < MIN_ENTROPY);
    assert!(!looks_secret("password", "changeme", true, None));
    assert!(!looks_secret("password", "hunter22", true, None));
    assert!(looks_secret(
        "password",
        "Zk5Hc9Jd0Pa6Sg2Ue4Ti8Ox1Qb3Vc7Nm",
        true,
        None
    ));
    assert!(looks_secret(
        "secret",
        "0f1e2d3c4b5a69788796a5b4c3d2e1f0",
        true,
        None
    ));
}

#[test]
fn placeholders_shapes_and_code_are_not_secrets() {
    for v in [
        "${TOKEN}",
        "%s",
        "<password>",
        "your-api-key-here",
        "os.environ",
    ] {
        assert!(!looks_secret("token", v, true, None), "{v}");
    }
    assert!(!looks_secret(
        "token",
        "123e4567-e89b-12d3-a456-426614174000",
        true,
        None
    ));
    assert!(!looks_secret(
        "token",
        "sha512-z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7kxvUdBeoGlODJ6+SfaPg==",
        true,
        None
    ));
    assert!(!looks_secret(
        "secret",
        "base64.b64decode",
        false,
        Some('(')
    ));
    assert!(!looks_secret("password", "user_password", false, None));
    assert!(!looks_secret(
        "token_hash",
        "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        true,
        None
    ));
    assert!(!looks_secret(
        "secret",
        "dGhlIHNhbXBsZSBub25jZQ==",
        true,
        None
    ));
}
