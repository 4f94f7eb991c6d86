//! The built-in embedder's knowledge of words: which carry no meaning (stop words and
//! language keywords), how to reduce a word to its stem, and which words programmers
//! use for the same idea (`remove`, `delete`, `erase`, `drop`).
//!
//! This table is part of the embedder's vector space: changing a word's group or stem
//! changes the vectors, so any change here must come with a new embedder name.

use std::collections::HashMap;
use std::sync::OnceLock;

/// Words too common in code or prose to say anything about a chunk.
const STOP_WORDS: &[&str] = &[
    "a",
    "an",
    "and",
    "are",
    "as",
    "at",
    "be",
    "by",
    "do",
    "does",
    "for",
    "from",
    "has",
    "have",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "it",
    "its",
    "me",
    "my",
    "no",
    "not",
    "of",
    "on",
    "or",
    "our",
    "so",
    "that",
    "the",
    "then",
    "there",
    "this",
    "to",
    "was",
    "we",
    "what",
    "when",
    "where",
    "which",
    "who",
    "why",
    "will",
    "with",
    "you",
    "your", // prose
    "pub",
    "fn",
    "let",
    "mut",
    "self",
    "mod",
    "use",
    "crate",
    "impl",
    "def",
    "func",
    "var",
    "const",
    "return",
    "else",
    "elif",
    "end",
    "new",
    "public",
    "private",
    "protected",
    "static",
    "void",
    "int",
    "str",
    "string",
    "bool",
    "true",
    "false",
    "none",
    "null",
    "nil",
    "ok",
    "some",
    "this",
    "super",
    "class",
    "struct",
    "function",
    "import",
    "package",
    "export",
    "default",
    "async",
    "await",
    "try",
    "except",
    "catch",
    "finally",
    "throw",
    "throws",
    "raise",
    "yield",
    "lambda",
    "match",
    "case",
    "switch",
    "break",
    "continue",
    "while",
    "loop",
    "where",
    "type",
    "typeof",
    "instanceof",
    "extends",
    "implements",
    "interface",
    "enum",
    "trait",
    "dyn",
    "ref",
    "unwrap",
    "vec",
    "std",
    "len",
    "args",
    "kwargs",
    "cls",
    "val",
    "res",
    "ret",
    "tmp",
    "x",
    "y",
    "z",
    "n",
    "e",
    "t",
    "s",
    "v",
    "k",
    "b",
    "c",
    "d",
    "f",
    "m",
    "p",
    "r",
    "u",
    "w",
];

/// Groups of words that name one idea in code. Each word maps to its group's first
/// word, which becomes an extra feature: a query for `remove user` then shares
/// features with `fn delete_user` although no word is the same.
const GROUPS: &[&[&str]] = &[
    &[
        "delete", "remove", "erase", "drop", "destroy", "purge", "unlink", "rm", "del", "evict",
        "discard",
    ],
    &[
        "create",
        "make",
        "build",
        "construct",
        "spawn",
        "instantiate",
        "generate",
        "produce",
    ],
    &[
        "get", "fetch", "retrieve", "load", "read", "obtain", "lookup", "find", "query", "select",
    ],
    &[
        "set", "store", "save", "write", "put", "persist", "assign", "update", "upsert",
    ],
    &[
        "add", "insert", "append", "push", "attach", "register", "enqueue",
    ],
    &[
        "error",
        "err",
        "failure",
        "fail",
        "exception",
        "panic",
        "fault",
        "problem",
        "bug",
        "crash",
    ],
    &[
        "auth",
        "authentication",
        "authenticate",
        "login",
        "logon",
        "signin",
        "credential",
        "password",
        "passwd",
        "token",
        "session",
    ],
    &[
        "permission",
        "authorize",
        "authorization",
        "acl",
        "role",
        "grant",
        "access",
        "privilege",
    ],
    &[
        "config",
        "configuration",
        "configure",
        "settings",
        "setting",
        "options",
        "option",
        "preferences",
        "prefs",
        "env",
        "environment",
    ],
    &[
        "init",
        "initialize",
        "initialise",
        "setup",
        "bootstrap",
        "start",
        "startup",
        "boot",
        "launch",
    ],
    &[
        "stop",
        "shutdown",
        "halt",
        "terminate",
        "kill",
        "close",
        "exit",
        "quit",
        "teardown",
        "cleanup",
    ],
    &[
        "db", "database", "sql", "sqlite", "postgres", "mysql", "table", "schema", "row", "column",
    ],
    &[
        "http", "request", "response", "url", "endpoint", "route", "api", "rest", "client",
        "server", "fetch",
    ],
    &[
        "parse",
        "parser",
        "decode",
        "deserialize",
        "deserialise",
        "unmarshal",
        "unpack",
        "tokenize",
        "lex",
        "lexer",
    ],
    &[
        "serialize",
        "serialise",
        "encode",
        "marshal",
        "pack",
        "dump",
        "format",
        "render",
        "stringify",
    ],
    &[
        "file",
        "path",
        "directory",
        "dir",
        "folder",
        "fs",
        "filesystem",
        "filename",
    ],
    &[
        "test",
        "tests",
        "spec",
        "assert",
        "expect",
        "check",
        "verify",
        "validate",
        "validation",
    ],
    &["cache", "memo", "memoize", "lru", "buffer"],
    &[
        "hash",
        "digest",
        "checksum",
        "crc",
        "fingerprint",
        "sha",
        "md5",
        "blake",
    ],
    &[
        "lock",
        "mutex",
        "semaphore",
        "synchronize",
        "sync",
        "atomic",
        "guard",
        "latch",
    ],
    &[
        "thread",
        "async",
        "concurrent",
        "concurrency",
        "parallel",
        "task",
        "worker",
        "pool",
        "future",
        "promise",
        "goroutine",
    ],
    &[
        "log", "logger", "logging", "trace", "tracing", "debug", "print", "println", "printf",
        "console",
    ],
    &[
        "send",
        "emit",
        "publish",
        "dispatch",
        "notify",
        "broadcast",
        "post",
    ],
    &[
        "receive",
        "recv",
        "listen",
        "subscribe",
        "consume",
        "handle",
        "handler",
        "callback",
        "hook",
    ],
    &[
        "user", "account", "member", "customer", "person", "profile", "owner",
    ],
    &[
        "count", "size", "length", "total", "number", "num", "sum", "tally",
    ],
    &["sort", "order", "rank", "compare", "cmp", "ordering"],
    &["search", "find", "lookup", "locate", "grep", "scan", "seek"],
    &[
        "list",
        "array",
        "vec",
        "vector",
        "collection",
        "sequence",
        "slice",
        "items",
    ],
    &[
        "map",
        "dict",
        "dictionary",
        "hashmap",
        "table",
        "object",
        "record",
    ],
    &["key", "id", "identifier", "uuid", "name"],
    &["retry", "backoff", "attempt", "retries", "resilience"],
    &[
        "timeout", "deadline", "expire", "expiry", "ttl", "elapsed", "duration", "timer", "clock",
        "time",
    ],
    &[
        "encrypt",
        "encryption",
        "cipher",
        "crypto",
        "aes",
        "rsa",
        "tls",
        "ssl",
        "secure",
        "decrypt",
    ],
    &["secret", "apikey", "private", "sensitive", "redact", "mask"],
    &[
        "compress",
        "compression",
        "zip",
        "gzip",
        "deflate",
        "zstd",
        "lz4",
        "inflate",
        "decompress",
    ],
    &[
        "network",
        "socket",
        "tcp",
        "udp",
        "connection",
        "connect",
        "port",
        "host",
        "address",
    ],
    &[
        "memory",
        "alloc",
        "allocate",
        "allocation",
        "heap",
        "malloc",
        "free",
        "gc",
        "garbage",
    ],
    &[
        "image",
        "picture",
        "photo",
        "thumbnail",
        "png",
        "jpeg",
        "jpg",
        "bitmap",
    ],
    &["email", "mail", "smtp", "message", "inbox"],
    &[
        "payment", "pay", "charge", "invoice", "billing", "price", "stripe", "checkout",
    ],
    &["event", "signal", "trigger", "fire", "occurrence"],
    &["queue", "channel", "pipe", "stream", "topic"],
    &["index", "indexer", "reindex", "indexing"],
    &[
        "embed",
        "embedding",
        "vector",
        "similarity",
        "cosine",
        "semantic",
    ],
    &[
        "merge",
        "combine",
        "join",
        "concat",
        "concatenate",
        "union",
        "fuse",
    ],
    &[
        "split",
        "divide",
        "chunk",
        "partition",
        "segment",
        "tokenize",
    ],
    &["copy", "clone", "duplicate", "replicate"],
    &["move", "rename", "relocate", "transfer", "mv"],
    &["convert", "transform", "cast", "coerce", "translate", "to"],
    &[
        "iterate", "iter", "iterator", "each", "foreach", "loop", "traverse", "walk", "visit",
    ],
    &[
        "run", "execute", "exec", "invoke", "call", "perform", "apply", "eval",
    ],
    &[
        "schedule",
        "scheduler",
        "cron",
        "periodic",
        "interval",
        "job",
    ],
    &["migrate", "migration", "upgrade", "version", "schema"],
    &[
        "backup",
        "snapshot",
        "restore",
        "recover",
        "recovery",
        "checkpoint",
    ],
    &["limit", "throttle", "rate", "quota", "cap", "ratelimit"],
    &[
        "sanitize",
        "sanitise",
        "escape",
        "clean",
        "strip",
        "filter",
        "whitelist",
        "allowlist",
    ],
    &[
        "render", "view", "template", "html", "page", "display", "show", "ui",
    ],
    &["width", "height", "resize", "scale", "dimension", "bounds"],
    &["random", "rand", "rng", "shuffle", "sample", "entropy"],
    &["math", "compute", "calculate", "calc", "arithmetic"],
];

/// True for words that carry no meaning on their own.
pub fn is_stop_word(word: &str) -> bool {
    STOP_WORDS.contains(&word)
}

/// The idea a word names, as its group's first word, looked up by the word's
/// [`stem`] so inflections (`removed`, `removing`) find their group too. When a word
/// sits in two groups the first one listed wins.
pub fn concept(stemmed: &str) -> Option<&'static str> {
    static BY_STEM: OnceLock<HashMap<&'static str, &'static str>> = OnceLock::new();
    BY_STEM
        .get_or_init(|| {
            let mut m = HashMap::new();
            for g in GROUPS {
                for w in *g {
                    m.entry(stem(w)).or_insert(g[0]);
                }
            }
            m
        })
        .get(stemmed)
        .copied()
}

/// A crude English stem: common inflections removed so `parsing`, `parsed` and
/// `parses` share a feature with `parse`. Deliberately conservative; a wrong stem only
/// costs a little recall because the unstemmed word's n-grams are features too.
pub fn stem(word: &str) -> &str {
    const SUFFIXES: &[&str] = &[
        "ations", "ation", "ings", "ing", "ers", "ies", "ied", "ed", "er", "es", "s",
    ];
    if word.len() <= 4 || !word.is_ascii() {
        return word;
    }
    for suf in SUFFIXES {
        if let Some(base) = word.strip_suffix(suf) {
            if base.len() >= 3 {
                return base;
            }
        }
    }
    // `parse` must meet `parsing`: a final e goes too.
    match word.strip_suffix('e') {
        Some(base) if base.len() >= 4 => base,
        _ => word,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn synonyms_share_a_concept_and_inflections_share_a_stem() {
        assert_eq!(concept(stem("remove")), Some("delete"));
        assert_eq!(concept(stem("removing")), Some("delete"));
        assert_eq!(concept(stem("erased")), Some("delete"));
        assert_eq!(concept("signin"), Some("auth"));
        assert_eq!(concept("frobnicate"), None);
        assert_eq!(stem("parse"), "pars");
        assert_eq!(stem("parsing"), "pars");
        assert_eq!(stem("parses"), "pars");
        assert_eq!(stem("parsed"), "pars");
        assert_eq!(stem("tokens"), "token");
        assert_eq!(stem("is"), "is");
        assert!(is_stop_word("the") && is_stop_word("fn") && !is_stop_word("parse"));
    }
}
