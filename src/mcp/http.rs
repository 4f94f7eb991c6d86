//! `engram serve --http ADDR`: the same tools over streamable HTTP for a team, for one
//! or many repositories: `/mcp/{repo}` (and `/mcp` when there is one),
//! `GET /api/repos`, `GET /healthz`, `GET /api/memory/{repo}/stats` and
//! `POST /api/webhook/push/{repo}` (`/api/webhook/push` when there is one).
//!
//! Every endpoint but the webhook needs `Authorization: Bearer TOKEN`; tokens live
//! hashed (SHA-256) in the tokens file, each with the repositories it may reach, and
//! are compared in constant time. A token that may not reach a repository gets 403
//! whether or not the server has it, so a token learns nothing of other repositories.
//! The webhook is authenticated by its GitHub-style `X-Hub-Signature-256` HMAC
//! instead, since pushers cannot send bearer tokens. Each repository is its own
//! engine over its own store: one repository's calls never open another's store.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path as UrlPath, Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{any_service, get, post};
use axum::{Extension, Json, Router};
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
    /// Every repository served, by name.
    servers: Arc<BTreeMap<String, Server>>,
    tokens: Arc<Tokens>,
    webhook_secret: Option<Arc<String>>,
}

impl AppState {
    /// The repository a request without one in its path means: the only one.
    fn only(&self) -> Option<&str> {
        match self.servers.len() {
            1 => self.servers.keys().next().map(String::as_str),
            _ => None,
        }
    }
}

fn error(status: StatusCode, message: &str) -> Response {
    (status, Json(json!({"error": message}))).into_response()
}

/// The repository a path is about: `/mcp/{repo}…`, `/api/memory/{repo}/…`, or the
/// only repository for `/mcp`; `None` for paths about no repository.
fn repo_of_path<'a>(path: &'a str, st: &'a AppState) -> Option<&'a str> {
    let rest = path
        .strip_prefix("/mcp")
        .or_else(|| path.strip_prefix("/api/memory"))?;
    match rest.strip_prefix('/') {
        Some(tail) if !tail.is_empty() => tail.split('/').next(),
        _ if path.starts_with("/mcp") => Some(st.only().unwrap_or("")),
        _ => None,
    }
}

/// The token entry a request presented, for the handlers behind the check.
#[derive(Clone)]
struct Caller(Arc<TokenEntry>);

async fn require_token(State(st): State<AppState>, mut req: Request, next: Next) -> Response {
    let presented = req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let Some(entry) = presented.and_then(|t| st.tokens.check(t)) else {
        return error(StatusCode::UNAUTHORIZED, "a valid bearer token is required");
    };
    let reaches = |repo: &str| entry.repos.iter().any(|r| r == repo || r == "*");
    match repo_of_path(req.uri().path(), &st) {
        Some(repo) if !reaches(repo) => {
            return error(
                StatusCode::FORBIDDEN,
                "this token may not reach this repository",
            );
        }
        Some(repo) if !st.servers.contains_key(repo) => {
            return error(
                StatusCode::NOT_FOUND,
                "no such repository on this server; GET /api/repos lists them",
            );
        }
        Some(_) => {}
        // A path about no repository is for tokens that reach one of this server's.
        None if !st.servers.keys().any(|name| reaches(name)) => {
            return error(
                StatusCode::FORBIDDEN,
                "this token may reach none of this server's repositories",
            );
        }
        None => {}
    }
    req.extensions_mut().insert(Caller(Arc::new(entry.clone())));
    next.run(req).await
}

async fn healthz() -> Json<Value> {
    Json(json!({"status": "ok"}))
}

/// The repositories the caller's token may reach, with their MCP paths.
async fn repos(State(st): State<AppState>, Extension(caller): Extension<Caller>) -> Json<Value> {
    let list: Vec<Value> = st
        .servers
        .keys()
        .filter(|name| caller.0.repos.iter().any(|r| r == *name || r == "*"))
        .map(|name| json!({"repo": name, "mcp": format!("/mcp/{name}")}))
        .collect();
    Json(json!({"repos": list}))
}

async fn stats(State(st): State<AppState>, UrlPath(repo): UrlPath<String>) -> Response {
    let Some(server) = st.servers.get(&repo) else {
        return error(StatusCode::NOT_FOUND, "no such repository on this server");
    };
    let engine = server.engine().clone();
    let r = tokio::task::spawn_blocking(move || engine.stats()).await;
    match r {
        Ok(Ok(v)) => Json(v).into_response(),
        Ok(Err(e)) => error(StatusCode::INTERNAL_SERVER_ERROR, &e),
        Err(_) => error(StatusCode::INTERNAL_SERVER_ERROR, "stats failed"),
    }
}

async fn webhook_only(State(st): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    let Some(repo) = st.only().map(String::from) else {
        return error(
            StatusCode::NOT_FOUND,
            "this server has several repositories: POST /api/webhook/push/{repo}",
        );
    };
    push(st, repo, headers, body).await
}

async fn webhook(
    State(st): State<AppState>,
    UrlPath(repo): UrlPath<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    push(st, repo, headers, body).await
}

/// Re-index `repo` for a push whose HMAC checks out.
async fn push(st: AppState, repo: String, headers: HeaderMap, body: Bytes) -> Response {
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
    // The signature is checked first: an unsigned request learns nothing, not even
    // whether the repository exists.
    let Some(server) = st.servers.get(&repo) else {
        return error(StatusCode::NOT_FOUND, "no such repository on this server");
    };
    let engine = server.engine().clone();
    let r =
        tokio::task::spawn_blocking(move || engine.call("jit_index_directory", &Map::new())).await;
    match r {
        Ok(Ok(report)) => Json(json!({"reindexed": report})).into_response(),
        Ok(Err(e)) => error(StatusCode::INTERNAL_SERVER_ERROR, &e),
        Err(_) => error(StatusCode::INTERNAL_SERVER_ERROR, "re-index failed"),
    }
}

/// Serve until the process is stopped; `on_listening` gets the bound address (the
/// port may have been 0). Each server is one repository, reached at `/mcp/{name}`
/// where `name` is its gate's repository name (and at `/mcp` when it is the only one).
pub async fn serve_http(
    servers: Vec<Server>,
    opts: HttpOptions,
    on_listening: impl FnOnce(SocketAddr),
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let mut by_name = BTreeMap::new();
    for server in servers {
        let name = server.engine().gate.repo.clone();
        if by_name.insert(name.clone(), server).is_some() {
            return Err(format!("repository {name} is served twice").into());
        }
    }
    let state = AppState {
        servers: Arc::new(by_name),
        tokens: Arc::new(opts.tokens),
        webhook_secret: opts.webhook_secret.map(Arc::new),
    };
    let mut app = Router::new();
    for (name, server) in state.servers.iter() {
        let mcp = mcp_service(server.clone());
        app = app.nest_service(&format!("/mcp/{name}"), mcp.clone());
        if state.servers.len() == 1 {
            app = app.route_service("/mcp", any_service(mcp));
        }
    }
    let app = app
        .route("/healthz", get(healthz))
        .route("/api/repos", get(repos))
        .route("/api/memory/{repo}/stats", get(stats))
        .layer(middleware::from_fn_with_state(state.clone(), require_token))
        .route("/api/webhook/push", post(webhook_only))
        .route("/api/webhook/push/{repo}", post(webhook))
        .with_state(state);
    let listener = tokio::net::TcpListener::bind(opts.addr).await?;
    on_listening(listener.local_addr()?);
    axum::serve(listener, app).await?;
    Ok(())
}

fn mcp_service(server: Server) -> StreamableHttpService<Server, LocalSessionManager> {
    StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default().disable_allowed_hosts(),
    )
}
