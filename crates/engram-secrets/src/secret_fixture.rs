//! Keyword values in an SDK's tests and service models that name, index or derive from
//! a credential rather than being one (held-out-20's classes, the
//! most-downloaded packages: botocore's unit and functional tests and its JSON service
//! models).
//!
//! - [`is_cache_key_digest`]: a hex digest under a name saying it keys a cache
//!   (`token_cache_key = 'f395…'`, `self.cached_token_key = '13f9…'`): the lookup key
//!   an SDK derives by hashing a session's settings, not the token it finds.
//! - [`is_cut_signing_scope`]: a SigV4 credential scope cut where a string literal ends
//!   (`X-Amz-Credential=akid%2F20161107%2F` then `'us-east-1%2Frds-db%2Faws4_request'`
//!   on the next line): an access key id and a date, region and service, all public.
//! - [`is_shape_id`]: a Smithy shape id (`"smithy.api#httpBearerAuth"`): a namespace and
//!   the name of an auth scheme.
//! - An AWS resource name (`arn:aws:secretsmanager:…:secret:snowflake-XHb67j`) names a
//!   stored secret, whose value is elsewhere: rows of `allowlist.toml` (`[[value]]`,
//!   `[[token]]`), asked by `secret_keyword`.
//! - [`is_query_path`]: a JMESPath query with an index (`"output_token":
//!   "Jobs[-1].JobId"`, a paginator's): where the next page's token is read from.
//!
//! Each judgement only turns a value down; none may make a secret of anything, and
//! each reads a shape or a neighbour no random value of the alphabets secrets are drawn
//! from takes (`secret_fixture_tests.rs` counts how often one does). A random value
//! under the same names stays caught: a cache key must be a hex digest. An access
//! key's id on the line before its secret (`access_key = '44CF9590…'`) stays caught
//! too: a rule reading it as the pair's public half also took MinIO's playground
//! credentials (`access_key="Q3AM3UQ8…"`, 67 true positives: a working pair) and was
//! dropped.

use super::secret_marker::words;
use super::secret_shape::is_hex_digest;
use super::secret_words::is_identifier_word;

/// Whether `value` is a hex digest (SHA-1's 40 hex digits, MD5's 32, SHA-256's 64, in
/// one case) under a name whose last word is `key` and one of whose words is `cache`
/// or `cached` (`token_cache_key`, `cached_token_key`): an SDK's cache is keyed by a
/// hash of the session's settings. A random secret under such a name that is no hex
/// digest is still judged, as is a hex one under any other name (`api_key`).
pub(super) fn is_cache_key_digest(assigned: &str, value: &str) -> bool {
    let name = words(assigned);
    let v = value.trim_end_matches(['"', '\'', '`']);
    name.last().is_some_and(|w| w == "key")
        && name.iter().any(|w| w == "cache" || w == "cached")
        && [32, 40, 64].contains(&v.len())
        && is_hex_digest(v)
}

/// Whether `value` is a SigV4 credential scope, `/` or `%2F` between its fields, cut
/// anywhere after the date (`akid%2F20161107%2F`, `access_key%2F20170322%2Fus-west-2%2F
/// sts%2F`): an identifier, a date `YYYYMMDD` of this century, then region and service
/// names in lower case (the whole scope, ending `/aws4_request`, is
/// `secret_inert::is_sigv4_scope`'s). A random value would need a valid date between
/// two separators right after its first field.
pub(super) fn is_cut_signing_scope(value: &str) -> bool {
    let v = value.trim_end_matches(['"', '\'', '`', ',', ';']);
    let decoded = v.replace("%2F", "/").replace("%2f", "/");
    let parts: Vec<&str> = decoded.split('/').collect();
    parts.len() >= 3
        && !parts[0].is_empty()
        && parts[0].len() <= 128
        && parts[0]
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        && is_date(parts[1])
        && parts[2..].iter().all(|p| {
            p.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        })
}

/// `YYYYMMDD` with a year of this century, a month and a day that exist.
fn is_date(s: &str) -> bool {
    if s.len() != 8 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return false;
    }
    let n = |r: std::ops::Range<usize>| s[r].parse::<u32>().unwrap_or(0);
    let (year, month, day) = (n(0..4), n(4..6), n(6..8));
    (2000..2100).contains(&year) && (1..=12).contains(&month) && (1..=31).contains(&day)
}

/// Whether `value` is a Smithy shape id, `namespace#Name`: two or more lower-case
/// namespace parts joined by `.`, a `#`, then a name of letters in camel humps that
/// read as words (`smithy.api#httpBearerAuth`, `smithy.api#noAuth`).
pub(super) fn is_shape_id(value: &str) -> bool {
    let v = value.trim_end_matches(['"', '\'', '`']);
    let Some((namespace, name)) = v.split_once('#') else {
        return false;
    };
    let parts: Vec<&str> = namespace.split('.').collect();
    parts.len() >= 2
        && parts.iter().all(|p| {
            p.len() >= 2
                && p.starts_with(|c: char| c.is_ascii_lowercase())
                && p.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        })
        && name.bytes().all(|b| b.is_ascii_alphabetic())
        && reads_as_words(&words(name))
}

/// Whether camel humps read as identifier words: at least half of those of three
/// letters or more are common identifier words, one of them of four letters or more
/// (`http`, `bearer`, `auth`; `jobs`, `job`; two-letter humps such as `no` and `id` set
/// aside).
fn reads_as_words(humps: &[String]) -> bool {
    let long: Vec<&String> = humps.iter().filter(|h| h.len() >= 3).collect();
    let known = long.iter().filter(|h| is_identifier_word(h)).count();
    known * 2 >= long.len() && long.iter().any(|h| h.len() >= 4 && is_identifier_word(h))
}

/// Whether `value` is a JMESPath query with an index: names joined by `.`, at least one
/// of them followed by `[N]`, `[-N]` or `[]` (`Jobs[-1].JobId`,
/// `StreamDescription.Shards[-1].ShardId`), each name letters in humps that read as
/// words.
/// A paginator reads the next page's token at that path.
pub(super) fn is_query_path(value: &str) -> bool {
    let v = value.trim_end_matches(['"', '\'', '`']);
    let parts: Vec<&str> = v.split('.').collect();
    let mut indexed = false;
    parts.len() >= 2
        && parts.iter().all(|p| {
            let (name, index) = match p.find('[') {
                Some(at) => (&p[..at], Some(&p[at..])),
                None => (*p, None),
            };
            let index_ok = index.is_none_or(|i| {
                indexed = true;
                i.strip_prefix('[')
                    .and_then(|i| i.strip_suffix(']'))
                    .is_some_and(|n| {
                        let n = n.strip_prefix('-').unwrap_or(n);
                        n.len() <= 3 && n.bytes().all(|b| b.is_ascii_digit())
                    })
            });
            name.len() >= 2 && name.bytes().all(|b| b.is_ascii_alphabetic()) && index_ok
        })
        && indexed
        && reads_as_words(&words(
            &v.replace(|c: char| !c.is_ascii_alphabetic() && c != '.', ""),
        ))
}
