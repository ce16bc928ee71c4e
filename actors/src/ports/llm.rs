//! The port to the models: the LLM client trait, the token counter, and the types of a chat call.

use std::collections::BTreeMap;

use ralph_guard::{Guard, GuardError};
use serde::{Deserialize, Serialize};

use crate::role::Role;
use crate::schema::usage::Usage;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Speaker {
    System,
    User,
    Assistant,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatMessage {
    pub speaker: Speaker,
    pub content: String,
    /// Bytes at the start of `content` that stay the same from one call of the role to the
    /// next (the tests, the related files, the instructions): a provider that caches prompts
    /// on request (Anthropic's `cache_control`) is asked to cache the prompt up to there.
    /// 0: none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_prefix: usize,
}

fn no_attempts(n: &u32) -> bool {
    *n == 0
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl ChatMessage {
    pub fn system(content: impl Into<String>) -> Self {
        Self {
            speaker: Speaker::System,
            content: content.into(),
            cache_prefix: 0,
        }
    }
    pub fn user(content: impl Into<String>) -> Self {
        Self {
            speaker: Speaker::User,
            content: content.into(),
            cache_prefix: 0,
        }
    }
    pub fn assistant(content: impl Into<String>) -> Self {
        Self {
            speaker: Speaker::Assistant,
            content: content.into(),
            cache_prefix: 0,
        }
    }
}

/// One chat completion request, already routed to a model (`provider/model`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    pub role: Role,
    pub model: String,
    pub messages: Vec<ChatMessage>,
    pub temperature: Option<f32>,
    /// The most output tokens the reply may have; the ledger may lower it to fit the budget.
    pub max_tokens: u32,
}

/// A request that has passed LocalGuard: every message masked by the run's
/// [`ralph_guard::Guard`] (or, in `block` mode, let through only when it holds nothing to
/// mask). It is the only request an [`LlmClient`] takes, and [`GuardedRequest::seal`] is the
/// only way to make one (its field is private and it does not deserialize): no path to a
/// provider can skip the guard.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GuardedRequest {
    #[serde(flatten)]
    request: ChatRequest,
}

impl GuardedRequest {
    /// `request` with every message passed through `guard`, and the run's placeholders it
    /// holds, by kind. When it holds any, `note` (what placeholders are and that they must be
    /// kept) is added to its first system message. A message's cache prefix is sealed apart
    /// from the rest, so it still ends where the same text does.
    pub fn seal(
        guard: &Guard,
        mut request: ChatRequest,
        note: &str,
    ) -> Result<(Self, BTreeMap<String, usize>), GuardError> {
        for m in &mut request.messages {
            let split = m.cache_prefix.min(m.content.len());
            let sealed = if split > 0 && m.content.is_char_boundary(split) {
                let head = guard.seal(&m.content[..split])?.text;
                let tail = guard.seal(&m.content[split..])?.text;
                m.cache_prefix = head.len();
                head + &tail
            } else {
                guard.seal(&m.content)?.text
            };
            m.content = sealed;
        }
        let all: Vec<&str> = request
            .messages
            .iter()
            .map(|m| m.content.as_str())
            .collect();
        let census = guard.census(&all.join("\n"));
        if !census.is_empty() && !note.is_empty() {
            if let Some(system) = request
                .messages
                .iter_mut()
                .find(|m| m.speaker == Speaker::System)
            {
                system.content.push_str("\n\n");
                system.content.push_str(note);
            }
        }
        Ok((Self { request }, census))
    }

    /// The model the request is for.
    pub fn model(&self) -> &str {
        &self.request.model
    }

    pub fn into_inner(self) -> ChatRequest {
        self.request
    }

    /// The same request for `model` (a router's canonical name for it): nothing masked changes.
    pub fn with_model(mut self, model: String) -> Self {
        self.request.model = model;
        self
    }

    /// The same request with its reply capped at `max_tokens` (the ledger's grant): nothing
    /// masked changes.
    pub fn with_max_tokens(mut self, max_tokens: u32) -> Self {
        self.request.max_tokens = max_tokens;
        self
    }
}

impl std::ops::Deref for GuardedRequest {
    type Target = ChatRequest;
    fn deref(&self) -> &ChatRequest {
        &self.request
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChatReply {
    pub text: String,
    pub usage: Usage,
    /// The model that answered, as the provider named it.
    pub model: String,
    /// What the provider said the call cost, in dollars, when it says so (LiteLLM's
    /// `x-litellm-response-cost`): it outranks every price table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// Earlier attempts of the call whose reply the server had begun when it was given up on
    /// (a stream that stalled, then sent again): the provider may bill each, and no usage came
    /// for them.
    #[serde(default, skip_serializing_if = "no_attempts")]
    pub lost_attempts: u32,
    /// The provider reported no usage, and `usage` is the client's estimate.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub usage_estimated: bool,
    /// Why the budget ran out during the call, when it left the reply nothing to go on with (a
    /// coding agent refused its next model call by the model gateway before it made an edit):
    /// the call is settled at its cost, then the run stops as when a call cannot be paid for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_refused: Option<String>,
}

/// Why a call failed, in the terms a user can act on.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LlmError {
    #[error("{provider}: authentication failed ({message}); check {env_var}")]
    Auth {
        provider: String,
        env_var: String,
        message: String,
    },
    #[error("{provider}: rate limited after {attempts} attempts{}: {message}", wait_hint(*retry_after_ms))]
    RateLimited {
        provider: String,
        attempts: u32,
        /// The delay the server last asked for, when it named one.
        retry_after_ms: Option<u64>,
        message: String,
    },
    #[error("{provider}: server error {status} after {attempts} attempts: {message}")]
    Server {
        provider: String,
        status: u16,
        attempts: u32,
        message: String,
    },
    #[error("{provider}: request rejected ({status}): {message}")]
    Request {
        provider: String,
        status: u16,
        message: String,
    },
    #[error("{provider}: the prompt does not fit the model's context window: {message}")]
    ContextTooLong { provider: String, message: String },
    #[error("{provider}: network error: {message}")]
    Network { provider: String, message: String },
    /// The connection broke after the request was sent: the server may have billed the reply,
    /// so it is not sent again.
    #[error("{provider}: {message} (not sent again: it may already be billed)")]
    BrokeOff { provider: String, message: String },
    #[error(
        "{provider}: no reply within {seconds}s; a slow model (a local one on a CPU) may need \
         more: raise providers.{provider}.timeout_seconds"
    )]
    Timeout { provider: String, seconds: u64 },
    #[error("{provider}: the reply stream stalled for {seconds}s after {attempts} attempts")]
    Stalled {
        provider: String,
        seconds: u64,
        attempts: u32,
    },
    #[error("{provider}: unparseable reply: {message}")]
    InvalidReply { provider: String, message: String },
    #[error("model {model}: {message}")]
    Config { model: String, message: String },
    #[error("replay: {0}")]
    Replay(String),
}

fn wait_hint(retry_after_ms: Option<u64>) -> String {
    match retry_after_ms {
        Some(ms) => format!(" (the server asked to wait {:.1}s)", ms as f64 / 1000.0),
        None => String::new(),
    }
}

impl LlmError {
    /// Whether the next model of a role's fallback list should be tried: the provider refused
    /// us, could not be reached, or kept failing after every retry. A request the model itself
    /// rejected (too long, malformed) would fail the same way elsewhere or needs the user.
    pub fn falls_back(&self) -> bool {
        self.is_permanent() || self.is_transient()
    }

    /// Whether the failure will not go away during this run, so later calls skip the model.
    pub fn is_permanent(&self) -> bool {
        matches!(self, LlmError::Auth { .. } | LlmError::Config { .. })
    }

    /// Whether the same request may succeed if sent again later: the provider was busy, failed
    /// on its side, or could not be reached. The providers retry these before they reach a role.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            LlmError::RateLimited { .. }
                | LlmError::Server { .. }
                | LlmError::Network { .. }
                | LlmError::BrokeOff { .. }
                | LlmError::Timeout { .. }
                | LlmError::Stalled { .. }
        )
    }

    /// Whether the provider may bill the call though no usage came back: it accepted the
    /// request (a success status) and was answering when the reply was lost, cut short, given up
    /// on, or came back in a shape no client can read. Such a call is charged its reservation.
    pub fn may_be_billed(&self) -> bool {
        matches!(
            self,
            LlmError::BrokeOff { .. }
                | LlmError::Timeout { .. }
                | LlmError::Stalled { .. }
                | LlmError::InvalidReply { .. }
        )
    }
}

/// The one way actors reach a model. Implementations route by `request.model`; they take only
/// requests LocalGuard has sealed.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait::async_trait]
pub trait LlmClient: Send + Sync {
    async fn complete(&self, request: GuardedRequest) -> Result<ChatReply, LlmError>;
}

/// Counts prompt tokens before a call, for the budget check. It must not undercount by more
/// than the ledger's margin.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
pub trait TokenCounter: Send + Sync {
    fn count(&self, model: &str, messages: &[ChatMessage]) -> u64;

    /// Whether [`TokenCounter::count`] is the model's own tokenizer's count. When it is not (an
    /// estimate by ratio), the budget reserves by [`ByteBoundCounter`] instead, which cannot
    /// undercount.
    fn is_exact(&self, _model: &str) -> bool {
        false
    }
}

/// A counter that needs no vocabulary: every BPE token covers at least one byte, so bytes plus
/// the per-message framing is an upper bound.
#[derive(Debug, Default, Clone, Copy)]
pub struct ByteBoundCounter;

impl TokenCounter for ByteBoundCounter {
    fn count(&self, _model: &str, messages: &[ChatMessage]) -> u64 {
        messages
            .iter()
            .map(|m| m.content.len() as u64 + 4)
            .sum::<u64>()
            + 3
    }
}
