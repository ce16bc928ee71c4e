//! OpenAI chat completions through `async-openai`, against api.openai.com or any
//! OpenAI-compatible server (LiteLLM, vLLM, llama.cpp, Ollama's `/v1`).
//!
//! One call: build the request (the output cap is always sent, since the budget relies on it),
//! send it through [`RetryService`], read the reply streamed or whole, and take the token usage
//! the server reports. The whole call, retries and stream included, runs under one timeout.
//!
//! The protocol half (`Wire`, `chat_body`, `map_error`) is generic over async-openai's `Config`,
//! so Azure OpenAI (`azure.rs`) goes through the same code with its own config.
//!
//! - `client`: the [`OpenAiClient`], what is OpenAI's own: its endpoint, its key, its models.
//! - `wire`: the protocol half's call, its stalled streams sent again, its reply read.
//! - `request`: the request body, with the output cap under the name(s) a server knows.
//! - `errors`: async-openai's errors as the kinds a user can act on.
//!
//! [`RetryService`]: super::retry::RetryService

mod client;
mod errors;
mod request;
mod wire;

pub use client::{
    accepts_temperature, OpenAiClient, BASE_URL_ENV, DEFAULT_API_KEY_ENV, DEFAULT_BASE_URL,
    PROVIDER,
};
pub(crate) use request::{chat_body, ChatBody};
pub(crate) use wire::Wire;
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) use wire::{plain, streamed};
