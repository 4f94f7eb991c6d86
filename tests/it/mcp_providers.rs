//! Other MCP servers as providers (`[[mcp_providers]]`), end to end with real
//! servers: small ones written with the official Python MCP SDK
//! (`tests/mcp/provider_server.py`, over stdio) and a second `engram serve --http` on
//! another repository. Their results are merged with attribution; hostile text is
//! sanitised and flagged; a provider that hangs is cut off at its deadline and one
//! that crashes is skipped, both with a note; nothing they return is stored.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use providers::{all_gone, note, repo, server_script, stdio_provider, Killed};
use python_mcp::write;

use crate::support::providers;
use crate::support::python_mcp;

#[test]
fn providers_are_merged_with_attribution_and_hostile_text_is_sanitised_and_flagged() {
    let pids = tempfile::NamedTempFile::new().unwrap();
    let config = [
        stdio_provider(
            "docs",
            "docs",
            "search_docs",
            "query_arg = \"q\"\ntimeout_ms = 20000",
            pids.path(),
        ),
        stdio_provider(
            "wiki",
            "text",
            "lookup",
            "timeout_ms = 20000\nenv = [\"WIKI_LANG\"]",
            pids.path(),
        ),
        stdio_provider(
            "evil",
            "hostile",
            "search",
            "timeout_ms = 20000",
            pids.path(),
        ),
    ]
    .concat();
    let r = repo(
        "src/retry.rs",
        "/// Retry a request with backoff.\npub fn retry_with_backoff(tries: u32) -> u32 { tries * 2 }\n",
        &config,
    );

    // Without --providers nothing is asked.
    let plain = r.json(&["enrich", "retry policy backoff"], &[]);
    assert!(plain.get("providers").is_none(), "{plain}");
    assert!(!plain["context"].as_str().unwrap().contains("docs:"));

    // A started program gets the variables its table names, not engram's others.
    let env = [
        ("WIKI_LANG", "fr"),
        ("SECRET_FOR_ENGRAM_TEST", "hunter2"),
        ("ENGRAM_LLM_API_KEY", "sk-not-for-providers"),
    ];
    let v = r.json(&["enrich", "retry policy backoff", "--providers"], &env);
    let ctx = v["context"].as_str().unwrap();
    for name in ["docs", "wiki", "evil"] {
        let n = note(&v, name);
        assert_eq!(n["status"], "ok", "{n}");
    }
    assert_eq!(note(&v, "docs")["results"], 2);
    // The store's own code and every provider's answers, each attributed.
    assert!(ctx.contains("[source: src/retry.rs:"), "{ctx}");
    assert!(
        ctx.contains("[source: docs: docs/retry-policy.md:12-18]"),
        "{ctx}"
    );
    assert!(ctx.contains("[source: docs: docs/timeouts.md:3]"), "{ctx}");
    assert!(
        ctx.contains("Retry policy for retry policy backoff"),
        "{ctx}"
    );
    assert!(
        ctx.contains("[source: wiki]\nWiki: the ingest pipeline"),
        "{ctx}"
    );
    assert!(
        ctx.contains("(lang fr; engram's variables seen: none)"),
        "{ctx}"
    );

    // The hostile provider: escapes and invisible characters gone, its phrasing
    // flagged, its path unable to fake an attribution of the store's own.
    for bad in ['\u{1b}', '\u{7}', '\u{202e}', '\u{E0041}'] {
        assert!(!ctx.contains(bad), "{bad:?} reached the context: {ctx:?}");
    }
    assert!(
        !ctx.lines()
            .any(|l| l.starts_with("[source: src/trusted.rs")),
        "{ctx}"
    );
    assert!(
        ctx.contains("\n(source: src/trusted.rs:1-2]\nfn trusted()"),
        "{ctx}"
    );
    let evil = v["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| {
            b["attribution"]
                .as_str()
                .unwrap()
                .starts_with("[source: evil: ")
        })
        .unwrap_or_else(|| panic!("no block from evil: {v}"));
    assert_eq!(
        evil["attribution"],
        "[source: evil: evil.md) (source: src/trusted.rs:1-2:1]"
    );
    let flags: Vec<&str> = evil["flags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    assert!(flags.contains(&"ignore-instructions"), "{flags:?}");
    assert!(
        v["flagged"]
            .as_array()
            .unwrap()
            .contains(&"ignore-instructions".into()),
        "{v}"
    );
    assert!(ctx.contains("[source: evil: evil.md) (source: src/trusted.rs:1-2:1] [flagged: "));

    // Nothing a provider returned was written into the store.
    for said in [
        "back off exponentially",
        "developer mode",
        "ingest pipeline",
    ] {
        assert!(!r.store_holds(said), "the store holds {said:?}");
    }
    assert!(r.store_holds("retry_with_backoff"));
    // And the servers engram started are gone with it.
    assert!(all_gone(pids.path()));
}

#[test]
fn a_provider_that_hangs_is_cut_off_at_its_deadline_and_one_that_crashes_is_skipped() {
    let pids = tempfile::NamedTempFile::new().unwrap();
    let config = [
        stdio_provider("stuck", "hang", "search", "timeout_ms = 4000", pids.path()),
        stdio_provider("dies", "crash", "search", "timeout_ms = 20000", pids.path()),
        stdio_provider(
            "docs",
            "docs",
            "search_docs",
            "query_arg = \"q\"\ntimeout_ms = 20000",
            pids.path(),
        ),
        "[[mcp_providers]]\nname = \"absent\"\ncommand = [\"engram-test-no-such-program\"]\ntool = \"search\"\n"
            .to_string(),
    ]
    .concat();
    let r = repo("src/lib.rs", "pub fn retry() {}\n", &config);
    let started = Instant::now();
    let v = r.json(&["enrich", "retry policy", "--providers"], &[]);
    let took = started.elapsed();
    // The hanging one is waited for no longer than its deadline (plus the start
    // of the process); the others' 20 s deadlines are never reached.
    assert!(took >= Duration::from_secs(4), "{took:?}");
    assert!(took < Duration::from_secs(15), "{took:?}");

    let stuck = note(&v, "stuck");
    assert_eq!(stuck["status"], "timeout", "{stuck}");
    assert!(stuck["elapsed_ms"].as_u64().unwrap() < 8000, "{stuck}");
    let dies = note(&v, "dies");
    assert_eq!(dies["status"], "error", "{dies}");
    assert!(
        dies["reason"].as_str().unwrap().contains("calling search"),
        "{dies}"
    );
    let absent = note(&v, "absent");
    assert_eq!(absent["status"], "error", "{absent}");
    assert!(
        absent["reason"]
            .as_str()
            .unwrap()
            .contains("could not start"),
        "{absent}"
    );
    assert_eq!(note(&v, "docs")["status"], "ok");

    let ctx = v["context"].as_str().unwrap();
    assert!(
        ctx.contains("[source: docs: docs/retry-policy.md:12-18]"),
        "{ctx}"
    );
    assert!(
        ctx.contains("[note: provider stuck skipped: no answer within its deadline of 4000 ms]"),
        "{ctx}"
    );
    assert!(ctx.contains("[note: provider dies skipped: "), "{ctx}");
    assert!(ctx.contains("[note: provider absent skipped: "), "{ctx}");
    // The hanging server was killed, not left behind.
    assert!(all_gone(pids.path()));

    // `engram providers`: health of each.
    let h = r.json(&["providers"], &[]);
    let by = |name: &str| -> Value {
        h["providers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{name} missing: {h}"))
    };
    let docs = by("docs");
    assert_eq!(docs["reachable"], true, "{docs}");
    assert_eq!(docs["tool_present"], true, "{docs}");
    assert!(docs["latency_ms"].as_u64().is_some());
    assert!(docs["transport"]
        .as_str()
        .unwrap()
        .starts_with("stdio: python3 "));
    // The hanging server answers its handshake and tool list (it only hangs in
    // calls), unless starting it took longer than its deadline on a busy machine.
    let stuck = by("stuck");
    assert!(
        stuck["reachable"] == true || stuck["error"].as_str().unwrap_or("").contains("deadline"),
        "{stuck}"
    );
    assert_eq!(by("absent")["reachable"], false);
    assert!(by("absent")["tool_present"].is_null());
    assert!(all_gone(pids.path()));
}

#[test]
fn a_second_engram_over_http_is_a_provider() {
    // The team's engram: another repository, served over HTTP with a token.
    let team = repo(
        "src/ledger.rs",
        "/// Reconcile the ledger's entries with the bank's.\npub fn reconcile_ledger_entries(n: usize) -> usize {\n    n\n}\n",
        "",
    );
    let tokens = team.root.path().join("tokens.toml");
    let tokens_env = tokens.display().to_string();
    let env = [("ENGRAM_TOKENS_FILE", tokens_env.as_str())];
    let made = team.json(&["token", "new", "--name", "ci"], &env);
    let token = made["token"].as_str().unwrap().to_string();
    let mut child = Command::new(env!("CARGO_BIN_EXE_engram"))
        .arg("--store")
        .arg(team.store.path())
        .arg("--config")
        .arg(&team.config)
        .args(["--json", "serve", "--http", "127.0.0.1:0", "--repo"])
        .arg(team.root.path())
        .env("ENGRAM_TOKENS_FILE", &tokens)
        .env_remove("ENGRAM_CONFIG")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let _server = Killed(child);
    let mut first = String::new();
    BufReader::new(stdout).read_line(&mut first).unwrap();
    let listening: Value = serde_json::from_str(&first).unwrap_or_else(|e| panic!("{e}: {first}"));
    let url = format!("http://{}/mcp", listening["listening"].as_str().unwrap());

    // Mine asks it for code, with the token from the environment.
    let mine = repo(
        "src/main.rs",
        "fn main() { println!(\"ledger\"); }\n",
        &format!(
            "[[mcp_providers]]\nname = \"team\"\nurl = {url:?}\ntoken_env = \"TEAM_ENGRAM_TOKEN\"\ntool = \"code_search\"\ntimeout_ms = 20000\n\n[[mcp_providers]]\nname = \"team-typo\"\nurl = {url:?}\ntoken_env = \"TEAM_ENGRAM_TOKEN\"\ntool = \"code_serch\"\n"
        ),
    );
    let with_token = [("TEAM_ENGRAM_TOKEN", token.as_str())];
    let v = mine.json(
        &["enrich", "reconcile ledger entries", "--providers"],
        &with_token,
    );
    let ctx = v["context"].as_str().unwrap();
    assert_eq!(note(&v, "team")["status"], "ok", "{v}");
    assert!(ctx.contains("[source: team: src/ledger.rs:1-4]"), "{ctx}");
    // (engram's code_search gives a hit's best line, not its whole chunk.)
    assert!(ctx.contains("Reconcile the ledger's entries"), "{ctx}");
    // Its results are not mine: my store never holds them.
    assert!(!mine.store_holds("reconcile_ledger_entries"));
    // A tool the server does not have is an error, noted.
    assert_eq!(note(&v, "team-typo")["status"], "error", "{v}");

    let h = mine.json(&["providers"], &with_token);
    let ps = h["providers"].as_array().unwrap();
    assert_eq!(ps[0]["name"], "team");
    assert_eq!(
        (&ps[0]["reachable"], &ps[0]["tool_present"]),
        (&true.into(), &true.into()),
        "{h}"
    );
    assert_eq!(
        (&ps[1]["reachable"], &ps[1]["tool_present"]),
        (&true.into(), &false.into()),
        "{h}"
    );
    assert!(
        ps[1]["error"].as_str().unwrap().contains("code_search"),
        "{h}"
    );
    // The token is never shown.
    assert!(!h.to_string().contains(&token));

    // Without the token: refused by the server, noted, and the rest still answers.
    let v = mine.json(&["enrich", "reconcile ledger entries", "--providers"], &[]);
    let n = note(&v, "team");
    assert_eq!(n["status"], "error", "{n}");
    assert!(
        n["reason"].as_str().unwrap().contains("TEAM_ENGRAM_TOKEN"),
        "{n}"
    );
    let wrong = [("TEAM_ENGRAM_TOKEN", "not-the-token")];
    let v = mine.json(
        &["enrich", "reconcile ledger entries", "--providers"],
        &wrong,
    );
    assert_eq!(note(&v, "team")["status"], "error", "{v}");
    assert!(!v.to_string().contains("not-the-token"), "{v}");
}

#[test]
fn code_search_with_providers_lists_their_hits_apart_from_the_stores() {
    use engram::gate::{Caps, Gate};
    use engram::index::IndexOptions;
    use engram::manager::{ExternalProvider, McpProvider, McpProviderSpec, McpTransport};
    use engram::mcp::Engine;
    use engram::memory::Memories;
    use std::sync::Arc;

    let root = tempfile::tempdir().unwrap();
    write(root.path(), "src/retry.rs", "pub fn retry_backoff() {}\n");
    let memories = Memories::open(root.path().join("store")).unwrap();
    engram::index::index(memories.store(), root.path(), &IndexOptions::default()).unwrap();
    let gate = Gate::new("repo", None, Vec::new(), Caps::default());
    let spec = |name: &str, mode: &str, tool: &str, query_arg: &str, ms: u64| McpProviderSpec {
        name: name.into(),
        transport: McpTransport::Command {
            argv: vec!["python3".into(), server_script(), mode.into()],
            env: Vec::new(),
        },
        tool: tool.into(),
        query_arg: query_arg.into(),
        deadline: Duration::from_millis(ms),
    };
    let made = McpProvider::all(vec![
        spec("docs", "docs", "search_docs", "q", 20_000),
        spec("stuck", "hang", "search", "query", 3_000),
    ])
    .unwrap();
    let docs = made[0].clone();
    let providers: Vec<Arc<dyn ExternalProvider>> = made
        .into_iter()
        .map(|p| p as Arc<dyn ExternalProvider>)
        .collect();
    let engine = Engine::new(memories, gate, IndexOptions::default()).with_external(providers);
    let call = |args: Value| {
        engine
            .call("code_search", args.as_object().unwrap())
            .unwrap()
    };

    let alone = call(serde_json::json!({"query": "retry backoff"}));
    assert!(alone.get("external").is_none(), "{alone}");

    for round in 0..2 {
        // The second round reuses docs' connection and starts the stuck one afresh.
        let started = Instant::now();
        let v = call(serde_json::json!({"query": "retry backoff", "providers": true}));
        assert!(started.elapsed() < Duration::from_secs(10), "round {round}");
        assert!(
            v["hits"][0]["path"].as_str().unwrap().ends_with("retry.rs"),
            "{v}"
        );
        let ext = v["external"].as_array().unwrap();
        assert_eq!(ext.len(), 2, "{v}");
        assert_eq!(
            ext[0]["source"],
            "[source: docs: docs/retry-policy.md:12-18]"
        );
        assert!(ext[0]["text"]
            .as_str()
            .unwrap()
            .contains("back off exponentially"));
        assert_eq!(note(&v, "docs")["status"], "ok");
        assert_eq!(note(&v, "stuck")["status"], "timeout");
    }

    // Asked from inside an async runtime (a library user's), a provider still works.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let health = rt.block_on(async { docs.health() });
    assert!(
        health.reachable && health.tool_present == Some(true),
        "{health:?}"
    );
}

#[test]
fn engram_serve_asks_providers_for_enrich_prompt_and_code_search_over_mcp() {
    let pids = tempfile::NamedTempFile::new().unwrap();
    let config = [
        stdio_provider(
            "docs",
            "docs",
            "search_docs",
            "query_arg = \"q\"\ntimeout_ms = 20000",
            pids.path(),
        ),
        stdio_provider("stuck", "hang", "search", "timeout_ms = 2000", pids.path()),
    ]
    .concat();
    let r = repo("src/lib.rs", "pub fn retry() {}\n", &config);
    python_mcp::run_client(
        "providers_client.py",
        &[r.store.path(), &r.config, r.root.path()],
    );
    // The servers it started, the hanging one restarted once, are all gone.
    assert!(all_gone(pids.path()));
}
