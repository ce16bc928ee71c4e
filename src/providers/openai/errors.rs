//! async-openai's errors as the kinds a user can act on: one mapping for OpenAI and Azure, which
//! say the same things in the same shapes.

use async_openai::error::{OpenAIError, StreamError};
use ralph_actors::ports::llm::LlmError;
use reqwest::StatusCode;

use crate::providers::http::{self, chain, says_too_long, shorten, LenientError};

fn by_status(
    provider: &str,
    status: StatusCode,
    attempts: u32,
    env_var: &str,
    message: String,
    code: Option<&str>,
) -> LlmError {
    if status == StatusCode::TOO_MANY_REQUESTS && code == Some("insufficient_quota") {
        return LlmError::Request {
            provider: provider.to_string(),
            status: 429,
            message: format!("{message} (the account has no quota left; see its billing page)"),
        };
    }
    let problem = http::Problem {
        message,
        too_long: matches!(
            code,
            Some("context_length_exceeded" | "exceed_context_size_error")
        ),
        ..http::Problem::default()
    };
    http::status_kind(provider, env_var, status.as_u16(), attempts, None, problem)
}

/// Maps async-openai's errors to the kinds a user can act on, named for `provider`.
pub(crate) fn map_error(
    err: OpenAIError,
    provider: &str,
    attempts: u32,
    last_status: Option<StatusCode>,
    env_var: &str,
    model: &str,
) -> LlmError {
    let provider = provider.to_string();
    match err {
        OpenAIError::ApiError(e) => {
            let message = if e.api_error.message.is_empty() {
                e.status_code
                    .canonical_reason()
                    .unwrap_or("no message")
                    .to_string()
            } else {
                shorten(&e.api_error.message)
            };
            by_status(
                &provider,
                e.status_code,
                attempts,
                env_var,
                message,
                e.api_error.code.as_deref(),
            )
        }
        // An error status whose body async-openai could not read: another server's error JSON
        // (llama.cpp's and vLLM's numeric `code`, vLLM's top-level fields) or a proxy's text page.
        OpenAIError::JSONDeserialize(_, body) if last_status.is_some_and(|s| !s.is_success()) => {
            let status = last_status.unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            match LenientError::read(&body) {
                Some(e) => by_status(
                    &provider,
                    status,
                    attempts,
                    env_var,
                    shorten(&e.message),
                    if e.too_long() {
                        Some("context_length_exceeded")
                    } else {
                        e.code.as_deref()
                    },
                ),
                None => {
                    let message = if body.trim().is_empty() {
                        status.to_string()
                    } else {
                        shorten(&body)
                    };
                    by_status(&provider, status, attempts, env_var, message, None)
                }
            }
        }
        OpenAIError::JSONDeserialize(e, body) => {
            // A stream may end with an error object instead of a chunk.
            match LenientError::read(&body) {
                Some(err) if says_too_long(&err.message) || err.too_long() => {
                    LlmError::ContextTooLong {
                        provider,
                        message: shorten(&err.message),
                    }
                }
                Some(err) => LlmError::InvalidReply {
                    provider,
                    message: format!("the server reported an error: {}", shorten(&err.message)),
                },
                None => LlmError::InvalidReply {
                    provider,
                    message: format!("{e} in `{}`", shorten(&body)),
                },
            }
        }
        OpenAIError::Reqwest(e) if e.is_decode() => LlmError::InvalidReply {
            provider,
            message: chain(&e),
        },
        OpenAIError::Reqwest(e) if e.is_connect() => LlmError::Network {
            provider,
            message: chain(&e),
        },
        // Sent, then lost: the server may have billed it.
        OpenAIError::Reqwest(e) => LlmError::BrokeOff {
            provider,
            message: chain(&e),
        },
        OpenAIError::StreamError(e) => match *e {
            // The connection broke mid-stream.
            StreamError::EventStream(m) if m.starts_with("Transport") => LlmError::BrokeOff {
                provider,
                message: m,
            },
            other => LlmError::InvalidReply {
                provider,
                message: other.to_string(),
            },
        },
        OpenAIError::InvalidArgument(m) => LlmError::Config {
            model: model.into(),
            message: m,
        },
        other => LlmError::Network {
            provider,
            message: chain(&other),
        },
    }
}
