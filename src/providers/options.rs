//! How to reach one provider: the options every client is built from, and a run's setup of
//! each provider (those options and its rate limits), which the router is built from.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::http::retry::RetryPolicy;

pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
/// How long a reply stream may go without a byte before it counts as stalled.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// A provider's endpoint, key and patience. `Debug` hides the key.
#[derive(Clone)]
pub struct ClientOptions {
    /// Else the provider's endpoint variable (`OPENAI_BASE_URL`, ...), else its public endpoint.
    pub base_url: Option<String>,
    /// Else the variable named by `api_key_env`.
    pub api_key: Option<String>,
    /// The variable to read the key from, and to name in errors (`OPENAI_API_KEY`,
    /// `ANTHROPIC_API_KEY`, ...); empty for a provider that needs none (Ollama).
    pub api_key_env: String,
    /// For the whole call: every attempt, every backoff and the whole stream.
    pub timeout: Duration,
    /// The longest a stream may go silent; a stalled stream is retried like a 503.
    pub idle_timeout: Duration,
    /// Retries after the first attempt on 429, 5xx, connection failures and stalls.
    pub max_retries: u32,
    pub stream: bool,
    /// Azure OpenAI's `api-version`.
    pub api_version: Option<String>,
}

impl Default for ClientOptions {
    fn default() -> Self {
        Self {
            base_url: None,
            api_key: None,
            api_key_env: "OPENAI_API_KEY".to_string(),
            timeout: DEFAULT_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            max_retries: RetryPolicy::default().max_retries,
            stream: true,
            api_version: None,
        }
    }
}

impl std::fmt::Debug for ClientOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientOptions")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<set>"))
            .field("api_key_env", &self.api_key_env)
            .field("timeout", &self.timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("max_retries", &self.max_retries)
            .field("stream", &self.stream)
            .field("api_version", &self.api_version)
            .finish()
    }
}

/// How to reach one provider, and how fast this run may call it.
#[derive(Debug, Clone, Default)]
pub struct ProviderSetup {
    pub options: ClientOptions,
    pub requests_per_minute: Option<u32>,
    pub tokens_per_minute: Option<u32>,
}

/// Provider name → its setup.
pub type Providers = BTreeMap<String, ProviderSetup>;
