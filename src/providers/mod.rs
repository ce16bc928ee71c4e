//! LLM providers: the real [`LlmClient`]s, and the [`Router`] that picks one by the provider
//! part of a model name (`openai/gpt-4.1`).
//!
//! - [`openai`]: OpenAI and every OpenAI-compatible server, through `async-openai`.
//! - [`azure`]: Azure OpenAI deployments, over OpenAI's protocol; [`anthropic`], [`gemini`] and
//!   [`ollama`]: over `reqwest`, sharing what `http` holds.
//! - [`retry`]: the retry policy every HTTP call goes through.
//! - [`limits`]: per-provider rate limits, shared by every role of a run.
//! - [`replay`]: `--record FILE` and `--replay FILE`.
//! - [`prices`]: the bundled price table; [`tokens`]: prompt token counts before a call.
//! - `router`: the [`Router`], and each role's first callable model; `provider`: what the router
//!   asks of each client ([`Provider`]).
//!
//! [`build`] makes what a run talks to from an [`LlmSource`]: live, live and recorded, or replayed.
//!
//! [`LlmClient`]: ralph_actors::ports::llm::LlmClient

pub(crate) mod anthropic;
pub(crate) mod azure;
pub(crate) mod gemini;
pub(crate) mod http;
pub(crate) mod limits;
pub(crate) mod ollama;
pub(crate) mod openai;
pub(crate) mod options;
pub(crate) mod prices;
mod provider;
pub(crate) mod replay;
pub(crate) mod retry;
mod router;
mod source;
pub mod tokens;

#[cfg(test)]
pub(crate) mod conformance;

pub use crate::http::retry::RetryPolicy;
pub use anthropic::AnthropicClient;
pub use azure::AzureClient;
pub use gemini::GeminiClient;
pub use limits::{Limited, Limiter, RateLimits};
pub use ollama::OllamaClient;
pub use openai::OpenAiClient;
pub use options::{ClientOptions, ProviderSetup, Providers};
pub use prices::{bundled as bundled_prices, with_overrides as prices_with_overrides};
pub use provider::Provider;
pub use replay::{Exchange, RecordTape, Recorder, ReplayClient, ReplayError, ReplayTape};
pub use router::Router;
pub use source::{build, LlmSource, Tape};
pub use tokens::TiktokenCounter;
