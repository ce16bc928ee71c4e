//! OpenAI chat completions through `async-openai`, against api.openai.com or any
//! OpenAI-compatible server (LiteLLM, vLLM, llama.cpp, Ollama's `/v1`).
//!
//! One call: build the request (the output cap is always sent, since the budget relies on it),
//! send it through [`RetryService`], read the reply streamed or whole, and take the token usage
//! the server reports. The whole call, retries and stream included, runs under one timeout.

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_openai::config::{OpenAIConfig, OPENAI_API_BASE};
use async_openai::error::{OpenAIError, StreamError, WrappedError};
use async_openai::types::chat::{
    ChatCompletionRequestAssistantMessage, ChatCompletionRequestAssistantMessageContent,
    ChatCompletionRequestMessage, ChatCompletionRequestSystemMessage,
    ChatCompletionRequestSystemMessageContent, ChatCompletionRequestUserMessage,
    ChatCompletionRequestUserMessageContent, ChatCompletionStreamOptions, CompletionUsage,
    CreateChatCompletionRequest, FinishReason,
};
use async_openai::Client;
use backon::Retryable;
use futures::StreamExt;
use ralph_actors::llm::{
    ChatMessage, ChatReply, ChatRequest, LlmClient, LlmError, Speaker, TokenCounter, Usage,
};
use reqwest::StatusCode;

use super::options::ClientOptions;
use super::retry::{CallState, RetryPolicy, RetryService};
use super::tokens::TiktokenCounter;

pub const PROVIDER: &str = "openai";
pub const DEFAULT_API_KEY_ENV: &str = "OPENAI_API_KEY";
pub const BASE_URL_ENV: &str = "OPENAI_BASE_URL";
const OFFICIAL_HOST: &str = "api.openai.com";
/// Long replies from large models take minutes; a hung server should not take longer.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// An [`LlmClient`] for `openai/<model>` names.
pub struct OpenAiClient {
    http: reqwest::Client,
    config: OpenAIConfig,
    base_url: String,
    /// api.openai.com: a key is required, and only `max_completion_tokens` is accepted.
    official: bool,
    has_key: bool,
    api_key_env: String,
    timeout: Duration,
    /// The longest a stream may go without an event before the attempt counts as stalled.
    idle_timeout: Duration,
    policy: RetryPolicy,
    stream: bool,
    counter: TiktokenCounter,
}

impl std::fmt::Debug for OpenAiClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiClient")
            .field("base_url", &self.base_url)
            .field("has_key", &self.has_key)
            .field("stream", &self.stream)
            .finish_non_exhaustive()
    }
}

fn non_empty(s: Option<String>) -> Option<String> {
    s.map(|s| s.trim().to_string()).filter(|s| !s.is_empty())
}

impl OpenAiClient {
    /// Resolves the base URL and key. A missing key is not an error here: a run whose roles
    /// never call OpenAI must not need one; the first call fails instead, before any request.
    pub fn new(opts: ClientOptions) -> Result<Self, LlmError> {
        let (base_url, origin) = match non_empty(opts.base_url) {
            Some(u) => (u, "the providers.openai.base_url setting"),
            None => match non_empty(std::env::var(BASE_URL_ENV).ok()) {
                Some(u) => (u, BASE_URL_ENV),
                None => (OPENAI_API_BASE.to_string(), "the default"),
            },
        };
        // async-openai appends `/chat/completions` to the base as written.
        let base_url = base_url.trim_end_matches('/').to_string();
        let url = reqwest::Url::parse(&base_url).map_err(|e| LlmError::Config {
            model: format!("{PROVIDER}/*"),
            message: format!("invalid base URL `{base_url}` (from {origin}): {e}"),
        })?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(LlmError::Config {
                model: format!("{PROVIDER}/*"),
                message: format!(
                    "base URL `{base_url}` (from {origin}) must start with http:// or https://"
                ),
            });
        }
        let official = url.host_str() == Some(OFFICIAL_HOST);
        let key =
            non_empty(opts.api_key).or_else(|| non_empty(std::env::var(&opts.api_key_env).ok()));
        let http = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .user_agent(concat!("ralph-loop/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| LlmError::Config {
                model: format!("{PROVIDER}/*"),
                message: format!("cannot set up HTTP: {e}"),
            })?;
        let config = OpenAIConfig::new()
            .with_api_base(&base_url)
            .with_api_key(key.clone().unwrap_or_default());
        Ok(Self {
            http,
            config,
            base_url,
            official,
            has_key: key.is_some(),
            api_key_env: opts.api_key_env,
            timeout: opts.timeout,
            idle_timeout: opts.idle_timeout,
            policy: RetryPolicy::default().with_max_retries(opts.max_retries),
            stream: opts.stream,
            counter: TiktokenCounter::new(),
        })
    }

    /// Replaces the backoff timings (tests use short ones); keeps `max_retries` as given.
    pub fn with_retry_policy(mut self, policy: RetryPolicy) -> Self {
        self.policy = policy;
        self
    }

    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// Whether a call could be sent: fails with the error the call would give when the official
    /// API has no key. For a start-up check, before any work is done.
    pub fn check(&self) -> Result<(), LlmError> {
        if self.official && !self.has_key {
            return Err(LlmError::Auth {
                provider: PROVIDER.into(),
                env_var: self.api_key_env.clone(),
                message: format!(
                    "no API key for {OFFICIAL_HOST}: {} is not set",
                    self.api_key_env
                ),
            });
        }
        Ok(())
    }

    fn model_id<'a>(&self, model: &'a str) -> Result<&'a str, LlmError> {
        match model.split_once('/') {
            Some((PROVIDER, id)) if !id.is_empty() => Ok(id),
            None if !model.is_empty() => Ok(model),
            _ => Err(LlmError::Config {
                model: model.into(),
                message: format!("the {PROVIDER} client cannot serve this model"),
            }),
        }
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
        #[allow(deprecated)]
        let body = CreateChatCompletionRequest {
            model: model.to_string(),
            messages: request.messages.iter().map(to_openai).collect(),
            temperature,
            max_completion_tokens: Some(request.max_tokens),
            max_tokens: (!self.official).then_some(request.max_tokens),
            stream: self.stream.then_some(true),
            stream_options: self.stream.then_some(ChatCompletionStreamOptions {
                include_usage: Some(true),
                include_obfuscation: None,
            }),
            ..Default::default()
        };
        body
    }

    fn map_error(&self, err: OpenAIError, call: &CallState, model: &str) -> LlmError {
        map_error(
            err,
            call.attempts().max(1),
            call.last_status(),
            &self.api_key_env,
            model,
        )
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

fn to_openai(m: &ChatMessage) -> ChatCompletionRequestMessage {
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

async fn plain(
    client: &Client<OpenAIConfig>,
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

async fn streamed(
    client: &Client<OpenAIConfig>,
    body: CreateChatCompletionRequest,
    idle_timeout: Duration,
) -> Result<Raw, CallError> {
    let mut stream = client.chat().create_stream(body).await?;
    let mut raw = Raw::default();
    let mut chunks = 0usize;
    // async-openai parses the events on a task of its own, so silence is measured between
    // events: keep-alive comments do not count as life here.
    while let Some(chunk) = tokio::time::timeout(idle_timeout, stream.next())
        .await
        .map_err(|_| CallError::Stalled)?
    {
        let chunk = chunk?;
        chunks += 1;
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

/// A failure inside one call, before it becomes an [`LlmError`].
#[derive(Debug)]
enum CallError {
    OpenAi(OpenAIError),
    Empty(&'static str),
    /// The stream went silent for longer than the idle timeout.
    Stalled,
}

impl From<OpenAIError> for CallError {
    fn from(e: OpenAIError) -> Self {
        CallError::OpenAi(e)
    }
}

fn shorten(text: &str) -> String {
    const MAX: usize = 300;
    let text = text.trim();
    match text.char_indices().nth(MAX) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_string(),
    }
}

/// The error and its causes on one line: reqwest's own message alone says little
/// ("error sending request").
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let s_text = s.to_string();
        if !text.contains(&s_text) {
            text.push_str(": ");
            text.push_str(&s_text);
        }
        source = s.source();
    }
    text
}

fn by_status(
    status: StatusCode,
    attempts: u32,
    env_var: &str,
    message: String,
    code: Option<&str>,
) -> LlmError {
    let provider = PROVIDER.to_string();
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

/// Maps async-openai's errors to the kinds a user can act on.
pub(crate) fn map_error(
    err: OpenAIError,
    attempts: u32,
    last_status: Option<StatusCode>,
    env_var: &str,
    model: &str,
) -> LlmError {
    let provider = PROVIDER.to_string();
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
            by_status(status, attempts, env_var, message, None)
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

#[async_trait::async_trait]
impl LlmClient for OpenAiClient {
    async fn complete(&self, request: ChatRequest) -> Result<ChatReply, LlmError> {
        let model = self.model_id(&request.model)?;
        self.check()?;
        let started = Instant::now();
        let deadline = started + self.timeout;
        let call = Arc::new(CallState::new(Some(deadline)));
        let body = self.body(model, &request);
        let max_attempts = self.policy.max_retries.saturating_add(1);
        // A stalled stream is sent again as a new attempt, counted against `max_retries` with
        // the retries of the retry service (the reply is buffered, so the caller never sees the
        // stalled part). A client per attempt is cheap (it shares the connection pool); each
        // gets the retries this call has left, and all share the call's attempt counter.
        let attempt = || {
            let left = max_attempts.saturating_sub(call.attempts().saturating_add(1));
            let client = Client::build(self.http.clone(), self.config.clone()).with_http_service(
                RetryService::new(
                    self.http.clone(),
                    self.policy.with_max_retries(left),
                    call.clone(),
                    !self.has_key,
                    PROVIDER,
                ),
            );
            let body = body.clone();
            async move {
                if self.stream {
                    streamed(&client, body, self.idle_timeout).await
                } else {
                    plain(&client, body).await
                }
            }
        };
        let work = attempt
            .retry(super::http::backoff(&self.policy))
            .sleep(tokio::time::sleep)
            .when(|e| matches!(e, CallError::Stalled) && call.attempts() < max_attempts)
            .adjust(move |_, ours| {
                let wait = ours?;
                (Instant::now() + wait < deadline).then_some(wait)
            })
            .notify(|_, wait| {
                tracing::warn!(
                    provider = PROVIDER,
                    attempt = call.attempts(),
                    wait_ms = wait.as_millis() as u64,
                    "{PROVIDER}: the reply stream stalled for {:.0}s; retrying in {:.1}s",
                    self.idle_timeout.as_secs_f64(),
                    wait.as_secs_f64()
                );
            });
        let raw = match tokio::time::timeout(self.timeout, work).await {
            Err(_) => {
                return Err(LlmError::Timeout {
                    provider: PROVIDER.into(),
                    seconds: self.timeout.as_secs_f64().ceil() as u64,
                })
            }
            Ok(Err(CallError::Empty(why))) => {
                return Err(LlmError::InvalidReply {
                    provider: PROVIDER.into(),
                    message: why.into(),
                })
            }
            Ok(Err(CallError::Stalled)) => {
                return Err(LlmError::Stalled {
                    provider: PROVIDER.into(),
                    seconds: self.idle_timeout.as_secs_f64().ceil() as u64,
                    attempts: call.attempts().max(1),
                })
            }
            Ok(Err(CallError::OpenAi(e))) => return Err(self.map_error(e, &call, &request.model)),
            Ok(Ok(raw)) => raw,
        };
        if raw.finish == Some(FinishReason::Length) {
            tracing::warn!(
                "{}: the reply reached max_tokens ({}) and is cut short",
                request.model,
                request.max_tokens
            );
        }
        let usage = match &raw.usage {
            Some(u) => usage_of(u),
            None => {
                let estimate = Usage {
                    input_tokens: self.counter.count(&request.model, &request.messages),
                    output_tokens: self.counter.count_text(&request.model, &raw.text),
                    ..Usage::default()
                };
                tracing::warn!(
                    "{}: the server reported no token usage; counting {} in and {} out by estimate",
                    request.model,
                    estimate.input_tokens,
                    estimate.output_tokens
                );
                estimate
            }
        };
        tracing::debug!(
            model = %request.model,
            attempts = call.attempts(),
            elapsed_ms = started.elapsed().as_millis() as u64,
            input = usage.input_tokens,
            output = usage.output_tokens,
            cached = usage.cache_read_tokens,
            "{PROVIDER} call done"
        );
        let model = if raw.model.is_empty() {
            model.to_string()
        } else {
            raw.model
        };
        Ok(ChatReply {
            text: raw.text,
            usage,
            model,
        })
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::testkit::*;
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
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(sse_reply(&["some ", "text"], None))
            .mount(&server)
            .await;
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
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(error_reply(
                401,
                "Incorrect API key provided: sk-te***ey.",
                "invalid_api_key",
            ))
            .expect(1)
            .mount(&server)
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
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(403).set_body_string("Forbidden by proxy"))
            .mount(&server)
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
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(error_reply(
                400,
                "maximum context length is 128000 tokens",
                "context_length_exceeded",
            ))
            .expect(1)
            .mount(&server)
            .await;
        let err = client(&server, |_| {})
            .complete(request("openai/gpt-4o"))
            .await
            .expect_err("400");
        assert!(
            matches!(&err, LlmError::Request { status: 400, message, .. } if message.contains("context length")),
            "{err:?}"
        );
    }

    #[tokio::test]
    async fn waits_for_retry_after_then_succeeds() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(
                error_reply(429, "Rate limit reached", "rate_limit_exceeded")
                    .insert_header("retry-after", "1"),
            )
            .up_to_n_times(1)
            .expect(1)
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .respond_with(sse_reply(&["ok"], Some(usage_json(10, 1, 0))))
            .expect(1)
            .mount(&server)
            .await;
        let started = Instant::now();
        let reply = client(&server, |_| {})
            .complete(request("openai/gpt-4o"))
            .await
            .expect("reply after a retry");
        assert_eq!(reply.text, "ok");
        assert!(
            started.elapsed() >= Duration::from_millis(950),
            "waited only {:?}",
            started.elapsed()
        );
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
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(500).set_body_string("upstream exploded"))
            .expect(4)
            .mount(&server)
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
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(error_reply(429, "slow down", "rate_limit_exceeded"))
            .expect(3)
            .mount(&server)
            .await;
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
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(error_reply(
                429,
                "You exceeded your current quota",
                "insufficient_quota",
            ))
            .expect(1)
            .mount(&server)
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
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(
                ResponseTemplate::new(200).set_body_raw("<html>not json</html>", "text/html"),
            )
            .mount(&server)
            .await;
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
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(sse_reply(&["late"], None).set_delay(Duration::from_secs(5)))
            .mount(&server)
            .await;
        let started = Instant::now();
        let err = client(&server, |o| o.timeout = Duration::from_millis(300))
            .complete(request("openai/gpt-4o"))
            .await;
        assert!(
            matches!(err, Err(LlmError::Timeout { seconds: 1, .. })),
            "{err:?}"
        );
        assert!(started.elapsed() < Duration::from_secs(2));
    }

    #[tokio::test]
    async fn a_stalled_stream_is_retried_then_reported() {
        let first = "data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n";
        let (url, served) =
            crate::providers::http::test_server::stalling("text/event-stream", first).await;
        let opts = ClientOptions {
            base_url: Some(format!("{url}/v1")),
            api_key: Some("k".into()),
            idle_timeout: Duration::from_millis(200),
            max_retries: 2,
            timeout: Duration::from_secs(10),
            ..ClientOptions::default()
        };
        let c = OpenAiClient::new(opts)
            .expect("client")
            .with_retry_policy(fast_retries(2));
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
        assert_eq!(served.load(std::sync::atomic::Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn a_stall_then_a_whole_stream_succeeds() {
        let first = "data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n";
        let whole = format!("{first}{}data: [DONE]\n\n", first.replace("Hel", "lo"));
        let (url, served) = crate::providers::http::test_server::stalling_then(
            "text/event-stream",
            first,
            1,
            &whole,
        )
        .await;
        let opts = ClientOptions {
            base_url: Some(format!("{url}/v1")),
            api_key: Some("k".into()),
            idle_timeout: Duration::from_millis(200),
            timeout: Duration::from_secs(10),
            ..ClientOptions::default()
        };
        let reply = OpenAiClient::new(opts)
            .expect("client")
            .with_retry_policy(fast_retries(3))
            .complete(request("openai/gpt-4o"))
            .await
            .expect("reply after a stall");
        // Only the second attempt's text: the stalled one is dropped.
        assert_eq!(reply.text, "Hello");
        assert_eq!(served.load(std::sync::atomic::Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn a_closed_port_is_a_network_error() {
        // Bind then release a port, so nothing listens on it.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("port")
            .port();
        let opts = ClientOptions {
            base_url: Some(format!("http://127.0.0.1:{port}/v1")),
            api_key: Some("k".into()),
            ..ClientOptions::default()
        };
        let c = OpenAiClient::new(opts)
            .expect("client")
            .with_retry_policy(fast_retries(1));
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
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(sse_reply(&["hi"], Some(usage_json(1, 1, 0))))
            .mount(&server)
            .await;
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
