//! The built-in pattern sets: `secrets`, `security-smells`, `debug-leftovers`.
//!
//! Each regex is written for Hyperscan (no look-around, no back-references) and for
//! precision over recall: a pattern that fires on ordinary code is worse than none.
//! Every pattern has a positive and a negative fixture in the tests below.

use std::sync::LazyLock;

use super::secret_rules;
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

/// Credentials and keys, one pattern per row of the secret rule table
/// (`secret_rules`), in table order. Shared with the indexer and the redactor.
pub fn secrets() -> PatternSet {
    PatternSet {
        name: "secrets".into(),
        description: "Credentials, tokens and private keys".into(),
        tags: vec!["security".into(), "secrets".into()],
        secret: true,
        patterns: secret_rules::all()
            .map(|r| PatternDef {
                id: r.id.into(),
                regex: r.regex.into(),
                description: r.description.into(),
                caseless: r.caseless,
            })
            .collect(),
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
/// text that must match, text that must not). Checked by `tests/it/patterns.rs`. The
/// `secrets` rows come from the secret rule table, so they cannot drift from it.
#[doc(hidden)]
pub static FIXTURES: LazyLock<Vec<(&'static str, &'static str, &'static str, &'static str)>> =
    LazyLock::new(|| {
        secret_rules::all()
            .map(|r| ("secrets", r.id, r.positive, r.negative))
            .chain(OTHER_FIXTURES.iter().copied())
            .collect()
    });

/// Fixtures of the sets other than `secrets`.
const OTHER_FIXTURES: &[(&str, &str, &str, &str)] = &[
    (
        "security-smells",
        "eval_exec",
        "result = eval(user_input)",
        "evaluate(x)",
    ),
    (
        "security-smells",
        "shell_true",
        "subprocess.run(cmd, shell=True)",
        "subprocess.run(cmd, shell=False)",
    ),
    (
        "security-smells",
        "os_system",
        "os.system('rm -rf ' + path)",
        "my_os.systems",
    ),
    (
        "security-smells",
        "sql_string_building",
        "cur.execute(\"SELECT * FROM users WHERE id = \" + uid)",
        "cur.execute(\"SELECT * FROM users WHERE id = ?\", (uid,))",
    ),
    (
        "security-smells",
        "weak_hash",
        "digest = hashlib.md5(data).hexdigest()",
        "digest = hashlib.sha256(data)",
    ),
    (
        "security-smells",
        "tls_verify_disabled",
        "requests.get(url, verify=False)",
        "requests.get(url, verify=True)",
    ),
    (
        "security-smells",
        "pickle_load",
        "obj = pickle.loads(blob)",
        "obj = json.loads(blob)",
    ),
    (
        "security-smells",
        "yaml_load",
        "cfg = yaml.load(open(p))",
        "cfg = yaml.safe_load(open(p))",
    ),
    (
        "security-smells",
        "chmod_777",
        "chmod -R 777 /var/www",
        "chmod 755 /var/www",
    ),
    (
        "debug-leftovers",
        "console_log",
        "console.log('here', x)",
        "logger.info('here')",
    ),
    (
        "debug-leftovers",
        "debugger",
        "if (x) { debugger; }",
        "const debuggerEnabled = false",
    ),
    (
        "debug-leftovers",
        "rust_dbg",
        "let y = dbg!(x + 1);",
        "let dbg = 1;",
    ),
    (
        "debug-leftovers",
        "python_breakpoint",
        "import pdb; pdb.set_trace()",
        "def set_trace_level(): pass",
    ),
    (
        "debug-leftovers",
        "ruby_pry",
        "binding.pry",
        "binding.local_variable_get(:x)",
    ),
    (
        "debug-leftovers",
        "php_dump",
        "var_dump($user);",
        "$dumpster = 1;",
    ),
    (
        "debug-leftovers",
        "java_println_debug",
        "System.out.println(\"DEBUG value=\" + v);",
        "System.out.println(\"Started\");",
    ),
    (
        "debug-leftovers",
        "fixme",
        "// FIXME: handle overflow",
        "// fixed: handle overflow",
    ),
];
