//! The built-in pattern sets: `secrets`, `security-smells`, `debug-leftovers`.
//!
//! Each regex is written for Hyperscan (no look-around, no back-references) and for
//! precision over recall: a pattern that fires on ordinary code is worse than none.
//! Every pattern has a positive and a negative fixture in the tests below.

use super::set::{PatternDef, PatternSet};

fn def(id: &str, regex: &str, description: &str) -> PatternDef {
    PatternDef {
        id: id.into(),
        regex: regex.into(),
        description: description.into(),
        caseless: false,
    }
}

fn caseless(mut d: PatternDef) -> PatternDef {
    d.caseless = true;
    d
}

/// Credentials and keys. Shared with the indexer's secret scanner.
pub fn secrets() -> PatternSet {
    PatternSet {
        name: "secrets".into(),
        description: "Credentials, tokens and private keys".into(),
        tags: vec!["security".into(), "secrets".into()],
        secret: true,
        patterns: vec![
            def(
                "aws_access_key",
                r"\b(AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b",
                "AWS access key id",
            ),
            caseless(def(
                "aws_secret_key",
                r#"\baws_?(secret_?access_?key|secret_?key|private_?key)['"]?\s*[=:]\s*['"]?[0-9a-zA-Z/+]{40}\b"#,
                "AWS secret access key in an assignment",
            )),
            def(
                "gcp_api_key",
                r"\bAIza[0-9A-Za-z_\-]{35}\b",
                "Google API key",
            ),
            def(
                "gcp_service_account",
                r#""type"\s*:\s*"service_account""#,
                "Google service-account key file",
            ),
            def(
                "azure_storage_key",
                r"AccountKey=[A-Za-z0-9+/]{86}==",
                "Azure storage account key (connection string)",
            ),
            def(
                "github_token",
                r"\b(ghp|gho|ghs|ghu|ghr)_[A-Za-z0-9]{36}\b",
                "GitHub token",
            ),
            def(
                "github_pat",
                r"\bgithub_pat_[A-Za-z0-9_]{82}\b",
                "GitHub fine-grained token",
            ),
            def(
                "gitlab_token",
                r"\bglpat-[A-Za-z0-9_\-]{20}\b",
                "GitLab personal access token",
            ),
            def(
                "slack_token",
                r"\bxox[abposr]-[A-Za-z0-9\-]{10,72}",
                "Slack token",
            ),
            def(
                "slack_webhook",
                r"https://hooks\.slack\.com/services/T[A-Z0-9]{6,}/B[A-Z0-9]{6,}/[A-Za-z0-9]{20,}",
                "Slack incoming webhook",
            ),
            def(
                "stripe_key",
                r"\b(sk|rk)_(live|test)_[0-9a-zA-Z]{24,99}\b",
                "Stripe secret key",
            ),
            def(
                "anthropic_key",
                r"\bsk-ant-[A-Za-z0-9_\-]{32,}",
                "Anthropic API key",
            ),
            def(
                "openai_key",
                r"\bsk-(proj-)?[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}|\bsk-proj-[A-Za-z0-9_\-]{40,}",
                "OpenAI API key",
            ),
            def(
                "jwt",
                r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",
                "JSON Web Token",
            ),
            def(
                "private_key",
                r"-----BEGIN (RSA |EC |DSA |OPENSSH |PGP |ENCRYPTED )?PRIVATE KEY( BLOCK)?-----",
                "Private key block",
            ),
            def(
                "database_url_password",
                r"\b(postgres|postgresql|mysql|mariadb|mongodb|mongodb\+srv|redis|rediss|amqp|amqps|mssql)://[^\s:/@]+:[^\s@/]{3,}@",
                "Database URL with a password",
            ),
            caseless(def(
                "password_assignment",
                r#"\b(password|passwd|pwd|secret|api_key|apikey|access_token|auth_token)\s*[:=]\s*['"][^'"\s]{8,}['"]"#,
                "A quoted password or secret assigned to a variable",
            )),
        ],
    }
}

/// Risky constructs worth a second look in review.
pub fn security_smells() -> PatternSet {
    PatternSet {
        name: "security-smells".into(),
        description: "Dangerous calls and disabled protections".into(),
        tags: vec!["security".into(), "review".into()],
        secret: false,
        patterns: vec![
            def("eval_exec", r"\b(eval|exec)\s*\(", "Dynamic code execution"),
            def(
                "shell_true",
                r"\bshell\s*=\s*True\b",
                "subprocess with shell=True",
            ),
            def(
                "os_system",
                r"\bos\.(system|popen)\s*\(",
                "Shell command via os.system/os.popen",
            ),
            caseless(def(
                "sql_string_building",
                r#"["'](select|insert|update|delete)\b[^"'\n]{0,200}["']\s*(\+|%\s*[(\w])|\bf["'](select|insert|update|delete)\b[^"'\n]{0,200}\{"#,
                "SQL built by string concatenation or formatting",
            )),
            def(
                "weak_hash",
                r#"\bhashlib\.(md5|sha1)\b|\bMessageDigest\.getInstance\(\s*"(MD5|SHA-?1)"|\bcrypto\.createHash\(\s*['"](md5|sha1)['"]"#,
                "MD5/SHA-1 used as a hash",
            ),
            def(
                "tls_verify_disabled",
                r"\bverify\s*=\s*False\b|\bInsecureSkipVerify\s*:\s*true\b|\brejectUnauthorized\s*:\s*false\b|\bdanger_accept_invalid_certs\s*\(\s*true\s*\)|CURLOPT_SSL_VERIFYPEER\s*,\s*(0|false)\b",
                "TLS certificate verification disabled",
            ),
            def(
                "pickle_load",
                r"\bpickle\.loads?\s*\(",
                "Unpickling (arbitrary code on untrusted data)",
            ),
            def(
                "yaml_load",
                r"\byaml\.load\s*\([^)\n]*\)",
                "yaml.load (use safe_load)",
            ),
            def(
                "chmod_777",
                r"\bchmod\s+(-R\s+)?0?777\b",
                "World-writable permissions",
            ),
        ],
    }
}

/// Debugging code left behind.
pub fn debug_leftovers() -> PatternSet {
    PatternSet {
        name: "debug-leftovers".into(),
        description: "Debug prints, breakpoints and markers left in code".into(),
        tags: vec!["quality".into()],
        secret: false,
        patterns: vec![
            def("console_log", r"\bconsole\.(log|debug)\s*\(", "console.log"),
            def(
                "debugger",
                r"\bdebugger\s*;",
                "JavaScript debugger statement",
            ),
            def("rust_dbg", r"\bdbg!\s*\(", "Rust dbg! macro"),
            def(
                "python_breakpoint",
                r"\b(pdb|ipdb)\.set_trace\s*\(|\bbreakpoint\s*\(\s*\)",
                "Python breakpoint",
            ),
            def(
                "ruby_pry",
                r"\bbinding\.(pry|irb)\b",
                "Ruby pry/irb breakpoint",
            ),
            def("php_dump", r"\b(var_dump|print_r|dd)\s*\(", "PHP dump"),
            def(
                "java_println_debug",
                r#"\bSystem\.(out|err)\.println\s*\(\s*"(DEBUG|debug)"#,
                "Java debug print",
            ),
            def("fixme", r"\b(FIXME|XXX)\b", "FIXME/XXX marker"),
        ],
    }
}

/// Every built-in set.
pub fn all() -> Vec<PatternSet> {
    vec![secrets(), security_smells(), debug_leftovers()]
}

/// Positive and negative fixtures for every built-in pattern: (set, pattern id,
/// text that must match, text that must not). Checked by `tests/patterns.rs`.
#[doc(hidden)]
pub const FIXTURES: &[(&str, &str, &str, &str)] = &[
    ("secrets", "aws_access_key", "key = AKIAIOSFODNN7EXAMPLE", "AKIAshort and AKIA_not_a_key"),
    ("secrets", "aws_secret_key", "aws_secret_access_key = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY'", "aws region = 'us-east-1'"),
    ("secrets", "gcp_api_key", "AIzaSyA1234567890abcdefghijklmnopqrstuv", "AIza too short"),
    ("secrets", "gcp_service_account", "{\"type\": \"service_account\", \"project_id\": \"p\"}", "{\"type\": \"user\"}"),
    ("secrets", "azure_storage_key", "AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==", "AccountKey=short"),
    ("secrets", "github_token", "token: ghp_abcdefghijklmnopqrstuvwxyz0123456789", "ghp_short"),
    ("secrets", "github_pat", "github_pat_11ABCDEFG0123456789abc_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456", "github_pat_short"),
    ("secrets", "gitlab_token", "glpat-abcdefghij0123456789", "glpat-short"),
    ("secrets", "slack_token", "xoxb-1234567890-abcdefghij", "xoxz-1234567890"),
    ("secrets", "slack_webhook", "https://hooks.slack.com/services/T0ABCDEFG/B0ABCDEFG/abcdefghijklmnopqrstuvwx", "https://hooks.slack.com/apps"),
    ("secrets", "stripe_key", "sk_live_abcdefghijklmnopqrstuvwx", "sk_live_short"),
    ("secrets", "anthropic_key", "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789", "sk-ant-short"),
    ("secrets", "openai_key", "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGH", "sk-proj-short"),
    ("secrets", "jwt", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U", "eyJ alone"),
    ("secrets", "private_key", "-----BEGIN OPENSSH PRIVATE KEY-----", "-----BEGIN PUBLIC KEY-----"),
    ("secrets", "database_url_password", "postgres://app:s3cretpw@db.internal:5432/app", "postgres://db.internal:5432/app"),
    ("secrets", "password_assignment", "PASSWORD = \"hunter2hunter2\"", "password = get_password()"),
    ("security-smells", "eval_exec", "result = eval(user_input)", "evaluate(x)"),
    ("security-smells", "shell_true", "subprocess.run(cmd, shell=True)", "subprocess.run(cmd, shell=False)"),
    ("security-smells", "os_system", "os.system('rm -rf ' + path)", "my_os.systems"),
    ("security-smells", "sql_string_building", "cur.execute(\"SELECT * FROM users WHERE id = \" + uid)", "cur.execute(\"SELECT * FROM users WHERE id = ?\", (uid,))"),
    ("security-smells", "weak_hash", "digest = hashlib.md5(data).hexdigest()", "digest = hashlib.sha256(data)"),
    ("security-smells", "tls_verify_disabled", "requests.get(url, verify=False)", "requests.get(url, verify=True)"),
    ("security-smells", "pickle_load", "obj = pickle.loads(blob)", "obj = json.loads(blob)"),
    ("security-smells", "yaml_load", "cfg = yaml.load(open(p))", "cfg = yaml.safe_load(open(p))"),
    ("security-smells", "chmod_777", "chmod -R 777 /var/www", "chmod 755 /var/www"),
    ("debug-leftovers", "console_log", "console.log('here', x)", "logger.info('here')"),
    ("debug-leftovers", "debugger", "if (x) { debugger; }", "const debuggerEnabled = false"),
    ("debug-leftovers", "rust_dbg", "let y = dbg!(x + 1);", "let dbg = 1;"),
    ("debug-leftovers", "python_breakpoint", "import pdb; pdb.set_trace()", "def set_trace_level(): pass"),
    ("debug-leftovers", "ruby_pry", "binding.pry", "binding.local_variable_get(:x)"),
    ("debug-leftovers", "php_dump", "var_dump($user);", "$dumpster = 1;"),
    ("debug-leftovers", "java_println_debug", "System.out.println(\"DEBUG value=\" + v);", "System.out.println(\"Started\");"),
    ("debug-leftovers", "fixme", "// FIXME: handle overflow", "// fixed: handle overflow"),
];
