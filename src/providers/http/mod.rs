//! What the provider clients share. All of them: one connection pool per client ([`client`]),
//! the end of a call ([`finish`]: usage reported or estimated, the log line, the reply), and the
//! quoting of bodies and errors. The clients written directly over `reqwest` (Anthropic, Gemini,
//! Ollama) share the rest: their setup ([`Endpoint`]), the retry loop, the stream readers with
//! their idle timeout, and the one place where an HTTP failure becomes an [`LlmError`] kind.
//!
//! A call is a series of attempts under one deadline (`timeout`). An attempt sends the request
//! and reads the whole reply, streamed or not. The clients buffer the reply before returning it,
//! so an attempt that fails half-way can be made again without the caller ever seeing two
//! replies. Retried, with exponential backoff and jitter (`backon`) or the delay the server asks
//! for: 429, 500, 502, 503, 504 and 529 (Anthropic's "overloaded"), connection failures, a stream
//! silent for longer than `idle_timeout`, and an error the provider reports inside a stream before
//! any text. A connection that breaks half-way for another reason is not: the server may already
//! have billed the reply, and it would likely break again.
//!
//! - [`transport`]: the connection pool, and the transport that makes a call's attempts and turns
//!   what failed into an error a user can act on.
//! - [`failure`]: why an attempt gave no reply, and what a provider's error body says;
//!   [`error_body`]: error JSON as other servers write it (llama.cpp, vLLM), read leniently.
//! - [`endpoint`]: a client's setup: its base URL, its key and the headers that carry it.
//! - [`read`]: how an attempt reads its reply: whole, or as a stream under the idle timeout.
//! - [`request`]: what every provider's request is made of alike.
//! - [`reply`]: the end of a call, its usage reported or estimated.
//!
//! [`LlmError`]: ralph_actors::ports::llm::LlmError

mod endpoint;
mod error_body;
mod failure;
mod read;
mod reply;
mod request;
mod transport;

pub(crate) use crate::http::text::{chain, shorten};
pub(crate) use endpoint::{
    join, key_env_or, missing_key, non_empty, resolve_base_url, resolve_key, Endpoint, Site,
};
pub(crate) use error_body::{status_of_error_in_success, LenientError};
pub(crate) use failure::{says_too_long, status_kind, Failure, Problem};
pub(crate) use read::{ndjson, parse_chunk, read_json, sse};
pub(crate) use reply::{estimate_usage, finish, Outcome};
pub(crate) use request::{model_id, split_system, temperature};
pub(crate) use transport::{client, prewarm, rebuilt, Attempts};
