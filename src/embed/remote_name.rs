//! The names of embedders reached over HTTP (`openai:text-embedding-3-small`,
//! `voyage:voyage-code-3`, `ollama:nomic-embed-text`). Parsing only: the client is in
//! `llm::embeddings`, and nothing here touches the network.

/// An embedding API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RemoteApi {
    /// The OpenAI-compatible `POST {base}/embeddings` (OpenAI, Ollama's `/v1`, LM
    /// Studio, vLLM, TEI).
    OpenAi,
    /// Voyage AI (`https://api.voyageai.com/v1/embeddings`).
    Voyage,
    /// Ollama's native `POST {base}/api/embed`.
    Ollama,
}

impl RemoteApi {
    /// The prefix of its embedder names.
    pub fn prefix(self) -> &'static str {
        match self {
            RemoteApi::OpenAi => "openai",
            RemoteApi::Voyage => "voyage",
            RemoteApi::Ollama => "ollama",
        }
    }

    /// The model used when the name gives none.
    pub fn default_model(self) -> &'static str {
        match self {
            RemoteApi::OpenAi => "text-embedding-3-small",
            RemoteApi::Voyage => "voyage-code-3",
            RemoteApi::Ollama => "nomic-embed-text",
        }
    }

    /// The endpoint base used when `embed_base_url` is not set.
    pub fn default_base_url(self) -> &'static str {
        match self {
            RemoteApi::OpenAi => "https://api.openai.com/v1",
            RemoteApi::Voyage => "https://api.voyageai.com/v1",
            RemoteApi::Ollama => "http://127.0.0.1:11434",
        }
    }
}

/// A remote embedder's API and model, from its configured name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteName {
    pub api: RemoteApi,
    pub model: String,
}

impl RemoteName {
    /// The stable name of its vector space: `api:model`.
    pub fn canonical(&self) -> String {
        format!("{}:{}", self.api.prefix(), self.model)
    }
}

/// `openai`, `openai:MODEL`, `voyage[:MODEL]`, `ollama[:MODEL]`; `None` for any other
/// name (and for an empty model after the colon).
pub fn parse_remote(name: &str) -> Option<RemoteName> {
    let (prefix, model) = match name.split_once(':') {
        Some((p, m)) => (p, Some(m.trim())),
        None => (name, None),
    };
    let api = [RemoteApi::OpenAi, RemoteApi::Voyage, RemoteApi::Ollama]
        .into_iter()
        .find(|a| a.prefix() == prefix.trim())?;
    let model = match model {
        Some("") => return None,
        Some(m) => m.to_string(),
        None => api.default_model().to_string(),
    };
    Some(RemoteName { api, model })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_with_default_models() {
        let n = parse_remote("voyage").unwrap();
        assert_eq!(n.canonical(), "voyage:voyage-code-3");
        let n = parse_remote("openai:text-embedding-3-large").unwrap();
        assert_eq!(
            (n.api, n.model.as_str()),
            (RemoteApi::OpenAi, "text-embedding-3-large")
        );
        assert_eq!(
            parse_remote("ollama:nomic-embed-text:v1.5").unwrap().model,
            "nomic-embed-text:v1.5"
        );
        assert_eq!(parse_remote("openai:"), None);
        assert_eq!(parse_remote("hash-v2-256"), None);
        assert_eq!(parse_remote("minilm"), None);
    }
}
