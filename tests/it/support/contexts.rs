//! The contexts of the secrets corpus: how a generated secret sits in a file or a
//! text (code literals, a comment, YAML, JSON, TOML, an env-style line, a plain block,
//! a JSON string with escaped newlines, a URL, a markdown fence).

#![allow(dead_code)]

use serde_json::json;

use super::secrets::Secret;

/// A context: how a secret sits in a file or a text.
pub struct Context {
    pub name: &'static str,
    /// File extension for the `index` way.
    pub ext: &'static str,
    pub render: fn(&Secret, &str) -> String,
}

fn indent(text: &str, prefix: &str) -> String {
    text.lines()
        .map(|l| format!("{prefix}{l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Percent-encode everything but RFC 3986 unreserved characters.
fn percent(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

pub const CONTEXTS: &[Context] = &[
    Context {
        name: "python_literal",
        ext: "py",
        render: |s, c| {
            let lit = if s.multiline() {
                format!("'''\n{}\n'''", s.text)
            } else if s.text.contains('"') {
                format!("'{}'", s.text)
            } else {
                format!("\"{}\"", s.text)
            };
            format!("\"\"\"Settings for the {c} service.\"\"\"\n\nimport os\n\nCREDENTIAL = {lit}\n\n\ndef connect():\n    return os.environ.get(\"HOST\", \"localhost\"), CREDENTIAL\n")
        },
    },
    Context {
        name: "go_literal",
        ext: "go",
        render: |s, c| {
            format!("package config\n\n// {c} holds the deploy credential.\nconst credential = `{}`\n\nfunc Credential() string {{ return credential }}\n", s.text)
        },
    },
    Context {
        name: "js_literal",
        ext: "js",
        render: |s, c| {
            let lit = if s.multiline() {
                format!("`{}`", s.text)
            } else {
                format!("'{}'", s.text)
            };
            format!("// {c}\nconst credential = {lit};\n\nmodule.exports = {{ credential }};\n")
        },
    },
    Context {
        name: "comment",
        ext: "rs",
        render: |s, c| {
            format!(
                "// {c}: the staging credential, until the vault is wired up:\n{}\npub fn connect() -> bool {{\n    true\n}}\n",
                indent(&s.text, "// ")
            )
        },
    },
    Context {
        name: "yaml",
        ext: "yaml",
        render: |s, c| {
            let value = if s.multiline() {
                format!("|\n{}", indent(&s.text, "    "))
            } else {
                format!("'{}'", s.text)
            };
            format!("service: {c}\nreplicas: 2\ncredentials:\n  value: {value}\n")
        },
    },
    Context {
        name: "json",
        ext: "json",
        render: |s, c| {
            let v = json!({"service": c, "replicas": 2, "credential": s.text});
            serde_json::to_string_pretty(&v).unwrap() + "\n"
        },
    },
    Context {
        name: "toml",
        ext: "toml",
        render: |s, c| {
            let value = if s.multiline() {
                format!("'''\n{}\n'''", s.text)
            } else {
                format!("'{}'", s.text)
            };
            format!("[service]\nname = \"{c}\"\nreplicas = 2\ncredential = {value}\n")
        },
    },
    Context {
        name: "env_line",
        ext: "conf",
        render: |s, c| {
            let plain = !s.text.contains(|ch: char| ch.is_whitespace() || ch == '"');
            let value = if plain {
                s.text.clone()
            } else {
                format!("'{}'", s.text)
            };
            format!("# {c} deploy settings\nAPP_ENV=production\nAPP_CREDENTIAL={value}\nAPP_WORKERS=4\n")
        },
    },
    Context {
        name: "text_block",
        ext: "txt",
        render: |s, c| {
            format!("Notes for {c}.\n\nThe credential the ops team sent, paste it into the vault:\n\n{}\n\nThen restart the service and delete this file.\n", s.text)
        },
    },
    Context {
        name: "escaped_newlines",
        ext: "json",
        render: |s, c| {
            let msg = format!("loaded config for {c}:\n{}\nend of config", s.text);
            let v = json!({"level": "error", "ts": "2024-05-01T12:00:00Z", "msg": msg});
            serde_json::to_string(&v).unwrap() + "\n"
        },
    },
    Context {
        name: "url",
        ext: "sh",
        render: |s, c| {
            let is_url = s.text.contains("://") && !s.multiline() && !s.text.contains(' ');
            let url = if is_url {
                s.text.clone()
            } else {
                format!(
                    "https://api.example.com/v1/hooks?svc={c}&credential={}",
                    percent(&s.text)
                )
            };
            format!("#!/bin/sh\n# {c}\ncurl -fsS '{url}' -o /dev/null\n")
        },
    },
    Context {
        name: "markdown_fence",
        ext: "md",
        render: |s, c| {
            format!("# Setup of {c}\n\nPut this in your config:\n\n```\n{}\n```\n\nand run `make deploy`.\n", s.text)
        },
    },
];
