//! Ollama's native chat API over `reqwest`: `POST {host}/api/chat`, streamed as
//! newline-delimited JSON or whole. No key: Ollama runs locally. (Its OpenAI-compatible `/v1`
//! works through the `openai` provider too; the native API reports token counts without asking
//! and names a missing model plainly.)

use std::time::{Duration, Instant};

use futures::StreamExt;
use ralph_actors::ports::llm::{
    ChatReply, ChatRequest, GuardedRequest, LlmClient, LlmError, Speaker,
};
use ralph_actors::schema::usage::Usage;
use reqwest::header::{HeaderValue, ACCEPT, AUTHORIZATION};
use reqwest::{Response, Url};
use serde::{Deserialize, Serialize};

use super::http::{self, Endpoint, Failure, Outcome, Problem, Site};
use super::options::ClientOptions;
use crate::http::retry::RetryPolicy;

pub const PROVIDER: &str = "ollama";
pub const HOST_ENV: &str = "OLLAMA_HOST";
pub const DEFAULT_HOST: &str = "http://localhost:11434";
const DEFAULT_PORT: u16 = 11434;
/// Only a remote Ollama behind a proxy (or ollama.com) wants a key; it is sent as a bearer token
/// when set.
pub const DEFAULT_API_KEY_ENV: &str = "OLLAMA_API_KEY";
const SITE: Site = Site {
    provider: PROVIDER,
    base_url_env: HOST_ENV,
    default_base_url: DEFAULT_HOST,
    official_host: None,
    key_header: AUTHORIZATION,
    key_prefix: "Bearer ",
    parse_error,
};

/// An [`LlmClient`] for `ollama/<model>` names.
pub struct OllamaClient {
    endpoint: Endpoint,
    url: Url,
}

impl std::fmt::Debug for OllamaClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OllamaClient")
            .field("host", &self.endpoint.base_url)
            .field("stream", &self.endpoint.stream)
            .finish_non_exhaustive()
    }
}

/// `OLLAMA_HOST` as Ollama itself reads it: `host`, `host:port` or a URL; without a scheme it
/// is `http://` and without a port it is 11434.
pub fn normalize_host(host: &str) -> String {
    let host = host.trim().trim_end_matches('/');
    if host.contains("://") {
        return host.to_string();
    }
    let (authority, path) = match host.find('/') {
        Some(i) => host.split_at(i),
        None => (host, ""),
    };
    // `[::1]` has colons but no port; `[::1]:8080` and `h:8080` have one.
    let has_port = match authority.rfind(']') {
        Some(close) => authority[close..].contains(':'),
        None => authority.contains(':'),
    };
    if has_port {
        format!("http://{authority}{path}")
    } else {
        format!("http://{authority}:{DEFAULT_PORT}{path}")
    }
}

impl OllamaClient {
    pub fn new(opts: ClientOptions) -> Result<Self, LlmError> {
        // The options' default variable is OpenAI's: that key must never go to another host.
        let api_key_env = match opts.api_key_env.trim() {
            "" | "OPENAI_API_KEY" => DEFAULT_API_KEY_ENV.to_string(),
            env => env.to_string(),
        };
        let given = http::non_empty(opts.base_url.clone())
            .or_else(|| http::non_empty(std::env::var(HOST_ENV).ok()))
            .map(|h| normalize_host(&h));
        let mut endpoint = Endpoint::new(&SITE, &opts, given, api_key_env)?;
        let host = &endpoint.base_url;
        let url = http::join(PROVIDER, host, "/api/chat")?;
        let hint = format!("is `ollama serve` running at {host}?");
        endpoint.transport = endpoint.transport.with_network_hint(hint);
        endpoint.headers.insert(
            ACCEPT,
            HeaderValue::from_static("application/x-ndjson, application/json"),
        );
        Ok(Self { endpoint, url })
    }

    /// Replaces the backoff timings (tests use short ones); keeps `max_retries` as given.
    pub fn with_retry_policy(mut self, policy: RetryPolicy) -> Self {
        self.endpoint.transport.policy = policy;
        self
    }

    pub fn host(&self) -> &str {
        &self.endpoint.base_url
    }
}

impl super::Provider for OllamaClient {
    fn describe(&self) -> String {
        format!("{PROVIDER} (local models at {})", self.endpoint.base_url)
    }
}

#[derive(Debug, Serialize)]
struct Body<'a> {
    model: &'a str,
    messages: Vec<Message<'a>>,
    /// Ollama streams unless told not to.
    stream: bool,
    options: Options,
}

#[derive(Debug, Serialize)]
struct Message<'a> {
    role: &'static str,
    content: &'a str,
}

#[derive(Debug, Serialize)]
struct Options {
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    num_predict: u32,
}

fn body<'a>(model: &'a str, request: &'a ChatRequest, stream: bool) -> Body<'a> {
    Body {
        model,
        messages: request
            .messages
            .iter()
            .map(|m| Message {
                role: match m.speaker {
                    Speaker::System => "system",
                    Speaker::User => "user",
                    Speaker::Assistant => "assistant",
                },
                content: &m.content,
            })
            .collect(),
        stream,
        options: Options {
            temperature: request.temperature.map(http::temperature),
            num_predict: request.max_tokens,
        },
    }
}

/// One line of a stream, or the whole reply: the same fields.
#[derive(Debug, Default, Deserialize)]
struct Chunk {
    #[serde(default)]
    model: String,
    message: Option<ChunkMessage>,
    #[serde(default)]
    done: bool,
    done_reason: Option<String>,
    prompt_eval_count: Option<u64>,
    eval_count: Option<u64>,
    error: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct ChunkMessage {
    #[serde(default)]
    content: String,
}

#[derive(Debug, Default)]
pub(crate) struct Raw {
    text: String,
    model: String,
    done_reason: Option<String>,
    prompt_eval_count: Option<u64>,
    eval_count: Option<u64>,
}

impl Raw {
    /// Takes one chunk; true when it is the last.
    fn add(&mut self, chunk: Chunk) -> Result<bool, Failure> {
        if let Some(error) = chunk.error {
            return Err(Failure::in_stream(500, error, &self.text));
        }
        if self.model.is_empty() {
            self.model = chunk.model;
        }
        if let Some(m) = chunk.message {
            ralph_actors::ports::stream::delta(&m.content);
            self.text.push_str(&m.content);
        }
        if chunk.done {
            self.done_reason = chunk.done_reason;
            self.prompt_eval_count = chunk.prompt_eval_count;
            self.eval_count = chunk.eval_count;
        }
        Ok(chunk.done)
    }
}

/// `{"error":"model 'x' not found, try pulling it first"}`
pub(crate) fn parse_error(body: &[u8]) -> Option<Problem> {
    #[derive(Deserialize)]
    struct Wrapped {
        error: String,
    }
    let e = serde_json::from_slice::<Wrapped>(body).ok()?;
    Some(Problem::message(http::shorten(&e.error)))
}

pub(crate) async fn read_whole(response: Response) -> Result<Raw, Failure> {
    let chunk: Chunk = http::read_json(response).await?;
    let mut raw = Raw::default();
    if !raw.add(chunk)? {
        return Err(Failure::Invalid(
            "the reply is not a finished Ollama chat response (no `\"done\": true`)".into(),
        ));
    }
    Ok(raw)
}

pub(crate) async fn read_stream(response: Response, idle: Duration) -> Result<Raw, Failure> {
    let mut lines = http::ndjson(response, idle);
    let mut raw = Raw::default();
    let mut any = false;
    while let Some(line) = lines.next().await {
        let chunk: Chunk = http::parse_chunk(&line?)?;
        any = true;
        if raw.add(chunk)? {
            return Ok(raw);
        }
    }
    Err(if any {
        Failure::Network("the stream ended before `\"done\": true`: the reply is incomplete".into())
    } else {
        Failure::Invalid("the reply is empty (is this Ollama's /api/chat?)".into())
    })
}

#[async_trait::async_trait]
impl LlmClient for OllamaClient {
    async fn complete(&self, request: GuardedRequest) -> Result<ChatReply, LlmError> {
        let model = http::model_id(PROVIDER, &request.model)?;
        let started = Instant::now();
        let body = body(model, &request, self.endpoint.stream);
        let (raw, attempts) = self
            .endpoint
            .send(self.url.clone(), &body, read_whole, read_stream)
            .await
            .map_err(|e| match e {
                LlmError::Request {
                    provider,
                    status: 404,
                    message,
                } if message.contains("not found") => LlmError::Request {
                    provider,
                    status: 404,
                    message: format!("{message} (run `ollama pull {model}`)"),
                },
                e => e,
            })?;
        let usage = match (raw.prompt_eval_count, raw.eval_count) {
            (Some(input), Some(output)) => Some(Usage {
                input_tokens: input,
                output_tokens: output,
                ..Usage::default()
            }),
            // Ollama leaves `prompt_eval_count` out when the whole prompt came from its cache.
            (None, Some(output)) => Some(Usage {
                output_tokens: output,
                ..http::estimate_usage(&request.model, &request.messages, "")
            }),
            _ => None,
        };
        let outcome = Outcome {
            cut_short: raw.done_reason.as_deref() == Some("length"),
            usage,
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
    use crate::providers::conformance::Wire;

    use crate::testkit::wire::{
        closed_port, failure, last_body, mounted, options_at, reply_to, serving, with_fast_retries,
    };
    use serde_json::{json, Value};

    use wiremock::matchers::{method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};

    const MODEL: &str = "ollama/qwen2.5-coder:7b";

    /// No key: Ollama runs locally.
    fn client_at(base: &str, tweak: impl FnOnce(&mut ClientOptions)) -> OllamaClient {
        let opts = options_at(base, "", |o| {
            o.api_key = None;
            tweak(o)
        });
        with_fast_retries(opts, OllamaClient::new, OllamaClient::with_retry_policy)
    }

    /// Ollama's answers, for the providers' conformance table.
    pub(crate) fn wire() -> Wire {
        Wire {
            name: "ollama",
            model: MODEL,
            client: |base, tweak| Box::new(client_at(base, tweak)),
            stream: ndjson_reply,
            first: || (format!("{}\n", line("Hel")), "application/x-ndjson"),
            error: error_reply,
        }
    }

    fn client(server: &MockServer, tweak: impl FnOnce(&mut ClientOptions)) -> OllamaClient {
        client_at(&server.uri(), tweak)
    }

    fn line(content: &str) -> Value {
        json!({"model": "qwen2.5-coder:7b", "created_at": "2025-01-01T00:00:00Z",
               "message": {"role": "assistant", "content": content}, "done": false})
    }

    fn last() -> Value {
        json!({"model": "qwen2.5-coder:7b", "created_at": "2025-01-01T00:00:01Z",
               "message": {"role": "assistant", "content": ""}, "done": true, "done_reason": "stop",
               "total_duration": 1_000_000, "prompt_eval_count": 42, "eval_count": 7})
    }

    fn ndjson_reply(deltas: &[&str]) -> ResponseTemplate {
        let mut body: String = deltas.iter().map(|d| format!("{}\n", line(d))).collect();
        body.push_str(&format!("{}\n", last()));
        ResponseTemplate::new(200).set_body_raw(body, "application/x-ndjson")
    }

    fn error_reply(status: u16, message: &str) -> ResponseTemplate {
        ResponseTemplate::new(status).set_body_json(json!({"error": message}))
    }

    const EXPECTED: Usage = Usage {
        input_tokens: 42,
        output_tokens: 7,
        cache_read_tokens: 0,
        cache_write_tokens: 0,
    };

    #[tokio::test]
    async fn streams_text_and_usage() {
        let server = mounted(
            Mock::given(method("POST")).and(path("/api/chat")),
            ndjson_reply(&["Hel", "lo"]),
            1,
        )
        .await;
        let reply = reply_to(&client(&server, |_| {}), MODEL).await;
        assert_eq!(reply.text, "Hello");
        assert_eq!(reply.model, "qwen2.5-coder:7b");
        assert_eq!(reply.usage, EXPECTED);
        let sent = last_body(&server).await;
        assert_eq!(sent["model"], "qwen2.5-coder:7b");
        assert_eq!(sent["stream"], true);
        assert_eq!(
            sent["messages"],
            json!([{"role": "system", "content": "You fix code."}, {"role": "user", "content": "fix it"}])
        );
        assert_eq!(
            sent["options"],
            json!({"temperature": 0.2, "num_predict": 321})
        );
        let received = server.received_requests().await.expect("recorded");
        assert!(received[0].headers.get("authorization").is_none());
    }

    #[tokio::test]
    async fn reads_a_whole_reply() {
        let server = MockServer::start().await;
        let mut whole = last();
        whole["message"]["content"] = json!("All done.");
        Mock::given(method("POST"))
            .and(path("/api/chat"))
            .respond_with(ResponseTemplate::new(200).set_body_json(whole))
            .mount(&server)
            .await;
        let reply = reply_to(&client(&server, |o| o.stream = false), MODEL).await;
        assert_eq!(reply.text, "All done.");
        assert_eq!(reply.usage, EXPECTED);
        assert_eq!(last_body(&server).await["stream"], false);
    }

    #[tokio::test]
    async fn a_key_is_sent_when_set_and_401_names_its_variable() {
        let server = serving(error_reply(401, "unauthorized"), 1).await;
        let err = failure(&client(&server, |o| o.api_key = Some("k".into())), MODEL).await;
        assert!(
            matches!(&err, LlmError::Auth { env_var, message, .. } if env_var == "OLLAMA_API_KEY" && message == "unauthorized"),
            "{err:?}"
        );
        let received = server.received_requests().await.expect("recorded");
        assert_eq!(
            received[0]
                .headers
                .get("authorization")
                .and_then(|v| v.to_str().ok()),
            Some("Bearer k")
        );
    }

    #[tokio::test]
    async fn a_missing_model_says_how_to_pull_it() {
        let server = serving(
            error_reply(
                404,
                "model \"qwen2.5-coder:7b\" not found, try pulling it first",
            ),
            1,
        )
        .await;
        let err = failure(&client(&server, |_| {}), MODEL).await;
        assert!(
            matches!(&err, LlmError::Request { status: 404, message, .. } if message.contains("ollama pull qwen2.5-coder:7b")),
            "{err:?}"
        );
    }

    #[tokio::test]
    async fn an_error_line_is_reported() {
        let server = MockServer::start().await;
        let body = format!(
            "{}\n{}\n",
            line("par"),
            json!({"error": "an error was encountered while running the model"})
        );
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(200).set_body_raw(body, "application/x-ndjson"))
            .expect(1)
            .mount(&server)
            .await;
        let err = failure(&client(&server, |_| {}), MODEL).await;
        assert!(
            matches!(
                err,
                LlmError::Server {
                    status: 500,
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
            error_reply(400, "the input length exceeds the context length"),
            1,
        )
        .await;
        let err = failure(&client(&server, |_| {}), MODEL).await;
        assert!(matches!(err, LlmError::ContextTooLong { .. }), "{err:?}");
    }

    #[tokio::test]
    async fn a_stopped_server_is_a_network_error_with_a_hint() {
        let port = closed_port();
        let err = failure(
            &client_at(&format!("127.0.0.1:{port}"), |o| o.max_retries = 1),
            MODEL,
        )
        .await;
        assert!(
            matches!(&err, LlmError::Network { message, .. } if message.contains("ollama serve") && message.contains(&format!("http://127.0.0.1:{port}"))),
            "{err:?}"
        );
    }

    #[test]
    fn reads_ollama_host_like_ollama() {
        assert_eq!(normalize_host("localhost"), "http://localhost:11434");
        assert_eq!(normalize_host("0.0.0.0:8080"), "http://0.0.0.0:8080");
        assert_eq!(normalize_host("[::1]"), "http://[::1]:11434");
        assert_eq!(
            normalize_host("https://ollama.example.com/"),
            "https://ollama.example.com"
        );
        assert_eq!(normalize_host("box/ollama"), "http://box:11434/ollama");
        let c = client_at("gpu-box", |_| {});
        assert_eq!(c.host(), "http://gpu-box:11434");
        assert!(super::super::Provider::check(&c).is_ok());
    }
}
