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
    pub fn parse(v: &str) -> Result<SslMode, String> {
        Ok(match v {
            "disable" => SslMode::Disable,
            "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            "allow" => {
                return Err(
                    "sslmode=allow is not supported (it tries plain text first); use prefer, require, verify-ca or verify-full"
                        .into(),
                )
            }
            other => {
                return Err(format!(
                    "sslmode={other:?} is not a mode; expected disable, prefer, require, verify-ca or verify-full"
                ))
            }
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
pub fn split(conn: &str) -> Result<(String, TlsSettings), String> {
    let mut settings = TlsSettings::default();
    let mut take = |key: &str, value: String| -> Result<bool, String> {
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
fn percent_decode(s: &str) -> Result<String, String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = s
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| format!("bad %-escape in the connection URL's query near {s:?}"))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| format!("the query value {s:?} is not UTF-8 once decoded"))
}

/// The pairs of a `key=value` connection string, as libpq reads them: each key, its
/// value unquoted and unescaped, and the pair's text as written.
fn key_values(s: &str) -> Result<Vec<(String, String, &str)>, String> {
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
            return Err(format!(
                "{key:?} has no value in the connection string (expected key=value)"
            ));
        }
        i = skip_ws(i + 1);
        let mut value = Vec::new();
        if i < b.len() && b[i] == b'\'' {
            i += 1;
            loop {
                match b.get(i) {
                    None => return Err(format!("unterminated quoted value of {key:?}")),
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
fn roots(root_cert: Option<&Path>) -> Result<(RootCertStore, String), String> {
    let mut store = RootCertStore::empty();
    let native = rustls_native_certs::load_native_certs();
    let (system, _) = store.add_parsable_certificates(native.certs);
    let mut described = format!("the system's {system} root certificates");
    if let Some(path) = root_cert {
        let shown = path.display();
        let pem = std::fs::read(path).map_err(|e| {
            format!(
                "sslrootcert {shown}: cannot read it ({e}); give the path of the PEM file holding the certificate of the CA that signed the server's certificate"
            )
        })?;
        let mut n = 0;
        for cert in CertificateDer::pem_slice_iter(&pem) {
            let cert = cert.map_err(|e| {
                format!(
                    "sslrootcert {shown}: not a readable PEM certificate file ({e}); it must hold the CA certificate(s) in PEM (-----BEGIN CERTIFICATE-----)"
                )
            })?;
            store.add(cert).map_err(|e| {
                format!(
                    "sslrootcert {shown}: certificate {} is not a usable CA certificate ({e})",
                    n + 1
                )
            })?;
            n += 1;
        }
        if n == 0 {
            return Err(format!(
                "sslrootcert {shown}: holds no certificate; it must hold the CA certificate(s) in PEM (-----BEGIN CERTIFICATE-----)"
            ));
        }
        described.push_str(&format!(" and the {n} in sslrootcert {shown}"));
    }
    if store.is_empty() {
        return Err(
            "no trusted root certificates: the system has none and no sslrootcert is given; set sslrootcert=PATH (or database_sslrootcert) to the CA certificate that signed the server's certificate"
                .into(),
        );
    }
    Ok((store, described))
}

/// The connector for `settings`: rustls with ring, checking the server's certificate
/// as the mode asks. Errors (an unusable `sslrootcert`) are for the user as they are.
pub fn connector(settings: &TlsSettings) -> Result<MakeRustlsConnect, String> {
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
            .map_err(|e| format!("cannot check server certificates: {e}"))?;
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
        .map_err(|e| format!("no TLS configuration: {e}"))?
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
mod tests {
    use super::*;

    fn settings(mode: SslMode, root: Option<&str>) -> TlsSettings {
        TlsSettings {
            mode,
            root_cert: root.map(PathBuf::from),
        }
    }

    #[test]
    fn every_libpq_mode_but_allow_parses() {
        for m in [
            SslMode::Disable,
            SslMode::Prefer,
            SslMode::Require,
            SslMode::VerifyCa,
            SslMode::VerifyFull,
        ] {
            assert_eq!(SslMode::parse(m.as_str()), Ok(m));
        }
        assert!(SslMode::parse("allow")
            .unwrap_err()
            .contains("not supported"));
        let e = SslMode::parse("verify_full").unwrap_err();
        assert!(
            e.contains("verify-full") && e.contains("\"verify_full\""),
            "{e}"
        );
        assert_eq!(SslMode::default(), SslMode::Prefer);
    }

    #[test]
    fn the_modes_map_onto_the_clients_own() {
        use tokio_postgres::config::SslMode as C;
        assert_eq!(SslMode::Disable.for_client(), C::Disable);
        assert_eq!(SslMode::Prefer.for_client(), C::Prefer);
        for m in [SslMode::Require, SslMode::VerifyCa, SslMode::VerifyFull] {
            assert_eq!(m.for_client(), C::Require);
        }
        assert!(SslMode::VerifyCa.verifies() && SslMode::VerifyFull.verifies());
        assert!(!SslMode::Require.verifies() && !SslMode::Prefer.verifies());
    }

    #[test]
    fn a_url_without_tls_parameters_is_left_alone() {
        let url = "postgres://u:p@db.example.com:5432/engram";
        assert_eq!(
            split(url).unwrap(),
            (url.to_string(), TlsSettings::default())
        );
        let url = "postgres://u:p@db:5432/engram?application_name=x&connect_timeout=5";
        assert_eq!(
            split(url).unwrap(),
            (url.to_string(), TlsSettings::default())
        );
    }

    #[test]
    fn a_urls_tls_parameters_are_taken_out_and_the_rest_kept_in_order() {
        let (rest, s) = split(
            "postgresql://u:p@db:5432/engram?connect_timeout=5&sslmode=verify-full&sslrootcert=%2Fetc%2Fca%20certs%2Frds.pem&hostaddr=10.0.0.1",
        )
        .unwrap();
        assert_eq!(
            rest,
            "postgresql://u:p@db:5432/engram?connect_timeout=5&hostaddr=10.0.0.1"
        );
        assert_eq!(
            s,
            settings(SslMode::VerifyFull, Some("/etc/ca certs/rds.pem"))
        );
        // Only TLS parameters: no `?` left.
        let (rest, s) = split("postgres://u@db/engram?sslmode=require&sslrootcert=ca.pem").unwrap();
        assert_eq!(rest, "postgres://u@db/engram");
        assert_eq!(s, settings(SslMode::Require, Some("ca.pem")));
        // libpq's `system`: the system's roots only.
        let (_, s) = split("postgres://u@db/engram?sslmode=verify-ca&sslrootcert=system").unwrap();
        assert_eq!(s, settings(SslMode::VerifyCa, None));
        // What tokio-postgres parses after is a valid configuration.
        let (rest, _) = split("postgres://u:p@db:5433/engram?sslmode=verify-full").unwrap();
        let cfg: tokio_postgres::Config = rest.parse().unwrap();
        assert_eq!(cfg.get_ports(), &[5433]);
    }

    #[test]
    fn a_bad_mode_or_escape_in_a_url_is_an_error_naming_it() {
        let e = split("postgres://u@db/engram?sslmode=verify").unwrap_err();
        assert!(e.contains("\"verify\"") && e.contains("verify-full"), "{e}");
        let e = split("postgres://u@db/engram?sslrootcert=%zz").unwrap_err();
        assert!(e.contains("%-escape"), "{e}");
    }

    #[test]
    fn key_value_strings_lose_their_tls_pairs_and_keep_the_rest() {
        let (rest, s) = split(
            "host=db.example.com port=5432 sslmode = verify-ca  sslrootcert='/a path/with \\'quote\\'.pem' dbname=engram",
        )
        .unwrap();
        assert_eq!(rest, "host=db.example.com port=5432 dbname=engram");
        assert_eq!(
            s,
            settings(SslMode::VerifyCa, Some("/a path/with 'quote'.pem"))
        );
        let (rest, s) = split("host=db user=u password='p w' dbname=engram").unwrap();
        assert_eq!(rest, "host=db user=u password='p w' dbname=engram");
        assert_eq!(s, TlsSettings::default());
        let cfg: tokio_postgres::Config = rest.parse().unwrap();
        assert_eq!(cfg.get_password(), Some(&b"p w"[..]));
        assert!(split("host=db sslmode").unwrap_err().contains("no value"));
        assert!(split("sslrootcert='x")
            .unwrap_err()
            .contains("unterminated"));
    }

    #[test]
    fn an_unusable_root_file_says_what_is_wrong_and_what_to_give() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.pem");
        let e = connector(&settings(
            SslMode::VerifyFull,
            Some(missing.to_str().unwrap()),
        ))
        .err()
        .unwrap();
        assert!(
            e.contains("cannot read") && e.contains("missing.pem"),
            "{e}"
        );
        assert!(e.contains("CA that signed"), "{e}");

        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "not a certificate\n").unwrap();
        let e = connector(&settings(SslMode::VerifyCa, Some(empty.to_str().unwrap())))
            .err()
            .unwrap();
        assert!(
            e.contains("holds no certificate") && e.contains("PEM"),
            "{e}"
        );

        let bad = dir.path().join("bad.pem");
        std::fs::write(
            &bad,
            "-----BEGIN CERTIFICATE-----\nMIIBbad\n-----END CERTIFICATE-----\n",
        )
        .unwrap();
        let e = connector(&settings(SslMode::VerifyCa, Some(bad.to_str().unwrap())))
            .err()
            .unwrap();
        assert!(e.contains("bad.pem"), "{e}");

        // Modes that check nothing never read the file; require with one checks the
        // CA (libpq's rule), so it reads it.
        assert!(connector(&settings(SslMode::Prefer, Some(missing.to_str().unwrap()))).is_ok());
        assert!(connector(&settings(SslMode::Require, None)).is_ok());
        assert!(connector(&settings(SslMode::Require, Some(missing.to_str().unwrap()))).is_err());
    }
}
