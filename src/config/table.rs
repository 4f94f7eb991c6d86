//! The table of settings: each one's name, environment variable, default, meaning and
//! the check its value must pass. Data and validators only; loading and precedence
//! are in `config.rs`.

use super::{parse_bool, DatabaseUrlError};
use crate::embed::EmbedderNameError;

/// Why a setting's value was refused: each says what a valid value looks like.
#[derive(Debug, thiserror::Error)]
pub enum SettingError {
    #[error("expected true or false")]
    NotBool,
    #[error("expected a number of bytes")]
    NotBytes,
    #[error("expected a number of milliseconds")]
    NotMillis,
    #[error("expected a whole number above 0")]
    NotPositive,
    #[error("expected a whole number from 1 to 1000 (pgvector's range for hnsw.ef_search)")]
    EfSearchRange,
    #[error("expected one of {}", options.join(", "))]
    NotOneOf { options: &'static [&'static str] },
    #[error("expected a price in US dollars per million tokens, e.g. 0.15")]
    NotPrice,
    #[error("expected a number from 0 to 1")]
    NotUnit,
    #[error("alias {alias:?}: an alias is a plain name (not empty, `.`, `*` or a path)")]
    BadAlias { alias: String },
    #[error("expected HOST:PORT, e.g. 127.0.0.1:7878")]
    NotAddress,
    #[error(transparent)]
    Embedder(#[from] EmbedderNameError),
    #[error(transparent)]
    DatabaseUrl(#[from] DatabaseUrlError),
}

type Check = Result<(), SettingError>;

/// One setting: its name (as in the file), environment variable, default and meaning.
pub struct Setting {
    pub name: &'static str,
    pub env: &'static str,
    pub default: &'static str,
    pub help: &'static str,
    pub(super) check: fn(&str) -> Check,
}

fn any(_: &str) -> Check {
    Ok(())
}

fn boolean(v: &str) -> Check {
    parse_bool(v).map(|_| ())
}

fn bytes(v: &str) -> Check {
    v.parse::<u64>()
        .map(|_| ())
        .map_err(|_| SettingError::NotBytes)
}

fn millis(v: &str) -> Check {
    v.parse::<u64>()
        .map(|_| ())
        .map_err(|_| SettingError::NotMillis)
}

fn positive(v: &str) -> Check {
    match v.parse::<u64>() {
        Ok(n) if n > 0 => Ok(()),
        _ => Err(SettingError::NotPositive),
    }
}

fn ef_search(v: &str) -> Check {
    match v.parse::<u32>() {
        Ok(n) if (1..=1000).contains(&n) => Ok(()),
        _ => Err(SettingError::EfSearchRange),
    }
}

fn one_of(options: &'static [&'static str]) -> impl Fn(&str) -> Check {
    move |v| {
        if options.contains(&v) {
            Ok(())
        } else {
            Err(SettingError::NotOneOf { options })
        }
    }
}

fn durability(v: &str) -> Check {
    one_of(&["always", "batch", "never"])(v)
}

fn secret_action(v: &str) -> Check {
    one_of(&["redact", "exclude"])(v)
}

fn tools(v: &str) -> Check {
    one_of(&["default", "core", "code", "memory", "coding", "all"])(v)
}

fn embedder(v: &str) -> Check {
    Ok(crate::embed::check_embedder_name(v)?)
}

fn database_url(v: &str) -> Check {
    Ok(super::check_database_url(v)?)
}

fn llm_api(v: &str) -> Check {
    one_of(&["openai", "anthropic"])(v)
}

fn llm_features(v: &str) -> Check {
    const KNOWN: &[&str] = &["summary", "rerank", "extract", "compress", "vision", "all"];
    for f in v.split(',').map(str::trim).filter(|f| !f.is_empty()) {
        one_of(KNOWN)(f)?;
    }
    Ok(())
}

fn price(v: &str) -> Check {
    match v.parse::<f64>() {
        Ok(p) if p.is_finite() && p >= 0.0 => Ok(()),
        _ => Err(SettingError::NotPrice),
    }
}

fn unit(v: &str) -> Check {
    match v.parse::<f64>() {
        Ok(p) if (0.0..=1.0).contains(&p) => Ok(()),
        _ => Err(SettingError::NotUnit),
    }
}

fn aliases(v: &str) -> Check {
    for a in v.split(',').map(str::trim).filter(|a| !a.is_empty()) {
        let name = a.split_once('=').map_or(a, |(n, _)| n.trim());
        if name.is_empty() || name == "." || name == "*" || name.starts_with('/') {
            return Err(SettingError::BadAlias {
                alias: a.to_string(),
            });
        }
    }
    Ok(())
}

fn address(v: &str) -> Check {
    v.parse::<std::net::SocketAddr>()
        .map(|_| ())
        .map_err(|_| SettingError::NotAddress)
}

/// Every setting engram reads.
pub const SETTINGS: &[Setting] = &[
    Setting {
        name: "store",
        env: "ENGRAM_STORE",
        default: "",
        help: "store directory (empty: one per repository under the data directory)",
        check: any,
    },
    Setting {
        name: "home",
        env: "ENGRAM_HOME",
        default: "",
        help: "data directory for per-repository stores (empty: $XDG_DATA_HOME/engram)",
        check: any,
    },
    Setting {
        name: "durability",
        env: "ENGRAM_DURABILITY",
        default: "always",
        help: "when writes are made durable: always, batch, never",
        check: durability,
    },
    Setting {
        name: "key_file",
        env: "ENGRAM_KEY_FILE",
        default: "",
        help: "file holding the key a sealed store's vectors are encrypted under (32 bytes or 64 hex digits, outside the store directory; ENGRAM_KEY may hold the hex instead); see engram encrypt",
        check: any,
    },
    Setting {
        name: "embedder",
        env: "ENGRAM_EMBEDDER",
        default: "",
        help: "embedder for code and memories (empty: all-minilm-l6-v2 when its files are in the models directory, as tools/setup.sh installs them, else the built-in hash-v2-256; built-in: hash-v2-DIMS; local models: minilm, bge-small; over HTTP: openai[:MODEL], voyage[:MODEL], ollama[:MODEL], or auto to pick one from the environment); engram stats says which is in use",
        check: embedder,
    },
    Setting {
        name: "model_dir",
        env: "ENGRAM_MODEL_DIR",
        default: "",
        help: "directory of a neural embedder's model files, or of models by name (empty: the data directory's models/)",
        check: any,
    },
    Setting {
        name: "embed_base_url",
        env: "ENGRAM_EMBED_BASE_URL",
        default: "",
        help: "an HTTP embedder's endpoint base, e.g. http://127.0.0.1:11434/v1 for Ollama's OpenAI API (empty: the provider's public one); the key is read from ENGRAM_EMBED_API_KEY, else OPENAI_API_KEY or VOYAGE_API_KEY",
        check: any,
    },
    Setting {
        name: "embed_batch",
        env: "ENGRAM_EMBED_BATCH",
        default: "64",
        help: "texts per HTTP embedding request",
        check: positive,
    },
    Setting {
        name: "embed_timeout_secs",
        env: "ENGRAM_EMBED_TIMEOUT_SECS",
        default: "30",
        help: "longest one HTTP embedding request may take (then it is retried, then search is keyword-only)",
        check: positive,
    },
    Setting {
        name: "secret_action",
        env: "ENGRAM_SECRET_ACTION",
        default: "redact",
        help: "what indexing does with a found secret: redact, exclude (the chunk)",
        check: secret_action,
    },
    Setting {
        name: "max_file_bytes",
        env: "ENGRAM_MAX_FILE_BYTES",
        default: "1048576",
        help: "files larger than this are not indexed",
        check: bytes,
    },
    Setting {
        name: "max_line_bytes",
        env: "ENGRAM_MAX_LINE_BYTES",
        default: "67108864",
        help: "longest line engram import reads (64 MiB); a longer one is an error naming it",
        check: positive,
    },
    Setting {
        name: "first_index_wait_ms",
        env: "ENGRAM_FIRST_INDEX_WAIT_MS",
        default: "20000",
        help: "how long an MCP code_search in a never-indexed repository waits for its first index; past it the answer holds what is indexed so far and says so",
        check: millis,
    },
    Setting {
        name: "cross_repo",
        env: "ENGRAM_CROSS_REPO",
        default: "false",
        help: "allow queries across repositories",
        check: boolean,
    },
    Setting {
        name: "allowed_repos",
        env: "ENGRAM_ALLOWED_REPOS",
        default: "",
        help: "repositories a caller may reach (comma-separated; empty: the current one)",
        check: any,
    },
    Setting {
        name: "aliases",
        env: "ENGRAM_ALIASES",
        default: "",
        help: "further names MCP callers and tokens may give the served repository (a list; with several served, write NAME=REPO, REPO being another of its names)",
        check: aliases,
    },
    Setting {
        name: "chunk_cap_bytes",
        env: "ENGRAM_CHUNK_CAP_BYTES",
        default: "8192",
        help: "most bytes of one block put into a prompt",
        check: bytes,
    },
    Setting {
        name: "total_cap_bytes",
        env: "ENGRAM_TOTAL_CAP_BYTES",
        default: "32768",
        help: "most bytes of context put into a prompt",
        check: bytes,
    },
    Setting {
        name: "database_url",
        env: "ENGRAM_DATABASE_URL",
        default: "",
        help: "PostgreSQL with pgvector holding memories for a team (postgres://USER:PASSWORD@HOST:PORT/DATABASE; empty: the local store); `engram db migrate` prepares it, and the password is never shown",
        check: database_url,
    },
    Setting {
        name: "database_sslrootcert",
        env: "ENGRAM_DATABASE_SSLROOTCERT",
        default: "",
        help: "PEM file of CA certificates trusted (besides the system's) for TLS to database_url's server, when the URL names no sslrootcert; checked with sslmode=verify-ca or verify-full (and require, as in libpq)",
        check: any,
    },
    Setting {
        name: "database_statement_timeout_ms",
        env: "ENGRAM_DATABASE_STATEMENT_TIMEOUT_MS",
        default: "30000",
        help: "how long one statement may run on database_url's server before it cancels it; a call whose server stops answering is given up this and 2 s later (an import, however large, when no entry is written for that long)",
        check: positive,
    },
    Setting {
        name: "database_ef_search",
        env: "ENGRAM_DATABASE_EF_SEARCH",
        default: "150",
        help: "least hnsw.ef_search of recall's vector search on database_url's server (1 to 1000): higher finds more of the exact nearest neighbours, slower; a recall asks for twice its candidates when that is more",
        check: ef_search,
    },
    Setting {
        name: "server_addr",
        env: "ENGRAM_SERVER_ADDR",
        default: "127.0.0.1:7878",
        help: "address of `engram serve --http`",
        check: address,
    },
    Setting {
        name: "tokens_file",
        env: "ENGRAM_TOKENS_FILE",
        default: "",
        help: "file of hashed bearer tokens for the HTTP server",
        check: any,
    },
    Setting {
        name: "webhook_secret",
        env: "ENGRAM_WEBHOOK_SECRET",
        default: "",
        help: "HMAC secret of POST /api/webhook/push (empty: webhook off)",
        check: any,
    },
    Setting {
        name: "tools",
        env: "ENGRAM_TOOLS",
        default: "default",
        help: "MCP tool profile: default (the dozen most used listed, every tool callable), core, code, memory, coding, all",
        check: tools,
    },
    Setting {
        name: "llm_api",
        env: "ENGRAM_LLM_API",
        default: "openai",
        help: "wire format of the chat model: openai (also Ollama, vLLM, LM Studio, llama.cpp), anthropic",
        check: llm_api,
    },
    Setting {
        name: "llm_base_url",
        env: "ENGRAM_LLM_BASE_URL",
        default: "",
        help: "chat model endpoint, e.g. http://127.0.0.1:11434/v1 (empty: the provider's public one)",
        check: any,
    },
    Setting {
        name: "llm_model",
        env: "ENGRAM_LLM_MODEL",
        default: "",
        help: "chat model name (empty: no model; nothing is ever sent). The API key is read from ENGRAM_LLM_API_KEY only",
        check: any,
    },
    Setting {
        name: "llm_vision_model",
        env: "ENGRAM_LLM_VISION_MODEL",
        default: "",
        help: "model for error screenshots (empty: llm_model)",
        check: any,
    },
    Setting {
        name: "llm_features",
        env: "ENGRAM_LLM_FEATURES",
        default: "",
        help: "features that call the model unasked (comma-separated: summary, rerank, extract, compress, vision; or all)",
        check: llm_features,
    },
    Setting {
        name: "llm_timeout_secs",
        env: "ENGRAM_LLM_TIMEOUT_SECS",
        default: "120",
        help: "longest one call to the model may take",
        check: bytes,
    },
    Setting {
        name: "llm_max_concurrency",
        env: "ENGRAM_LLM_MAX_CONCURRENCY",
        default: "2",
        help: "most calls to the model in flight at once",
        check: bytes,
    },
    Setting {
        name: "llm_max_retries",
        env: "ENGRAM_LLM_MAX_RETRIES",
        default: "3",
        help: "retries after a 429, a 5xx or a timeout (with backoff; Retry-After honoured)",
        check: bytes,
    },
    Setting {
        name: "llm_stream",
        env: "ENGRAM_LLM_STREAM",
        default: "false",
        help: "ask the model for streamed replies",
        check: boolean,
    },
    Setting {
        name: "llm_price_input",
        env: "ENGRAM_LLM_PRICE_INPUT",
        default: "0",
        help: "US dollars per million input tokens, for the cost count",
        check: price,
    },
    Setting {
        name: "llm_price_output",
        env: "ENGRAM_LLM_PRICE_OUTPUT",
        default: "0",
        help: "US dollars per million output tokens, for the cost count",
        check: price,
    },
    Setting {
        name: "llm_max_request_bytes",
        env: "ENGRAM_LLM_MAX_REQUEST_BYTES",
        default: "32768",
        help: "most bytes of stored text put into one request to the model",
        check: bytes,
    },
    Setting {
        name: "llm_rerank_threshold",
        env: "ENGRAM_LLM_RERANK_THRESHOLD",
        default: "0.7",
        help: "least relevance score (0 to 1) a memory needs to be kept by the model's rerank",
        check: unit,
    },
    Setting {
        name: "llm_rerank_max",
        env: "ENGRAM_LLM_RERANK_MAX",
        default: "10",
        help: "most memories the model's rerank keeps",
        check: bytes,
    },
    Setting {
        name: "llm_rerank_batch",
        env: "ENGRAM_LLM_RERANK_BATCH",
        default: "10",
        help: "memories scored per call to the model",
        check: bytes,
    },
];
