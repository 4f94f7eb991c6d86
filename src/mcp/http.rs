//! `engram serve --http ADDR`: the same tools over streamable HTTP for a team, for one
//! or many repositories: `/mcp/{repo}` (and `/mcp` when there is one),
//! `GET /api/repos`, `GET /healthz`, `GET /api/memory/{repo}/stats` and
//! `POST /api/webhook/push/{repo}` (`/api/webhook/push` when there is one).
//!
//! `{repo}` is any name the repository answers to ([`crate::gate::RepoNames`]: its
//! store's name, folder name, `owner/name` remote (as two path segments or with `%2F`),
//! alias, or percent-encoded absolute path); the request is rewritten to the store's
//! name before it is routed.
//!
//! Every endpoint but the webhook and `/healthz` (which says `ok` and nothing more)
//! needs `Authorization: Bearer TOKEN`; tokens live hashed (SHA-256) in the tokens file
//! ([`super::tokens`], re-read when it changes), each with the names of the
//! repositories it may reach, and are compared in constant time. A token that may not
//! reach a repository gets 403 whether or not the server has it, so a token learns
//! nothing of other repositories. The webhook is authenticated by its GitHub-style
//! `X-Hub-Signature-256` HMAC instead, since pushers cannot send bearer tokens. Each
//! repository is its own engine over its own store: one repository's calls never
//! open another's store.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path as UrlPath, Request, State};
use axum::http::Uri;
use axum::http::{HeaderMap, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{any_service, get, post};
use axum::{Extension, Json, Router};
use hmac::{Hmac, Mac};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::{json, Map, Value};
use sha2::Sha256;

use super::tokens::{constant_time_eq, unhex, TokenEntry, TokenSource};
use super::Server;
use crate::gate::{percent_decode, NameError, RepoNames};

/// What the HTTP server needs besides the MCP server.
pub struct HttpOptions {
    pub addr: SocketAddr,
    pub tokens: TokenSource,
    /// Secret for the push webhook's HMAC; `None` disables the webhook.
    pub webhook_secret: Option<String>,
}

#[derive(Clone)]
struct AppState {
    /// Every repository served, by name.
    servers: Arc<BTreeMap<String, Server>>,
    /// What every served repository answers to.
    names: Arc<RepoNames>,
    tokens: Arc<TokenSource>,
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

    /// Whether `entry` may reach the served repository `store`: its names are
    /// resolved now, so they mean what they mean on this server (an ambiguous or
    /// unknown name reaches nothing).
    fn reaches(&self, entry: &TokenEntry, store: &str) -> bool {
        entry
            .repos
            .iter()
            .any(|r| r == "*" || self.names.resolve(r).is_ok_and(|s| s == store))
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

/// Paths whose segment after the prefix names a repository.
const REPO_PREFIXES: &[&str] = &["/mcp/", "/api/memory/", "/api/webhook/push/"];

/// A repository name in a request's path that several served repositories answer to
/// (left unrewritten; [`require_token`] refuses it).
#[derive(Clone)]
struct Ambiguous {
    name: String,
    repos: Vec<String>,
}

/// Rewrite the repository named in a request's path to its store's name, before the
/// request is routed. Two segments (`owner/name`) are tried before one; a name that
/// resolves to nothing is left as it is (and refused further on). Nothing is
/// answered here: who may reach what is decided after the token is checked.
async fn name_to_store(State(st): State<AppState>, mut req: Request, next: Next) -> Response {
    let path = req.uri().path().to_string();
    let Some((prefix, tail)) = REPO_PREFIXES
        .iter()
        .find_map(|p| path.strip_prefix(p).map(|t| (*p, t)))
    else {
        return next.run(req).await;
    };
    let segments: Vec<&str> = tail.split('/').collect();
    for take in [2, 1] {
        if segments.len() < take || segments[..take].iter().any(|s| s.is_empty()) {
            continue;
        }
        let Some(name) = percent_decode(&segments[..take].join("/")) else {
            continue;
        };
        match st.names.resolve(&name) {
            Ok(store) => {
                let mut rewritten = format!("{prefix}{store}");
                for rest in &segments[take..] {
                    rewritten.push('/');
                    rewritten.push_str(rest);
                }
                if let Some(q) = req.uri().query() {
                    rewritten.push('?');
                    rewritten.push_str(q);
                }
                if let Ok(uri) = rewritten.parse::<Uri>() {
                    *req.uri_mut() = uri;
                }
                break;
            }
            Err(NameError::Ambiguous { name, repos }) => {
                req.extensions_mut().insert(Ambiguous { name, repos });
                break;
            }
            Err(NameError::Unknown(_)) => {}
        }
    }
    next.run(req).await
}

async fn require_token(State(st): State<AppState>, mut req: Request, next: Next) -> Response {
    let presented = req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let tokens = st.tokens.current();
    let Some(entry) = presented.and_then(|t| tokens.check(t)) else {
        return error(StatusCode::UNAUTHORIZED, "a valid bearer token is required");
    };
    let reaches = |store: &str| st.reaches(entry, store);
    if let Some(amb) = req.extensions().get::<Ambiguous>() {
        let mine: Vec<&str> = amb
            .repos
            .iter()
            .map(String::as_str)
            .filter(|r| reaches(r))
            .collect();
        // Only a token that reaches one of them learns that the name is shared.
        if mine.is_empty() {
            return error(
                StatusCode::FORBIDDEN,
                "this token may not reach this repository",
            );
        }
        return error(
            StatusCode::CONFLICT,
            &format!(
                "{:?} names several repositories on this server; use the store name: {}",
                amb.name,
                mine.join(", ")
            ),
        );
    }
    match repo_of_path(req.uri().path(), &st) {
        Some(repo) if st.servers.contains_key(repo) && !reaches(repo) => {
            return error(
                StatusCode::FORBIDDEN,
                "this token may not reach this repository",
            );
        }
        Some(repo) if !st.servers.contains_key(repo) => {
            // Only a token that may reach any repository, or that names this one,
            // learns that it is not served here.
            let named = entry.repos.iter().any(|r| r == "*" || r == repo);
            return if named {
                error(
                    StatusCode::NOT_FOUND,
                    "no such repository on this server; GET /api/repos lists them",
                )
            } else {
                error(
                    StatusCode::FORBIDDEN,
                    "this token may not reach this repository",
                )
            };
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

async fn not_found() -> Response {
    error(StatusCode::NOT_FOUND, "no such endpoint")
}

/// Liveness only: answered without a token, so it says nothing but `ok`.
async fn healthz() -> Json<Value> {
    Json(json!({"status": "ok"}))
}

/// The repositories the caller's token may reach, with their MCP paths and names.
async fn repos(State(st): State<AppState>, Extension(caller): Extension<Caller>) -> Json<Value> {
    let list: Vec<Value> = st
        .servers
        .keys()
        .filter(|name| st.reaches(&caller.0, name))
        .map(|name| {
            json!({"repo": name, "mcp": format!("/mcp/{name}"), "names": st.names.names_of(name)})
        })
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
    let names = match servers.first() {
        Some(s) => s.engine().gate.names().clone(),
        None => return Err("no repository to serve".into()),
    };
    let mut by_name = BTreeMap::new();
    for server in servers {
        let name = server.engine().gate.repo.clone();
        if by_name.insert(name.clone(), server).is_some() {
            return Err(format!("repository {name} is served twice").into());
        }
    }
    let state = AppState {
        servers: Arc::new(by_name),
        names,
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
    let routed = app
        .route("/api/repos", get(repos))
        .route("/api/memory/{repo}/stats", get(stats))
        // Unknown paths too are behind the token, so that without one nothing tells
        // whether a repository name resolves here.
        .fallback(not_found)
        .layer(middleware::from_fn_with_state(state.clone(), require_token))
        .route("/healthz", get(healthz))
        .route("/api/webhook/push", post(webhook_only))
        .route("/api/webhook/push/{repo}", post(webhook))
        .with_state(state.clone());
    // A layer on a router runs after routing; as the fallback of an outer router,
    // the rewrite runs before the inner one routes.
    let app = Router::new()
        .fallback_service(routed)
        .layer(middleware::from_fn_with_state(state, name_to_store));
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
