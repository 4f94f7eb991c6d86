//! TLS to the database, by rustls: the libpq `sslmode` and `sslrootcert` of a
//! connection string, and the certificate check each mode asks for.
//!
//! tokio-postgres knows only `sslmode=disable|prefer|require` and refuses any
//! parameter it does not know (`sslrootcert`). So both are taken out of the string
//! here ([`split`]) before tokio-postgres parses the rest, and the modes map to its
//! own as: `disable` → no TLS; `prefer` → TLS when the server offers it, else plain;
//! `require`, `verify-ca`, `verify-full` → TLS or no connection. What differs between
//! the last three is the certificate check, which is this module's (`Verifier`):
//!
//! - `prefer`, `require`: none. The session is encrypted, but anyone in the middle
//!   can present a certificate of their own (libpq behaves the same). As in libpq,
//!   `require` with an `sslrootcert` file checks like `verify-ca`.
//! - `verify-ca`: the certificate must chain to a trusted root; any host name.
//! - `verify-full`: that, and it must name the host connected to (`host`, not
//!   `hostaddr`).
//!
//! The trusted roots are the system's (the platform's certificate store) plus the
//! certificates in `sslrootcert` when given; `sslrootcert=system` means the system's
//! only, as in libpq.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, OtherError, RootCertStore, SignatureScheme};
use tokio_postgres_rustls::MakeRustlsConnect;

/// The libpq `sslmode`s engram honours (`allow` is not one: it would try plain text
/// first).
/// What is wrong with a connection string's TLS settings or the trusted roots; the
/// text says what to give instead.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("sslmode=allow is not supported (it tries plain text first); use prefer, require, verify-ca or verify-full")]
    AllowMode,
    #[error("sslmode={mode:?} is not a mode; expected disable, prefer, require, verify-ca or verify-full")]
    UnknownMode { mode: String },
    #[error("bad %-escape in the connection URL's query near {text:?}")]
    BadEscape { text: String },
    #[error("the query value {text:?} is not UTF-8 once decoded")]
    NotUtf8 { text: String },
    #[error("{key:?} has no value in the connection string (expected key=value)")]
    NoValue { key: String },
    #[error("unterminated quoted value of {key:?}")]
    Unterminated { key: String },
    #[error("sslrootcert {}: cannot read it ({source}); give the path of the PEM file holding the certificate of the CA that signed the server's certificate", path.display())]
    RootCertUnreadable {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("sslrootcert {}: not a readable PEM certificate file ({source}); it must hold the CA certificate(s) in PEM (-----BEGIN CERTIFICATE-----)", path.display())]
    RootCertNotPem {
        path: PathBuf,
        source: rustls::pki_types::pem::Error,
    },
    /// Certificate `number` (from 1) of the file.
    #[error("sslrootcert {}: certificate {number} is not a usable CA certificate ({source})", path.display())]
    RootCertUnusable {
        path: PathBuf,
        number: usize,
        source: rustls::Error,
    },
    #[error("sslrootcert {}: holds no certificate; it must hold the CA certificate(s) in PEM (-----BEGIN CERTIFICATE-----)", path.display())]
    RootCertEmpty { path: PathBuf },
    #[error("no trusted root certificates: the system has none and no sslrootcert is given; set sslrootcert=PATH (or database_sslrootcert) to the CA certificate that signed the server's certificate")]
    NoRoots,
    #[error("cannot check server certificates: {0}")]
    Verifier(#[source] rustls::client::VerifierBuilderError),
    #[error("no TLS configuration: {0}")]
    Config(#[source] rustls::Error),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SslMode {
    /// No TLS.
    Disable,
    /// TLS when the server offers it, unchecked; plain text otherwise. The default.
    #[default]
    Prefer,
    /// TLS or no connection; the certificate is not checked.
    Require,
    /// TLS, with a certificate chaining to a trusted root.
    VerifyCa,
    /// TLS, with a certificate chaining to a trusted root and naming the host.
    VerifyFull,
}

impl SslMode {
    /// The mode a connection string's `sslmode` value names.
    pub fn parse(v: &str) -> Result<SslMode, TlsError> {
        Ok(match v {
            "disable" => SslMode::Disable,
            "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            "allow" => return Err(TlsError::AllowMode),
            other => return Err(TlsError::UnknownMode { mode: other.into() }),
        })
    }

    /// As written in a connection string.
    pub fn as_str(self) -> &'static str {
        match self {
            SslMode::Disable => "disable",
            SslMode::Prefer => "prefer",
            SslMode::Require => "require",
            SslMode::VerifyCa => "verify-ca",
            SslMode::VerifyFull => "verify-full",
        }
    }

    /// Whether the server's certificate is checked against trusted roots.
    pub fn verifies(self) -> bool {
        matches!(self, SslMode::VerifyCa | SslMode::VerifyFull)
    }

    /// tokio-postgres's own mode: whether TLS is tried, and whether it must succeed.
    pub fn for_client(self) -> tokio_postgres::config::SslMode {
        match self {
            SslMode::Disable => tokio_postgres::config::SslMode::Disable,
            SslMode::Prefer => tokio_postgres::config::SslMode::Prefer,
            SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => {
                tokio_postgres::config::SslMode::Require
            }
        }
    }
}

impl fmt::Display for SslMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The TLS settings of a connection string.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsSettings {
    /// `sslmode` (default `prefer`).
    pub mode: SslMode,
    /// `sslrootcert`: a PEM file of certificates trusted besides the system's roots
    /// (`None` also for `sslrootcert=system`).
    pub root_cert: Option<PathBuf>,
}

/// A connection string without its `sslmode` and `sslrootcert`, and their values.
/// Both forms are understood: a URL (`postgres://…?sslmode=verify-full&sslrootcert=ca.pem`,
/// values percent-decoded) and `key=value` pairs (values quoted with `'…'` when they
/// hold spaces). Everything else is left as written, for tokio-postgres to parse.
pub fn split(conn: &str) -> Result<(String, TlsSettings), TlsError> {
    let mut settings = TlsSettings::default();
    let mut take = |key: &str, value: String| -> Result<bool, TlsError> {
        match key {
            "sslmode" => settings.mode = SslMode::parse(&value)?,
            "sslrootcert" => {
                settings.root_cert = match value.as_str() {
                    "" | "system" => None,
                    path => Some(PathBuf::from(path)),
                }
            }
            _ => return Ok(false),
        }
        Ok(true)
    };
    let rest = if conn.starts_with("postgres://") || conn.starts_with("postgresql://") {
        match conn.split_once('?') {
            None => conn.to_string(),
            Some((base, query)) => {
                let mut kept = Vec::new();
                for pair in query.split('&').filter(|p| !p.is_empty()) {
                    let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
                    if !take(&percent_decode(k)?, percent_decode(v)?)? {
                        kept.push(pair);
                    }
                }
                if kept.is_empty() {
                    base.to_string()
                } else {
                    format!("{base}?{}", kept.join("&"))
                }
            }
        }
    } else {
        let mut kept = Vec::new();
        for (key, value, raw) in key_values(conn)? {
            if !take(&key, value)? {
                kept.push(raw);
            }
        }
        kept.join(" ")
    };
    Ok((rest, settings))
}

/// `%XX` escapes decoded (a URL's query values); the text must be UTF-8 after.
fn percent_decode(s: &str) -> Result<String, TlsError> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = s
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| TlsError::BadEscape { text: s.into() })?;
            out.push(hex);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| TlsError::NotUtf8 { text: s.into() })
}

/// The pairs of a `key=value` connection string, as libpq reads them: each key, its
/// value unquoted and unescaped, and the pair's text as written.
fn key_values(s: &str) -> Result<Vec<(String, String, &str)>, TlsError> {
    let b = s.as_bytes();
    let mut pairs = Vec::new();
    let mut i = 0;
    let skip_ws = |mut i: usize| {
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        i
    };
    loop {
        i = skip_ws(i);
        if i == b.len() {
            return Ok(pairs);
        }
        let start = i;
        while i < b.len() && !b[i].is_ascii_whitespace() && b[i] != b'=' {
            i += 1;
        }
        let key = &s[start..i];
        i = skip_ws(i);
        if i == b.len() || b[i] != b'=' {
            return Err(TlsError::NoValue { key: key.into() });
        }
        i = skip_ws(i + 1);
        let mut value = Vec::new();
        if i < b.len() && b[i] == b'\'' {
            i += 1;
            loop {
                match b.get(i) {
                    None => return Err(TlsError::Unterminated { key: key.into() }),
                    Some(b'\'') => {
                        i += 1;
                        break;
                    }
                    Some(b'\\') if i + 1 < b.len() => {
                        value.push(b[i + 1]);
                        i += 2;
                    }
                    Some(&c) => {
                        value.push(c);
                        i += 1;
                    }
                }
            }
        } else {
            while i < b.len() && !b[i].is_ascii_whitespace() {
                if b[i] == b'\\' && i + 1 < b.len() {
                    i += 1;
                }
                value.push(b[i]);
                i += 1;
            }
        }
        // Only ASCII bytes were removed (quotes, backslashes): still UTF-8.
        let value = String::from_utf8(value).expect("a UTF-8 string less ASCII bytes");
        pairs.push((key.to_string(), value, &s[start..i]));
    }
}

/// The trusted roots: the system's, plus those in `root_cert`. A root file that
/// cannot be read, holds no certificate or a malformed one is an error saying so.
fn roots(root_cert: Option<&Path>) -> Result<(RootCertStore, String), TlsError> {
    let mut store = RootCertStore::empty();
    let native = rustls_native_certs::load_native_certs();
    let (system, _) = store.add_parsable_certificates(native.certs);
    let mut described = format!("the system's {system} root certificates");
    if let Some(path) = root_cert {
        let shown = path.display();
        let pem = std::fs::read(path).map_err(|source| TlsError::RootCertUnreadable {
            path: path.to_path_buf(),
            source,
        })?;
        let mut n = 0;
        for cert in CertificateDer::pem_slice_iter(&pem) {
            let cert = cert.map_err(|source| TlsError::RootCertNotPem {
                path: path.to_path_buf(),
                source,
            })?;
            store
                .add(cert)
                .map_err(|source| TlsError::RootCertUnusable {
                    path: path.to_path_buf(),
                    number: n + 1,
                    source,
                })?;
            n += 1;
        }
        if n == 0 {
            return Err(TlsError::RootCertEmpty {
                path: path.to_path_buf(),
            });
        }
        described.push_str(&format!(" and the {n} in sslrootcert {shown}"));
    }
    if store.is_empty() {
        return Err(TlsError::NoRoots);
    }
    Ok((store, described))
}

/// The connector for `settings`: rustls with ring, checking the server's certificate
/// as the mode asks. Errors (an unusable `sslrootcert`) are for the user as they are.
pub fn connector(settings: &TlsSettings) -> Result<MakeRustlsConnect, TlsError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    // libpq: require with a root file given checks the chain like verify-ca.
    let mode = match settings.mode {
        SslMode::Require if settings.root_cert.is_some() => SslMode::VerifyCa,
        m => m,
    };
    let webpki = if mode.verifies() {
        let (store, described) = roots(settings.root_cert.as_deref())?;
        let inner = WebPkiServerVerifier::builder_with_provider(Arc::new(store), provider.clone())
            .build()
            .map_err(TlsError::Verifier)?;
        Some((inner, described))
    } else {
        None
    };
    let verifier = Verifier {
        mode,
        webpki,
        provider: provider.clone(),
    };
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(TlsError::Config)?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth();
    Ok(MakeRustlsConnect::new(config))
}

/// A refused server certificate, said in the user's terms: what was wrong, under
/// which sslmode, and what to do.
#[derive(Debug)]
pub struct CertificateRefused(pub String);

impl fmt::Display for CertificateRefused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CertificateRefused {}

/// The check of the server's certificate each mode asks for; the handshake's
/// signatures are always checked.
#[derive(Debug)]
struct Verifier {
    mode: SslMode,
    /// For verify-ca and verify-full: the chain and name check against the trusted
    /// roots, and those roots described for messages.
    webpki: Option<(Arc<WebPkiServerVerifier>, String)>,
    provider: Arc<CryptoProvider>,
}

impl Verifier {
    fn refused(&self, e: &rustls::Error, host: &ServerName<'_>, roots: &str) -> rustls::Error {
        let mode = self.mode;
        let host = host.to_str();
        let what = match e {
            rustls::Error::InvalidCertificate(c) => match c {
                CertificateError::UnknownIssuer => format!(
                    "it is not signed by a trusted certificate authority (trusted: {roots}); set sslrootcert=PATH in database_url (or database_sslrootcert) to the PEM certificate of the CA that signed the server's certificate (your provider publishes it)"
                ),
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. } => format!(
                    "it does not name the host {host:?} ({c}); connect by a name the certificate holds, or use sslmode=verify-ca to check the CA only"
                ),
                CertificateError::Expired | CertificateError::ExpiredContext { .. } => {
                    format!("it has expired ({c}); the server needs a current certificate")
                }
                CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
                    format!("it is not valid yet ({c}); check this machine's clock")
                }
                CertificateError::Other(o) if o.0.to_string().contains("CaUsedAsEndEntity") => {
                    "the server presents a CA certificate (basicConstraints CA:TRUE, as `openssl req -x509` makes) as its own, which is not accepted; give the server a certificate signed by a CA and put that CA in sslrootcert, or use sslmode=require to encrypt without checking".to_string()
                }
                CertificateError::Other(o) => o.0.to_string(),
                other => format!("{other}"),
            },
            other => format!("{other}"),
        };
        rustls::Error::InvalidCertificate(CertificateError::Other(OtherError(Arc::new(
            CertificateRefused(format!(
                "the server's TLS certificate was refused (sslmode={mode}): {what}"
            )),
        ))))
    }
}

impl ServerCertVerifier for Verifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Some((webpki, roots)) = &self.webpki else {
            // prefer, require: encrypted, not checked.
            return Ok(ServerCertVerified::assertion());
        };
        match webpki.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Ok(v) => Ok(v),
            // The chain is checked before the name: a name mismatch means the chain
            // was good, which is all verify-ca asks.
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) if self.mode == SslMode::VerifyCa => Ok(ServerCertVerified::assertion()),
            Err(e) => Err(self.refused(&e, server_name, roots)),
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// The refusal of the server's certificate inside a client error, if that is what
/// failed: its message as `Verifier` put it.
pub fn refusal(e: &tokio_postgres::Error) -> Option<String> {
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            if let Some(rustls::Error::InvalidCertificate(CertificateError::Other(o))) =
                io.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>())
            {
                if let Some(r) = o.0.downcast_ref::<CertificateRefused>() {
                    return Some(r.0.clone());
                }
            }
        }
        source = s.source();
    }
    None
}

#[cfg(test)]
#[path = "tls_tests.rs"]
mod tests;
