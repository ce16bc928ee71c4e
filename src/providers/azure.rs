//! Azure OpenAI through `async-openai`'s [`AzureConfig`]: `azure/<deployment>` names a
//! deployment of the resource at `AZURE_OPENAI_ENDPOINT`, called at
//! `{endpoint}/openai/deployments/{deployment}/chat/completions?api-version=...` with the key in
//! the `api-key` header.
//!
//! The wire protocol is OpenAI's, so the retries ([`RetryService`]), the error mapping
//! ([`openai::map_error`]) and the counting are OpenAI's own. One call ([`Wire`]: the request,
//! the stalled-stream retries, the stream reading and the usage) mirrors `openai.rs`, generic
//! over async-openai's [`Config`], so that `openai.rs` can take it over and both clients share
//! one copy.

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_openai::config::{AzureConfig, Config};
use async_openai::error::OpenAIError;
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
use reqwest::header::HeaderValue;

use super::openai;
use super::options::ClientOptions;
use super::retry::{CallState, RetryPolicy, RetryService};
use super::tokens::TiktokenCounter;

pub const PROVIDER: &str = "azure";
pub const API_KEY_ENV: &str = "AZURE_OPENAI_API_KEY";
pub const ENDPOINT_ENV: &str = "AZURE_OPENAI_ENDPOINT";
/// The latest generally available `api-version` of the data-plane inference API.
pub const DEFAULT_API_VERSION: &str = "2024-10-21";
/// The first `api-version` that knows `max_completion_tokens` (which reasoning deployments
/// require) and `stream_options` (usage at the end of a stream); older ones reject both.
const FIRST_MODERN_API_VERSION: &str = "2024-09-01";
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// An [`LlmClient`] for `azure/<deployment>` names.
pub struct AzureClient {
    http: reqwest::Client,
    /// The resource endpoint, or why there is no usable one. Kept rather than failed on, so a
    /// run whose roles never call Azure needs no Azure settings.
    endpoint: Result<String, String>,
    key: Option<String>,
    api_key_env: String,
    api_version: String,
    timeout: Duration,
    idle_timeout: Duration,
    policy: RetryPolicy,
    stream: bool,
}

impl std::fmt::Debug for AzureClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AzureClient")
            .field("endpoint", &self.endpoint)
            .field("has_key", &self.key.is_some())
            .field("api_version", &self.api_version)
            .field("stream", &self.stream)
            .finish_non_exhaustive()
    }
}

fn non_empty(s: Option<String>) -> Option<String> {
    s.map(|s| s.trim().to_string()).filter(|s| !s.is_empty())
}

/// The endpoint as `AzureConfig` wants it: `https://<resource>.openai.azure.com`, without a
/// trailing `/` or `/openai` (both are often pasted from the portal; the path is added per call).
fn endpoint(given: Option<String>, env: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let (url, origin) = match non_empty(given) {
        Some(u) => (u, "the providers.azure.base_url setting"),
        None => match non_empty(env(ENDPOINT_ENV)) {
            Some(u) => (u, ENDPOINT_ENV),
            None => {
                return Err(format!(
                    "no Azure OpenAI endpoint: set {ENDPOINT_ENV} (https://<resource>.openai.azure.com) or providers.azure.base_url"
                ))
            }
        },
    };
    let trimmed = url.trim_end_matches('/');
    let trimmed = trimmed.strip_suffix("/openai").unwrap_or(trimmed);
    let parsed = reqwest::Url::parse(trimmed)
        .map_err(|e| format!("invalid endpoint `{url}` (from {origin}): {e}"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(format!(
            "endpoint `{url}` (from {origin}) must start with https://"
        ));
    }
    Ok(trimmed.to_string())
}

impl AzureClient {
    /// Resolves the endpoint, key and `api-version` from the options, then the environment.
    /// Nothing missing is an error here: a run that never calls Azure must not need it; the
    /// first call (or [`AzureClient::check`]) fails instead, before any request.
    pub fn new(opts: ClientOptions) -> Result<Self, LlmError> {
        Self::with_env(opts, |name| std::env::var(name).ok())
    }

    /// [`AzureClient::new`] with the environment looked up through `env`.
    pub(crate) fn with_env(
        opts: ClientOptions,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, LlmError> {
        let api_key_env = non_empty(Some(opts.api_key_env)).unwrap_or_else(|| API_KEY_ENV.into());
        let key = non_empty(opts.api_key).or_else(|| non_empty(env(&api_key_env)));
        let http = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .user_agent(concat!("ralph-loop/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| LlmError::Config {
                model: format!("{PROVIDER}/*"),
                message: format!("cannot set up HTTP: {e}"),
            })?;
        Ok(Self {
            http,
            endpoint: endpoint(opts.base_url, &env),
            key,
            api_key_env,
            api_version: non_empty(opts.api_version).unwrap_or_else(|| DEFAULT_API_VERSION.into()),
            timeout: opts.timeout,
            idle_timeout: opts.idle_timeout,
            policy: RetryPolicy::default().with_max_retries(opts.max_retries),
            stream: opts.stream,
        })
    }

    /// Replaces the backoff timings (tests use short ones); keeps `max_retries` as given.
    pub fn with_retry_policy(mut self, policy: RetryPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Whether a call could be sent: an endpoint, and a key an HTTP header can carry.
    pub fn check(&self) -> Result<(), LlmError> {
        self.endpoint_and_key().map(|_| ())
    }

    fn endpoint_and_key(&self) -> Result<(&str, &str), LlmError> {
        let endpoint = self.endpoint.as_deref().map_err(|m| LlmError::Config {
            model: format!("{PROVIDER}/*"),
            message: m.clone(),
        })?;
        let key = self.key.as_deref().ok_or_else(|| LlmError::Auth {
            provider: PROVIDER.into(),
            env_var: self.api_key_env.clone(),
            message: format!("no API key for {endpoint}: {} is not set", self.api_key_env),
        })?;
        // `AzureConfig` would panic on a key it cannot put in a header.
        if HeaderValue::from_str(key).is_err() {
            return Err(LlmError::Auth {
                provider: PROVIDER.into(),
                env_var: self.api_key_env.clone(),
                message: "the key contains characters an HTTP header cannot carry".into(),
            });
        }
        Ok((endpoint, key))
    }

    /// The deployment of `azure/<deployment>`. Azure allows letters, digits, `-`, `_` and `.`;
    /// anything else would change the URL's path.
    fn deployment<'a>(&self, model: &'a str) -> Result<&'a str, LlmError> {
        let id = match model.split_once('/') {
            Some((PROVIDER, id)) => id,
            None => model,
            Some(_) => "",
        };
        let valid = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
        if id.is_empty() || !id.chars().all(valid) {
            return Err(LlmError::Config {
                model: model.into(),
                message: format!(
                    "`{PROVIDER}/<deployment>` names a deployment of letters, digits, `-`, `_` and `.`"
                ),
            });
        }
        Ok(id)
    }

    /// Whether the `api-version` is recent enough for `max_completion_tokens` and
    /// `stream_options`. Dated versions compare as text; others (`preview`, `latest`) are new.
    fn modern_api(&self) -> bool {
        match self.api_version.get(..10) {
            Some(date) if date.bytes().take(4).all(|b| b.is_ascii_digit()) => {
                date >= FIRST_MODERN_API_VERSION
            }
            _ => true,
        }
    }

    fn body(&self, deployment: &str, request: &ChatRequest) -> CreateChatCompletionRequest {
        let modern = self.modern_api();
        // The deployment's model is not known from its name, but names usually follow it
        // (`o3-mini`, `gpt-5`): those reasoning models answer 400 to any temperature.
        let temperature = request
            .temperature
            .filter(|_| openai::accepts_temperature(deployment));
        chat_body(ChatBody {
            model: deployment,
            request,
            temperature,
            max_completion_tokens: modern,
            max_tokens: !modern,
            stream: self.stream,
            stream_usage: self.stream && modern,
        })
    }
}

#[async_trait::async_trait]
impl LlmClient for AzureClient {
    async fn complete(&self, request: ChatRequest) -> Result<ChatReply, LlmError> {
        let deployment = self.deployment(&request.model)?;
        let (endpoint, key) = self.endpoint_and_key()?;
        let wire = Wire {
            http: &self.http,
            config: AzureConfig::new()
                .with_api_base(endpoint)
                .with_api_key(key)
                .with_deployment_id(deployment)
                .with_api_version(&self.api_version),
            provider: PROVIDER,
            api_key_env: &self.api_key_env,
            // Azure authenticates with `api-key`; there is no `Authorization` header to strip.
            strip_auth: false,
            policy: self.policy,
            timeout: self.timeout,
            idle_timeout: self.idle_timeout,
            stream: self.stream,
        };
        wire.complete(self.body(deployment, &request), &request, deployment)
            .await
    }
}

impl super::Provider for AzureClient {
    fn describe(&self) -> String {
        format!("{PROVIDER} (Azure OpenAI deployments via {ENDPOINT_ENV} and {API_KEY_ENV})")
    }

    fn check(&self) -> Result<(), LlmError> {
        AzureClient::check(self)
    }
}

/// The error with its provider renamed: `openai::map_error` names every error `openai`.
fn named(err: LlmError, provider: &str) -> LlmError {
    let provider = provider.to_string();
    match err {
        LlmError::Auth {
            env_var, message, ..
        } => LlmError::Auth {
            provider,
            env_var,
            message,
        },
        LlmError::RateLimited {
            attempts,
            retry_after_ms,
            message,
            ..
        } => LlmError::RateLimited {
            provider,
            attempts,
            retry_after_ms,
            message,
        },
        LlmError::Server {
            status,
            attempts,
            message,
            ..
        } => LlmError::Server {
            provider,
            status,
            attempts,
            message,
        },
        LlmError::Request {
            status, message, ..
        } => LlmError::Request {
            provider,
            status,
            message,
        },
        LlmError::ContextTooLong { message, .. } => LlmError::ContextTooLong { provider, message },
        LlmError::Network { message, .. } => LlmError::Network { provider, message },
        LlmError::Timeout { seconds, .. } => LlmError::Timeout { provider, seconds },
        LlmError::Stalled {
            seconds, attempts, ..
        } => LlmError::Stalled {
            provider,
            seconds,
            attempts,
        },
        LlmError::InvalidReply { message, .. } => LlmError::InvalidReply { provider, message },
        other => other,
    }
}

// ---------------------------------------------------------------------------------------------
// The OpenAI chat-completions protocol, generic over async-openai's `Config` (OpenAI or Azure).
// The same as `openai.rs`'s `complete` (after the checks), `body`, `to_openai`, `plain`,
// `streamed`, `Raw`, `CallError` and `usage_of`, which these can replace.

/// One server's way of taking OpenAI-protocol calls, for the length of a call.
struct Wire<'a, C> {
    http: &'a reqwest::Client,
    config: C,
    /// The name errors and logs carry.
    provider: &'static str,
    /// The variable an authentication error tells the user to check.
    api_key_env: &'a str,
    /// No key: send no `Authorization` header (an empty one upsets some proxies).
    strip_auth: bool,
    policy: RetryPolicy,
    timeout: Duration,
    idle_timeout: Duration,
    stream: bool,
}

impl<C: Config + Clone> Wire<'_, C> {
    /// Sends `body` and reads the reply, all within the timeout. Statuses and connections are
    /// retried below, by the [`RetryService`]; a stalled stream is sent again here, as a new
    /// attempt counted against the same `max_retries` (the reply is buffered, so the caller
    /// never sees the stalled part). `served` names the model when the reply does not.
    async fn complete(
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
                    provider,
                    attempt = call.attempts(),
                    wait_ms = wait.as_millis() as u64,
                    "{provider}: the reply stream stalled for {:.0}s; retrying in {:.1}s",
                    self.idle_timeout.as_secs_f64(),
                    wait.as_secs_f64()
                );
            });
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
            Ok(Err(CallError::Stalled)) => {
                return Err(LlmError::Stalled {
                    provider: provider.into(),
                    seconds: self.idle_timeout.as_secs_f64().ceil() as u64,
                    attempts: call.attempts().max(1),
                })
            }
            Ok(Err(CallError::OpenAi(e))) => {
                let err = openai::map_error(
                    e,
                    call.attempts().max(1),
                    call.last_status(),
                    self.api_key_env,
                    &request.model,
                );
                return Err(named(err, provider));
            }
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
                let counter = TiktokenCounter::new();
                let estimate = Usage {
                    input_tokens: counter.count(&request.model, &request.messages),
                    output_tokens: counter.count_text(&request.model, &raw.text),
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
            "{provider} call done"
        );
        let model = if raw.model.is_empty() {
            served.to_string()
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

/// What differs between servers in a request body.
struct ChatBody<'a> {
    model: &'a str,
    request: &'a ChatRequest,
    temperature: Option<f32>,
    /// Send the cap as `max_completion_tokens` (what reasoning models require).
    max_completion_tokens: bool,
    /// Send the cap as `max_tokens` too (servers that know only the older name).
    max_tokens: bool,
    stream: bool,
    /// Ask for the usage at the end of the stream (`stream_options.include_usage`).
    stream_usage: bool,
}

/// The request: the output cap is always sent, under the name(s) the server knows, since the
/// budget reserved for exactly that many output tokens.
fn chat_body(b: ChatBody<'_>) -> CreateChatCompletionRequest {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::testkit::*;
    use crate::providers::Provider;
    use serde_json::json;
    use wiremock::matchers::{header, method, path, query_param};
    use wiremock::{Mock, MockServer, ResponseTemplate};

    const CHAT: &str = "/openai/deployments/prod-chat/chat/completions";
    const KEY: &str = "azure-test-key";

    /// A client for `server` as the resource endpoint, key [`KEY`], with an empty environment.
    fn azure(server: &MockServer, tweak: impl FnOnce(&mut ClientOptions)) -> AzureClient {
        let mut opts = ClientOptions {
            base_url: Some(server.uri()),
            api_key: Some(KEY.into()),
            api_key_env: API_KEY_ENV.into(),
            timeout: Duration::from_secs(10),
            api_version: Some(DEFAULT_API_VERSION.into()),
            ..ClientOptions::default()
        };
        tweak(&mut opts);
        let retries = opts.max_retries;
        AzureClient::with_env(opts, |_| None)
            .expect("client")
            .with_retry_policy(fast_retries(retries))
    }

    /// Matches a chat call to deployment `prod-chat` as Azure expects it.
    fn chat_call(version: &str) -> wiremock::MockBuilder {
        Mock::given(method("POST"))
            .and(path(CHAT))
            .and(query_param("api-version", version))
            .and(header("api-key", KEY))
    }

    fn azure_error(status: u16, code: &str, message: &str) -> ResponseTemplate {
        ResponseTemplate::new(status)
            .set_body_json(json!({ "error": { "code": code, "message": message } }))
    }

    #[tokio::test]
    async fn streams_text_and_usage() {
        let server = MockServer::start().await;
        chat_call(DEFAULT_API_VERSION)
            .respond_with(sse_reply(&["Hel", "lo"], Some(usage_json(120, 7, 100))))
            .expect(1)
            .mount(&server)
            .await;
        let reply = azure(&server, |_| {})
            .complete(request("azure/prod-chat"))
            .await
            .expect("reply");
        assert_eq!(reply.text, "Hello");
        assert_eq!(reply.model, SERVED_MODEL);
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
        assert_eq!(sent["max_completion_tokens"], 321);
        assert!(sent.get("max_tokens").is_none());
        assert_eq!(sent["stream"], true);
        assert_eq!(sent["stream_options"]["include_usage"], true);
        assert_eq!(sent["messages"][0]["role"], "system");
        assert_eq!(sent["messages"][1]["content"], "fix it");
        assert!((sent["temperature"].as_f64().expect("temperature") - 0.2).abs() < 1e-6);
        let received = server.received_requests().await.expect("recorded");
        assert!(received[0].headers.get("authorization").is_none());
    }

    #[tokio::test]
    async fn reads_a_whole_reply() {
        let server = MockServer::start().await;
        chat_call(DEFAULT_API_VERSION)
            .respond_with(json_reply("All done.", Some(usage_json(50, 3, 0))))
            .expect(1)
            .mount(&server)
            .await;
        let reply = azure(&server, |o| o.stream = false)
            .complete(request("azure/prod-chat"))
            .await
            .expect("reply");
        assert_eq!(reply.text, "All done.");
        assert_eq!(
            (reply.usage.input_tokens, reply.usage.output_tokens),
            (50, 3)
        );
        let sent = last_body(&server).await;
        assert!(sent.get("stream").is_none_or(|s| s == false));
        assert!(sent.get("stream_options").is_none());
    }

    #[tokio::test]
    async fn an_older_api_version_gets_the_older_parameters() {
        let server = MockServer::start().await;
        chat_call("2024-06-01")
            .respond_with(sse_reply(&["ok"], None))
            .expect(1)
            .mount(&server)
            .await;
        let reply = azure(&server, |o| o.api_version = Some("2024-06-01".into()))
            .complete(request("azure/prod-chat"))
            .await
            .expect("reply");
        // No usage in the stream before 2024-09-01: estimated.
        assert!(reply.usage.input_tokens > 5, "{:?}", reply.usage);
        let sent = last_body(&server).await;
        assert_eq!(sent["max_tokens"], 321);
        assert!(sent.get("max_completion_tokens").is_none());
        assert!(sent.get("stream_options").is_none());
    }

    #[tokio::test]
    async fn unauthorized_names_the_key_variable() {
        let server = MockServer::start().await;
        chat_call(DEFAULT_API_VERSION)
            .respond_with(azure_error(
                401,
                "401",
                "Access denied due to invalid subscription key or wrong API endpoint.",
            ))
            .expect(1)
            .mount(&server)
            .await;
        let err = azure(&server, |_| {})
            .complete(request("azure/prod-chat"))
            .await
            .expect_err("401");
        match &err {
            LlmError::Auth {
                provider,
                env_var,
                message,
            } => {
                assert_eq!(
                    (provider.as_str(), env_var.as_str()),
                    (PROVIDER, API_KEY_ENV)
                );
                assert!(message.contains("Access denied"), "{message}");
            }
            other => panic!("expected Auth, got {other:?}"),
        }
        assert!(err.to_string().starts_with("azure: authentication failed"));
    }

    #[tokio::test]
    async fn waits_out_a_429_then_succeeds() {
        let server = MockServer::start().await;
        chat_call(DEFAULT_API_VERSION)
            .respond_with(
                azure_error(429, "429", "Requests to the ChatCompletions_Create Operation have exceeded token rate limit.")
                    .insert_header("retry-after", "1")
                    .insert_header("retry-after-ms", "300"),
            )
            .up_to_n_times(1)
            .expect(1)
            .mount(&server)
            .await;
        chat_call(DEFAULT_API_VERSION)
            .respond_with(sse_reply(&["ok"], Some(usage_json(10, 1, 0))))
            .expect(1)
            .mount(&server)
            .await;
        let started = Instant::now();
        let reply = azure(&server, |_| {})
            .complete(request("azure/prod-chat"))
            .await
            .expect("reply after a retry");
        assert_eq!(reply.text, "ok");
        let waited = started.elapsed();
        assert!(
            waited >= Duration::from_millis(280) && waited < Duration::from_millis(950),
            "{waited:?}"
        );
    }

    #[tokio::test]
    async fn a_stalled_stream_is_sent_again() {
        use crate::providers::http::test_server::{stalling, stalling_then};
        use std::sync::atomic::Ordering;
        let first = "data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n";
        let whole = format!("{first}{}data: [DONE]\n\n", first.replace("Hel", "lo"));
        let client = |url: String, retries: u32| {
            let opts = ClientOptions {
                base_url: Some(url),
                api_key: Some(KEY.into()),
                api_key_env: API_KEY_ENV.into(),
                idle_timeout: Duration::from_millis(200),
                timeout: Duration::from_secs(10),
                max_retries: retries,
                ..ClientOptions::default()
            };
            AzureClient::with_env(opts, |_| None)
                .expect("client")
                .with_retry_policy(fast_retries(retries))
        };
        let (url, served) = stalling_then("text/event-stream", first, 1, &whole).await;
        let reply = client(url, 3)
            .complete(request("azure/prod-chat"))
            .await
            .expect("reply after a stall");
        assert_eq!(reply.text, "Hello");
        assert_eq!(served.load(Ordering::SeqCst), 2);

        let (url, served) = stalling("text/event-stream", first).await;
        let err = client(url, 1)
            .complete(request("azure/prod-chat"))
            .await
            .expect_err("stalled");
        assert!(
            matches!(&err, LlmError::Stalled { provider, attempts: 2, .. } if provider == PROVIDER),
            "{err:?}"
        );
        assert_eq!(served.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn errors_name_azure() {
        let server = MockServer::start().await;
        chat_call(DEFAULT_API_VERSION)
            .respond_with(ResponseTemplate::new(500).set_body_string("upstream exploded"))
            .expect(2)
            .mount(&server)
            .await;
        let err = azure(&server, |o| o.max_retries = 1)
            .complete(request("azure/prod-chat"))
            .await
            .expect_err("500s");
        assert!(
            matches!(&err, LlmError::Server { provider, status: 500, attempts: 2, .. } if provider == PROVIDER),
            "{err:?}"
        );
        let missing = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(azure_error(
                404,
                "DeploymentNotFound",
                "The API deployment for this resource does not exist.",
            ))
            .mount(&missing)
            .await;
        let err = azure(&missing, |_| {})
            .complete(request("azure/prod-chat"))
            .await
            .expect_err("404");
        assert!(
            matches!(&err, LlmError::Request { provider, status: 404, message } if provider == PROVIDER && message.contains("deployment")),
            "{err:?}"
        );
    }

    #[tokio::test]
    async fn the_endpoint_may_end_in_openai() {
        let server = MockServer::start().await;
        chat_call(DEFAULT_API_VERSION)
            .respond_with(sse_reply(&["ok"], Some(usage_json(1, 1, 0))))
            .expect(1)
            .mount(&server)
            .await;
        let c = azure(&server, |o| {
            o.base_url = Some(format!("{}/openai/", server.uri()))
        });
        c.complete(request("azure/prod-chat")).await.expect("reply");
    }

    #[tokio::test]
    async fn needs_an_endpoint_and_a_key_before_any_request() {
        let opts = |endpoint: Option<&str>, key: Option<&str>| ClientOptions {
            base_url: endpoint.map(String::from),
            api_key: key.map(String::from),
            api_key_env: API_KEY_ENV.into(),
            ..ClientOptions::default()
        };
        let none = |_: &str| None;
        let c = AzureClient::with_env(opts(None, Some("k")), none).expect("client");
        let err = c
            .complete(request("azure/prod-chat"))
            .await
            .expect_err("endpoint");
        assert!(
            matches!(&err, LlmError::Config { message, .. } if message.contains(ENDPOINT_ENV)),
            "{err:?}"
        );
        assert_eq!(c.check(), Err(err));

        let c = AzureClient::with_env(opts(Some("https://r.openai.azure.com"), None), none)
            .expect("client");
        let err = c.check().expect_err("key");
        assert!(
            matches!(&err, LlmError::Auth { env_var, .. } if env_var == API_KEY_ENV),
            "{err:?}"
        );

        // Both from the environment.
        let env = |name: &str| match name {
            ENDPOINT_ENV => Some("https://r.openai.azure.com/".to_string()),
            API_KEY_ENV => Some("k".to_string()),
            _ => None,
        };
        let c = AzureClient::with_env(opts(None, None), env).expect("client");
        assert!(c.check().is_ok());
        assert_eq!(c.endpoint.as_deref(), Ok("https://r.openai.azure.com"));

        // A key a header cannot carry is refused, not a panic in async-openai.
        let c = AzureClient::with_env(opts(Some("https://r.openai.azure.com"), Some("a\nb")), none)
            .expect("client");
        assert!(matches!(c.check(), Err(LlmError::Auth { .. })));

        let c = AzureClient::with_env(opts(Some("r.openai.azure.com"), Some("k")), none)
            .expect("client");
        assert!(matches!(c.check(), Err(LlmError::Config { .. })));
        assert!(c.describe().contains(ENDPOINT_ENV));
    }

    #[tokio::test]
    async fn refuses_bad_deployment_names_and_other_providers() {
        let server = MockServer::start().await;
        let c = azure(&server, |_| {});
        for model in ["azure/a/b", "azure/x?y=1", "azure/", "openai/gpt-4o"] {
            let err = c.complete(request(model)).await.expect_err(model);
            assert!(matches!(err, LlmError::Config { .. }), "{model}: {err:?}");
        }
        assert!(server
            .received_requests()
            .await
            .expect("recorded")
            .is_empty());
    }

    #[test]
    fn reasoning_deployments_get_no_temperature() {
        let opts = ClientOptions {
            base_url: Some("https://r.openai.azure.com".into()),
            api_key: Some("k".into()),
            ..ClientOptions::default()
        };
        let c = AzureClient::with_env(opts, |_| None).expect("client");
        let body =
            serde_json::to_value(c.body("o3-mini", &request("azure/o3-mini"))).expect("json");
        assert!(body.get("temperature").is_none());
        let body = serde_json::to_value(c.body("gpt-4o", &request("azure/gpt-4o"))).expect("json");
        assert!(body.get("temperature").is_some());
    }

    #[test]
    fn api_versions_compare_by_date() {
        let client = |v: &str| {
            let opts = ClientOptions {
                api_version: Some(v.into()),
                ..ClientOptions::default()
            };
            AzureClient::with_env(opts, |_| None).expect("client")
        };
        for (v, modern) in [
            ("2024-10-21", true),
            ("2024-09-01-preview", true),
            ("2025-04-01-preview", true),
            ("2024-08-01-preview", false),
            ("2024-02-01", false),
            ("preview", true),
        ] {
            assert_eq!(client(v).modern_api(), modern, "{v}");
        }
    }
}
