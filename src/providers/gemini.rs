//! Google's Gemini API over `reqwest`: `POST {base}/v1beta/models/{model}:generateContent`, or
//! `:streamGenerateContent?alt=sse` for a stream of the same responses as server-sent events.
//!
//! Gemini's `promptTokenCount` already includes the cached tokens, as [`Usage`] wants; its
//! thinking tokens (`thoughtsTokenCount`) are billed as output, so they are counted as output.

use std::time::{Duration, Instant};

use futures::StreamExt;
use ralph_actors::ports::llm::{
    ChatReply, ChatRequest, GuardedRequest, LlmClient, LlmError, Speaker,
};
use ralph_actors::schema::usage::Usage;
use reqwest::header::HeaderName;
use reqwest::Response;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::http::{self, Endpoint, Failure, Outcome, Problem, Site};
use super::options::ClientOptions;
use crate::http::retry::RetryPolicy;

pub const PROVIDER: &str = "gemini";
pub const DEFAULT_API_KEY_ENV: &str = "GEMINI_API_KEY";
/// Google's SDKs read this one too; the app picks whichever is set.
pub const ALT_API_KEY_ENV: &str = "GOOGLE_API_KEY";
pub const BASE_URL_ENV: &str = "GEMINI_BASE_URL";
pub const DEFAULT_BASE_URL: &str = "https://generativelanguage.googleapis.com";
const SITE: Site = Site {
    provider: PROVIDER,
    base_url_env: BASE_URL_ENV,
    default_base_url: DEFAULT_BASE_URL,
    official_host: Some("generativelanguage.googleapis.com"),
    key_header: HeaderName::from_static("x-goog-api-key"),
    key_prefix: "",
    parse_error,
};
const API_VERSION_PATH: &str = "/v1beta";
/// Finish reasons that mean the text was withheld: not a reply to use.
const BLOCKED: &[&str] = &[
    "SAFETY",
    "RECITATION",
    "BLOCKLIST",
    "PROHIBITED_CONTENT",
    "SPII",
    "IMAGE_SAFETY",
    "LANGUAGE",
];

/// An [`LlmClient`] for `gemini/<model>` names.
pub struct GeminiClient {
    endpoint: Endpoint,
    /// `{base}/v1beta` (or the base as written, when it ends in a version).
    api_root: String,
}

impl std::fmt::Debug for GeminiClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.endpoint.fmt_debug(f, "GeminiClient")
    }
}

impl GeminiClient {
    /// Resolves the endpoint and key. A missing key is not an error here: the first call fails
    /// instead, before any request.
    pub fn new(opts: ClientOptions) -> Result<Self, LlmError> {
        let api_key_env = http::key_env_or(&opts.api_key_env, DEFAULT_API_KEY_ENV);
        let endpoint = Endpoint::new(&SITE, &opts, opts.base_url.clone(), api_key_env)?;
        let base_url = &endpoint.base_url;
        let versioned = ["/v1beta", "/v1", "/v1alpha"]
            .iter()
            .any(|v| base_url.ends_with(v));
        let api_root = if versioned {
            base_url.clone()
        } else {
            format!("{base_url}{API_VERSION_PATH}")
        };
        Ok(Self { endpoint, api_root })
    }

    /// Replaces the backoff timings (tests use short ones); keeps `max_retries` as given.
    pub fn with_retry_policy(mut self, policy: RetryPolicy) -> Self {
        self.endpoint.transport.policy = policy;
        self
    }

    pub fn base_url(&self) -> &str {
        &self.endpoint.base_url
    }

    /// Fails with the error a call would give when Google's endpoint has no key.
    pub fn check(&self) -> Result<(), LlmError> {
        let mut err = self.endpoint.check();
        if let Err(LlmError::Auth {
            env_var, message, ..
        }) = &mut err
        {
            if env_var == DEFAULT_API_KEY_ENV {
                message.push_str(&format!(" (nor is {ALT_API_KEY_ENV})"));
            }
        }
        err
    }

    fn url(&self, model: &str) -> Result<reqwest::Url, LlmError> {
        let method = if self.endpoint.stream {
            "streamGenerateContent?alt=sse"
        } else {
            "generateContent"
        };
        http::join(
            PROVIDER,
            &self.api_root,
            &format!("/models/{model}:{method}"),
        )
    }
}

impl super::Provider for GeminiClient {
    fn describe(&self) -> String {
        self.endpoint.describe("Gemini")
    }

    fn check(&self) -> Result<(), LlmError> {
        GeminiClient::check(self)
    }
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Body {
    #[serde(skip_serializing_if = "Option::is_none")]
    system_instruction: Option<Content>,
    contents: Vec<Content>,
    generation_config: GenerationConfig,
}

#[derive(Debug, Serialize)]
struct Content {
    #[serde(skip_serializing_if = "Option::is_none")]
    role: Option<&'static str>,
    parts: Vec<Part>,
}

#[derive(Debug, Serialize)]
struct Part {
    text: String,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct GenerationConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    max_output_tokens: u32,
}

fn body(request: &ChatRequest) -> Body {
    let (system, turns) = http::split_system(&request.messages);
    Body {
        system_instruction: system.map(|text| Content {
            role: None,
            parts: vec![Part { text }],
        }),
        contents: turns
            .into_iter()
            .map(|(speaker, text)| Content {
                role: Some(if speaker == Speaker::Assistant {
                    "model"
                } else {
                    "user"
                }),
                parts: vec![Part { text }],
            })
            .collect(),
        generation_config: GenerationConfig {
            temperature: request.temperature.map(http::temperature),
            max_output_tokens: request.max_tokens,
        },
    }
}

/// One `GenerateContentResponse`: the whole reply, or one chunk of a stream.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Chunk {
    #[serde(default)]
    candidates: Vec<Candidate>,
    usage_metadata: Option<UsageMetadata>,
    model_version: Option<String>,
    prompt_feedback: Option<PromptFeedback>,
    /// A stream may end with an error object instead of a chunk.
    error: Option<Value>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Candidate {
    content: Option<CandidateContent>,
    finish_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
struct CandidateContent {
    #[serde(default)]
    parts: Vec<ReplyPart>,
}

#[derive(Debug, Deserialize)]
struct ReplyPart {
    text: Option<String>,
    /// A thought summary, not the answer.
    #[serde(default)]
    thought: bool,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "camelCase")]
struct UsageMetadata {
    prompt_token_count: Option<u64>,
    candidates_token_count: Option<u64>,
    cached_content_token_count: Option<u64>,
    thoughts_token_count: Option<u64>,
}

impl UsageMetadata {
    fn to_usage(self) -> Usage {
        Usage {
            input_tokens: self.prompt_token_count.unwrap_or(0),
            output_tokens: self
                .candidates_token_count
                .unwrap_or(0)
                .saturating_add(self.thoughts_token_count.unwrap_or(0)),
            cache_read_tokens: self.cached_content_token_count.unwrap_or(0),
            cache_write_tokens: 0,
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PromptFeedback {
    block_reason: Option<String>,
}

/// What came back, over one or many chunks.
#[derive(Debug, Default)]
pub(crate) struct Raw {
    text: String,
    model: Option<String>,
    usage: Option<UsageMetadata>,
    finish: Option<String>,
    block_reason: Option<String>,
    candidates: bool,
}

impl Raw {
    fn add(&mut self, chunk: Chunk) {
        if let Some(first) = chunk.candidates.into_iter().next() {
            self.candidates = true;
            let parts = first.content.map(|c| c.parts).unwrap_or_default();
            for part in parts.into_iter().filter(|p| !p.thought) {
                if let Some(text) = part.text {
                    ralph_actors::ports::stream::delta(&text);
                    self.text.push_str(&text);
                }
            }
            if first.finish_reason.is_some() {
                self.finish = first.finish_reason;
            }
        }
        // Each chunk's usage is the total so far.
        if chunk.usage_metadata.is_some() {
            self.usage = chunk.usage_metadata;
        }
        if chunk.model_version.is_some() {
            self.model = chunk.model_version;
        }
        if let Some(reason) = chunk.prompt_feedback.and_then(|f| f.block_reason) {
            self.block_reason = Some(reason);
        }
    }

    /// A reply with text to use, or why there is none.
    fn check(&self) -> Result<(), String> {
        if let Some(reason) = &self.block_reason {
            return Err(format!("the prompt was blocked (blockReason {reason})"));
        }
        let finish = self.finish.as_deref().unwrap_or("none");
        if BLOCKED.contains(&finish) {
            return Err(format!("the reply was withheld (finishReason {finish})"));
        }
        if !self.candidates {
            return Err("the reply has no candidates".into());
        }
        if self.text.is_empty() {
            let hint = if finish == "MAX_TOKENS" {
                "; thinking may have used all of max_tokens"
            } else {
                ""
            };
            return Err(format!(
                "the reply has no text (finishReason {finish}{hint})"
            ));
        }
        Ok(())
    }
}

/// `{"error":{"code":400,"message":"...","status":"INVALID_ARGUMENT","details":[...]}}`, alone or
/// in an array (streamed requests answer with one).
pub(crate) fn parse_error(body: &[u8]) -> Option<Problem> {
    let value: Value = serde_json::from_slice(body).ok()?;
    let value = match value {
        Value::Array(mut items) if !items.is_empty() => items.swap_remove(0),
        v => v,
    };
    problem_of(value.get("error")?)
}

fn problem_of(error: &Value) -> Option<Problem> {
    let text = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_string);
    let message = text(error, "message").unwrap_or_default();
    let status = text(error, "status").unwrap_or_default();
    let details: &[Value] = error
        .get("details")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice);
    let reason_is = |r: &str| {
        details
            .iter()
            .any(|d| text(d, "reason").as_deref() == Some(r))
    };
    // Google's RetryInfo: `"retryDelay": "37s"`.
    let retry_delay = details
        .iter()
        .find(|d| text(d, "@type").is_some_and(|t| t.ends_with("RetryInfo")))
        .and_then(|d| text(d, "retryDelay"))
        .and_then(|s| s.trim_end_matches('s').parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(Duration::from_secs_f64);
    if message.is_empty() && status.is_empty() {
        return None;
    }
    Some(Problem {
        // An invalid key is a 400 INVALID_ARGUMENT, not a 401.
        auth: message.contains("API key not valid")
            || reason_is("API_KEY_INVALID")
            || status == "UNAUTHENTICATED",
        message: match (message.is_empty(), status.is_empty()) {
            (true, _) => status,
            (false, true) => http::shorten(&message),
            (false, false) => format!("{} ({status})", http::shorten(&message)),
        },
        too_long: false,
        retry_delay,
    })
}

/// The HTTP status of an error object inside a stream.
fn in_stream_failure(error: &Value, text_so_far: &str) -> Failure {
    let status = error
        .get("code")
        .and_then(Value::as_u64)
        .and_then(|c| u16::try_from(c).ok())
        .unwrap_or(500);
    let message = problem_of(error).map_or_else(|| error.to_string(), |p| p.message);
    Failure::in_stream(status, message, text_so_far)
}

pub(crate) async fn read_whole(response: Response) -> Result<Raw, Failure> {
    let chunk: Chunk = http::read_json(response).await?;
    if let Some(error) = &chunk.error {
        return Err(in_stream_failure(error, ""));
    }
    let mut raw = Raw::default();
    raw.add(chunk);
    Ok(raw)
}

pub(crate) async fn read_stream(response: Response, idle: Duration) -> Result<Raw, Failure> {
    let mut events = http::sse(response, idle);
    let mut raw = Raw::default();
    let mut chunks = 0usize;
    while let Some(event) = events.next().await {
        let event = event?;
        if event.data.trim().is_empty() {
            continue;
        }
        let chunk: Chunk = http::parse_chunk(&event.data)?;
        if let Some(error) = &chunk.error {
            return Err(in_stream_failure(error, &raw.text));
        }
        chunks += 1;
        raw.add(chunk);
    }
    if chunks == 0 {
        return Err(Failure::Invalid(
            "the stream ended before any chunk (is this the Gemini API?)".into(),
        ));
    }
    // The last chunk names why the model stopped; a stream cut off ends without one.
    if raw.finish.is_none() {
        return Err(Failure::Network(
            "the stream ended before a finishReason: the reply is incomplete".into(),
        ));
    }
    Ok(raw)
}

#[async_trait::async_trait]
impl LlmClient for GeminiClient {
    async fn complete(&self, request: GuardedRequest) -> Result<ChatReply, LlmError> {
        let model = http::model_id(PROVIDER, &request.model)?;
        // `models/gemini-x` is how Google's own listings name it.
        let model = model.strip_prefix("models/").unwrap_or(model);
        self.check()?;
        let started = Instant::now();
        let (raw, attempts) = self
            .endpoint
            .send(self.url(model)?, &body(&request), read_whole, read_stream)
            .await?;
        raw.check().map_err(|message| LlmError::InvalidReply {
            provider: PROVIDER.into(),
            message,
        })?;
        let outcome = Outcome {
            cut_short: raw.finish.as_deref() == Some("MAX_TOKENS"),
            usage: raw.usage.map(UsageMetadata::to_usage),
            text: raw.text,
            model: raw.model.unwrap_or_default(),
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
    use serde_json::json;

    use wiremock::matchers::{header, method, path, query_param};
    use wiremock::{Mock, MockServer, ResponseTemplate};

    const MODEL: &str = "gemini/gemini-2.5-pro";
    const STREAM_PATH: &str = "/v1beta/models/gemini-2.5-pro:streamGenerateContent";
    const PLAIN_PATH: &str = "/v1beta/models/gemini-2.5-pro:generateContent";

    fn client_at(base: &str, tweak: impl FnOnce(&mut ClientOptions)) -> GeminiClient {
        let opts = options_at(base, DEFAULT_API_KEY_ENV, tweak);
        with_fast_retries(opts, GeminiClient::new, GeminiClient::with_retry_policy)
    }

    /// Gemini's answers, for the providers' conformance table.
    pub(crate) fn wire() -> Wire {
        Wire {
            name: "gemini",
            model: MODEL,
            client: |base, tweak| Box::new(client_at(base, tweak)),
            stream: sse_reply,
            first: || {
                let first = format!("data: {}\n\n", chunk("Hel", None, None));
                (first, "text/event-stream")
            },
            error: |code, message| {
                error_reply(
                    code,
                    kind_of(code, "RESOURCE_EXHAUSTED", "INTERNAL"),
                    message,
                )
            },
        }
    }

    fn client(server: &MockServer, tweak: impl FnOnce(&mut ClientOptions)) -> GeminiClient {
        client_at(&server.uri(), tweak)
    }

    fn usage() -> Value {
        json!({
            "promptTokenCount": 1200, "candidatesTokenCount": 12, "cachedContentTokenCount": 1000,
            "thoughtsTokenCount": 30, "totalTokenCount": 1242
        })
    }

    const EXPECTED: Usage = Usage {
        input_tokens: 1200,
        output_tokens: 42,
        cache_read_tokens: 1000,
        cache_write_tokens: 0,
    };

    fn chunk(text: &str, finish: Option<&str>, usage: Option<Value>) -> Value {
        json!({
            "candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": finish, "index": 0}],
            "usageMetadata": usage, "modelVersion": "gemini-2.5-pro", "responseId": "r1"
        })
    }

    fn sse(chunks: &[Value]) -> ResponseTemplate {
        let body: String = chunks
            .iter()
            .map(|c| format!("data: {c}\r\n\r\n"))
            .collect();
        ResponseTemplate::new(200).set_body_raw(body, "text/event-stream")
    }

    fn sse_reply(deltas: &[&str]) -> ResponseTemplate {
        let last = deltas.len().saturating_sub(1);
        let chunks: Vec<Value> = deltas
            .iter()
            .enumerate()
            .map(|(i, d)| {
                let end = i == last;
                chunk(d, end.then_some("STOP"), end.then(usage))
            })
            .collect();
        sse(&chunks)
    }

    fn error_reply(code: u16, status: &str, message: &str) -> ResponseTemplate {
        ResponseTemplate::new(code)
            .set_body_json(json!({"error": {"code": code, "message": message, "status": status}}))
    }

    #[tokio::test]
    async fn streams_text_and_usage() {
        let server = mounted(
            Mock::given(method("POST"))
                .and(path(STREAM_PATH))
                .and(query_param("alt", "sse"))
                .and(header("x-goog-api-key", "test-key")),
            sse_reply(&["Hel", "lo"]),
            1,
        )
        .await;
        let mut req = request(MODEL).into_inner();
        req.messages
            .push(ralph_actors::ports::llm::ChatMessage::assistant(
                "Which file?",
            ));
        req.messages
            .push(ralph_actors::ports::llm::ChatMessage::user("app.py"));
        let reply = client(&server, |_| {})
            .complete(sealed(req))
            .await
            .expect("reply");
        assert_eq!(reply.text, "Hello");
        assert_eq!(reply.model, "gemini-2.5-pro");
        assert_eq!(reply.usage, EXPECTED);
        let sent = last_body(&server).await;
        assert_eq!(
            sent["systemInstruction"],
            json!({"parts": [{"text": "You fix code."}]})
        );
        assert_eq!(
            sent["contents"],
            json!([
                {"role": "user", "parts": [{"text": "fix it"}]},
                {"role": "model", "parts": [{"text": "Which file?"}]},
                {"role": "user", "parts": [{"text": "app.py"}]}
            ])
        );
        assert_eq!(
            sent["generationConfig"],
            json!({"temperature": 0.2, "maxOutputTokens": 321})
        );
    }

    #[tokio::test]
    async fn reads_a_whole_reply_without_thoughts() {
        let server = mounted(
            Mock::given(method("POST")).and(path(PLAIN_PATH)),
            ResponseTemplate::new(200).set_body_json(json!({
                "candidates": [{"content": {"role": "model", "parts": [
                    {"text": "Let me think", "thought": true}, {"text": "All "}, {"text": "done."}
                ]}, "finishReason": "STOP"}],
                "usageMetadata": usage(), "modelVersion": "gemini-2.5-pro-002"
            })),
            1,
        )
        .await;
        let reply = reply_to(
            &client(&server, |o| o.stream = false),
            "gemini/models/gemini-2.5-pro",
        )
        .await;
        assert_eq!(reply.text, "All done.");
        assert_eq!(reply.model, "gemini-2.5-pro-002");
        assert_eq!(reply.usage, EXPECTED);
    }

    #[tokio::test]
    async fn an_invalid_key_is_an_authentication_error() {
        let server = serving(ResponseTemplate::new(400).set_body_json(json!([{"error": {
                "code": 400, "message": "API key not valid. Please pass a valid API key.",
                "status": "INVALID_ARGUMENT",
                "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID", "domain": "googleapis.com"}]
            }}])), 1).await;
        let err = failure(
            &client(&server, |o| o.api_key_env = ALT_API_KEY_ENV.into()),
            MODEL,
        )
        .await;
        let text = err.to_string();
        assert!(matches!(err, LlmError::Auth { .. }), "{err:?}");
        assert!(
            text.contains("GOOGLE_API_KEY") && text.contains("API key not valid"),
            "{text}"
        );
    }

    #[tokio::test]
    async fn unauthorized_and_forbidden_are_authentication_errors() {
        for (code, status) in [(401, "UNAUTHENTICATED"), (403, "PERMISSION_DENIED")] {
            let server = serving(error_reply(code, status, "no"), 1).await;
            let err = failure(&client(&server, |_| {}), MODEL).await;
            assert!(
                matches!(&err, LlmError::Auth { env_var, .. } if env_var == "GEMINI_API_KEY"),
                "{err:?}"
            );
        }
    }

    #[tokio::test]
    async fn the_official_api_needs_a_key_before_any_request() {
        let c = GeminiClient::new(ClientOptions {
            api_key: None,
            api_key_env: "RALPH_TEST_SURELY_UNSET_KEY".into(),
            base_url: Some(DEFAULT_BASE_URL.into()),
            ..ClientOptions::default()
        })
        .expect("client");
        let err = failure(&c, MODEL).await;
        assert!(matches!(&err, LlmError::Auth { .. }), "{err:?}");
        assert_eq!(super::super::Provider::check(&c), Err(err));
    }

    #[tokio::test]
    async fn honours_the_retry_info_in_the_body() {
        let server = serving(ResponseTemplate::new(429).set_body_json(json!({"error": {
                "code": 429, "message": "You exceeded your current quota", "status": "RESOURCE_EXHAUSTED",
                "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "0.4s"}]
            }})), 2).await;
        let started = Instant::now();
        let err = failure(&client(&server, |o| o.max_retries = 1), MODEL).await;
        assert!(
            started.elapsed() >= Duration::from_millis(380),
            "{:?}",
            started.elapsed()
        );
        assert!(
            matches!(
                err,
                LlmError::RateLimited {
                    attempts: 2,
                    retry_after_ms: Some(400),
                    ..
                }
            ),
            "{err:?}"
        );
    }

    #[tokio::test]
    async fn a_safety_stop_or_no_text_is_an_invalid_reply() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(sse(&[
                chunk("Sure, here", None, None),
                chunk("", Some("SAFETY"), Some(usage())),
            ]))
            .up_to_n_times(1)
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .respond_with(sse(&[json!({
                "candidates": [{"content": {"role": "model"}, "finishReason": "MAX_TOKENS"}],
                "usageMetadata": usage()
            })]))
            .up_to_n_times(1)
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({
                "promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}, "usageMetadata": usage()
            })))
            .mount(&server)
            .await;
        let c = client(&server, |_| {});
        let err = failure(&c, MODEL).await;
        assert!(
            matches!(&err, LlmError::InvalidReply { message, .. } if message.contains("SAFETY")),
            "{err:?}"
        );
        let err = failure(&c, MODEL).await;
        assert!(
            matches!(&err, LlmError::InvalidReply { message, .. } if message.contains("MAX_TOKENS")),
            "{err:?}"
        );
        let err = failure(&client(&server, |o| o.stream = false), MODEL).await;
        assert!(
            matches!(&err, LlmError::InvalidReply { message, .. } if message.contains("PROHIBITED_CONTENT")),
            "{err:?}"
        );
    }

    #[tokio::test]
    async fn prompt_too_long_is_its_own_kind() {
        let server = serving(error_reply(
                400,
                "INVALID_ARGUMENT",
                "The input token count (1500000) exceeds the maximum number of tokens allowed (1048576).",
            ), 1).await;
        let err = failure(&client(&server, |_| {}), MODEL).await;
        assert!(matches!(err, LlmError::ContextTooLong { .. }), "{err:?}");
    }

    #[tokio::test]
    async fn an_error_inside_the_stream_is_reported() {
        let server = serving(sse(&[
                chunk("part", None, None),
                json!({"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}),
            ]), 1).await;
        let err = failure(&client(&server, |_| {}), MODEL).await;
        assert!(
            matches!(&err, LlmError::Server { status: 503, attempts: 1, message, .. } if message.contains("overloaded")),
            "{err:?}"
        );
    }

    #[test]
    fn a_versioned_base_url_is_kept() {
        let c = client_at("http://127.0.0.1:9/v1", |_| {});
        assert_eq!(
            c.url("gemini-2.5-flash").expect("url").as_str(),
            "http://127.0.0.1:9/v1/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
        );
    }
}
