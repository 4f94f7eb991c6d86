//! The settings of a chat provider, read from named values (the binary's config), and
//! the API key, read from the environment only.
//!
//! This module owns turning `llm_*` values into an [`LlmSettings`]; it never reads a
//! config file itself and never takes an API key from anywhere but the environment.

use std::time::Duration;

/// The environment variable that holds the API key (never the config file).
pub const API_KEY_ENV: &str = "ENGRAM_LLM_API_KEY";

/// Which wire format the provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Api {
    /// `POST {base}/chat/completions` (OpenAI, Ollama, vLLM, LM Studio, llama.cpp).
    OpenAi,
    /// `POST {base}/v1/messages` (Anthropic).
    Anthropic,
}

impl Api {
    /// The name used in settings.
    pub fn name(self) -> &'static str {
        match self {
            Api::OpenAi => "openai",
            Api::Anthropic => "anthropic",
        }
    }

    /// The provider's public endpoint, used when `llm_base_url` is empty.
    pub fn default_base_url(self) -> &'static str {
        match self {
            Api::OpenAi => "https://api.openai.com/v1",
            Api::Anthropic => "https://api.anthropic.com",
        }
    }
}

/// A setting that cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("setting {name} = {value:?}: {reason}")]
pub struct SettingsError {
    /// The setting.
    pub name: &'static str,
    /// Its value.
    pub value: String,
    /// Why it cannot be used.
    pub reason: &'static str,
}

/// Everything a provider needs to make calls.
#[derive(Clone)]
pub struct LlmSettings {
    /// The wire format.
    pub api: Api,
    /// The endpoint's base (`http://127.0.0.1:11434/v1` for Ollama).
    pub base_url: String,
    /// The model's name.
    pub model: String,
    /// The model for images (the chat model when unset).
    pub vision_model: Option<String>,
    /// The API key (from `ENGRAM_LLM_API_KEY` only).
    pub api_key: Option<String>,
    /// Longest one HTTP attempt may take.
    pub timeout: Duration,
    /// Most calls in flight at once, per provider.
    pub max_concurrency: usize,
    /// Retries after a 429, a 5xx or a timeout.
    pub max_retries: u32,
    /// First backoff delay; doubled per retry (a `Retry-After` header wins).
    pub backoff: Duration,
    /// Longest wait a `Retry-After` may ask for before the call gives up instead.
    pub max_wait: Duration,
    /// Ask for a streamed (server-sent events) reply.
    pub stream: bool,
    /// US dollars per million input tokens (0: unpriced).
    pub price_input: f64,
    /// US dollars per million output tokens (0: unpriced).
    pub price_output: f64,
}

impl std::fmt::Debug for LlmSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmSettings")
            .field("api", &self.api)
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "***"))
            .field("timeout", &self.timeout)
            .field("max_retries", &self.max_retries)
            .finish_non_exhaustive()
    }
}

impl LlmSettings {
    /// Settings for `model` at `base_url` with the defaults for everything else.
    pub fn new(api: Api, base_url: &str, model: &str) -> LlmSettings {
        LlmSettings {
            api,
            base_url: base_url.trim_end_matches('/').to_string(),
            model: model.to_string(),
            vision_model: None,
            api_key: None,
            timeout: Duration::from_secs(120),
            max_concurrency: 2,
            max_retries: 3,
            backoff: Duration::from_millis(500),
            max_wait: Duration::from_secs(60),
            stream: false,
            price_input: 0.0,
            price_output: 0.0,
        }
    }

    /// Settings from named values (`get("llm_model")`, …) and an environment
    /// (`env("ENGRAM_LLM_API_KEY")`). `None` when no model is configured: then no
    /// feature may call out.
    pub fn from_values(
        get: impl Fn(&str) -> String,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<LlmSettings>, SettingsError> {
        let model = get("llm_model");
        if model.trim().is_empty() {
            return Ok(None);
        }
        let api = match get("llm_api").as_str() {
            "" | "openai" => Api::OpenAi,
            "anthropic" => Api::Anthropic,
            other => {
                return Err(SettingsError {
                    name: "llm_api",
                    value: other.into(),
                    reason: "expected openai or anthropic",
                })
            }
        };
        let base = get("llm_base_url");
        let base = if base.trim().is_empty() {
            api.default_base_url().to_string()
        } else {
            base
        };
        let mut s = LlmSettings::new(api, base.trim(), model.trim());
        s.api_key = env(API_KEY_ENV).filter(|k| !k.is_empty());
        s.vision_model = Some(get("llm_vision_model")).filter(|v| !v.trim().is_empty());
        let num = |name: &'static str, default: u64| -> Result<u64, SettingsError> {
            let v = get(name);
            if v.is_empty() {
                return Ok(default);
            }
            v.trim().parse().map_err(|_| SettingsError {
                name,
                value: v,
                reason: "expected a whole number",
            })
        };
        let price = |name: &'static str| -> Result<f64, SettingsError> {
            let v = get(name);
            if v.is_empty() {
                return Ok(0.0);
            }
            match v.trim().parse::<f64>() {
                Ok(p) if p.is_finite() && p >= 0.0 => Ok(p),
                _ => Err(SettingsError {
                    name,
                    value: v,
                    reason: "expected a price in US dollars per million tokens",
                }),
            }
        };
        s.timeout = Duration::from_secs(num("llm_timeout_secs", 120)?.max(1));
        s.max_concurrency = num("llm_max_concurrency", 2)?.clamp(1, 64) as usize;
        s.max_retries = num("llm_max_retries", 3)?.min(10) as u32;
        s.stream = matches!(get("llm_stream").as_str(), "true" | "1" | "yes" | "on");
        s.price_input = price("llm_price_input")?;
        s.price_output = price("llm_price_output")?;
        Ok(Some(s))
    }

    /// The model for images.
    pub fn vision_model(&self) -> &str {
        self.vision_model.as_deref().unwrap_or(&self.model)
    }

    /// What `usage` costs at these prices, in US dollars.
    pub fn cost(&self, usage: &super::Usage) -> f64 {
        (usage.input_tokens as f64 * self.price_input
            + usage.output_tokens as f64 * self.price_output)
            / 1_000_000.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_model_means_no_provider_and_the_key_comes_from_the_environment() {
        let none = LlmSettings::from_values(|_| String::new(), |_| None).unwrap();
        assert!(none.is_none());
        let get = |k: &str| match k {
            "llm_model" => "m".to_string(),
            "llm_api" => "anthropic".to_string(),
            "llm_price_input" => "3".to_string(),
            _ => String::new(),
        };
        let s = LlmSettings::from_values(get, |k| (k == API_KEY_ENV).then(|| "sk-x".into()))
            .unwrap()
            .unwrap();
        assert_eq!(s.api, Api::Anthropic);
        assert_eq!(s.base_url, "https://api.anthropic.com");
        assert_eq!(s.api_key.as_deref(), Some("sk-x"));
        assert!(!format!("{s:?}").contains("sk-x"));
        let u = crate::llm::Usage {
            input_tokens: 1_000_000,
            output_tokens: 0,
            estimated: false,
        };
        assert!((s.cost(&u) - 3.0).abs() < 1e-9);
        let bad = |k: &str| match k {
            "llm_model" => "m".to_string(),
            "llm_api" => "gemini".to_string(),
            _ => String::new(),
        };
        assert!(LlmSettings::from_values(bad, |_| None).is_err());
    }
}
