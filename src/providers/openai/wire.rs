//! The OpenAI chat-completions protocol, generic over async-openai's `Config` (OpenAI or Azure):
//! one call, its attempts and their reading of the reply, streamed or whole.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_openai::config::Config;
use async_openai::error::OpenAIError;
use async_openai::types::chat::{CompletionUsage, CreateChatCompletionRequest, FinishReason};
use async_openai::Client;
use futures::StreamExt;
use ralph_actors::ports::llm::{ChatReply, ChatRequest, LlmError};
use ralph_actors::schema::usage::Usage;

use super::errors::map_error;
use crate::http::retry::{retry, Attempted, RetryPolicy};
use crate::providers::http::{self, Outcome};
use crate::providers::options::ClientOptions;
use crate::providers::retry::{CallState, RetryService};

/// One server's way of taking OpenAI-protocol calls: its async-openai `Config`, the connection
/// pool and the patience.
pub(crate) struct Wire<C> {
    config: C,
    /// The name errors and logs carry.
    provider: &'static str,
    /// The variable an authentication error tells the user to check.
    pub api_key_env: String,
    /// No key: send no `Authorization` header (an empty one upsets some proxies).
    strip_auth: bool,
    pub policy: RetryPolicy,
    timeout: Duration,
    /// The longest a stream may go without an event before the attempt counts as stalled.
    idle_timeout: Duration,
    pub stream: bool,
}

impl<C> Wire<C> {
    pub fn new(
        provider: &'static str,
        opts: &ClientOptions,
        api_key_env: String,
        strip_auth: bool,
        config: C,
    ) -> Result<Self, LlmError> {
        Ok(Self {
            config,
            provider,
            api_key_env,
            strip_auth,
            policy: RetryPolicy::default().with_max_retries(opts.max_retries),
            timeout: opts.timeout,
            idle_timeout: opts.idle_timeout,
            stream: opts.stream,
        })
    }

    /// This wire with another config (Azure's, made per deployment), on the same pool.
    pub fn with_config<D>(&self, config: D) -> Wire<D> {
        Wire {
            config,
            provider: self.provider,
            api_key_env: self.api_key_env.clone(),
            strip_auth: self.strip_auth,
            policy: self.policy,
            timeout: self.timeout,
            idle_timeout: self.idle_timeout,
            stream: self.stream,
        }
    }
}

impl<C: Config + Clone> Wire<C> {
    /// Sends `body` and reads the reply, all within the timeout. Statuses and connections are
    /// retried below, by the [`RetryService`]; a stalled stream is sent again here, as a new
    /// attempt counted against the same `max_retries` (the reply is buffered, so the caller
    /// never sees the stalled part). `served` names the model when the reply does not.
    pub async fn complete(
        &self,
        body: CreateChatCompletionRequest,
        request: &ChatRequest,
        served: &str,
    ) -> Result<ChatReply, LlmError> {
        let provider = self.provider;
        let started = Instant::now();
        let deadline = started + self.timeout;
        let http = http::client(provider)?;
        let call = Arc::new(CallState::new(Some(deadline)));
        let max_attempts = self.policy.max_retries.saturating_add(1);
        // A client per attempt is cheap (it shares the connection pool); each gets the retries
        // this call has left, and all share the call's attempt counter.
        let attempt = || {
            let left = max_attempts.saturating_sub(call.attempts().saturating_add(1));
            let client = Client::build(http.clone(), self.config.clone()).with_http_service(
                RetryService::new(
                    http.clone(),
                    self.policy.with_max_retries(left),
                    call.clone(),
                    self.strip_auth,
                    provider,
                ),
            );
            let body = body.clone();
            let call = call.clone();
            async move {
                let result = if self.stream {
                    streamed(&client, body, self.idle_timeout).await
                } else {
                    plain(&client, body).await
                };
                match result {
                    // Another attempt only while the call (statuses retried below included)
                    // has attempts left.
                    Err(CallError::Stalled) if call.attempts() < max_attempts => {
                        Err(CallError::StalledWithAttemptsLeft)
                    }
                    other => other,
                }
            }
        };
        // The statuses' retries count in `call`; these outer tries only bound the loop.
        let stalls = AtomicU32::new(0);
        let work = retry(&self.policy, provider, Some(deadline), &stalls, attempt);
        let raw = match tokio::time::timeout(self.timeout, work).await {
            Err(_) => {
                return Err(LlmError::Timeout {
                    provider: provider.into(),
                    seconds: self.timeout.as_secs_f64().ceil() as u64,
                })
            }
            Ok(Err(CallError::Empty(why))) => {
                return Err(LlmError::InvalidReply {
                    provider: provider.into(),
                    message: why.into(),
                })
            }
            Ok(Err(CallError::Incomplete(why))) => {
                return Err(LlmError::BrokeOff {
                    provider: provider.into(),
                    message: why.into(),
                })
            }
            Ok(Err(CallError::Stalled | CallError::StalledWithAttemptsLeft)) => {
                return Err(LlmError::Stalled {
                    provider: provider.into(),
                    seconds: self.idle_timeout.as_secs_f64().ceil() as u64,
                    attempts: call.attempts().max(1),
                })
            }
            Ok(Err(CallError::OpenAi(e))) => {
                return Err(map_error(
                    e,
                    provider,
                    call.attempts().max(1),
                    call.last_status(),
                    &self.api_key_env,
                    &request.model,
                ))
            }
            Ok(Ok(raw)) => raw,
        };
        let outcome = Outcome {
            cut_short: raw.finish == Some(FinishReason::Length),
            usage: raw.usage.as_ref().map(usage_of),
            text: raw.text,
            model: raw.model,
            cost_usd: call.reported_cost(),
        };
        // Every outer try but the last ended in a stall: the server had begun those replies.
        let attempts = http::Attempts {
            made: call.attempts(),
            lost: stalls.load(Ordering::Relaxed).saturating_sub(1),
        };
        Ok(http::finish(
            provider, request, served, outcome, attempts, started,
        ))
    }
}

/// What came back, before usage is settled.
#[derive(Debug, Default)]
pub(crate) struct Raw {
    text: String,
    model: String,
    usage: Option<CompletionUsage>,
    finish: Option<FinishReason>,
}

/// A failure inside one call, before it becomes an [`LlmError`].
#[derive(Debug)]
pub(crate) enum CallError {
    OpenAi(OpenAIError),
    Empty(&'static str),
    /// The stream ended before the reply did.
    Incomplete(&'static str),
    /// The stream went silent for longer than the idle timeout.
    Stalled,
    /// The stream stalled and the call has attempts left: sent again.
    StalledWithAttemptsLeft,
}

impl Attempted for CallError {
    fn is_transient(&self) -> bool {
        matches!(self, CallError::StalledWithAttemptsLeft)
    }

    fn describe(&self) -> String {
        match self {
            CallError::Stalled | CallError::StalledWithAttemptsLeft => {
                "the reply stream stalled".into()
            }
            CallError::Empty(why) | CallError::Incomplete(why) => (*why).into(),
            CallError::OpenAi(e) => e.to_string(),
        }
    }
}

impl From<OpenAIError> for CallError {
    fn from(e: OpenAIError) -> Self {
        CallError::OpenAi(e)
    }
}

pub(crate) async fn plain<C: Config>(
    client: &Client<C>,
    body: CreateChatCompletionRequest,
) -> Result<Raw, CallError> {
    let response = client.chat().create(body).await?;
    let choice = response
        .choices
        .into_iter()
        .next()
        .ok_or(CallError::Empty("the reply has no choices"))?;
    let message = choice.message;
    Ok(Raw {
        text: message.content.or(message.refusal).unwrap_or_default(),
        model: response.model,
        usage: response.usage,
        finish: choice.finish_reason,
    })
}

pub(crate) async fn streamed<C: Config>(
    client: &Client<C>,
    body: CreateChatCompletionRequest,
    idle: Duration,
) -> Result<Raw, CallError> {
    let mut stream = client.chat().create_stream(body).await?;
    let mut raw = Raw::default();
    let mut chunks = 0usize;
    // async-openai parses the events on a task of its own, so silence is measured between
    // events: keep-alive comments do not count as life here.
    while let Some(chunk) = tokio::time::timeout(idle, stream.next())
        .await
        .map_err(|_| CallError::Stalled)?
    {
        let chunk = chunk?;
        chunks += 1;
        // Azure's first chunk carries only the prompt's content-filter results, with an empty
        // model and no choices.
        if raw.model.is_empty() {
            raw.model = chunk.model;
        }
        // With `include_usage` the last chunk carries the usage and no choices; the others
        // carry `usage: null`.
        if chunk.usage.is_some() {
            raw.usage = chunk.usage;
        }
        for choice in chunk.choices.into_iter().filter(|c| c.index == 0) {
            if let Some(text) = choice.delta.content.or(choice.delta.refusal) {
                ralph_actors::ports::stream::delta(&text);
                raw.text.push_str(&text);
            }
            if choice.finish_reason.is_some() {
                raw.finish = choice.finish_reason;
            }
        }
    }
    if chunks == 0 {
        return Err(CallError::Empty(
            "the stream ended before any chunk (is this an OpenAI-compatible endpoint?)",
        ));
    }
    // A stream that ends without `[DONE]` ends here as one with it does (async-openai does not
    // tell them apart); the chunk with a `finish_reason` is what a complete reply has.
    if raw.finish.is_none() {
        return Err(CallError::Incomplete(
            "the stream ended before a finish_reason: the reply is incomplete",
        ));
    }
    Ok(raw)
}

/// `prompt_tokens` counts every prompt token, the cached ones among them, as [`Usage`] wants.
fn usage_of(u: &CompletionUsage) -> Usage {
    let cached = u
        .prompt_tokens_details
        .as_ref()
        .and_then(|d| d.cached_tokens)
        .unwrap_or(0);
    Usage {
        input_tokens: u.prompt_tokens.into(),
        output_tokens: u.completion_tokens.into(),
        cache_read_tokens: cached.into(),
        cache_write_tokens: 0,
    }
}
