//! Tests of the redaction engine: whole spans, framings that hide boundaries, the
//! entropy threshold and its allowlist, line numbers, and arbitrary input.

use proptest::prelude::*;

use super::*;

pub(super) fn red(text: &str) -> Redacted {
    Redactor::builtin()
        .expect("builtin")
        .redact(text)
        .expect("redact")
}

fn lines(s: &str) -> usize {
    s.split('\n').count()
}

/// No `n`-byte window of `secret` survives in `out`.
pub(super) fn gone(out: &str, secret: &str, n: usize) -> bool {
    let s = secret.as_bytes();
    s.len() < n
        || s.windows(n)
            .all(|w| !out.as_bytes().windows(n).any(|o| o == w))
}

const JWT: &str = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c";

/// An OpenSSH key body (random, not a real key).
const KEY_BODY: &[&str] = &[
    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW",
    "QyNTUxOQAAACDqXk2Lm4Nn7Rt1Yw3Zk5Hc9Jd0Pa6Sg2Ue4Ti8Ox1Qb3VcAAAAJgvR0fQL0",
    "dH0AAAAAtzc2gtZWQyNTUxOQAAACDqXk2Lm4Nn7Rt1Yw3Zk5Hc9Jd0Pa6Sg2Ue4Ti8Ox1Q",
    "b3VcAAAAECZq8wP2Lr5Tn9Vb1Xc3Md7Fg0Hj4Kl6Qw8Er2Ty5Ui7Op1As3Df5Gh9Jk0Zx4",
];

#[test]
fn every_rule_redacts_its_positive_and_leaves_its_negative() {
    let r = Redactor::builtin().expect("builtin");
    for rule in secret_rules::all() {
        let out = r.redact(rule.positive).expect("redact");
        assert!(
            out.counts.values().sum::<u64>() >= 1,
            "{} finds nothing in {:?}",
            rule.id,
            rule.positive
        );
        let out = r.redact(rule.negative).expect("redact");
        assert_eq!(out.text, rule.negative, "{} negative was redacted", rule.id);
    }
}

#[test]
fn a_jwt_in_a_go_string_literal_and_a_bearer_header_go_whole() {
    let src = format!(
        "package main\n\nconst tok = \"{JWT}\"\nvar hdr = \"Authorization: Bearer {JWT}\"\nvar esc = \"line\\n{JWT}\\n\"\n"
    );
    let out = red(&src);
    assert!(!out.text.contains("eyJ"), "{}", out.text);
    assert!(gone(&out.text, JWT, 8), "{}", out.text);
    assert!(out.text.contains("[REDACTED:jwt]"));
    assert_eq!(lines(&out.text), lines(&src));
    assert_eq!(out.secret_lines, vec![(3, 3), (4, 4), (5, 5)]);
}

#[test]
fn an_openssh_key_in_a_python_triple_quoted_string_goes_whole() {
    let src = format!(
        "KEY = \"\"\"-----BEGIN OPENSSH PRIVATE KEY-----\n{}\n-----END OPENSSH PRIVATE KEY-----\n\"\"\"\n\ndef load():\n    return KEY\n",
        KEY_BODY.join("\n")
    );
    let out = red(&src);
    for line in KEY_BODY {
        assert!(gone(&out.text, line, 8), "{}", out.text);
    }
    assert!(!out.text.contains("END OPENSSH"), "{}", out.text);
    assert!(out.text.starts_with("KEY = \"\"\"[REDACTED:private_key]\n"));
    assert!(out.text.contains("def load():\n    return KEY\n"));
    assert_eq!(lines(&out.text), lines(&src));
    assert_eq!(out.secret_lines, vec![(1, 6)]);
    assert_eq!(out.counts.get("private_key"), Some(&1));
}

#[test]
fn a_pem_key_with_escaped_newlines_in_json_goes_whole() {
    let src = format!(
        "{{\n  \"type\": \"service_account\",\n  \"private_key\": \"-----BEGIN PRIVATE KEY-----\\n{}\\n-----END PRIVATE KEY-----\\n\",\n  \"client_email\": \"a@b.iam.gserviceaccount.com\"\n}}\n",
        KEY_BODY.join("\\n")
    );
    let out = red(&src);
    for line in KEY_BODY {
        assert!(gone(&out.text, line, 8), "{}", out.text);
    }
    assert!(out.text.contains("client_email"));
    assert_eq!(lines(&out.text), lines(&src));
}

#[test]
fn a_key_without_end_is_redacted_over_its_body() {
    for sep in ["\n", "\\n", "\r\n"] {
        let src = format!(
            "-----BEGIN RSA PRIVATE KEY-----{sep}Proc-Type: 4,ENCRYPTED{sep}{}{sep}",
            KEY_BODY.join(sep)
        );
        let out = red(&src);
        for line in KEY_BODY {
            assert!(gone(&out.text, line, 8), "{sep:?}: {}", out.text);
        }
        assert_eq!(lines(&out.text), lines(&src));
    }
    // Truncated mid-body, then code follows: the body goes, the code after it stays.
    let src = format!(
        "k = '-----BEGIN EC PRIVATE KEY-----\\n{}'\nprint(k)\n",
        KEY_BODY[0]
    );
    let out = red(&src);
    assert!(gone(&out.text, KEY_BODY[0], 8), "{}", out.text);
    assert!(out.text.ends_with("'\nprint(k)\n"), "{}", out.text);
}

#[test]
fn changeme_and_placeholders_are_not_flagged() {
    for text in [
        "password = \"changeme\"",
        "token = \"${TOKEN}\"",
        "token = os.environ[\"TOKEN\"]",
        "password: ${{ secrets.DB_PASSWORD }}",
        "api_key = getenv(\"API_KEY\")",
        "secret = base64.b64decode(blob)",
        "password = user_password",
        "PASSWORD=<your-password>",
        "auth_token = settings.AUTH_TOKEN",
        "\"author\": \"Guido van Rossum <guido@python.org>\"",
        "tokenizer: bert-base-uncased-v2",
    ] {
        let out = red(text);
        assert_eq!(out.text, text, "{text} was redacted");
    }
}

#[test]
fn a_random_32_character_password_is_flagged() {
    for text in [
        "password = \"q7Xv2Lm9Rt4Kp8Wz1Nc6Hb3Jd5Fg0Sa\"",
        "DB_PASSWORD=q7Xv2Lm9Rt4Kp8Wz1Nc6Hb3Jd5Fg0Sa",
        "  password: q7Xv2Lm9Rt4Kp8Wz1Nc6Hb3Jd5Fg0Sa",
        "\"client_secret\": \"0f1e2d3c4b5a69788796a5b4c3d2e1f0\"",
        "$apiKey => 'q7Xv2Lm9Rt4Kp8Wz1Nc6Hb3Jd5Fg0Sa',",
    ] {
        let out = red(text);
        assert!(out.text.contains("[REDACTED:"), "{text} -> {}", out.text);
        assert!(!out.text.contains("Lm9Rt4Kp") && !out.text.contains("4b5a6978"));
    }
}

#[test]
fn uuids_integrity_strings_hashes_vectors_and_minified_code_are_not_flagged() {
    let text = r#"{
  "name": "app",
  "id": "123e4567-e89b-12d3-a456-426614174000",
  "packages": {
    "node_modules/left-pad": {
      "version": "1.3.0",
      "resolved": "https://registry.npmjs.org/left-pad/-/left-pad-1.3.0.tgz",
      "integrity": "sha512-XI5MPzVNApjAyhQzphX8BkmKsKUxD4LdyK24iZeQEYrnYNOLgw5jh7ruj7FDhf0PfDh+Zv3jZq2tJ9cI0dh6HA=="
    }
  }
}
[[package]]
name = "serde"
checksum = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
left-pad@^1.3.0:
  integrity sha1-W4o6d2Xf4AEmHd6RVYnngvjJTR4=
commit 3f2a9c0d81e4b5a6c7d8e9f00112233445566778
token_hash = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
session_token_id = "123e4567-e89b-12d3-a456-426614174000"
TEST_SECRET = "dGhlIHNhbXBsZSBub25jZQ=="
!function(e){var t={};function n(r){if(t[r])return t[r].exports;var o=t[r]={i:r,l:!1,exports:{}};return e[r].call(o.exports,o,o.exports,n),o.l=!0,o.exports}n.auth=function(e){return e.token},n.token=t}([]);
"#;
    let out = red(text);
    assert_eq!(out.text, text, "{:?}", out.counts);
}

#[test]
fn urls_connection_strings_netrc_pypirc_npmrc_and_docker_configs() {
    let cases: &[(&str, &str)] = &[
        ("https://deploy:Zk5Hc9Jd0Pa6@git.example.com/repo.git", "Zk5Hc9Jd0Pa6"),
        ("ftp://u:hunter2@files.example.com/", "hunter2"),
        ("Server=db;Database=app;User Id=sa;Password=Tr0ub4dor&3;", "Tr0ub4dor&3"),
        ("\"Data Source=x;Pwd=s3cr3t!\"", "s3cr3t!"),
        ("machine api.example.com\n  login deploy\n  password Zk5Hc9Jd0Pa6\n", "Zk5Hc9Jd0Pa6"),
        ("[pypi]\nusername = __token__\npassword = pypi-AgEIcHlwaS5vcmcCJDk3ZjY0YzE4LTk3MzItNDU4Ny05YjQ1LTRlYjE2ZTVlMTU3MgACKlsz\n", "CJDk3ZjY0YzE4"),
        ("[server]\nrepository = https://upload.example.com\nusername = ci\npassword = q7Xv2Lm9Rt4Kp8Wz\n", "q7Xv2Lm9Rt4Kp8Wz"),
        ("//npm.example.com/:_authToken=Zk5Hc9Jd0Pa6Sg2Ue4Ti8Ox1Qb\n", "Zk5Hc9Jd0Pa6"),
        ("{\"auths\":{\"https://index.docker.io/v1/\":{\"auth\":\"ZGVwbG95OlprNUhjOUpkMFBhNg==\"}}}", "ZGVwbG95OlprNUhj"),
    ];
    for (text, secret) in cases {
        let out = red(text);
        assert!(!out.text.contains(secret), "{text:?} -> {:?}", out.text);
        assert_eq!(lines(&out.text), lines(text));
    }
    // The password of a URL goes; a URL without one stays.
    let text = "see https://docs.example.com:8443/path?q=1 and git@github.com:o/r.git";
    assert_eq!(red(text).text, text);
}

/// Issue 40: a raw `#` or `@` in a URL's password (RFC 3986 wants them
/// percent-encoded; people write them raw) was the end of the password, so the
/// rule never matched and the whole password stayed.
#[test]
fn url_passwords_run_to_the_authoritys_last_at_raw_hash_included() {
    let cases: &[(&str, &str)] = &[
        (
            "DATABASE_URL=postgres://admin:Zq8#mP2vL9xR@db.example.com:5432/app",
            "Zq8#mP2vL9xR",
        ),
        ("mysql://root:Tk4@wQ9#zL2pX7@10.0.0.5/db", "Tk4@wQ9#zL2pX7"),
    ];
    for (text, password) in cases {
        let out = red(text);
        assert!(gone(&out.text, password, 4), "{text} -> {}", out.text);
        assert!(
            out.text.contains("[REDACTED:database_url_password]"),
            "{}",
            out.text
        );
    }
    // The host, port and path stay; a fragment after the path is no password.
    let out = red("postgres://admin:Zq8#mP2vL9xR@db.example.com:5432/app");
    assert!(
        out.text.ends_with("db.example.com:5432/app"),
        "{}",
        out.text
    );
    let text = "see https://docs.example.com:8443/a/b#user@example.com";
    assert_eq!(red(text).text, text);
}

#[test]
fn overlapping_secrets_merge_into_one_named_by_the_specific_rule() {
    let text = "GITHUB_TOKEN = \"ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8\"\nok\n";
    let out = red(text);
    // The keyword assignment (`TOKEN = "…"`) and the token overlap: one span, the
    // token's name; the assignment's name stays readable (its secret group is the value).
    assert_eq!(out.text, "GITHUB_TOKEN = \"[REDACTED:github_token]\"\nok\n");
    assert_eq!(out.counts.len(), 1);
    assert!(out.touches(1, 1) && !out.touches(2, 3));
}

#[test]
fn assignments_behind_escaped_quotes_are_found() {
    let cases: &[(&str, &str)] = &[
        (
            r#"{"msg": "config: {\"password\": \"q7Xv2Lm9Rt4Kp8Wz\"}"}"#,
            "q7Xv2Lm9Rt4Kp8Wz",
        ),
        (
            r#"cfg = "api_key = \"Zk5Hc9Jd0Pa6Sg2Ue4Ti8Ox1Qb3Vc7Nm\"""#,
            "Zk5Hc9Jd0Pa6Sg2U",
        ),
        (
            r#"var c = "{\"auths\": {\"r.io\": {\"auth\": \"ZGVwbG95OlprNUhjOUpkMFBhNg==\"}}}""#,
            "ZGVwbG95OlprNUhj",
        ),
        // A JSON string inside a JSON string: escaped twice.
        (
            r#"{"v": "{\\\"private_key_id\\\": \\\"3f2a9c0d81e4b5a6c7d8e9f00112233445566778\\\"}"}"#,
            "3f2a9c0d81e4",
        ),
        (
            r#"log("loaded:\npassword = \"LH~eSq3aSGN.v4viswk~px\"\nend")"#,
            "LH~eSq3aSGN",
        ),
    ];
    for (text, secret) in cases {
        let out = red(text);
        assert!(gone(&out.text, secret, 8), "{text} -> {}", out.text);
        assert_eq!(lines(&out.text), lines(text));
    }
}

#[test]
fn percent_encoded_secrets_in_urls_are_found_whole() {
    let cases: &[(&str, &str)] = &[
        ("curl 'https://h/x?c=%2F%2Fnpm.pkg.github.com%2F%3A_authToken%3DFRCLLwphf03oN2nDZChp'", "FRCLLwphf03oN2nD"),
        ("https://h/x?c=%5Bpypi%5D%0Ausername%20%3D%20bot%0Apassword%20%3D%20LDyVcV-_E_YiWMt-ImW~bA", "LDyVcV-_E_YiWMt"),
        ("https://h/x?c=%22auth%22%3A%20%22ZGVwbG95%2BOlprNUhj%2FOUpkMFBhNg%3D%3D%22", "OlprNUhj"),
    ];
    for (text, secret) in cases {
        let out = red(text);
        assert!(gone(&out.text, secret, 8), "{text} -> {}", out.text);
    }
}

#[test]
fn random_values_without_digits_or_with_dots_are_flagged() {
    for (text, secret) in [
        ("password = \"hbAqmVcOdrfoqyPw\"", "hbAqmVcOdrfoqy"),
        (
            "client_secret: ohuwxlVJ9r_8vmFl62ay1zHtao2.Jl5tZ2Ik4c0e",
            "ohuwxlVJ9r_8",
        ),
        ("    password = ZHPD1t9arV5lueZ.K", "ZHPD1t9arV5lueZ"),
        (
            "Authorization: Basic a3BjOXoyYjI6Yk5NanB0VTl2IVdGS25UeFhYWA==",
            "a3BjOXoyYjI6Yk5N",
        ),
        (
            "rediss://default:yiK-Zla_k.-LVZo@cache.internal:6380/0",
            "yiK-Zla_k",
        ),
        // `REnV.` inside a random value is no `env.` reference.
        (
            "password = \"gxnQt~rufPomH4yREnV.0j~.glYG\"",
            "gxnQt~rufPomH4y",
        ),
        // Base64 padding unquoted, a leading `/` (one random base64 value in 64).
        (
            "JWT_SECRET=q7Xv2Lm9Rt4Kp8Wz1Nc6Hb3Jd5Fg0Sa+A=",
            "q7Xv2Lm9Rt4Kp8Wz",
        ),
        (
            "secret = \"/q7Xv2Lm9Rt4Kp8Wz1Nc6Hb3Jd5Fg0Sa\"",
            "q7Xv2Lm9Rt4Kp8Wz",
        ),
    ] {
        let out = red(text);
        assert!(gone(&out.text, secret, 8), "{text} -> {}", out.text);
    }
}

#[test]
fn code_names_paths_hashes_and_examples_are_not_flagged() {
    for text in [
        "        pub brace_token: token::Brace,",
        "    let struct_token = input.parse::<Token![struct]>()?;",
        "pub fn parse2<T: parse::Parse>(tokens: proc_macro2::TokenStream) -> Result<T> {",
        "    _csrf_id_token = MASKED_TEST_SECRET2",
        "@override_settings(AUTH_USER_MODEL=\"auth_tests.CustomUserWithM2m\")",
        "    token_header = \"HTTP_X_CSRFTOKEN\"",
        "    dollarToken = +dollarToken;",
        "  {\"new_password1\": \"anewpassword\", \"new_password2\": \"anewpassword\"}",
        "    password_change_template = \"custom_admin/password_change_form.html\"",
        "ADMIN_PASSWORD = 'pbkdf2_sha256$30000$Vo0VlMnkR4Bk$qEvtdyZRWTcOsCnI/oQ7fVOu1XAURIZYoOZ3iq8Dr4M='",
        "CSRF_TOKEN = \"1bcdefghij2bcdefghij3bcdefghij4bcdefghij5bcdefghij6bcdefghijABCD\"",
        "        password = request.form[\"password\"]",
        "    password = models.CharField(_(\"password\"), max_length=128)",
        "            password=self.settings_dict[\"PASSWORD\"],",
        "  \"http://user:pass%20pass@complex.url.com/path?query=yes\",",
        "  \"http://foo:bar:baz@example.com\",",
        "  assert headers == {\"Proxy-Authorization\": \"Basic dXNlcjpwYXNz\"}",
        "            Credentials: None\\r\\nAccess-Control-Allow-Origin: None\\r\\n\\",
        "the default hasher's algorithm, you may be vulnerable\nwith a password encoded in a non-default algorithm\n",
        "setattr(JsTokensTest, \"test_case_%d\" % i, f)",
        "credential: ~/.config/app/credentials.json",
        "{'OLDPWD': '/srv/build/svn/curio_project/tests', 'XAUTHORITY': '/srv/build/.Xauthority'}",
    ] {
        let out = red(text);
        assert_eq!(out.text, text, "{text} was redacted: {:?}", out.counts);
    }
    // A connection string's password after `;` goes whatever it looks like.
    let out = red("conn = \"Server=db;Password=request.form;\"");
    assert!(!out.text.contains("request.form"), "{}", out.text);
}

fn secret_strategy() -> impl Strategy<Value = String> {
    let positives: Vec<String> = secret_rules::all()
        .map(|r| r.positive.to_string())
        .collect();
    proptest::sample::select(positives)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Any text: no panic, the same number of lines.
    #[test]
    fn arbitrary_text_never_panics_and_keeps_lines(text in any::<String>()) {
        let out = red(&text);
        prop_assert_eq!(lines(&out.text), lines(&text));
    }

    /// Secrets between arbitrary text: the same number of lines, and the distinctive
    /// part of the secret does not survive.
    #[test]
    fn no_secret_survives_between_arbitrary_text(
        before in "[ -~\n]{0,40}",
        secret in secret_strategy(),
        after in "[ -~\n]{0,40}",
        sep in prop_oneof![Just(" "), Just("\n"), Just("\t")],
    ) {
        let text = format!("{before}{sep}{secret}{sep}{after}");
        let out = red(&text);
        prop_assert_eq!(lines(&out.text), lines(&text));
        // The distinctive tail of the example, as tests/it/index_search.rs takes it.
        let tail = secret
            .rsplit(['=', ' ', ':'])
            .next()
            .unwrap_or(&secret)
            .trim_matches(|c| c == '"' || c == '\'');
        if tail.len() >= 12 {
            prop_assert!(!out.text.contains(tail), "{:?} -> {:?}", text, out.text);
        }
    }
}

/// A bearer header followed by a tab and a `|` (a table cell, a shell pipe) is still a
/// header: what follows the token does not make it code. Found by the property above.
#[test]
fn a_bearer_token_before_a_pipe_goes() {
    let token = "Zk5Hc9Jd0Pa6Sg2Ue4Ti8Ox1Qb3Vc";
    for text in [
        format!("\tAuthorization: Bearer {token}\t|A"),
        format!("Authorization: Bearer {token} | jq ."),
        format!("| Authorization: Bearer {token} |"),
    ] {
        let out = red(&text);
        assert!(!out.text.contains(token), "{text:?} -> {:?}", out.text);
    }
}

/// A rule's secret group is what is redacted: the name and operator before it stay
/// readable, for explicit regexes and for assignment rows alike.
#[test]
fn the_secret_group_is_redacted_and_the_name_before_it_stays() {
    for (text, kept, rule) in [
        (
            "aws_secret_access_key = 'Zk5Hc9Jd0Pa6Sg2Ue4Ti8Ox1Qb3Vc7Nm/wJalrXUt'\n",
            "aws_secret_access_key = '",
            "aws_secret_key",
        ),
        (
            "Authorization: Bearer Zk5Hc9Jd0Pa6Sg2Ue4Ti8Ox1Qb3Vc\n",
            "Authorization: Bearer ",
            "bearer_token",
        ),
        (
            "client_secret: \"Zk5Hc9Jd0Pa6Sg2Ue4Ti8Ox1Qb3Vc7Nm\"\n",
            "client_secret: \"",
            "generic_secret",
        ),
        (
            "TWILIO_AUTH_TOKEN=\"9c1e7d3a4b5f60829a7bc4d3e2f1a0b8\"\n",
            "TWILIO_AUTH_TOKEN=\"",
            "twilio_auth_token",
        ),
    ] {
        let out = red(text);
        assert!(
            out.text.starts_with(&format!("{kept}[REDACTED:{rule}]")),
            "{text} -> {}",
            out.text
        );
        assert!(!out.text.contains("Zk5Hc9") && !out.text.contains("9c1e7d"));
    }
}

/// A rule's entropy floor turns down a match whose secret is a repetition, and only
/// that: the same rule takes a random value of the same shape.
#[test]
fn an_entropy_floor_turns_down_a_repetition_and_keeps_a_random_value() {
    let r = Redactor::builtin().expect("builtin");
    let index = secret_rules::all()
        .position(|rule| rule.id == "twilio_auth_token")
        .expect("rule");
    let rule = r.rule(index).expect("rule");
    assert_eq!(rule.entropy, Some(2.5));
    let low = "TWILIO_AUTH_TOKEN=\"3a7c3a7c3a7c3a7c3a7c3a7c3a7c3a7c\"";
    let high = "TWILIO_AUTH_TOKEN=\"9c1e7d3a4b5f60829a7bc4d3e2f1a0b8\"";
    let span = |text: &str| {
        let end = text.len() - 1;
        r.secret_part(index, text.as_bytes(), (0, end), (0, end))
    };
    assert_eq!(span(low), None, "entropy 2.0 is under the floor");
    assert_eq!(span(high), Some((19, high.len() - 1)));
}

/// `find_at` leaves out what a path row allows at that path, and nothing else.
#[test]
fn find_at_applies_the_path_rows_of_the_allowlists() {
    let r = Redactor::builtin().expect("builtin");
    let line = "    \"href\": \"https://user:pass%5B%7F@foo/bar\",\n";
    let ids = |found: Vec<Finding>| -> Vec<&str> {
        found
            .iter()
            .filter_map(|f| r.rule(f.rule).map(|rule| rule.id))
            .collect()
    };
    assert_eq!(ids(r.find(line).unwrap()), ["database_url_password"]);
    assert!(r
        .find_at("url-2.5.4/tests/urltestdata.json", line)
        .unwrap()
        .is_empty());
    assert_eq!(
        ids(r.find_at("src/urls.json", line).unwrap()),
        ["database_url_password"]
    );
    let token = "token: ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8\n";
    assert!(!r
        .find_at("tests/urltestdata.json", token)
        .unwrap()
        .is_empty());
}
