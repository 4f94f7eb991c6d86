//! `engram serve --http ADDR`: the same tools over streamable HTTP for a team, plus
//! `GET /healthz`, `GET /api/memory/{repo}/stats` and `POST /api/webhook/push`.
//!
//! Every endpoint but the webhook needs `Authorization: Bearer TOKEN`; tokens live
//! hashed (SHA-256) in the tokens file, each with the repositories it may reach, and
//! are compared in constant time. The webhook is authenticated by its GitHub-style
//! `X-Hub-Signature-256` HMAC instead, since pushers cannot send bearer tokens. A
//! server serves one repository's store.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path as UrlPath, Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use hmac::{Hmac, Mac};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use super::Server;

/// One token as stored: never the token itself.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenEntry {
    pub name: String,
    /// Hex SHA-256 of the token.
    pub sha256: String,
    /// Repositories (store names) it may reach; `*` for any.
    pub repos: Vec<String>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct TokenFile {
    #[serde(default)]
    tokens: Vec<TokenEntry>,
}

/// The tokens a server accepts.
#[derive(Debug, Clone, Default)]
pub struct Tokens {
    entries: Vec<(TokenEntry, [u8; 32])>,
}

/// Hex SHA-256 of a token, as the tokens file stores it.
pub fn hash_token(token: &str) -> String {
    hex(&Sha256::digest(token.as_bytes()))
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// Equal bytes, in time that does not depend on where they differ.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

impl Tokens {
    /// Read the tokens file (TOML: `[[tokens]] name, sha256, repos`).
    pub fn load(path: &Path) -> Result<Tokens, String> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            format!(
                "{}: {e}; create tokens with `engram token new`",
                path.display()
            )
        })?;
        let file: TokenFile =
            toml::from_str(&text).map_err(|e| format!("{}: {}", path.display(), e.message()))?;
        let mut entries = Vec::new();
        for t in file.tokens {
            let hash: [u8; 32] = unhex(&t.sha256)
                .and_then(|v| v.try_into().ok())
                .ok_or_else(|| {
                    format!("{}: token {:?} has no valid sha256", path.display(), t.name)
                })?;
            entries.push((t, hash));
        }
        Ok(Tokens { entries })
    }

    /// Append a new entry for `token` to the tokens file (created if missing); see
    /// [`crate::store::update_small_file`].
    pub fn add(path: &Path, name: &str, token: &str, repos: Vec<String>) -> Result<(), String> {
        // Read, append and replace under a lock, atomically: two `engram token new`
        // at once both land, and a crash never leaves a truncated file.
        crate::store::update_small_file(path, |current| {
            let mut file: TokenFile = match current {
                Some(t) => toml::from_str(&t).map_err(|e| {
                    crate::store::StoreError::Invalid(format!(
                        "{}: {}",
                        path.display(),
                        e.message()
                    ))
                })?,
                None => TokenFile::default(),
            };
            file.tokens.push(TokenEntry {
                name: name.to_string(),
                sha256: hash_token(token),
                repos,
            });
            toml::to_string(&file).map_err(|e| crate::store::StoreError::Invalid(e.to_string()))
        })
        .map_err(|e| e.to_string())
    }

    /// The entry of a presented token. Every entry is compared, so the time taken
    /// says nothing about which (if any) matched.
    pub fn check(&self, presented: &str) -> Option<&TokenEntry> {
        let h = Sha256::digest(presented.as_bytes());
        let mut found = None;
        for (entry, hash) in &self.entries {
            if constant_time_eq(&h, hash) && found.is_none() {
                found = Some(entry);
            }
        }
        found
    }
}

/// What the HTTP server needs besides the MCP server.
pub struct HttpOptions {
    pub addr: SocketAddr,
    pub tokens: Tokens,
    /// Secret for the push webhook's HMAC; `None` disables the webhook.
    pub webhook_secret: Option<String>,
}

#[derive(Clone)]
struct AppState {
    server: Server,
    tokens: Arc<Tokens>,
    webhook_secret: Option<Arc<String>>,
}

fn error(status: StatusCode, message: &str) -> Response {
    (status, Json(json!({"error": message}))).into_response()
}

async fn require_token(State(st): State<AppState>, req: Request, next: Next) -> Response {
    let presented = req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let Some(entry) = presented.and_then(|t| st.tokens.check(t)) else {
        return error(StatusCode::UNAUTHORIZED, "a valid bearer token is required");
    };
    let repo = &st.server.engine().gate.repo;
    if !entry.repos.iter().any(|r| r == repo || r == "*") {
        return error(
            StatusCode::FORBIDDEN,
            "this token may not reach this repository",
        );
    }
    next.run(req).await
}

async fn healthz() -> Json<Value> {
    Json(json!({"status": "ok"}))
}

async fn stats(State(st): State<AppState>, UrlPath(repo): UrlPath<String>) -> Response {
    let engine = st.server.engine().clone();
    if engine.gate.check_repo(&repo).is_err() {
        return error(StatusCode::NOT_FOUND, "no such repository on this server");
    }
    let r = tokio::task::spawn_blocking(move || engine.stats()).await;
    match r {
        Ok(Ok(v)) => Json(v).into_response(),
        Ok(Err(e)) => error(StatusCode::INTERNAL_SERVER_ERROR, &e),
        Err(_) => error(StatusCode::INTERNAL_SERVER_ERROR, "stats failed"),
    }
}

async fn webhook(State(st): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    let Some(secret) = &st.webhook_secret else {
        return error(
            StatusCode::FORBIDDEN,
            "the webhook is off: set webhook_secret",
        );
    };
    let signature = headers
        .get("x-hub-signature-256")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("sha256="))
        .and_then(unhex);
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(secret.as_bytes()) else {
        return error(StatusCode::INTERNAL_SERVER_ERROR, "bad webhook secret");
    };
    mac.update(&body);
    let expected = mac.finalize().into_bytes();
    if !signature.is_some_and(|s| constant_time_eq(&s, &expected)) {
        return error(
            StatusCode::UNAUTHORIZED,
            "missing or wrong X-Hub-Signature-256",
        );
    }
    let engine = st.server.engine().clone();
    let r =
        tokio::task::spawn_blocking(move || engine.call("jit_index_directory", &Map::new())).await;
    match r {
        Ok(Ok(report)) => Json(json!({"reindexed": report})).into_response(),
        Ok(Err(e)) => error(StatusCode::INTERNAL_SERVER_ERROR, &e),
        Err(_) => error(StatusCode::INTERNAL_SERVER_ERROR, "re-index failed"),
    }
}

/// Serve until the process is stopped; `on_listening` gets the bound address (the
/// port may have been 0).
pub async fn serve_http(
    server: Server,
    opts: HttpOptions,
    on_listening: impl FnOnce(SocketAddr),
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let factory = server.clone();
    let mcp = StreamableHttpService::new(
        move || Ok(factory.clone()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default().disable_allowed_hosts(),
    );
    let state = AppState {
        server,
        tokens: Arc::new(opts.tokens),
        webhook_secret: opts.webhook_secret.map(Arc::new),
    };
    let app = Router::new()
        .nest_service("/mcp", mcp)
        .route("/healthz", get(healthz))
        .route("/api/memory/{repo}/stats", get(stats))
        .layer(middleware::from_fn_with_state(state.clone(), require_token))
        .route("/api/webhook/push", post(webhook))
        .with_state(state);
    let listener = tokio::net::TcpListener::bind(opts.addr).await?;
    on_listening(listener.local_addr()?);
    axum::serve(listener, app).await?;
    Ok(())
}
