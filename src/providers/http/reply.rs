//! The end of a call, alike for every provider: the usage the server reported or an estimate,
//! the log line, and the reply.

use std::time::Instant;

use ralph_actors::ports::llm::{ChatMessage, ChatReply, ChatRequest, TokenCounter};
use ralph_actors::schema::usage::Usage;

use super::transport::Attempts;
use crate::providers::tokens::TiktokenCounter;

/// Usage by estimate, when the provider reported none, with a warning.
pub(crate) fn estimate_usage(model: &str, messages: &[ChatMessage], reply: &str) -> Usage {
    let counter = TiktokenCounter::new();
    let usage = Usage {
        input_tokens: counter.count(model, messages),
        output_tokens: counter.count_text(model, reply),
        ..Usage::default()
    };
    // The caller warns, once per model, through the run's event stream.
    tracing::debug!(
        "{model}: the server reported no token usage; counting {} in and {} out by estimate",
        usage.input_tokens,
        usage.output_tokens
    );
    usage
}

/// What a call brought back, in any provider's terms, before its usage is settled.
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    pub text: String,
    /// The model the server says answered; empty when it names none.
    pub model: String,
    /// The usage the server reported; without it, the usage is estimated.
    pub usage: Option<Usage>,
    /// The reply stopped at `max_tokens`.
    pub cut_short: bool,
    /// What the server said the call cost (LiteLLM's `x-litellm-response-cost`).
    pub cost_usd: Option<f64>,
}

/// The reply to `request` after `attempts` attempts since `started`: the usage reported or an
/// estimate, and `model` (the id that was asked for) when the server named none.
pub(crate) fn finish(
    provider: &str,
    request: &ChatRequest,
    model: &str,
    outcome: Outcome,
    attempts: Attempts,
    started: Instant,
) -> ChatReply {
    if outcome.cut_short {
        tracing::warn!(
            "{}: the reply reached max_tokens ({}) and is cut short",
            request.model,
            request.max_tokens
        );
    }
    let usage_estimated = outcome.usage.is_none();
    let usage = outcome
        .usage
        .unwrap_or_else(|| estimate_usage(&request.model, &request.messages, &outcome.text));
    tracing::debug!(
        model = %request.model,
        attempts = attempts.made,
        lost_attempts = attempts.lost,
        elapsed_ms = started.elapsed().as_millis() as u64,
        input = usage.input_tokens,
        output = usage.output_tokens,
        cache_read = usage.cache_read_tokens,
        cache_write = usage.cache_write_tokens,
        "{provider} call done"
    );
    ChatReply {
        text: outcome.text,
        usage,
        model: if outcome.model.is_empty() {
            model.to_string()
        } else {
            outcome.model
        },
        cost_usd: outcome.cost_usd,
        lost_attempts: attempts.lost,
        usage_estimated,
        budget_refused: None,
    }
}
