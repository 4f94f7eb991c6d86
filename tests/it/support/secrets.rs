//! A generator of realistic secrets for leak tests: 50 kinds, random wherever the
//! format allows, shaped like the default rules of gitleaks
//! (`config/gitleaks.toml`) define them.
//!
//! Each [`Secret`] carries its full text as it would appear in a file (some span
//! several lines) and its sensitive parts: the substrings that must never reach the
//! disk. The sensitive part is chosen per kind:
//! - tokens with a fixed public prefix (`ghp_`, `AKIA`, `sk-ant-api03-`, `xoxb-…-…-`,
//!   `SG.`, `key-`, …): the token minus that prefix (and minus fixed infixes such as
//!   OpenAI's `T3BlbkFJ` or trailing `AA` / `==`);
//! - assignments (`password = X`, `api_key = "X"`, `client_secret: X`, `.netrc`,
//!   `.pypirc`, `.npmrc`, `Password=X;`): the value X;
//! - URLs with credentials: the password;
//! - PEM, OpenSSH and PGP blocks: each base64 body line (not the BEGIN/END markers,
//!   not the PGP armor checksum line); the GCP service-account JSON: its key's body
//!   lines and its `private_key_id`;
//! - Docker `auth` and HTTP Basic: the base64 of `user:password`;
//! - JWT: the signature (header and payload prefix are shared by every JWT).
//!
//! Bodies are random: nothing here is a real key. The generator is a SplitMix64
//! seeded by the caller, so a failing run is reproduced from its seed.

#![allow(dead_code)]

/// SplitMix64: small, seeded, good enough for test data.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0), without modulo bias.
    pub fn below(&mut self, n: u64) -> u64 {
        let zone = u64::MAX - (u64::MAX % n);
        loop {
            let x = self.next_u64();
            if x < zone {
                return x % n;
            }
        }
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below((hi - lo + 1) as u64) as usize
    }

    pub fn from(&mut self, charset: &str, n: usize) -> String {
        let cs = charset.as_bytes();
        (0..n)
            .map(|_| cs[self.below(cs.len() as u64) as usize] as char)
            .collect()
    }

    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next_u64() as u8).collect()
    }
}

pub const UPPER: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
pub const DIGITS: &str = "0123456789";
pub const ALNUM: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
pub const LETTERS: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
pub const LOWER_ALNUM: &str = "abcdefghijklmnopqrstuvwxyz0123456789";
pub const UPPER_ALNUM: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
pub const BASE32: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
pub const HEX: &str = "0123456789abcdef";
pub const B64: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
pub const B64URL: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-";
/// Password characters: safe unquoted in YAML, TOML strings, URLs, shell and JSON
/// without escaping, so the bytes on disk are the bytes generated.
pub const PASSWORD: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~!*";

/// Standard base64 with padding.
pub fn base64(data: &[u8]) -> String {
    let cs = B64.as_bytes();
    let mut out = String::new();
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (b[0] as u32) << 16 | (b[1] as u32) << 8 | b[2] as u32;
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(cs[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Unpadded base64url.
pub fn base64url(data: &[u8]) -> String {
    base64(data)
        .trim_end_matches('=')
        .replace('+', "-")
        .replace('/', "_")
}

/// One generated secret.
#[derive(Debug, Clone)]
pub struct Secret {
    /// The kind, e.g. `github_pat_classic`.
    pub kind: &'static str,
    /// The secret as it appears in a file; may span lines.
    pub text: String,
    /// The substrings that must never reach the disk (see the module doc).
    pub sensitive: Vec<String>,
}

impl Secret {
    pub fn multiline(&self) -> bool {
        self.text.contains('\n')
    }
}

/// A kind of secret: its name, the regex its text must match, and its generator.
pub struct Kind {
    pub name: &'static str,
    /// Shape the generated text must have (a regex searched in the text).
    pub shape: &'static str,
    pub make: fn(&mut Rng) -> (String, Vec<String>),
}

/// Between `lo` and `hi` digits.
fn digits(r: &mut Rng, lo: usize, hi: usize) -> String {
    let n = r.range(lo, hi);
    r.from(DIGITS, n)
}

/// `n` characters of `charset`, the last a letter or digit (so a `\b` after it holds).
fn word_end(r: &mut Rng, charset: &str, n: usize) -> String {
    r.from(charset, n - 1) + &r.from(ALNUM, 1)
}

fn prefixed(prefix: &str, body: String) -> (String, Vec<String>) {
    (format!("{prefix}{body}"), vec![body])
}

fn password(r: &mut Rng) -> String {
    // Start and end with a letter or digit so no context treats it specially.
    let n = r.range(14, 28);
    let mut p = r.from(ALNUM, 1);
    p.push_str(&r.from(PASSWORD, n - 2));
    p.push_str(&r.from(ALNUM, 1));
    p
}

/// A PEM-style block: `-----BEGIN {label}-----`, the body as `line`-char lines of
/// random base64 (`body_chars` in all), `-----END {label}-----`. Returns the block and
/// its body lines.
fn pem_block(
    r: &mut Rng,
    label: &str,
    body_chars: usize,
    line: usize,
    headers: &str,
) -> (String, Vec<String>) {
    let body = r.from(B64, body_chars);
    let lines: Vec<String> = body
        .as_bytes()
        .chunks(line)
        .map(|c| String::from_utf8(c.to_vec()).unwrap())
        .collect();
    let text = format!(
        "-----BEGIN {label}-----\n{headers}{}\n-----END {label}-----",
        lines.join("\n")
    );
    let sensitive = lines.into_iter().filter(|l| l.len() >= 8).collect();
    (text, sensitive)
}

fn stripe(r: &mut Rng, prefix: &str) -> (String, Vec<String>) {
    let n = if r.below(2) == 0 { 24 } else { 99 };
    prefixed(prefix, r.from(ALNUM, n))
}

fn github(r: &mut Rng, prefix: &str) -> (String, Vec<String>) {
    prefixed(prefix, r.from(ALNUM, 36))
}

fn jwt(r: &mut Rng) -> (String, Vec<String>) {
    let header = base64url(br#"{"alg":"HS256","typ":"JWT"}"#);
    let payload = format!(
        r#"{{"sub":"{}","name":"{}","iat":{}}}"#,
        r.from(DIGITS, 10),
        r.from(LETTERS, 8),
        1_600_000_000 + r.below(200_000_000)
    );
    let payload = base64url(payload.as_bytes());
    let sig = base64url(&r.bytes(32));
    (format!("{header}.{payload}.{sig}"), vec![sig])
}

fn url_password(r: &mut Rng, scheme: &str, user: &str, host: &str) -> (String, Vec<String>) {
    let pw = password(r);
    (format!("{scheme}://{user}:{pw}@{host}"), vec![pw])
}

/// Every kind; at least 40.
pub const KINDS: &[Kind] = &[
    Kind {
        name: "aws_access_key_id",
        shape: r"\bAKIA[A-Z2-7]{16}\b",
        make: |r| prefixed("AKIA", r.from(BASE32, 16)),
    },
    Kind {
        name: "aws_secret_access_key",
        shape: r"aws_secret_access_key = [A-Za-z0-9/+]{40}$",
        make: |r| {
            let k = r.from(B64, 40);
            (format!("aws_secret_access_key = {k}"), vec![k])
        },
    },
    Kind {
        name: "gcp_api_key",
        shape: r"\bAIza[\w-]{35}\b",
        make: |r| prefixed("AIza", word_end(r, B64URL, 35)),
    },
    Kind {
        name: "gcp_service_account",
        shape: r#"(?s)"type": "service_account".*"private_key_id": "[0-9a-f]{40}".*"private_key": "-----BEGIN PRIVATE KEY-----\\n([A-Za-z0-9+/]{64}\\n){20,}"#,
        make: |r| {
            let key_id = r.from(HEX, 40);
            let (pem, lines) = pem_block(r, "PRIVATE KEY", 1624, 64, "");
            let escaped = pem.replace('\n', "\\n") + "\\n";
            let project = format!("proj-{}", r.from(LOWER_ALNUM, 6));
            let text = format!(
                "{{\n  \"type\": \"service_account\",\n  \"project_id\": \"{project}\",\n  \"private_key_id\": \"{key_id}\",\n  \"private_key\": \"{escaped}\",\n  \"client_email\": \"deployer@{project}.iam.gserviceaccount.com\",\n  \"client_id\": \"{}\",\n  \"token_uri\": \"https://oauth2.googleapis.com/token\"\n}}",
                r.from(DIGITS, 21)
            );
            let mut sensitive = lines;
            sensitive.push(key_id);
            (text, sensitive)
        },
    },
    Kind {
        name: "azure_storage_connection_string",
        shape: r"AccountKey=[A-Za-z0-9+/]{86}==;",
        make: |r| {
            let key = r.from(B64, 86);
            let account = r.from("abcdefghijklmnopqrstuvwxyz", 10);
            (
                format!(
                    "DefaultEndpointsProtocol=https;AccountName={account};AccountKey={key}==;EndpointSuffix=core.windows.net"
                ),
                vec![key],
            )
        },
    },
    Kind {
        name: "github_pat_classic",
        shape: r"\bghp_[0-9a-zA-Z]{36}\b",
        make: |r| github(r, "ghp_"),
    },
    Kind {
        name: "github_oauth",
        shape: r"\bgho_[0-9a-zA-Z]{36}\b",
        make: |r| github(r, "gho_"),
    },
    Kind {
        name: "github_user_to_server",
        shape: r"\bghu_[0-9a-zA-Z]{36}\b",
        make: |r| github(r, "ghu_"),
    },
    Kind {
        name: "github_server_to_server",
        shape: r"\bghs_[0-9a-zA-Z]{36}\b",
        make: |r| github(r, "ghs_"),
    },
    Kind {
        name: "github_refresh",
        shape: r"\bghr_[0-9a-zA-Z]{36}\b",
        make: |r| github(r, "ghr_"),
    },
    Kind {
        name: "github_fine_grained_pat",
        shape: r"\bgithub_pat_\w{82}\b",
        make: |r| {
            let body = format!("{}_{}", r.from(ALNUM, 22), r.from(ALNUM, 59));
            prefixed("github_pat_", body)
        },
    },
    Kind {
        name: "gitlab_pat",
        shape: r"\bglpat-[\w-]{20}\b",
        make: |r| prefixed("glpat-", word_end(r, B64URL, 20)),
    },
    Kind {
        name: "bitbucket_app_password_url",
        shape: r"https://[a-z0-9]+:ATBB[A-Za-z0-9]{32}@bitbucket\.org/",
        make: |r| {
            let body = r.from(ALNUM, 32);
            let user = r.from(LOWER_ALNUM, 8);
            (
                format!("https://{user}:ATBB{body}@bitbucket.org/acme/payments.git"),
                vec![body],
            )
        },
    },
    Kind {
        name: "slack_bot_token",
        shape: r"\bxoxb-[0-9]{10,13}-[0-9]{10,13}-[a-zA-Z0-9]{24}\b",
        make: |r| {
            let a = digits(r, 10, 13);
            let b = digits(r, 10, 13);
            let c = r.from(ALNUM, 24);
            (format!("xoxb-{a}-{b}-{c}"), vec![c])
        },
    },
    Kind {
        name: "slack_user_token",
        shape: r"\bxoxp(?:-[0-9]{10,13}){3}-[a-zA-Z0-9-]{28,34}\b",
        make: |r| {
            let a = digits(r, 10, 13);
            let b = digits(r, 10, 13);
            let c = digits(r, 10, 13);
            let d = r.from(ALNUM, 32);
            (format!("xoxp-{a}-{b}-{c}-{d}"), vec![d])
        },
    },
    Kind {
        name: "slack_webhook",
        shape: r"https://hooks\.slack\.com/services/[A-Za-z0-9+/]{43,56}",
        make: |r| {
            let t = r.from(UPPER_ALNUM, 8);
            let b = r.from(UPPER_ALNUM, 10);
            let s = r.from(ALNUM, 24);
            (
                format!("https://hooks.slack.com/services/T{t}/B{b}/{s}"),
                vec![s],
            )
        },
    },
    Kind {
        name: "stripe_secret_key",
        shape: r"\bsk_live_[a-zA-Z0-9]{24,99}\b",
        make: |r| stripe(r, "sk_live_"),
    },
    Kind {
        name: "stripe_restricted_key",
        shape: r"\brk_live_[a-zA-Z0-9]{24,99}\b",
        make: |r| stripe(r, "rk_live_"),
    },
    Kind {
        name: "twilio_api_key",
        shape: r"\bSK[0-9a-fA-F]{32}\b",
        make: |r| prefixed("SK", r.from(HEX, 32)),
    },
    Kind {
        name: "sendgrid_api_key",
        shape: r"\bSG\.[a-zA-Z0-9=_\-.]{66}\b",
        make: |r| {
            let body = format!("{}.{}", r.from(B64URL, 22), word_end(r, B64URL, 43));
            prefixed("SG.", body)
        },
    },
    Kind {
        name: "mailgun_private_key",
        shape: r"\bkey-[a-f0-9]{32}\b",
        make: |r| prefixed("key-", r.from(HEX, 32)),
    },
    Kind {
        name: "openai_project_key",
        shape: r"\bsk-proj-[A-Za-z0-9_-]{74}T3BlbkFJ[A-Za-z0-9_-]{74}\b",
        make: |r| {
            // Letters and digits only at the ends so `\b` holds.
            let a = r.from(ALNUM, 1) + &r.from(B64URL, 73);
            let b = r.from(B64URL, 73) + &r.from(ALNUM, 1);
            (format!("sk-proj-{a}T3BlbkFJ{b}"), vec![a, b])
        },
    },
    Kind {
        name: "openai_legacy_key",
        shape: r"\bsk-[a-zA-Z0-9]{20}T3BlbkFJ[a-zA-Z0-9]{20}\b",
        make: |r| {
            let a = r.from(ALNUM, 20);
            let b = r.from(ALNUM, 20);
            (format!("sk-{a}T3BlbkFJ{b}"), vec![a, b])
        },
    },
    Kind {
        name: "anthropic_api_key",
        shape: r"\bsk-ant-api03-[a-zA-Z0-9_\-]{93}AA\b",
        make: |r| {
            let body = r.from(B64URL, 93);
            (format!("sk-ant-api03-{body}AA"), vec![body])
        },
    },
    Kind {
        name: "anthropic_admin_key",
        shape: r"\bsk-ant-admin01-[a-zA-Z0-9_\-]{93}AA\b",
        make: |r| {
            let body = r.from(B64URL, 93);
            (format!("sk-ant-admin01-{body}AA"), vec![body])
        },
    },
    Kind {
        name: "huggingface_token",
        shape: r"\bhf_[a-zA-Z]{34}\b",
        make: |r| prefixed("hf_", r.from(LETTERS, 34)),
    },
    Kind {
        name: "npm_token",
        shape: r"(?i)\bnpm_[a-z0-9]{36}\b",
        make: |r| prefixed("npm_", r.from(ALNUM, 36)),
    },
    Kind {
        name: "pypi_token",
        shape: r"pypi-AgEIcHlwaS5vcmc[\w-]{50,}",
        make: |r| {
            let n = r.range(120, 180);
            let body = r.from(B64URL, n - 1) + &r.from(ALNUM, 1);
            prefixed("pypi-AgEIcHlwaS5vcmc", body)
        },
    },
    Kind {
        name: "docker_config_auth",
        shape: r#"(?s)"auths":.*"auth": "[A-Za-z0-9+/]{16,}={0,2}""#,
        make: |r| {
            let user = r.from(LOWER_ALNUM, 8);
            let auth = base64(format!("{user}:{}", password(r)).as_bytes());
            let registry = format!("registry.{}.io", r.from(LOWER_ALNUM, 6));
            (
                format!(
                    "{{\n  \"auths\": {{\n    \"{registry}\": {{\n      \"auth\": \"{auth}\"\n    }}\n  }}\n}}"
                ),
                vec![auth.trim_end_matches('=').to_string()],
            )
        },
    },
    Kind {
        name: "jwt",
        shape: r"\beyJhbGciOi[A-Za-z0-9_-]{17,}\.ey[A-Za-z0-9_-]{17,}\.[A-Za-z0-9_-]{43}\b",
        make: jwt,
    },
    Kind {
        name: "pem_rsa_private_key",
        shape: r"-----BEGIN RSA PRIVATE KEY-----\n([A-Za-z0-9+/]{64}\n){20,}[A-Za-z0-9+/]+\n-----END RSA PRIVATE KEY-----",
        make: |r| pem_block(r, "RSA PRIVATE KEY", 1588, 64, ""),
    },
    Kind {
        name: "pem_ec_private_key",
        shape: r"-----BEGIN EC PRIVATE KEY-----\n([A-Za-z0-9+/]{64}\n){2}[A-Za-z0-9+/]+\n-----END EC PRIVATE KEY-----",
        make: |r| pem_block(r, "EC PRIVATE KEY", 160, 64, ""),
    },
    Kind {
        name: "pem_dsa_private_key",
        shape: r"-----BEGIN DSA PRIVATE KEY-----\n([A-Za-z0-9+/]{64}\n){10,}[A-Za-z0-9+/]+\n-----END DSA PRIVATE KEY-----",
        make: |r| pem_block(r, "DSA PRIVATE KEY", 1180, 64, ""),
    },
    Kind {
        name: "pem_pkcs8_private_key",
        shape: r"-----BEGIN PRIVATE KEY-----\n([A-Za-z0-9+/]{64}\n){20,}[A-Za-z0-9+/]+\n-----END PRIVATE KEY-----",
        make: |r| pem_block(r, "PRIVATE KEY", 1624, 64, ""),
    },
    Kind {
        name: "pem_encrypted_pkcs8_private_key",
        shape: r"-----BEGIN ENCRYPTED PRIVATE KEY-----\n([A-Za-z0-9+/]{64}\n){20,}[A-Za-z0-9+/]+\n-----END ENCRYPTED PRIVATE KEY-----",
        make: |r| pem_block(r, "ENCRYPTED PRIVATE KEY", 1748, 64, ""),
    },
    Kind {
        name: "openssh_private_key",
        // OpenSSH wraps its body at 70 characters, not 64.
        shape: r"-----BEGIN OPENSSH PRIVATE KEY-----\n([A-Za-z0-9+/]{70}\n){5,}[A-Za-z0-9+/]+\n-----END OPENSSH PRIVATE KEY-----",
        make: |r| pem_block(r, "OPENSSH PRIVATE KEY", 399, 70, ""),
    },
    Kind {
        name: "pgp_private_key_block",
        shape: r"-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n([A-Za-z0-9+/]{64}\n){20,}[A-Za-z0-9+/]+\n=[A-Za-z0-9+/]{4}\n-----END PGP PRIVATE KEY BLOCK-----",
        make: |r| {
            let body = r.from(B64, 1800);
            let lines: Vec<String> = body
                .as_bytes()
                .chunks(64)
                .map(|c| String::from_utf8(c.to_vec()).unwrap())
                .collect();
            let crc = r.from(B64, 4);
            let text = format!(
                "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n{}\n={crc}\n-----END PGP PRIVATE KEY BLOCK-----",
                lines.join("\n")
            );
            (text, lines.into_iter().filter(|l| l.len() >= 8).collect())
        },
    },
    Kind {
        name: "url_password_https",
        shape: r"https://[a-z]+:[^\s:@/]{14,28}@git\.[a-z-]+\.com/",
        make: |r| url_password(r, "https", "deploy", "git.acme-corp.com/platform/api.git"),
    },
    Kind {
        name: "postgres_url",
        shape: r"postgres://[a-z_]+:[^\s:@/]{14,28}@[a-z.-]+:5432/",
        make: |r| url_password(r, "postgres", "app_rw", "db-primary.internal:5432/orders"),
    },
    Kind {
        name: "mongodb_srv_url",
        shape: r"mongodb\+srv://[a-z]+:[^\s:@/]{14,28}@cluster0\.",
        make: |r| {
            url_password(
                r,
                "mongodb+srv",
                "admin",
                "cluster0.x1y2z.mongodb.net/app?retryWrites=true",
            )
        },
    },
    Kind {
        name: "redis_url",
        shape: r"rediss://default:[^\s:@/]{14,28}@",
        make: |r| url_password(r, "rediss", "default", "cache.internal:6380/0"),
    },
    Kind {
        name: "sqlserver_connection_string",
        shape: r"Server=[^;]+;Database=[^;]+;User Id=[^;]+;Password=[^;\s]{14,28};",
        make: |r| {
            let pw = password(r);
            (
                format!("Server=tcp:sql-prod.acme.net,1433;Database=billing;User Id=svc_billing;Password={pw};Encrypt=True;"),
                vec![pw],
            )
        },
    },
    Kind {
        name: "npmrc_auth_token",
        shape: r"//[a-z.]+/:_authToken=[A-Za-z0-9_-]{40}$",
        make: |r| {
            let t = r.from(B64URL, 39) + &r.from(ALNUM, 1);
            (format!("//npm.pkg.github.com/:_authToken={t}"), vec![t])
        },
    },
    Kind {
        name: "pypirc_password",
        shape: r"\[pypi\]\nusername = [a-z_]+\npassword = \S{14,28}$",
        make: |r| {
            let pw = password(r);
            (
                format!("[pypi]\nusername = release_bot\npassword = {pw}"),
                vec![pw],
            )
        },
    },
    Kind {
        name: "netrc_password",
        shape: r"^machine [a-z.-]+ login [a-z]+ password \S{14,28}$",
        make: |r| {
            let pw = password(r);
            (
                format!("machine api.acme-corp.com login deployer password {pw}"),
                vec![pw],
            )
        },
    },
    Kind {
        name: "generic_api_key",
        shape: r#"api_key = "[A-Za-z0-9]{32}""#,
        make: |r| {
            let k = r.from(ALNUM, 32);
            (format!("api_key = \"{k}\""), vec![k])
        },
    },
    Kind {
        name: "client_secret",
        shape: r"client_secret: [A-Za-z0-9~._-]{40}$",
        make: |r| {
            let s = r.from(ALNUM, 1)
                + &r.from(
                    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789~._-",
                    38,
                )
                + &r.from(ALNUM, 1);
            (format!("client_secret: {s}"), vec![s])
        },
    },
    Kind {
        name: "password_assignment",
        shape: r#"password = "\S{14,28}""#,
        make: |r| {
            let pw = password(r);
            (format!("password = \"{pw}\""), vec![pw])
        },
    },
    Kind {
        name: "http_basic_auth_header",
        shape: r"Authorization: Basic [A-Za-z0-9+/]{16,}={0,2}",
        make: |r| {
            let user = r.from(LOWER_ALNUM, 8);
            let b = base64(format!("{user}:{}", password(r)).as_bytes());
            (
                format!("Authorization: Basic {b}"),
                vec![b.trim_end_matches('=').to_string()],
            )
        },
    },
    Kind {
        name: "http_bearer_token",
        shape: r"Authorization: Bearer [A-Za-z0-9_-]{48}$",
        make: |r| {
            let t = r.from(ALNUM, 1) + &r.from(B64URL, 46) + &r.from(ALNUM, 1);
            (format!("Authorization: Bearer {t}"), vec![t])
        },
    },
    Kind {
        name: "shopify_access_token",
        shape: r"\bshpat_[a-fA-F0-9]{32}\b",
        make: |r| prefixed("shpat_", r.from(HEX, 32)),
    },
    Kind {
        name: "digitalocean_pat",
        shape: r"\bdop_v1_[a-f0-9]{64}\b",
        make: |r| prefixed("dop_v1_", r.from(HEX, 64)),
    },
    Kind {
        name: "google_oauth_client_secret",
        shape: r"\bGOCSPX-[a-zA-Z0-9_-]{28}\b",
        make: |r| {
            let s = r.from(B64URL, 27) + &r.from(ALNUM, 1);
            prefixed("GOCSPX-", s)
        },
    },
];

/// Generate one secret of `kind`.
pub fn generate(kind: &Kind, r: &mut Rng) -> Secret {
    let (text, sensitive) = (kind.make)(r);
    Secret {
        kind: kind.name,
        text,
        sensitive,
    }
}

/// The shortest run of a sensitive part that counts as a leak: 8 characters, or 10
/// for hex (so that a chance match against the store's own hex carries at least
/// 40 bits, like 8 characters of a larger alphabet).
pub fn window_len(fragment: &str) -> usize {
    if fragment.bytes().all(|b| b.is_ascii_hexdigit()) {
        10
    } else {
        8
    }
}

/// A secret for display: its first 4 characters and its length, never more.
pub fn mask(s: &str) -> String {
    let head: String = s.chars().take(4).collect();
    format!("{head}…({} chars)", s.len())
}

#[cfg(test)]
mod shape_tests {
    use super::*;

    #[test]
    fn at_least_forty_kinds_with_unique_names() {
        assert!(KINDS.len() >= 40, "only {} kinds", KINDS.len());
        let mut names: Vec<_> = KINDS.iter().map(|k| k.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), KINDS.len(), "duplicate kind names");
    }

    #[test]
    fn every_generated_secret_has_its_documented_shape() {
        let mut r = Rng::new(0x5EC2E7);
        for kind in KINDS {
            let re = regex::Regex::new(&format!("(?m){}", kind.shape))
                .unwrap_or_else(|e| panic!("{}: bad shape regex: {e}", kind.name));
            for _ in 0..50 {
                let s = generate(kind, &mut r);
                assert!(
                    re.is_match(&s.text),
                    "{}: {:?} does not match {}",
                    kind.name,
                    s.text,
                    kind.shape
                );
                assert!(!s.sensitive.is_empty(), "{}: no sensitive part", kind.name);
                for frag in &s.sensitive {
                    assert!(
                        frag.len() >= window_len(frag),
                        "{}: sensitive part shorter than a window",
                        kind.name
                    );
                    assert!(
                        s.text.contains(frag.as_str()),
                        "{}: sensitive part not in the text",
                        kind.name
                    );
                }
            }
        }
    }

    #[test]
    fn secrets_are_fresh() {
        let mut r = Rng::new(1);
        for kind in KINDS {
            let a = generate(kind, &mut r);
            let b = generate(kind, &mut r);
            assert_ne!(a.sensitive, b.sensitive, "{}", kind.name);
        }
    }

    #[test]
    fn base64_matches_known_vectors() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
        assert_eq!(base64url(&[0xfb, 0xff]), "-_8");
    }
}
