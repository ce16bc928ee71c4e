//! Anthropic's Messages API over `reqwest`: `POST {base}/v1/messages`, streamed as server-sent
//! events or whole.
//!
//! Anthropic counts cached prompt tokens apart from the others (`input_tokens` excludes them);
//! [`Usage`] counts every prompt token in `input_tokens` and the cached ones again in
//! `cache_read_tokens` / `cache_write_tokens`, so the three are added up here.

use std::time::Instant;

use futures::StreamExt;
use ralph_actors::ports::llm::{
    ChatReply, ChatRequest, GuardedRequest, LlmClient, LlmError, Speaker,
};
use ralph_actors::schema::usage::Usage;
use reqwest::header::{HeaderName, HeaderValue};
use reqwest::{Response, Url};
use serde::{Deserialize, Serialize};

use super::http::{self, Endpoint, Failure, Outcome, Problem, Site};
use super::options::ClientOptions;
use crate::http::retry::RetryPolicy;

pub const PROVIDER: &str = "anthropic";
pub const DEFAULT_API_KEY_ENV: &str = "ANTHROPIC_API_KEY";
pub const BASE_URL_ENV: &str = "ANTHROPIC_BASE_URL";
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// The API version this client speaks; Anthropic keeps old versions working.
pub const API_VERSION: &str = "2023-06-01";
/// api.anthropic.com needs a key; a proxy in front of it may not.
const SITE: Site = Site {
    provider: PROVIDER,
    base_url_env: BASE_URL_ENV,
    default_base_url: DEFAULT_BASE_URL,
    official_host: Some("api.anthropic.com"),
    key_header: HeaderName::from_static("x-api-key"),
    key_prefix: "",
    parse_error,
};
/// Anthropic accepts temperatures from 0 to 1 (OpenAI's go to 2).
const MAX_TEMPERATURE: f64 = 1.0;

/// An [`LlmClient`] for `anthropic/<model>` names.
pub struct AnthropicClient {
    endpoint: Endpoint,
    url: Url,
}

impl std::fmt::Debug for AnthropicClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.endpoint.fmt_debug(f, "AnthropicClient")
    }
}

impl AnthropicClient {
    /// Resolves the endpoint and key. A missing key is not an error here: a run whose roles
    /// never call Anthropic must not need one; the first call fails instead, before any request.
    pub fn new(opts: ClientOptions) -> Result<Self, LlmError> {
        let api_key_env = http::key_env_or(&opts.api_key_env, DEFAULT_API_KEY_ENV);
        let mut endpoint = Endpoint::new(&SITE, &opts, opts.base_url.clone(), api_key_env)?;
        // The SDKs take the base without `/v1`; one written with it works too.
        let path = if endpoint.base_url.ends_with("/v1") {
            "/messages"
        } else {
            "/v1/messages"
        };
        let url = http::join(PROVIDER, &endpoint.base_url, path)?;
        endpoint.headers.insert(
            HeaderName::from_static("anthropic-version"),
            HeaderValue::from_static(API_VERSION),
        );
        Ok(Self { endpoint, url })
    }

    /// Replaces the backoff timings (tests use short ones); keeps `max_retries` as given.
    pub fn with_retry_policy(mut self, policy: RetryPolicy) -> Self {
        self.endpoint.transport.policy = policy;
        self
    }

    pub fn base_url(&self) -> &str {
        &self.endpoint.base_url
    }

    /// Fails with the error a call would give when api.anthropic.com has no key.
    pub fn check(&self) -> Result<(), LlmError> {
        self.endpoint.check()
    }

    fn body<'a>(&self, model: &'a str, request: &ChatRequest) -> Body<'a> {
        let (system, turns) = http::split_system(&request.messages);
        let temperature = request.temperature.map(|t| {
            let t = http::temperature(t);
            if t > MAX_TEMPERATURE {
                tracing::debug!("{PROVIDER}: temperature {t} is above 1; sending 1");
            }
            t.clamp(0.0, MAX_TEMPERATURE)
        });
        // The first user message's stable prefix (see `ChatMessage::cache_prefix`): the merged
        // first turn starts with it.
        let cache_prefix = request
            .messages
            .iter()
            .find(|m| m.speaker != Speaker::System)
            .filter(|m| m.speaker == Speaker::User)
            .map_or(0, |m| m.cache_prefix);
        Body {
            model,
            system,
            messages: turns
                .into_iter()
                .enumerate()
                .map(|(i, (speaker, content))| Message {
                    role: if speaker == Speaker::Assistant {
                        "assistant"
                    } else {
                        "user"
                    },
                    content: match i {
                        0 => Content::cached(content, cache_prefix),
                        _ => Content::Text(content),
                    },
                })
                .collect(),
            max_tokens: request.max_tokens,
            temperature,
            stream: self.endpoint.stream,
        }
    }
}

impl super::Provider for AnthropicClient {
    fn describe(&self) -> String {
        self.endpoint.describe("Claude")
    }

    fn check(&self) -> Result<(), LlmError> {
        AnthropicClient::check(self)
    }
}

#[derive(Debug, Serialize)]
struct Body<'a> {
    model: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<String>,
    messages: Vec<Message>,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    stream: bool,
}

#[derive(Debug, Serialize)]
struct Message {
    role: &'static str,
    content: Content,
}

/// A message's content: plain text, or text blocks of which the first ends a cache
/// breakpoint (`cache_control`): Anthropic then caches the prompt up to there (system prompt
/// included) and serves it from the cache on the next call with the same prefix. A prefix
/// shorter than the model's minimum (1,024 tokens for most models) is simply not cached.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum Content {
    Text(String),
    Blocks(Vec<TextBlock>),
}

#[derive(Debug, Serialize)]
struct TextBlock {
    #[serde(rename = "type")]
    kind: &'static str,
    text: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<CacheControl>,
}

#[derive(Debug, Serialize)]
struct CacheControl {
    #[serde(rename = "type")]
    kind: &'static str,
}

impl Content {
    /// `text` with a cache breakpoint after its first `prefix` bytes, when that splits it.
    fn cached(text: String, prefix: usize) -> Self {
        if prefix == 0 || prefix >= text.len() || !text.is_char_boundary(prefix) {
            return Content::Text(text);
        }
        let (stable, rest) = text.split_at(prefix);
        let block = |text: &str, cache: bool| TextBlock {
            kind: "text",
            text: text.to_string(),
            cache_control: cache.then_some(CacheControl { kind: "ephemeral" }),
        };
        Content::Blocks(vec![block(stable, true), block(rest, false)])
    }
}

/// Anthropic's usage block; later blocks of a stream repeat or update earlier fields.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
struct WireUsage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
}

impl WireUsage {
    /// Fields the later block gives replace this one's (`message_delta` counts are cumulative).
    fn update(&mut self, later: WireUsage) {
        self.input_tokens = later.input_tokens.or(self.input_tokens);
        self.output_tokens = later.output_tokens.or(self.output_tokens);
        self.cache_creation_input_tokens = later
            .cache_creation_input_tokens
            .or(self.cache_creation_input_tokens);
        self.cache_read_input_tokens = later
            .cache_read_input_tokens
            .or(self.cache_read_input_tokens);
    }

    fn to_usage(self) -> Usage {
        let written = self.cache_creation_input_tokens.unwrap_or(0);
        let read = self.cache_read_input_tokens.unwrap_or(0);
        Usage {
            input_tokens: self
                .input_tokens
                .unwrap_or(0)
                .saturating_add(written)
                .saturating_add(read),
            output_tokens: self.output_tokens.unwrap_or(0),
            cache_read_tokens: read,
            cache_write_tokens: written,
        }
    }
}

#[derive(Debug, Deserialize)]
struct Block {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    text: String,
}

/// A whole reply; `content` is required so that any other JSON is an invalid reply.
#[derive(Debug, Deserialize)]
struct Reply {
    #[serde(default)]
    model: String,
    content: Vec<Block>,
    stop_reason: Option<String>,
    usage: Option<WireUsage>,
}

#[derive(Debug, Default, Deserialize)]
struct ApiError {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    message: String,
}

#[derive(Debug, Deserialize)]
struct StartMessage {
    #[serde(default)]
    model: String,
    usage: Option<WireUsage>,
}

#[derive(Debug, Deserialize)]
struct Delta {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    text: String,
}

#[derive(Debug, Default, Deserialize)]
struct MessageDelta {
    stop_reason: Option<String>,
}

/// The events of a streamed reply. Others (`content_block_start`, `content_block_stop`,
/// `ping`, ones added later) carry nothing we keep.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum StreamEvent {
    MessageStart {
        message: StartMessage,
    },
    ContentBlockDelta {
        delta: Delta,
    },
    MessageDelta {
        #[serde(default)]
        delta: MessageDelta,
        usage: Option<WireUsage>,
    },
    MessageStop,
    Error {
        #[serde(default)]
        error: ApiError,
    },
    #[serde(other)]
    Other,
}

/// What came back, before usage is settled.
#[derive(Debug, Default)]
pub(crate) struct Raw {
    text: String,
    model: String,
    usage: Option<WireUsage>,
    stop_reason: Option<String>,
}

/// The HTTP status an error type stands for, for errors that come inside a stream.
fn status_of(kind: &str) -> u16 {
    match kind {
        "invalid_request_error" => 400,
        "authentication_error" => 401,
        "billing_error" => 402,
        "permission_error" => 403,
        "not_found_error" => 404,
        "request_too_large" => 413,
        "rate_limit_error" => 429,
        "timeout_error" => 504,
        "overloaded_error" => 529,
        _ => 500,
    }
}

/// `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`
pub(crate) fn parse_error(body: &[u8]) -> Option<Problem> {
    #[derive(Deserialize)]
    struct Wrapped {
        error: ApiError,
    }
    let e = serde_json::from_slice::<Wrapped>(body).ok()?.error;
    let message = match (e.kind.is_empty(), e.message.is_empty()) {
        (_, true) => e.kind.clone(),
        (true, false) => http::shorten(&e.message),
        (false, false) => format!("{} ({})", http::shorten(&e.message), e.kind),
    };
    Some(Problem {
        message,
        auth: e.kind == "authentication_error",
        too_long: e.kind == "request_too_large",
        retry_delay: None,
    })
}

pub(crate) async fn read_whole(response: Response) -> Result<Raw, Failure> {
    let reply: Reply = http::read_json(response).await?;
    Ok(Raw {
        text: reply
            .content
            .iter()
            .filter(|b| b.kind == "text")
            .map(|b| b.text.as_str())
            .collect(),
        model: reply.model,
        usage: reply.usage,
        stop_reason: reply.stop_reason,
    })
}

pub(crate) async fn read_stream(
    response: Response,
    idle: std::time::Duration,
) -> Result<Raw, Failure> {
    let mut events = http::sse(response, idle);
    let mut raw = Raw::default();
    let (mut any, mut stopped) = (false, false);
    while let Some(event) = events.next().await {
        let event = event?;
        if event.data.trim().is_empty() {
            continue;
        }
        any = true;
        match http::parse_chunk::<StreamEvent>(&event.data)? {
            StreamEvent::MessageStart { message } => {
                raw.model = message.model;
                raw.usage = message.usage;
            }
            StreamEvent::ContentBlockDelta { delta } if delta.kind == "text_delta" => {
                ralph_actors::ports::stream::delta(&delta.text);
                raw.text.push_str(&delta.text);
            }
            StreamEvent::MessageDelta { delta, usage } => {
                if let Some(later) = usage {
                    raw.usage
                        .get_or_insert_with(WireUsage::default)
                        .update(later);
                }
                if delta.stop_reason.is_some() {
                    raw.stop_reason = delta.stop_reason;
                }
            }
            StreamEvent::MessageStop => {
                stopped = true;
                break;
            }
            StreamEvent::Error { error } => {
                let message = if error.message.is_empty() {
                    error.kind.clone()
                } else {
                    format!("{} ({})", error.message, error.kind)
                };
                return Err(Failure::in_stream(
                    status_of(&error.kind),
                    message,
                    &raw.text,
                ));
            }
            StreamEvent::ContentBlockDelta { .. } | StreamEvent::Other => {}
        }
    }
    if !any {
        return Err(Failure::Invalid(
            "the reply has no server-sent events (is this the Anthropic Messages API?)".into(),
        ));
    }
    if !stopped {
        return Err(Failure::Network(
            "the stream ended before message_stop: the reply is incomplete".into(),
        ));
    }
    Ok(raw)
}

#[async_trait::async_trait]
impl LlmClient for AnthropicClient {
    async fn complete(&self, request: GuardedRequest) -> Result<ChatReply, LlmError> {
        let model = http::model_id(PROVIDER, &request.model)?;
        self.check()?;
        let started = Instant::now();
        let body = self.body(model, &request);
        let (raw, attempts) = self
            .endpoint
            .send(self.url.clone(), &body, read_whole, read_stream)
            .await?;
        if raw.stop_reason.as_deref() == Some("refusal") {
            tracing::warn!("{}: the model refused to answer", request.model);
        }
        let outcome = Outcome {
            cut_short: raw.stop_reason.as_deref() == Some("max_tokens"),
            usage: raw.usage.map(WireUsage::to_usage),
            text: raw.text,
            model: raw.model,
            ..Outcome::default()
        };
        Ok(http::finish(
            PROVIDER, &request, model, outcome, attempts, started,
        ))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::providers::conformance::{kind_of, Wire};

    use crate::testkit::wire::{
        failure, last_body, mounted, options_at, reply_to, request, sealed, serving,
        with_fast_retries,
    };
    use serde_json::{json, Value};

    use wiremock::matchers::{header, method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};

    const MODEL: &str = "anthropic/claude-sonnet-4-5";
    const SERVED: &str = "claude-sonnet-4-5-20250929";

    fn client_at(base: &str, tweak: impl FnOnce(&mut ClientOptions)) -> AnthropicClient {
        let opts = options_at(base, DEFAULT_API_KEY_ENV, tweak);
        with_fast_retries(
            opts,
            AnthropicClient::new,
            AnthropicClient::with_retry_policy,
        )
    }

    /// Anthropic's answers, for the providers' conformance table.
    pub(crate) fn wire() -> Wire {
        Wire {
            name: "anthropic",
            model: MODEL,
            client: |base, tweak| Box::new(client_at(base, tweak)),
            stream: sse_reply,
            first: || (sse_body(&stream_events(&[])[..1]), "text/event-stream"),
            error: |status, message| {
                error_reply(
                    status,
                    kind_of(status, "rate_limit_error", "api_error"),
                    message,
                )
            },
        }
    }

    fn client(server: &MockServer, tweak: impl FnOnce(&mut ClientOptions)) -> AnthropicClient {
        client_at(&server.uri(), tweak)
    }

    /// A server that answers every POST to the Messages API with `reply`.
    async fn messages_server(reply: ResponseTemplate) -> MockServer {
        mounted(
            Mock::given(method("POST")).and(path("/v1/messages")),
            reply,
            ..,
        )
        .await
    }

    fn usage(input: u64, output: u64, written: u64, read: u64) -> Value {
        json!({
            "input_tokens": input, "output_tokens": output,
            "cache_creation_input_tokens": written, "cache_read_input_tokens": read
        })
    }

    fn sse_body(events: &[Value]) -> String {
        events
            .iter()
            .map(|e| {
                format!(
                    "event: {}\ndata: {e}\n\n",
                    e["type"].as_str().unwrap_or("x")
                )
            })
            .collect()
    }

    fn stream_events(deltas: &[&str]) -> Vec<Value> {
        let mut events = vec![
            json!({"type": "message_start", "message": {
                "id": "msg_1", "type": "message", "role": "assistant", "model": SERVED,
                "content": [], "stop_reason": null, "usage": usage(100, 1, 40, 2000)
            }}),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            json!({"type": "ping"}),
        ];
        events.extend(deltas.iter().map(|d| {
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": d}})
        }));
        events.push(json!({"type": "content_block_stop", "index": 0}));
        events.push(json!({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null}, "usage": {"output_tokens": 15}}));
        events.push(json!({"type": "message_stop"}));
        events
    }

    fn sse_reply(deltas: &[&str]) -> ResponseTemplate {
        events_reply(&stream_events(deltas))
    }

    /// A stream of these events.
    fn events_reply(events: &[Value]) -> ResponseTemplate {
        ResponseTemplate::new(200).set_body_raw(sse_body(events), "text/event-stream")
    }

    /// A stream cut after its first text, `half`: its events up to that delta.
    fn cut_after_half() -> Vec<Value> {
        let mut events = stream_events(&["half"]);
        events.truncate(4);
        events
    }

    fn error_reply(status: u16, kind: &str, message: &str) -> ResponseTemplate {
        ResponseTemplate::new(status)
            .set_body_json(json!({"type": "error", "error": {"type": kind, "message": message}}))
    }

    const EXPECTED: Usage = Usage {
        input_tokens: 2140,
        output_tokens: 15,
        cache_read_tokens: 2000,
        cache_write_tokens: 40,
    };

    #[tokio::test]
    async fn streams_text_and_usage_with_cache_tokens() {
        let server = mounted(
            Mock::given(method("POST"))
                .and(path("/v1/messages"))
                .and(header("x-api-key", "test-key"))
                .and(header("anthropic-version", API_VERSION))
                .and(header("content-type", "application/json")),
            sse_reply(&["Hel", "lo"]),
            1,
        )
        .await;
        let mut req = request(MODEL).into_inner();
        req.messages.insert(
            1,
            ralph_actors::ports::llm::ChatMessage::system("Be brief."),
        );
        let reply = client(&server, |_| {})
            .complete(sealed(req))
            .await
            .expect("reply");
        assert_eq!(reply.text, "Hello");
        assert_eq!(reply.model, SERVED);
        assert_eq!(reply.usage, EXPECTED);

        let sent = last_body(&server).await;
        assert_eq!(sent["model"], "claude-sonnet-4-5");
        assert_eq!(sent["system"], "You fix code.\n\nBe brief.");
        assert_eq!(
            sent["messages"],
            json!([{"role": "user", "content": "fix it"}])
        );
        assert_eq!(sent["max_tokens"], 321);
        assert_eq!(sent["temperature"], 0.2);
        assert_eq!(sent["stream"], true);
    }

    #[tokio::test]
    async fn asks_to_cache_the_stable_prefix_of_the_first_user_message() {
        let server = messages_server(sse_reply(&["ok"])).await;
        let mut req = request(MODEL).into_inner();
        let stable = "# Tests\nassert median([1]) == 1";
        let mut user = ralph_actors::ports::llm::ChatMessage::user(format!("{stable}\n\nfix it"));
        user.cache_prefix = stable.len();
        req.messages = vec![
            ralph_actors::ports::llm::ChatMessage::system("You fix code."),
            user,
        ];
        client(&server, |_| {})
            .complete(sealed(req))
            .await
            .expect("reply");
        let sent = last_body(&server).await;
        assert_eq!(
            sent["messages"],
            json!([{"role": "user", "content": [
                {"type": "text", "text": stable, "cache_control": {"type": "ephemeral"}},
                {"type": "text", "text": "\n\nfix it"},
            ]}])
        );
    }

    #[tokio::test]
    async fn reads_a_whole_reply() {
        let server = messages_server(ResponseTemplate::new(200).set_body_json(json!({
                "id": "msg_1", "type": "message", "role": "assistant", "model": SERVED,
                "content": [{"type": "thinking", "thinking": "hmm"}, {"type": "text", "text": "All "}, {"type": "text", "text": "done."}],
                "stop_reason": "end_turn", "usage": usage(100, 15, 40, 2000)
        })))
        .await;
        let reply = reply_to(&client(&server, |o| o.stream = false), MODEL).await;
        assert_eq!(reply.text, "All done.");
        assert_eq!(reply.usage, EXPECTED);
        assert_eq!(last_body(&server).await["stream"], false);
    }

    #[tokio::test]
    async fn a_base_url_with_v1_and_a_hot_temperature() {
        let server = messages_server(sse_reply(&["ok"])).await;
        let mut req = request(MODEL).into_inner();
        req.temperature = Some(1.5);
        client_at(&format!("{}/v1/", server.uri()), |_| {})
            .complete(sealed(req))
            .await
            .expect("reply");
        assert_eq!(last_body(&server).await["temperature"], 1.0);
    }

    #[tokio::test]
    async fn unauthorized_names_the_key_variable() {
        let server = serving(
            error_reply(401, "authentication_error", "invalid x-api-key"),
            1,
        )
        .await;
        let err = failure(
            &client(&server, |o| o.api_key_env = "ANTHROPIC_KEY".into()),
            MODEL,
        )
        .await;
        let text = err.to_string();
        assert!(matches!(err, LlmError::Auth { .. }), "{err:?}");
        assert!(
            text.contains("ANTHROPIC_KEY") && text.contains("invalid x-api-key"),
            "{text}"
        );
    }

    #[tokio::test]
    async fn the_official_api_needs_a_key_before_any_request() {
        let c = AnthropicClient::new(ClientOptions {
            base_url: Some(DEFAULT_BASE_URL.into()),
            api_key: None,
            api_key_env: "RALPH_TEST_SURELY_UNSET_KEY".into(),
            ..ClientOptions::default()
        })
        .expect("client");
        let err = failure(&c, MODEL).await;
        assert!(
            matches!(&err, LlmError::Auth { env_var, .. } if env_var == "RALPH_TEST_SURELY_UNSET_KEY"),
            "{err:?}"
        );
        assert_eq!(super::super::Provider::check(&c), Err(err));
    }

    #[tokio::test]
    async fn rate_limited_after_the_retries_keeps_the_delay() {
        let server = serving(
            error_reply(429, "rate_limit_error", "slow down").insert_header("retry-after-ms", "20"),
            2,
        )
        .await;
        let err = failure(&client(&server, |o| o.max_retries = 1), MODEL).await;
        assert!(
            matches!(
                err,
                LlmError::RateLimited {
                    attempts: 2,
                    retry_after_ms: Some(20),
                    ..
                }
            ),
            "{err:?}"
        );
    }

    #[tokio::test]
    async fn overloaded_529_is_retried() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(error_reply(529, "overloaded_error", "Overloaded"))
            .up_to_n_times(1)
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .respond_with(sse_reply(&["ok"]))
            .mount(&server)
            .await;
        let reply = reply_to(&client(&server, |_| {}), MODEL).await;
        assert_eq!(reply.text, "ok");
    }

    #[tokio::test]
    async fn an_error_event_before_any_text_is_retried() {
        let server = MockServer::start().await;
        let overloaded = [
            stream_events(&[])[0].clone(),
            json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        ];
        Mock::given(method("POST"))
            .respond_with(events_reply(&overloaded))
            .up_to_n_times(1)
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .respond_with(sse_reply(&["ok"]))
            .up_to_n_times(1)
            .mount(&server)
            .await;
        let c = client(&server, |o| o.max_retries = 1);
        assert_eq!(reply_to(&c, MODEL).await.text, "ok");
        // Every attempt overloaded: a server error, after both.
        Mock::given(method("POST"))
            .respond_with(events_reply(&overloaded))
            .mount(&server)
            .await;
        let err = failure(&c, MODEL).await;
        assert!(
            matches!(&err, LlmError::Server { status: 529, attempts: 2, message, .. } if message.contains("Overloaded")),
            "{err:?}"
        );
    }

    #[tokio::test]
    async fn an_error_event_after_text_is_not_retried() {
        let mut events = cut_after_half();
        events.push(json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}));
        let server = serving(events_reply(&events), 1).await;
        let err = failure(&client(&server, |_| {}), MODEL).await;
        assert!(
            matches!(
                err,
                LlmError::Server {
                    status: 529,
                    attempts: 1,
                    ..
                }
            ),
            "{err:?}"
        );
    }

    #[tokio::test]
    async fn prompt_too_long_is_its_own_kind() {
        let server = serving(
            error_reply(
                400,
                "invalid_request_error",
                "prompt is too long: 212345 tokens > 200000 maximum",
            ),
            1,
        )
        .await;
        let err = failure(&client(&server, |_| {}), MODEL).await;
        assert!(
            matches!(&err, LlmError::ContextTooLong { message, .. } if message.contains("212345")),
            "{err:?}"
        );
    }

    #[tokio::test]
    async fn other_bad_requests_and_unknown_models_are_rejected() {
        let server = serving(error_reply(404, "not_found_error", "model: claude-nope"), 1).await;
        let err = failure(&client(&server, |_| {}), MODEL).await;
        assert!(
            matches!(&err, LlmError::Request { status: 404, message, .. } if message.contains("claude-nope")),
            "{err:?}"
        );
    }

    #[tokio::test]
    async fn an_event_that_is_not_json_is_an_invalid_reply() {
        let server = serving(
            ResponseTemplate::new(200).set_body_raw("data: {oops\n\n", "text/event-stream"),
            ..,
        )
        .await;
        let err = failure(&client(&server, |_| {}), MODEL).await;
        assert!(matches!(err, LlmError::InvalidReply { .. }), "{err:?}");
    }

    #[tokio::test]
    async fn a_cut_stream_broke_off_and_is_sent_once() {
        let server = serving(events_reply(&cut_after_half()), 1).await;
        let err = failure(&client(&server, |_| {}), MODEL).await;
        assert!(matches!(err, LlmError::BrokeOff { .. }), "{err:?}");
    }

    #[tokio::test]
    async fn estimates_missing_usage() {
        let server = serving(
            ResponseTemplate::new(200).set_body_json(json!({
                "content": [{"type": "text", "text": "some text"}]
            })),
            ..,
        )
        .await;
        let reply = reply_to(&client(&server, |o| o.stream = false), MODEL).await;
        assert_eq!(reply.model, "claude-sonnet-4-5");
        assert!(
            reply.usage.input_tokens > 5 && reply.usage.output_tokens >= 2,
            "{:?}",
            reply.usage
        );
    }

    #[test]
    fn parses_error_bodies() {
        let p = parse_error(br#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#)
            .expect("parsed");
        assert!(p.auth);
        assert_eq!(p.message, "invalid x-api-key (authentication_error)");
        assert!(parse_error(b"Bad Gateway").is_none());
    }
}
