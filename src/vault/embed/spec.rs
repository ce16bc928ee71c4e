//! The `memory.embedder` settings ([`EmbedderSpec`]): which provider ([`EmbedProvider`], with
//! its default model, address and key variable), and why they may not make an embedder
//! ([`EmbedError`]).

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// The request timeout when the settings give none.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// Why an embedder could not be built from the settings.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EmbedError {
    #[error("memory.embedder: {provider} needs an API key: set {env}")]
    MissingKey {
        provider: EmbedProvider,
        env: String,
    },
    #[error("memory.embedder: the API key in {env} cannot be sent in an HTTP header")]
    BadKey { env: String },
    #[error(
        "memory.embedder: the dimension of {provider} model `{model}` is not known: \
         set memory.embedder.dims"
    )]
    UnknownDims {
        provider: EmbedProvider,
        model: String,
    },
    #[error("memory.embedder.dims must be at least 1")]
    ZeroDims,
    #[error("memory.embedder: {provider} base_url `{url}` is not a URL: {reason}")]
    BadUrl {
        provider: EmbedProvider,
        url: String,
        reason: String,
    },
    #[error("memory.embedder: cannot set up HTTP: {0}")]
    Http(String),
}

/// Which embedding function: the offline default or a provider's protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum EmbedProvider {
    #[default]
    Hashed,
    /// OpenAI's `/embeddings`, also served by Azure-style gateways, vLLM, LM Studio, ...
    OpenAi,
    Ollama,
    Gemini,
}

impl EmbedProvider {
    /// The name used in settings and ids.
    pub fn name(self) -> &'static str {
        match self {
            Self::Hashed => "hashed",
            Self::OpenAi => "openai",
            Self::Ollama => "ollama",
            Self::Gemini => "gemini",
        }
    }

    /// The model used when the settings name none.
    pub fn default_model(self) -> &'static str {
        match self {
            Self::Hashed => "",
            Self::OpenAi => "text-embedding-3-small",
            Self::Ollama => "nomic-embed-text",
            Self::Gemini => "gemini-embedding-001",
        }
    }

    pub(super) fn default_base_url(self) -> &'static str {
        match self {
            Self::Hashed => "",
            Self::OpenAi => "https://api.openai.com/v1",
            Self::Ollama => "http://localhost:11434",
            Self::Gemini => "https://generativelanguage.googleapis.com/v1beta",
        }
    }

    /// Where the key is read from by default; `None` for providers that need none.
    pub fn default_key_env(self) -> Option<&'static str> {
        match self {
            Self::OpenAi => Some("OPENAI_API_KEY"),
            Self::Gemini => Some("GEMINI_API_KEY"),
            Self::Hashed | Self::Ollama => None,
        }
    }
}

impl fmt::Display for EmbedProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for EmbedProvider {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "hashed" => Ok(Self::Hashed),
            "openai" => Ok(Self::OpenAi),
            "ollama" => Ok(Self::Ollama),
            "gemini" => Ok(Self::Gemini),
            other => Err(format!(
                "unknown embedder `{other}`: expected hashed, openai, ollama or gemini"
            )),
        }
    }
}

/// The `memory.embedder` settings.
#[derive(Debug, Clone)]
pub struct EmbedderSpec {
    pub provider: EmbedProvider,
    /// The provider's model; empty for [`EmbedProvider::default_model`]. Ignored by `Hashed`.
    pub model: String,
    /// The API root (`https://api.openai.com/v1`); `None` for the provider's.
    pub base_url: Option<String>,
    /// The variable holding the key; `None` for [`EmbedProvider::default_key_env`].
    pub api_key_env: Option<String>,
    /// The vector length: asked of OpenAI and Gemini, checked for every provider. `None` for
    /// the model's known default.
    pub dims: Option<usize>,
    /// The longest one request may take, connecting included.
    pub timeout: Duration,
}

impl Default for EmbedderSpec {
    fn default() -> Self {
        Self {
            provider: EmbedProvider::Hashed,
            model: String::new(),
            base_url: None,
            api_key_env: None,
            dims: None,
            timeout: DEFAULT_TIMEOUT,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn providers_parse_from_settings() {
        assert_eq!("OpenAI".parse(), Ok(EmbedProvider::OpenAi));
        assert_eq!("hashed".parse(), Ok(EmbedProvider::Hashed));
        assert!("cohere".parse::<EmbedProvider>().is_err());
    }
}
