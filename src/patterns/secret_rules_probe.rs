//! Probes for tuning the secret rules, run by hand (`--ignored --nocapture`):
//! which rule does not compile alone, and how fast the set scans code-like text
//! (`PER_RULE=1`, `LOO=1`, `SKIP=a,b;c`, `PROBE_FILE=…`, `SCAN_MB=n` select variants).
//! Throughput is measured in on-CPU time of the scanning thread so that other work
//! on the machine blurs the comparison less; for a deterministic figure, count
//! instructions under `valgrind --tool=callgrind --toggle-collect='*scan_with*'`.

#[test]
#[ignore]
fn each_rule_alone() {
    for r in engram_secrets::secret_rules::all() {
        let set = crate::patterns::PatternSet {
            name: "p".into(),
            description: String::new(),
            tags: vec![],
            secret: true,
            patterns: vec![crate::patterns::PatternDef {
                id: "x".into(),
                regex: r.regex.into(),
                description: String::new(),
                caseless: r.caseless,
            }],
        };
        if let Err(e) = crate::patterns::compile(&set) {
            println!("BAD {} {e}", r.id);
        }
    }
}

/// Throughput of the secret set over bench-like code text (the lines of
/// benches/memory.rs), next to the 17-rule set this table replaced.
#[test]
#[ignore]
fn throughput() {
    const LINES: &[&str] = &[
        "    let total = items.iter().map(|x| x.price * x.qty).sum::<u64>();",
        "def handle_request(self, request, *args, **kwargs):",
        "        return self.session.get(url, timeout=self.timeout)",
        "    if (response.status !== 200) { throw new Error(`bad status ${response.status}`); }",
        "import os, sys, json  # standard library only",
        "    for (size_t i = 0; i < n; ++i) { acc += buf[i]; }",
        "// Compute the checksum of the frame header before the payload.",
        "    user = await db.users.find_one({\"email\": email})",
    ];
    let mut text = String::new();
    let mut x: u64 = 0x1234_5678_9abc_def1;
    while text.len() < 256 << 20 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        text.push_str(LINES[(x % LINES.len() as u64) as usize]);
        text.push('\n');
    }
    let old = crate::patterns::PatternSet {
        patterns: OLD
            .iter()
            .map(|(id, re, c)| crate::patterns::PatternDef {
                id: (*id).into(),
                regex: (*re).into(),
                description: String::new(),
                caseless: *c,
            })
            .collect(),
        ..crate::patterns::builtin::secrets()
    };
    let old_set = old.clone();
    let mut sets = vec![
        ("old".to_string(), old),
        ("new".to_string(), crate::patterns::builtin::secrets()),
    ];
    if let Ok(file) = std::env::var("PROBE_FILE") {
        text.truncate(32 << 20);
        let body = std::fs::read_to_string(file).expect("probe file");
        sets = body
            .lines()
            .filter(|l| !l.is_empty())
            .map(|l| {
                let (c, re) = l.split_at(1);
                let mut one = crate::patterns::builtin::secrets();
                one.patterns = vec![crate::patterns::PatternDef {
                    id: "probe".into(),
                    regex: re.into(),
                    description: String::new(),
                    caseless: c == "i",
                }];
                (l.to_string(), one)
            })
            .collect();
    }
    if let Ok(skip) = std::env::var("SKIP") {
        text.truncate(64 << 20);
        sets = skip
            .split(';')
            .map(|group| {
                if group == "OLD" {
                    return ("old".to_string(), old_set.clone());
                }
                let drop: Vec<&str> = group.split(',').collect();
                let mut rest = crate::patterns::builtin::secrets();
                rest.patterns.retain(|p| !drop.contains(&p.id.as_str()));
                (format!("without {group}"), rest)
            })
            .collect();
    }
    if std::env::var_os("LOO").is_some() {
        text.truncate(64 << 20);
        sets = engram_secrets::secret_rules::all()
            .map(|r| {
                let mut rest = crate::patterns::builtin::secrets();
                rest.patterns.retain(|p| p.id != r.id);
                (format!("without {}", r.id), rest)
            })
            .collect();
    }
    if std::env::var_os("PER_RULE").is_some() {
        text.truncate(32 << 20);
        sets = engram_secrets::secret_rules::all()
            .map(|r| {
                let mut one = crate::patterns::builtin::secrets();
                one.patterns.retain(|p| p.id == r.id);
                (r.id.to_string(), one)
            })
            .collect();
    }
    let reps = if let Ok(mb) = std::env::var("SCAN_MB") {
        text.truncate(mb.parse::<usize>().unwrap_or(0) << 20);
        1
    } else {
        3
    };
    for (name, set) in sets {
        let Ok(compiled) = crate::patterns::compile(&set) else {
            println!("{name}: does not compile");
            continue;
        };
        let mut scanner = compiled.scanner().expect("scanner");
        // On-CPU time of this thread, so that other builds on the machine do not
        // blur the comparison.
        let cpu = || -> f64 {
            let s = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
            s.split_whitespace()
                .next()
                .and_then(|v| v.parse::<f64>().ok())
                .unwrap_or(0.0)
                / 1e9
        };
        let mut best = f64::MAX;
        for _ in 0..reps {
            let t = cpu();
            for chunk in text.as_bytes().chunks(16 << 10) {
                let _ = scanner.scan(chunk).expect("scan");
            }
            best = best.min(cpu() - t);
        }
        println!(
            "{name}: {} rules, {:.2} GB/s",
            set.patterns.len(),
            text.len() as f64 / best / 1e9
        );
    }
}

const OLD: &[(&str, &str, bool)] = &[
    (
        "aws_access_key",
        r"\b(AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b",
        false,
    ),
    (
        "aws_secret_key",
        r#"\baws_?(secret_?access_?key|secret_?key|private_?key)['"]?\s*[=:]\s*['"]?[0-9a-zA-Z/+]{40}\b"#,
        true,
    ),
    ("gcp_api_key", r"\bAIza[0-9A-Za-z_\-]{35}\b", false),
    (
        "gcp_service_account",
        r#""type"\s*:\s*"service_account""#,
        false,
    ),
    (
        "azure_storage_key",
        r"AccountKey=[A-Za-z0-9+/]{86}==",
        false,
    ),
    (
        "github_token",
        r"\b(ghp|gho|ghs|ghu|ghr)_[A-Za-z0-9]{36}\b",
        false,
    ),
    ("github_pat", r"\bgithub_pat_[A-Za-z0-9_]{82}\b", false),
    ("gitlab_token", r"\bglpat-[A-Za-z0-9_\-]{20}\b", false),
    ("slack_token", r"\bxox[abposr]-[A-Za-z0-9\-]{10,72}", false),
    (
        "slack_webhook",
        r"https://hooks\.slack\.com/services/T[A-Z0-9]{6,}/B[A-Z0-9]{6,}/[A-Za-z0-9]{20,}",
        false,
    ),
    (
        "stripe_key",
        r"\b(sk|rk)_(live|test)_[0-9a-zA-Z]{24,99}\b",
        false,
    ),
    ("anthropic_key", r"\bsk-ant-[A-Za-z0-9_\-]{32,}", false),
    (
        "openai_key",
        r"\bsk-(proj-)?[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}|\bsk-proj-[A-Za-z0-9_\-]{40,}",
        false,
    ),
    (
        "jwt",
        r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",
        false,
    ),
    (
        "private_key",
        r"-----BEGIN (RSA |EC |DSA |OPENSSH |PGP |ENCRYPTED )?PRIVATE KEY( BLOCK)?-----",
        false,
    ),
    (
        "database_url_password",
        r"\b(postgres|postgresql|mysql|mariadb|mongodb|mongodb\+srv|redis|rediss|amqp|amqps|mssql)://[^\s:/@]+:[^\s@/]{3,}@",
        false,
    ),
    (
        "password_assignment",
        r#"\b(password|passwd|pwd|secret|api_key|apikey|access_token|auth_token)\s*[:=]\s*['"][^'"\s]{8,}['"]"#,
        true,
    ),
];
