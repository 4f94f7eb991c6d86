//! `engram serve` (MCP over stdio), `engram enrich` and `engram audit`: the commands
//! that go through the security gate (with the external providers of the config
//! file, asked when a call wants them).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use engram::gate::{Caps, Gate, RepoNames};
use engram::index::IndexOptions;
use engram::mcp::{Engine, Profile, Server};
use engram::memory::{parse_since, Memories};
use engram::memory_pg::PgDatabase;
use serde_json::json;

use super::output::Output;
use super::{config, embedder, repo_names, store_dir_for, store_options, Cli};

/// A repository to serve: its root, store directory and store name.
pub(super) struct Target {
    pub root: PathBuf,
    pub dir: PathBuf,
    pub store: String,
}

/// The repository containing the current directory (or `repo`) and its store.
pub(super) fn target(cli: &Cli, repo: Option<&PathBuf>) -> Result<Target> {
    let cwd = std::env::current_dir().context("reading the current directory")?;
    let start = repo.cloned().unwrap_or(cwd);
    let root = engram::location::repo_root(&start).unwrap_or_else(|| start.clone());
    let dir = store_dir_for(cli, &root)?;
    let store = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "store".into());
    Ok(Target { root, dir, store })
}

/// The engine for the repository containing the current directory, answering to its
/// own names only.
fn local_engine(cli: &Cli, team: Option<&Arc<PgDatabase>>) -> Result<Engine> {
    let t = target(cli, None)?;
    let names = repo_names::table(
        vec![repo_names::repository(&t.store, &t.root)],
        &config().list("aliases"),
    );
    engine(cli, &t, Arc::new(names), team)
}

/// The engine for repository `t`, whose gate resolves callers' repository names with
/// `names` (every served repository's); with `team` (database_url set), its memory
/// tools run on that database, under the repository's name (as the CLI's memory
/// commands do).
fn engine(
    cli: &Cli,
    t: &Target,
    names: Arc<RepoNames>,
    team: Option<&Arc<PgDatabase>>,
) -> Result<Engine> {
    let (root, dir, repo_name) = (t.root.clone(), &t.dir, &t.store);
    let memories = Memories::open_with(dir, store_options(cli, dir)?)
        .with_context(|| format!("opening store {}", dir.display()))?
        .with_embedder(embedder()?);
    let cfg = config();
    let mut allowed = cfg.list("allowed_repos");
    if !cfg.flag("cross_repo") {
        // Cross-repository access is off: the allowed list cannot widen the scope.
        allowed.clear();
    }
    let gate = Gate::new(
        repo_name,
        Some(root),
        allowed,
        Caps {
            chunk_bytes: cfg.bytes("chunk_cap_bytes") as usize,
            total_bytes: cfg.bytes("total_cap_bytes") as usize,
        },
    )
    .with_names(names);
    let index_options = IndexOptions {
        max_file_bytes: cfg.bytes("max_file_bytes"),
        secret_action: if cfg.get("secret_action") == "exclude" {
            engram::index::SecretAction::Exclude
        } else {
            engram::index::SecretAction::Redact
        },
        embedder: embedder()?,
        ..IndexOptions::default()
    };
    let assistant = super::assistant(dir, false)?;
    let mut engine = Engine::new(memories, gate, index_options)
        .with_assistant(assistant)
        .with_external(super::providers::external()?);
    engine.first_index_wait = std::time::Duration::from_millis(cfg.bytes("first_index_wait_ms"));
    if let Some(db) = team {
        // What the team backend stores is anchored to this repository's local code
        // index (the engine's store), for staleness.
        let anchors = engram::stale::LocalCodeAnchors::new(engine.memories.clone());
        let backend = db
            .memories(repo_name, embedder()?)
            .with_context(|| format!("opening repository {repo_name} on {}", db.server()))?
            .with_ef_search(super::team::ef_search()?)?
            .with_anchors(Arc::new(anchors));
        engine = engine.with_backend(Arc::new(backend));
    }
    Ok(engine)
}

/// `engram serve`: MCP over stdio until the client goes away, or over HTTP (for one
/// repository or several).
pub fn serve(
    cli: &Cli,
    repos: &[PathBuf],
    tools: Option<&str>,
    http: Option<&str>,
) -> Result<ExitCode> {
    let profile: Profile = tools
        .unwrap_or_else(|| config().get("tools"))
        .parse()
        .map_err(anyhow::Error::msg)?;
    if repos.len() > 1 && http.is_none() {
        anyhow::bail!("several --repo need --http: over stdio a server serves one repository");
    }
    if repos.len() > 1 && (cli.store.is_some() || config().get_opt("store").is_some()) {
        anyhow::bail!(
            "several repositories need a store each: unset --store / ENGRAM_STORE and let each live under ENGRAM_HOME"
        );
    }
    // One database (one pool) for every repository served.
    let team = match config().get_opt("database_url") {
        Some(url) => Some(super::team::connect(url)?),
        None => None,
    };
    let targets = if repos.is_empty() {
        vec![target(cli, None)?]
    } else {
        repos
            .iter()
            .map(|r| target(cli, Some(r)))
            .collect::<Result<Vec<_>>>()?
    };
    // One table of names for every repository served, so that a name two share is
    // refused by each, and one's names are out of the other's scope.
    let names = Arc::new(repo_names::table(
        targets
            .iter()
            .map(|t| repo_names::repository(&t.store, &t.root))
            .collect(),
        &config().list("aliases"),
    ));
    let mut servers = Vec::with_capacity(targets.len());
    for t in &targets {
        servers.push(Server::new(
            engine(cli, t, names.clone(), team.as_ref())?,
            profile,
        ));
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let Some(addr) = http else {
        let server = servers.remove(0);
        runtime
            .block_on(server.serve_stdio())
            .map_err(|e| anyhow::anyhow!("MCP server: {e}"))?;
        return Ok(ExitCode::SUCCESS);
    };
    let cfg = config();
    let addr = if addr.is_empty() {
        cfg.get("server_addr")
    } else {
        addr
    };
    let addr: std::net::SocketAddr = addr
        .parse()
        .with_context(|| format!("--http {addr:?} is not HOST:PORT"))?;
    let tokens_file = cfg.get_opt("tokens_file").context(
        "the HTTP server needs tokens: set tokens_file and create one with `engram token new`",
    )?;
    let tokens = engram::mcp::tokens::TokenSource::open(std::path::Path::new(tokens_file))?;
    let opts = engram::mcp::http::HttpOptions {
        addr,
        tokens,
        webhook_secret: cfg.get_opt("webhook_secret").map(String::from),
    };
    let json = cli.json;
    let names: Vec<String> = servers
        .iter()
        .map(|s| s.engine().gate.repo.clone())
        .collect();
    runtime
        .block_on(engram::mcp::http::serve_http(servers, opts, |bound| {
            // The one line on stdout: where to connect (the port may have been 0).
            if json {
                println!(
                    "{}",
                    json!({"listening": bound.to_string(), "repos": names})
                );
            } else {
                let urls: Vec<String> = names
                    .iter()
                    .map(|n| format!("http://{bound}/mcp/{n}"))
                    .collect();
                println!("listening on {}", urls.join(" "));
            }
            tracing::info!("serving MCP over HTTP on {bound}");
        }))
        .map_err(|e| anyhow::anyhow!("HTTP server: {e}"))?;
    Ok(ExitCode::SUCCESS)
}

/// `engram enrich PROMPT`: the context block an agent would get (its memories and
/// notes from the team database, with database_url set).
pub fn enrich(
    cli: &Cli,
    out: &Output,
    prompt: &str,
    budget: usize,
    providers: bool,
) -> Result<ExitCode> {
    let team = match config().get_opt("database_url") {
        Some(url) => Some(super::team::connect(url)?),
        None => None,
    };
    let engine = local_engine(cli, team.as_ref())?;
    let v = engine
        .call(
            "enrich_prompt",
            &json!({"prompt": prompt, "budget": budget, "providers": providers})
                .as_object()
                .cloned()
                .unwrap_or_default(),
        )
        .map_err(anyhow::Error::msg)?;
    out.value(&v, || v["context"].as_str().unwrap_or("").to_string())?;
    Ok(ExitCode::SUCCESS)
}

/// `engram audit [--since T]`: the audit trail (the team database's, with
/// database_url set).
pub fn audit(cli: &Cli, out: &Output, since: Option<&str>) -> Result<ExitCode> {
    let team = match config().get_opt("database_url") {
        Some(url) => Some(super::team::connect(url)?),
        None => None,
    };
    let engine = local_engine(cli, team.as_ref())?;
    let now = engram::store::now_ms();
    let since_ms = since.map(|s| parse_since(s, now)).transpose()?.unwrap_or(0);
    let events = engine.audit.read(since_ms)?;
    out.value(&json!({"events": events}), || {
        events
            .iter()
            .map(|e| {
                format!(
                    "{}  {:<26} {:>4} results  {}{}{}",
                    super::output::iso_ms(e.time_ms),
                    e.op,
                    e.results,
                    e.query.as_deref().unwrap_or(""),
                    if e.flagged.is_empty() {
                        String::new()
                    } else {
                        format!("  FLAGGED {}", e.flagged.join(","))
                    },
                    e.error
                        .as_deref()
                        .map(|x| format!("  ERROR {x}"))
                        .unwrap_or_default()
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    })?;
    Ok(ExitCode::SUCCESS)
}
