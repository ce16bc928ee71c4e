//! Why one attempt gave no reply ([`Failure`]), which failures are worth another attempt, and
//! what a provider's error body says ([`Problem`]).

use std::time::Duration;

use bytes::Bytes;
use ralph_actors::ports::llm::LlmError;
use reqwest::StatusCode;

use crate::http::retry::{is_retryable_status, Attempted};
use crate::http::text::shorten;

/// Whether an error message says the prompt does not fit the model. Providers say so in a 400
/// with their own words, and no status or code of their own marks it.
pub(crate) fn says_too_long(message: &str) -> bool {
    let m = message.to_lowercase();
    [
        "prompt is too long",
        "context length",
        "context window",
        "maximum context",
        "exceeds the maximum number of tokens",
        "input token count",
        "too many tokens",
        "too many input tokens",
        // llama.cpp: "the request exceeds the available context size, try increasing it".
        "available context size",
        "exceed_context_size",
    ]
    .iter()
    .any(|p| m.contains(p))
}

/// What an HTTP status means to a user, whichever provider answered: the one mapping every
/// client shares, so that a 401 names the key's variable and a 429 counts as rate limiting alike.
pub(crate) fn status_kind(
    provider: &str,
    env_var: &str,
    status: u16,
    attempts: u32,
    server_delay: Option<Duration>,
    problem: Problem,
) -> LlmError {
    let provider = provider.to_string();
    let Problem {
        message,
        auth,
        too_long,
        ..
    } = problem;
    match status {
        _ if auth => LlmError::Auth {
            provider,
            env_var: env_var.to_string(),
            message,
        },
        401 | 403 => LlmError::Auth {
            provider,
            env_var: env_var.to_string(),
            message,
        },
        429 => LlmError::RateLimited {
            provider,
            attempts,
            retry_after_ms: server_delay.map(|d| d.as_millis() as u64),
            message,
        },
        // Only the prompt makes a request body too large.
        413 => LlmError::ContextTooLong { provider, message },
        400 if too_long || says_too_long(&message) => {
            LlmError::ContextTooLong { provider, message }
        }
        s if s >= 500 => LlmError::Server {
            provider,
            status: s,
            attempts,
            message,
        },
        s => LlmError::Request {
            provider,
            status: s,
            message,
        },
    }
}

/// What a provider's error body says, as its parser reads it.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Problem {
    pub message: String,
    /// The provider says the key is bad, whatever the status (Gemini answers 400).
    pub auth: bool,
    /// The provider's own error code says the prompt is too long.
    pub too_long: bool,
    /// A delay the body asks for (Gemini's `RetryInfo`), used when no header names one.
    pub retry_delay: Option<Duration>,
}

impl Problem {
    pub fn message(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            ..Self::default()
        }
    }

    /// A body the provider's parser did not recognise (a proxy's page, say): its text.
    pub(super) fn from_text(status: StatusCode, body: &[u8]) -> Self {
        let text = String::from_utf8_lossy(body);
        let message = if text.trim().is_empty() {
            status.to_string()
        } else {
            shorten(&text)
        };
        Self::message(message)
    }
}

/// Reads a provider's error body; `None` when it is not the provider's error shape.
pub(crate) type ErrorParser = fn(&[u8]) -> Option<Problem>;

/// Why one attempt gave no reply.
#[derive(Debug)]
pub(crate) enum Failure {
    /// A status other than success, with the body for the error message.
    Status {
        status: StatusCode,
        body: Bytes,
        server_delay: Option<Duration>,
    },
    /// The connection could not be made: nothing was sent, so a retry cannot double-bill.
    Connect(String),
    /// The stream went silent for longer than the idle timeout.
    Stalled,
    /// The provider reported an error inside a successful response (Anthropic's `error` event,
    /// Ollama's `{"error":..}` line). `status` is the HTTP status it stands for.
    InStream {
        status: u16,
        message: String,
        retryable: bool,
    },
    /// The connection broke after the request was sent.
    Network(String),
    /// The reply is not what the protocol promises.
    Invalid(String),
}

impl Attempted for Failure {
    fn is_transient(&self) -> bool {
        match self {
            Failure::Status { status, .. } => is_retryable_status(status.as_u16()),
            Failure::Connect(_) | Failure::Stalled => true,
            Failure::InStream { retryable, .. } => *retryable,
            Failure::Network(_) | Failure::Invalid(_) => false,
        }
    }

    fn server_delay(&self) -> Option<Duration> {
        match self {
            Failure::Status { server_delay, .. } => *server_delay,
            _ => None,
        }
    }

    fn describe(&self) -> String {
        match self {
            Failure::Status { status, .. } => format!("status {}", status.as_u16()),
            Failure::Connect(m) => format!("connection failed: {m}"),
            Failure::Stalled => "the reply stream stalled".into(),
            Failure::InStream { message, .. } => format!("error in the stream: {message}"),
            Failure::Network(m) | Failure::Invalid(m) => m.clone(),
        }
    }
}

impl Failure {
    /// An error reported inside a stream: retried when it is transient and no text has come.
    pub fn in_stream(status: u16, message: String, text_so_far: &str) -> Self {
        Failure::InStream {
            status,
            retryable: text_so_far.is_empty() && is_retryable_status(status),
            message,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retries_transient_statuses_only() {
        for s in [429, 500, 502, 503, 504, 529] {
            assert!(is_retryable_status(s), "{s}");
        }
        for s in [400, 401, 403, 404, 408, 409, 413, 501] {
            assert!(!is_retryable_status(s), "{s}");
        }
    }
}
