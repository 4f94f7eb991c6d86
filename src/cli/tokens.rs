//! `engram token new|list|revoke`: the bearer tokens of `engram serve --http`, kept
//! hashed in the tokens file. A running server sees changes at its next request.
//! The new token is the only thing on stdout; nothing else ever shows a token.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};
use engram::mcp::tokens::{TokenInfo, Tokens};
use serde_json::json;

use super::output::Output;
use super::{config, repo_names, serve, Cli};

fn tokens_file() -> Result<&'static str> {
    config()
        .get_opt("tokens_file")
        .context("set tokens_file (config file or ENGRAM_TOKENS_FILE) to where tokens are kept")
}

/// `engram token new`: a random token, printed once, stored hashed. `repos` are
/// names or paths (see [`repo_names::token_repo`]); none means the current one.
pub fn new(cli: &Cli, out: &Output, name: &str, repos: &[String]) -> Result<ExitCode> {
    let file = tokens_file()?;
    let repos = if repos.is_empty() {
        vec![serve::target(cli, None)?.store]
    } else {
        repos
            .iter()
            .map(|r| repo_names::token_repo(r))
            .collect::<Result<Vec<_>>>()?
    };
    let mut raw = [0u8; 32];
    getrandom::getrandom(&mut raw).map_err(|e| anyhow::anyhow!("no randomness: {e}"))?;
    let token: String = raw.iter().map(|b| format!("{b:02x}")).collect();
    let info = Tokens::add(
        Path::new(file),
        name,
        &token,
        repos.clone(),
        engram::store::now_ms(),
    )?;
    if !out.is_json() {
        // The note goes to stderr, so `TOK=$(engram token new)` captures the token alone.
        eprintln!(
            "token {} (shown once; its hash is in {file}; it may reach {})",
            info.id,
            repos.join(", ")
        );
    }
    out.value(
        &json!({"token": token, "id": info.id, "name": name, "repos": repos}),
        || token.clone(),
    )?;
    Ok(ExitCode::SUCCESS)
}

/// `engram token list`: ids, names, repositories and creation times; never a
/// token or its hash.
pub fn list(out: &Output) -> Result<ExitCode> {
    let tokens = Tokens::list(Path::new(tokens_file()?))?;
    out.value(&json!({"tokens": tokens}), || {
        if tokens.is_empty() {
            return "no tokens; make one with `engram token new`".into();
        }
        tokens.iter().map(line).collect::<Vec<_>>().join("\n")
    })?;
    Ok(ExitCode::SUCCESS)
}

/// `engram token revoke ID`: remove a token; a running server refuses it at once.
pub fn revoke(out: &Output, id: &str) -> Result<ExitCode> {
    let gone = Tokens::revoke(Path::new(tokens_file()?), id)?;
    out.value(&json!({"revoked": gone}), || {
        format!("revoked {}", line(&gone))
    })?;
    Ok(ExitCode::SUCCESS)
}

fn line(t: &TokenInfo) -> String {
    let created = t.created_ms.map(iso8601).unwrap_or_else(|| "-".to_string());
    format!(
        "{}  {:<20} {}  {}",
        t.id,
        t.name,
        created,
        t.repos.join(", ")
    )
}

/// Epoch milliseconds as `YYYY-MM-DDTHH:MM:SSZ` (UTC).
fn iso8601(ms: u64) -> String {
    let secs = ms / 1000;
    let (days, rem) = ((secs / 86_400) as i64, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn times_print_as_iso8601() {
        assert_eq!(super::iso8601(0), "1970-01-01T00:00:00Z");
        assert_eq!(super::iso8601(951_782_400_000), "2000-02-29T00:00:00Z");
        assert_eq!(super::iso8601(1_767_225_599_999), "2025-12-31T23:59:59Z");
    }
}
