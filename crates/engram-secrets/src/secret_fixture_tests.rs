//! Tests of the judgements made for held-out-20's classes (`secret_fixture`): an SDK's
//! cache keys, cut SigV4 scopes, Smithy shape ids, AWS resource names and paginators'
//! JMESPath queries. Each false positive is shown not firing, a random secret of the
//! same shape in the same place firing (and an access key's id beside its secret, which
//! stays caught), and the last test counts how often random values take the new shapes.

use super::allowlist::{self, Allowlist};
use super::redact::Redactor;
use super::secret_fixture::{
    is_cache_key_digest, is_cut_signing_scope, is_query_path, is_shape_id,
};
use super::test_random::{random, xorshift, BASE62, PASSWORD};

const HEX: &[u8] = b"0123456789abcdef";

/// Whether the allowlist's resource-name rows take `value`, or the token of `text`
/// the keyword at `start` is in.
fn in_resource_name(a: &Allowlist, text: &str, start: usize, value: &str) -> bool {
    a.allows_value(value) || a.allows_token(text, start)
}

/// Whether the redactor leaves `text` as it is.
fn kept(r: &Redactor, text: &str) -> bool {
    r.redact(text).unwrap().text == text
}

/// Whether the redactor removes `secret` from `text`.
fn caught(r: &Redactor, text: &str, secret: &str) -> bool {
    !r.redact(text).unwrap().text.contains(secret)
}

#[test]
fn cache_keys_cut_scopes_and_shape_ids_are_no_secrets() {
    let r = Redactor::builtin().unwrap();
    for text in [
        "        token_cache_key = 'f395038c92f1828cbb3991d2d6152d326b895606'\n",
        "        self.cached_token_key = '13f9d35043871d073ab260e020f0ffde092cb14b'\n",
        "            '&X-Amz-Expires=900&X-Amz-Credential=akid%2F20161107%2F'\n",
        "            'X-Amz-Credential=access_key%2F20170322%2Fus-west-2%2Fsts%2F'\n",
        "            [\"smithy.api#httpBearerAuth\", \"smithy.api#noAuth\"],\n",
    ] {
        assert!(kept(r, text), "{text}");
    }
    assert!(is_cache_key_digest(
        "token_cache_key",
        "f395038c92f1828cbb3991d2d6152d326b895606"
    ));
    assert!(!is_cache_key_digest(
        "token_key",
        "f395038c92f1828cbb3991d2d6152d326b895606"
    ));
    assert!(!is_cache_key_digest(
        "cache_key",
        "f395038c92f1828cbb3991d2d6152d"
    ));
    assert!(is_cut_signing_scope("akid%2F20161107%2F"));
    assert!(is_cut_signing_scope("AKID/20231126/us-west-2/s3express/"));
    assert!(!is_cut_signing_scope("akid%2F20161307%2F"));
    assert!(!is_cut_signing_scope("akid%2F20161107"));
    assert!(!is_cut_signing_scope("ak+d%2F20161107%2FX"));
    assert!(is_shape_id("smithy.api#httpBearerAuth"));
    assert!(!is_shape_id("smithy#httpBearerAuth"));
    assert!(!is_shape_id("smithy.api#xQ9vTzAuth"));
    let mut next = xorshift(0x2545_F491_4F6C_DD1D);
    for _ in 0..20 {
        let key = random(&mut next, BASE62, 24);
        let hex = random(&mut next, HEX, 40);
        let id = random(&mut next, b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", 20);
        for (text, secret) in [
            // An access key's id and its secret: both caught (MinIO's playground pair is
            // a working one).
            (
                format!("access_key = '{id}'\nsecret_key = '{key}'\n"),
                id.clone(),
            ),
            (
                format!("access_key = '{id}'\nsecret_key = '{key}'\n"),
                key.clone(),
            ),
            // A random value under a cache key's name that is no digest, and a digest
            // under a name that does not say cache.
            (format!("token_cache_key = '{key}'\n"), key.clone()),
            (format!("token_key = '{hex}'\n"), hex.clone()),
            (format!("api_key = '{hex}'\n"), hex.clone()),
            // A random credential in a scope's place, with no date after it.
            (format!("X-Amz-Credential={key}%2F\n"), key.clone()),
            (format!("X-Amz-Credential={key}%2Fsts%2F\n"), key.clone()),
            // A random value after a shape id's namespace.
            (format!("auth = \"smithy.api#{key}\"\n"), key.clone()),
        ] {
            assert!(caught(r, &text, &secret), "{text}");
        }
    }
}

#[test]
fn resource_names_and_paginator_paths_are_no_secrets() {
    let r = Redactor::builtin().unwrap();
    for text in [
        "{\"SecretArn\":\"arn:aws:secretsmanager:ap-south-1:111122223333:secret:snowflake-XHb67j\"}\n",
        "\"documentation\":\"<code>{\\\"SecretArn\\\":\\\"arn:aws:secretsmanager:ap-south-1:111122223333:secret:snowflake-XHb67j\\\"}</code>\"\n",
        "  \"ARN\": \"arn:aws:secretsmanager:us-west-2:123456789012:secret:MyTestDatabaseSecret1-d4e5f6\",\n",
        "      \"output_token\": \"Jobs[-1].JobId\",\n",
        "      \"output_token\": \"StreamDescription.Shards[-1].ShardId\",\n",
    ] {
        assert!(kept(r, text), "{text}");
    }
    let arn = "arn:aws:secretsmanager:ap-south-1:111122223333:secret:snowflake-XHb67j";
    let a = allowlist::get();
    assert!(in_resource_name(a, arn, arn.find("secret:").unwrap(), "x"));
    assert!(in_resource_name(a, "", 0, arn));
    assert!(!in_resource_name(a, "arn:foo:secretsmanager::", 8, "x"));
    assert!(!in_resource_name(a, "secret: abc", 0, "abc"));
    assert!(is_query_path("Jobs[-1].JobId"));
    assert!(is_query_path("Reservations[].Instances[0].InstanceId"));
    assert!(!is_query_path("Jobs.JobId"));
    assert!(!is_query_path("Jobs[x1].JobId"));
    let mut next = xorshift(0xD1B5_4A32_D192_ED03);
    for _ in 0..20 {
        let value = random(&mut next, BASE62, 28);
        for (text, secret) in [
            // A secret's value beside its resource name, and a random value in the
            // resource name's place.
            (
                format!("{{\"ARN\":\"{arn}\",\"SecretString\":\"{value}\"}}\n"),
                value.clone(),
            ),
            (format!("{{\"SecretArn\":\"{value}\"}}\n"), value.clone()),
            (format!("secret: {value}\n"), value.clone()),
            // A random token in a paginator's place.
            (format!("\"output_token\": \"{value}\",\n"), value.clone()),
        ] {
            assert!(caught(r, &text, &secret), "{text}");
        }
    }
}

#[test]
fn random_values_rarely_take_these_shapes() {
    let mut next = xorshift(0x6A09_E667_F3BC_C908);
    let (mut cache, mut scope, mut shape, mut arn, mut path) = (0, 0, 0, 0, 0);
    let scoped = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJ0123456789/%2F-_";
    let shaped = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJ0123456789.#[]-:";
    for _ in 0..200_000 {
        let pw = random(&mut next, PASSWORD, 20);
        cache += usize::from(is_cache_key_digest("token_cache_key", &pw));
        scope += usize::from(is_cut_signing_scope(&random(&mut next, scoped, 24)));
        let s = random(&mut next, shaped, 24);
        shape += usize::from(is_shape_id(&s));
        arn += usize::from(in_resource_name(allowlist::get(), &s, 0, &s));
        path += usize::from(is_query_path(&s));
    }
    assert_eq!(cache, 0);
    assert_eq!(scope, 0);
    assert_eq!(shape, 0);
    assert_eq!(arn, 0);
    assert_eq!(path, 0);
}
