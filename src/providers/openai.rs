//! OpenAI chat completions through `async-openai`, against api.openai.com or any
//! OpenAI-compatible server (LiteLLM, vLLM, llama.cpp, Ollama's `/v1`).
//!
//! One call: build the request (the output cap is always sent, since the budget relies on it),
//! send it through [`RetryService`], read the reply streamed or whole, and take the token usage
//! the server reports. The whole call, retries and stream included, runs under one timeout.
//!
//! The protocol half (`Wire`, `chat_body`, `map_error`) is generic over async-openai's `Config`,
//! so Azure OpenAI (`azure.rs`) goes through the same code with its own config.

use std::sync::atomic::AtomicU32;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_openai::config::{Config, OpenAIConfig, OPENAI_API_BASE};
use async_openai::error::{OpenAIError, StreamError, WrappedError};
use async_openai::types::chat::{
    ChatCompletionRequestAssistantMessage, ChatCompletionRequestAssistantMessageContent,
    ChatCompletionRequestMessage, ChatCompletionRequestSystemMessage,
    ChatCompletionRequestSystemMessageContent, ChatCompletionRequestUserMessage,
    ChatCompletionRequestUserMessageContent, ChatCompletionStreamOptions, CompletionUsage,
    CreateChatCompletionRequest, FinishReason,
};
use async_openai::Client;
use futures::StreamExt;
use ralph_actors::ports::llm::{ChatMessage, ChatReply, ChatRequest, LlmClient, LlmError, Speaker};
use ralph_actors::schema::usage::Usage;
use reqwest::StatusCode;

use super::http::{self, chain, shorten, Outcome};
use super::options::ClientOptions;
use super::retry::{CallState, RetryService};
use crate::http::retry::{retry, Attempted, RetryPolicy};

pub const PROVIDER: &str = "openai";
pub const DEFAULT_API_KEY_ENV: &str = "OPENAI_API_KEY";
pub const BASE_URL_ENV: &str = "OPENAI_BASE_URL";
const OFFICIAL_HOST: &str = "api.openai.com";

/// An [`LlmClient`] for `openai/<model>` names.
pub struct OpenAiClient {
    wire: Wire<OpenAIConfig>,
    base_url: String,
    /// api.openai.com: a key is required, and only `max_completion_tokens` is accepted.
    official: bool,
    has_key: bool,
}

impl std::fmt::Debug for OpenAiClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiClient")
            .field("base_url", &self.base_url)
            .field("has_key", &self.has_key)
            .field("stream", &self.wire.stream)
            .finish_non_exhaustive()
    }
}

impl OpenAiClient {
    /// Resolves the base URL and key. A missing key is not an error here: a run whose roles
    /// never call OpenAI must not need one; the first call fails instead, before any request.
    pub fn new(opts: ClientOptions) -> Result<Self, LlmError> {
        // async-openai appends `/chat/completions` to the base as written.
        let (base_url, url) = http::resolve_base_url(
            PROVIDER,
            opts.base_url.clone(),
            BASE_URL_ENV,
            OPENAI_API_BASE,
        )?;
        let key = http::resolve_key(opts.api_key.clone(), &opts.api_key_env);
        let config = OpenAIConfig::new()
            .with_api_base(&base_url)
            .with_api_key(key.clone().unwrap_or_default());
        let strip_auth = key.is_none();
        Ok(Self {
            wire: Wire::new(
                PROVIDER,
                &opts,
                opts.api_key_env.clone(),
                strip_auth,
                config,
            )?,
            base_url,
            official: url.host_str() == Some(OFFICIAL_HOST),
            has_key: key.is_some(),
        })
    }

    /// Replaces the backoff timings (tests use short ones); keeps `max_retries` as given.
    pub fn with_retry_policy(mut self, policy: RetryPolicy) -> Self {
        self.wire.policy = policy;
        self
    }

    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// Whether a call could be sent: fails with the error the call would give when the official
    /// API has no key. For a start-up check, before any work is done.
    pub fn check(&self) -> Result<(), LlmError> {
        if self.official && !self.has_key {
            return Err(http::missing_key(
                PROVIDER,
                &self.wire.api_key_env,
                OFFICIAL_HOST,
            ));
        }
        Ok(())
    }

    fn body(&self, model: &str, request: &ChatRequest) -> CreateChatCompletionRequest {
        let temperature = match request.temperature {
            Some(t) if !accepts_temperature(model) => {
                tracing::debug!("{PROVIDER}/{model} takes no temperature; {t} not sent");
                None
            }
            t => t,
        };
        // The official API rejects `max_tokens` for reasoning models; other servers may know
        // only `max_tokens`. Either way the server is told the cap the budget was reserved for.
        chat_body(ChatBody {
            model,
            request,
            temperature,
            max_completion_tokens: true,
            max_tokens: !self.official,
            stream: self.wire.stream,
            stream_usage: self.wire.stream,
        })
    }
}

/// Reasoning models (o1, o3, o4, gpt-5 but its chat variant) accept only the default
/// temperature and answer 400 to any other.
pub fn accepts_temperature(model: &str) -> bool {
    let reasoning = ["o1", "o3", "o4", "gpt-5"]
        .iter()
        .any(|p| model.starts_with(p));
    !reasoning || model.starts_with("gpt-5-chat")
}

#[async_trait::async_trait]
impl LlmClient for OpenAiClient {
    async fn complete(&self, request: ChatRequest) -> Result<ChatReply, LlmError> {
        let model = http::model_id(PROVIDER, &request.model)?;
        self.check()?;
        self.wire
            .complete(self.body(model, &request), &request, model)
            .await
    }
}

// ---------------------------------------------------------------------------------------------
// The OpenAI chat-completions protocol, generic over async-openai's `Config` (OpenAI or Azure).

/// One server's way of taking OpenAI-protocol calls: its async-openai `Config`, the connection
/// pool and the patience.
pub(super) struct Wire<C> {
    http: reqwest::Client,
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
            http: http::client(provider)?,
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
            http: self.http.clone(),
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
        let call = Arc::new(CallState::new(Some(deadline)));
        let max_attempts = self.policy.max_retries.saturating_add(1);
        // A client per attempt is cheap (it shares the connection pool); each gets the retries
        // this call has left, and all share the call's attempt counter.
        let attempt = || {
            let left = max_attempts.saturating_sub(call.attempts().saturating_add(1));
            let client = Client::build(self.http.clone(), self.config.clone()).with_http_service(
                RetryService::new(
                    self.http.clone(),
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
        };
        Ok(http::finish(
            provider,
            request,
            served,
            outcome,
            call.attempts(),
            started,
        ))
    }
}

/// What differs between servers in a request body.
pub(super) struct ChatBody<'a> {
    pub model: &'a str,
    pub request: &'a ChatRequest,
    pub temperature: Option<f32>,
    /// Send the cap as `max_completion_tokens` (what reasoning models require).
    pub max_completion_tokens: bool,
    /// Send the cap as `max_tokens` too (servers that know only the older name).
    pub max_tokens: bool,
    pub stream: bool,
    /// Ask for the usage at the end of the stream (`stream_options.include_usage`).
    pub stream_usage: bool,
}

/// The request: the output cap is always sent, under the name(s) the server knows, since the
/// budget reserved for exactly that many output tokens.
pub(super) fn chat_body(b: ChatBody<'_>) -> CreateChatCompletionRequest {
    #[allow(deprecated)]
    let body = CreateChatCompletionRequest {
        model: b.model.to_string(),
        messages: b.request.messages.iter().map(to_message).collect(),
        temperature: b.temperature,
        max_completion_tokens: b.max_completion_tokens.then_some(b.request.max_tokens),
        max_tokens: b.max_tokens.then_some(b.request.max_tokens),
        stream: b.stream.then_some(true),
        stream_options: b.stream_usage.then_some(ChatCompletionStreamOptions {
            include_usage: Some(true),
            include_obfuscation: None,
        }),
        ..Default::default()
    };
    body
}

fn to_message(m: &ChatMessage) -> ChatCompletionRequestMessage {
    let text = m.content.clone();
    match m.speaker {
        Speaker::System => ChatCompletionRequestSystemMessage {
            content: ChatCompletionRequestSystemMessageContent::Text(text),
            name: None,
        }
        .into(),
        Speaker::User => ChatCompletionRequestUserMessage {
            content: ChatCompletionRequestUserMessageContent::Text(text),
            name: None,
        }
        .into(),
        Speaker::Assistant => ChatCompletionRequestAssistantMessage {
            content: Some(ChatCompletionRequestAssistantMessageContent::Text(text)),
            ..Default::default()
        }
        .into(),
    }
}

/// What came back, before usage is settled.
#[derive(Debug, Default)]
struct Raw {
    text: String,
    model: String,
    usage: Option<CompletionUsage>,
    finish: Option<FinishReason>,
}

/// A failure inside one call, before it becomes an [`LlmError`].
#[derive(Debug)]
enum CallError {
    OpenAi(OpenAIError),
    Empty(&'static str),
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
            CallError::Empty(why) => (*why).into(),
            CallError::OpenAi(e) => e.to_string(),
        }
    }
}

impl From<OpenAIError> for CallError {
    fn from(e: OpenAIError) -> Self {
        CallError::OpenAi(e)
    }
}

async fn plain<C: Config>(
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

async fn streamed<C: Config>(
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

fn by_status(
    provider: &str,
    status: StatusCode,
    attempts: u32,
    env_var: &str,
    message: String,
    code: Option<&str>,
) -> LlmError {
    let provider = provider.to_string();
    match status.as_u16() {
        401 | 403 => LlmError::Auth {
            provider,
            env_var: env_var.into(),
            message,
        },
        429 if code == Some("insufficient_quota") => LlmError::Request {
            provider,
            status: 429,
            message: format!("{message} (the account has no quota left; see its billing page)"),
        },
        429 => LlmError::RateLimited {
            provider,
            attempts,
            retry_after_ms: None,
            message,
        },
        413 => LlmError::ContextTooLong { provider, message },
        400 if code == Some("context_length_exceeded") || http::says_too_long(&message) => {
            LlmError::ContextTooLong { provider, message }
        }
        s if status.is_server_error() => LlmError::Server {
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
        // An error status whose body was not OpenAI's error JSON (a proxy's text page).
        OpenAIError::JSONDeserialize(_, body) if last_status.is_some_and(|s| !s.is_success()) => {
            let status = last_status.unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let message = if body.trim().is_empty() {
                status.to_string()
            } else {
                shorten(&body)
            };
            by_status(&provider, status, attempts, env_var, message, None)
        }
        OpenAIError::JSONDeserialize(e, body) => {
            // A stream may end with an error object instead of a chunk.
            let message = match serde_json::from_str::<WrappedError>(&body) {
                Ok(w) => format!(
                    "the server reported an error: {}",
                    shorten(&w.error.message)
                ),
                Err(_) => format!("{e} in `{}`", shorten(&body)),
            };
            LlmError::InvalidReply { provider, message }
        }
        OpenAIError::Reqwest(e) if e.is_decode() => LlmError::InvalidReply {
            provider,
            message: chain(&e),
        },
        OpenAIError::Reqwest(e) => LlmError::Network {
            provider,
            message: chain(&e),
        },
        OpenAIError::StreamError(e) => match *e {
            // The connection broke mid-stream.
            StreamError::EventStream(m) if m.starts_with("Transport") => LlmError::Network {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::http::test_server::{stalling, stalling_then};
    use crate::providers::testkit::*;
    use std::sync::atomic::Ordering;
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};

    #[tokio::test]
    async fn streams_text_and_usage() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path("/v1/chat/completions"))
            .respond_with(sse_reply(&["Hel", "lo"], Some(usage_json(120, 7, 100))))
            .expect(1)
            .mount(&server)
            .await;
        let reply = client(&server, |_| {})
            .complete(request("openai/gpt-4.1-mini"))
            .await
            .expect("reply");
        assert_eq!(reply.text, "Hello");
        assert_eq!(reply.model, "gpt-4.1-mini-2025-04-14");
        assert_eq!(
            reply.usage,
            Usage {
                input_tokens: 120,
                output_tokens: 7,
                cache_read_tokens: 100,
                cache_write_tokens: 0
            }
        );

        let sent = last_body(&server).await;
        assert_eq!(sent["model"], "gpt-4.1-mini");
        assert_eq!(sent["max_completion_tokens"], 321);
        // A local server may know only `max_tokens`; it is told the same cap.
        assert_eq!(sent["max_tokens"], 321);
        assert_eq!(sent["stream"], true);
        assert_eq!(sent["stream_options"]["include_usage"], true);
        assert!((sent["temperature"].as_f64().expect("temperature") - 0.2).abs() < 1e-6);
        assert_eq!(sent["messages"][0]["role"], "system");
        assert_eq!(sent["messages"][1]["role"], "user");
        assert_eq!(sent["messages"][1]["content"], "fix it");
        let auth = server.received_requests().await.expect("recorded")[0]
            .headers
            .get("authorization")
            .cloned();
        assert_eq!(
            auth.and_then(|v| v.to_str().ok().map(String::from)),
            Some("Bearer test-key".into())
        );
    }

    #[tokio::test]
    async fn reads_a_whole_reply() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path("/v1/chat/completions"))
            .respond_with(json_reply("All done.", Some(usage_json(50, 3, 20))))
            .mount(&server)
            .await;
        let reply = client(&server, |o| o.stream = false)
            .complete(request("openai/gpt-4o"))
            .await
            .expect("reply");
        assert_eq!(reply.text, "All done.");
        assert_eq!(
            reply.usage,
            Usage {
                input_tokens: 50,
                output_tokens: 3,
                cache_read_tokens: 20,
                cache_write_tokens: 0
            }
        );
        let sent = last_body(&server).await;
        assert_eq!(sent["max_completion_tokens"], 321);
        assert!(sent.get("stream").is_none_or(|s| s == false));
        assert!(sent.get("stream_options").is_none());
    }

    #[tokio::test]
    async fn estimates_missing_usage() {
        let server = serving(sse_reply(&["some ", "text"], None), ..).await;
        let reply = client(&server, |_| {})
            .complete(request("openai/gpt-4.1"))
            .await
            .expect("reply");
        assert_eq!(reply.text, "some text");
        assert!(
            reply.usage.input_tokens > 5 && reply.usage.output_tokens == 2,
            "{:?}",
            reply.usage
        );
    }

    #[tokio::test]
    async fn unauthorized_names_the_key_variable() {
        let server = serving(
            error_reply(
                401,
                "Incorrect API key provided: sk-te***ey.",
                "invalid_api_key",
            ),
            1,
        )
        .await;
        let err = client(&server, |o| o.api_key_env = "OPENAI_KEY".into())
            .complete(request("openai/gpt-4o"))
            .await;
        match err {
            Err(e @ LlmError::Auth { .. }) => {
                let text = e.to_string();
                assert!(
                    text.contains("OPENAI_KEY") && text.contains("Incorrect API key"),
                    "{text}"
                );
            }
            other => panic!("expected Auth, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn a_proxy_text_page_keeps_its_status() {
        let server = serving(
            ResponseTemplate::new(403).set_body_string("Forbidden by proxy"),
            ..,
        )
        .await;
        let err = client(&server, |_| {})
            .complete(request("openai/gpt-4o"))
            .await
            .expect_err("403");
        assert!(
            matches!(&err, LlmError::Auth { message, .. } if message.contains("Forbidden by proxy")),
            "{err:?}"
        );
    }

    #[tokio::test]
    async fn a_bad_request_is_not_retried() {
        let server = serving(
            error_reply(400, "The model `gpt-9` does not exist", "model_not_found"),
            1,
        )
        .await;
        let err = client(&server, |_| {})
            .complete(request("openai/gpt-4o"))
            .await
            .expect_err("400");
        assert!(
            matches!(&err, LlmError::Request { status: 400, message, .. } if message.contains("gpt-9")),
            "{err:?}"
        );
    }

    #[tokio::test]
    async fn a_prompt_too_long_is_its_own_kind() {
        let server = serving(
            error_reply(
                400,
                "maximum context length is 128000 tokens",
                "context_length_exceeded",
            ),
            1,
        )
        .await;
        let err = client(&server, |_| {})
            .complete(request("openai/gpt-4o"))
            .await
            .expect_err("400");
        assert!(
            matches!(&err, LlmError::ContextTooLong { message, .. } if message.contains("context length")),
            "{err:?}"
        );
    }

    #[tokio::test]
    async fn waits_for_retry_after_then_succeeds() {
        waits_for_retry_after(
            error_reply(429, "Rate limit reached", "rate_limit_exceeded")
                .insert_header("retry-after", "1"),
            sse_reply(&["ok"], Some(usage_json(10, 1, 0))),
            |s| client(s, |_| {}),
            "openai/gpt-4o",
        )
        .await;
    }

    #[tokio::test]
    async fn honours_retry_after_ms() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(
                ResponseTemplate::new(503)
                    .insert_header("retry-after-ms", "400")
                    .set_body_string("busy"),
            )
            .up_to_n_times(1)
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .respond_with(json_reply("ok", Some(usage_json(10, 1, 0))))
            .mount(&server)
            .await;
        let started = Instant::now();
        let reply = client(&server, |o| o.stream = false)
            .complete(request("openai/gpt-4o"))
            .await
            .expect("reply");
        assert_eq!(reply.text, "ok");
        let waited = started.elapsed();
        // Our own backoff in these tests is 10 ms, so only the header explains the wait.
        assert!(
            waited >= Duration::from_millis(380) && waited < Duration::from_secs(3),
            "{waited:?}"
        );
    }

    #[tokio::test]
    async fn gives_up_on_a_failing_server_after_the_retries() {
        let server = serving(
            ResponseTemplate::new(500).set_body_string("upstream exploded"),
            4,
        )
        .await;
        let err = client(&server, |o| o.max_retries = 3)
            .complete(request("openai/gpt-4o"))
            .await
            .expect_err("500s");
        match err {
            LlmError::Server {
                status: 500,
                attempts: 4,
                ref message,
                ..
            } => assert!(message.contains("upstream exploded")),
            other => panic!("expected Server after 4 attempts, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn rate_limited_after_the_retries() {
        let server = serving(error_reply(429, "slow down", "rate_limit_exceeded"), 3).await;
        let err = client(&server, |o| o.max_retries = 2)
            .complete(request("openai/gpt-4o"))
            .await
            .expect_err("429s");
        assert!(
            matches!(err, LlmError::RateLimited { attempts: 3, .. }),
            "{err:?}"
        );
    }

    #[tokio::test]
    async fn exhausted_quota_is_not_retried() {
        let server = serving(
            error_reply(429, "You exceeded your current quota", "insufficient_quota"),
            1,
        )
        .await;
        let err = client(&server, |_| {})
            .complete(request("openai/gpt-4o"))
            .await
            .expect_err("quota");
        assert!(
            matches!(err, LlmError::Request { status: 429, .. }),
            "{err:?}"
        );
    }

    #[tokio::test]
    async fn garbage_is_an_invalid_reply() {
        let server = serving(garbage(), ..).await;
        let err = client(&server, |o| o.stream = false)
            .complete(request("openai/gpt-4o"))
            .await
            .expect_err("garbage");
        assert!(
            matches!(&err, LlmError::InvalidReply { message, .. } if message.contains("not json")),
            "{err:?}"
        );
        // Streamed, the same page has no events at all.
        let err = client(&server, |_| {})
            .complete(request("openai/gpt-4o"))
            .await
            .expect_err("garbage");
        assert!(matches!(err, LlmError::InvalidReply { .. }), "{err:?}");
    }

    #[tokio::test]
    async fn a_bad_chunk_is_an_invalid_reply() {
        let server = MockServer::start().await;
        let body = "data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\ndata: {oops\n\ndata: [DONE]\n\n";
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(200).set_body_raw(body, "text/event-stream"))
            .mount(&server)
            .await;
        let err = client(&server, |_| {})
            .complete(request("openai/gpt-4o"))
            .await
            .expect_err("bad chunk");
        assert!(matches!(err, LlmError::InvalidReply { .. }), "{err:?}");
    }

    #[tokio::test]
    async fn a_silent_server_times_out() {
        times_out(
            sse_reply(&["late"], None),
            |s| client(s, |o| o.timeout = Duration::from_millis(300)),
            "openai/gpt-4o",
        )
        .await;
    }

    #[tokio::test]
    async fn a_stalled_stream_is_retried_then_reported() {
        let (url, served) = stalling("text/event-stream", FIRST_CHUNK).await;
        let c = client_at(&format!("{url}/v1"), |o| {
            o.idle_timeout = Duration::from_millis(200);
            o.max_retries = 2;
        });
        let err = c
            .complete(request("openai/gpt-4o"))
            .await
            .expect_err("stalled");
        assert!(
            matches!(
                err,
                LlmError::Stalled {
                    attempts: 3,
                    seconds: 1,
                    ..
                }
            ),
            "{err:?}"
        );
        assert_eq!(served.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn a_stall_then_a_whole_stream_succeeds() {
        let (url, served) =
            stalling_then("text/event-stream", FIRST_CHUNK, 1, &whole_stream()).await;
        let reply = client_at(&format!("{url}/v1"), |o| {
            o.idle_timeout = Duration::from_millis(200)
        })
        .complete(request("openai/gpt-4o"))
        .await
        .expect("reply after a stall");
        // Only the second attempt's text: the stalled one is dropped.
        assert_eq!(reply.text, "Hello");
        assert_eq!(served.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn a_closed_port_is_a_network_error() {
        let port = closed_port();
        let c = client_at(&format!("http://127.0.0.1:{port}/v1"), |o| {
            o.max_retries = 1
        });
        let err = c
            .complete(request("openai/gpt-4o"))
            .await
            .expect_err("refused");
        assert!(matches!(err, LlmError::Network { .. }), "{err:?}");
    }

    #[tokio::test]
    async fn the_official_api_needs_a_key_before_any_request() {
        let opts = ClientOptions {
            base_url: Some("https://api.openai.com/v1/".into()),
            api_key: None,
            api_key_env: "RALPH_TEST_SURELY_UNSET_KEY".into(),
            ..ClientOptions::default()
        };
        let c = OpenAiClient::new(opts).expect("client");
        let err = c
            .complete(request("openai/gpt-4o"))
            .await
            .expect_err("no key");
        assert!(
            matches!(&err, LlmError::Auth { env_var, .. } if env_var == "RALPH_TEST_SURELY_UNSET_KEY"),
            "{err:?}"
        );
        assert_eq!(c.check(), Err(err));
    }

    #[tokio::test]
    async fn a_local_server_needs_no_key() {
        let server = serving(sse_reply(&["hi"], Some(usage_json(1, 1, 0))), ..).await;
        let c = client(&server, |o| {
            o.api_key = None;
            o.api_key_env = "RALPH_TEST_SURELY_UNSET_KEY".into();
        });
        assert!(c.check().is_ok());
        c.complete(request("openai/qwen2.5-coder"))
            .await
            .expect("reply");
        let received = server.received_requests().await.expect("recorded");
        assert!(received[0].headers.get("authorization").is_none());
    }

    #[tokio::test]
    async fn reasoning_models_get_no_temperature_and_no_legacy_cap_from_openai() {
        assert!(!accepts_temperature("o3-mini") && !accepts_temperature("gpt-5"));
        assert!(accepts_temperature("gpt-5-chat-latest") && accepts_temperature("gpt-4.1"));
        let opts = ClientOptions {
            base_url: Some("https://api.openai.com/v1".into()),
            api_key: Some("k".into()),
            ..Default::default()
        };
        let c = OpenAiClient::new(opts).expect("client");
        let body = serde_json::to_value(c.body("o3", &request("openai/o3"))).expect("json");
        assert!(body.get("temperature").is_none());
        assert!(body.get("max_tokens").is_none());
        assert_eq!(body["max_completion_tokens"], 321);
    }

    #[tokio::test]
    async fn refuses_other_providers_models() {
        let server = MockServer::start().await;
        let err = client(&server, |_| {})
            .complete(request("anthropic/claude-sonnet-4-5"))
            .await
            .expect_err("config");
        assert!(matches!(err, LlmError::Config { .. }), "{err:?}");
    }

    #[test]
    fn options_debug_hides_the_key() {
        let o = ClientOptions {
            api_key: Some("sk-secret".into()),
            ..Default::default()
        };
        assert!(!format!("{o:?}").contains("sk-secret"));
    }

    #[test]
    fn rejects_a_bad_base_url() {
        let o = ClientOptions {
            base_url: Some("localhost:8080".into()),
            ..Default::default()
        };
        assert!(matches!(OpenAiClient::new(o), Err(LlmError::Config { .. })));
    }
}
