//! The check of `database_url`: a PostgreSQL URL engram can use, and the typed
//! reason one cannot be used. It never repeats the password, in a message or a
//! variant's data.

const EXPECTED: &str = "expected postgres://USER:PASSWORD@HOST:PORT/DATABASE";
/// The TLS modes (libpq's names) the team backend honours.
const SSL_MODES: &[&str] = &["disable", "prefer", "require", "verify-ca", "verify-full"];

/// Why a value is not a PostgreSQL URL engram can use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DatabaseUrlError {
    #[error("not a PostgreSQL URL; {EXPECTED}")]
    NotPostgres,
    #[error("a URL holds no spaces; {EXPECTED}")]
    Whitespace,
    #[error("unclosed [ in the host; {EXPECTED}")]
    UnclosedBracket,
    #[error("no host; {EXPECTED}")]
    NoHost,
    /// The text after the host's last `:` (never part of the password).
    #[error("port {port:?} is not a port number; {EXPECTED}")]
    BadPort { port: String },
    #[error("no database name; {EXPECTED}")]
    NoDatabase,
    #[error("sslmode={mode} is not supported; expected one of {}", SSL_MODES.join(", "))]
    SslMode { mode: String },
}

/// A PostgreSQL URL engram can use: `postgres://` or `postgresql://`, a host, a
/// database name, and if it names one, a TLS mode the team backend honours.
pub fn check_database_url(v: &str) -> Result<(), DatabaseUrlError> {
    let rest = v
        .strip_prefix("postgres://")
        .or_else(|| v.strip_prefix("postgresql://"))
        .ok_or(DatabaseUrlError::NotPostgres)?;
    if v.chars().any(char::is_whitespace) {
        return Err(DatabaseUrlError::Whitespace);
    }
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let (host_only, port) = match host.strip_prefix('[') {
        // [IPv6]:port
        Some(r) => match r.split_once(']') {
            Some((h, rest)) => (h, rest.strip_prefix(':')),
            None => return Err(DatabaseUrlError::UnclosedBracket),
        },
        None => match host.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (host, None),
        },
    };
    if host_only.is_empty() {
        return Err(DatabaseUrlError::NoHost);
    }
    if let Some(p) = port {
        if p.parse::<u16>().map_or(true, |p| p == 0) {
            return Err(DatabaseUrlError::BadPort {
                port: p.to_string(),
            });
        }
    }
    let (db, query) = path.split_once('?').unwrap_or((path, ""));
    if db.is_empty() {
        return Err(DatabaseUrlError::NoDatabase);
    }
    for pair in query.split('&') {
        if let Some(mode) = pair.strip_prefix("sslmode=") {
            if !SSL_MODES.contains(&mode) {
                return Err(DatabaseUrlError::SslMode {
                    mode: mode.to_string(),
                });
            }
        }
    }
    Ok(())
}
