//! Unit tests of the TLS settings of a connection string (`tls`).

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
        assert_eq!(SslMode::parse(m.as_str()).ok(), Some(m));
    }
    assert!(matches!(SslMode::parse("allow"), Err(TlsError::AllowMode)));
    assert!(SslMode::parse("allow")
        .unwrap_err()
        .to_string()
        .contains("not supported"));
    let e = SslMode::parse("verify_full").unwrap_err();
    assert!(matches!(&e, TlsError::UnknownMode { mode } if mode == "verify_full"));
    let e = e.to_string();
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
    let e = split("postgres://u@db/engram?sslmode=verify")
        .unwrap_err()
        .to_string();
    assert!(e.contains("\"verify\"") && e.contains("verify-full"), "{e}");
    let e = split("postgres://u@db/engram?sslrootcert=%zz").unwrap_err();
    assert!(
        matches!(&e, TlsError::BadEscape { text } if text == "%zz"),
        "{e:?}"
    );
    assert!(e.to_string().contains("%-escape"), "{e}");
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
    assert!(split("host=db sslmode")
        .unwrap_err()
        .to_string()
        .contains("no value"));
    assert!(matches!(
        split("sslrootcert='x"),
        Err(TlsError::Unterminated { key }) if key == "sslrootcert"
    ));
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
    assert!(matches!(&e, TlsError::RootCertUnreadable { path, .. } if path == &missing));
    let e = e.to_string();
    assert!(
        e.contains("cannot read") && e.contains("missing.pem"),
        "{e}"
    );
    assert!(e.contains("CA that signed"), "{e}");

    let empty = dir.path().join("empty.pem");
    std::fs::write(&empty, "not a certificate\n").unwrap();
    let e = connector(&settings(SslMode::VerifyCa, Some(empty.to_str().unwrap())))
        .err()
        .unwrap()
        .to_string();
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
        .unwrap()
        .to_string();
    assert!(e.contains("bad.pem"), "{e}");

    // Modes that check nothing never read the file; require with one checks the
    // CA (libpq's rule), so it reads it.
    assert!(connector(&settings(SslMode::Prefer, Some(missing.to_str().unwrap()))).is_ok());
    assert!(connector(&settings(SslMode::Require, None)).is_ok());
    assert!(connector(&settings(SslMode::Require, Some(missing.to_str().unwrap()))).is_err());
}
