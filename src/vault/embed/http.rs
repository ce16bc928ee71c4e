//! [`HttpEmbedder`]: a provider's embedding model over HTTP (OpenAI-compatible, Ollama,
//! Gemini): the key, the client, batching, and the retries of [`crate::http::retry`]. What each
//! provider's requests and replies look like is in [`super::protocol`].

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use bytes::Bytes;
use ralph_actors::ports::memory::{Embedder, GuardedTexts, MemoryError};
use reqwest::header::{HeaderName, HeaderValue};
use reqwest::StatusCode;
use serde_json::Value;

use super::protocol::{error_text, key_header, Api};
use super::spec::{EmbedError, EmbedderSpec};
use crate::http::retry::{is_retryable_status, retry, server_delay, Attempted, RetryPolicy};
use crate::http::text::chain;

/// Texts per request: OpenAI accepts 2048, Gemini's batch 100; 96 stays under every limit.
pub const BATCH: usize = 96;
/// The longest wait a server's `Retry-After` may ask of us.
pub const MAX_SERVER_DELAY: Duration = Duration::from_secs(30);
/// Connecting is quick or the host is down.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Retries per request after the first attempt.
const MAX_RETRIES: u32 = 2;

/// A provider's embedding model over HTTP: OpenAI-compatible, Ollama or Gemini.
#[derive(Debug)]
pub struct HttpEmbedder {
    /// The provider, model and dimension, and the endpoint they are sent to.
    api: Api,
    http: reqwest::Client,
    /// The key's header, marked sensitive so it never shows in `Debug`.
    auth: Option<(HeaderName, HeaderValue)>,
    timeout: Duration,
    policy: RetryPolicy,
}

/// The dimension of well-known models when the settings give none.
fn known_dims(model: &str) -> Option<usize> {
    // Ollama names a tag after the model (`nomic-embed-text:latest`).
    let base = model.split(':').next().unwrap_or(model);
    Some(match base {
        "text-embedding-3-small" | "text-embedding-ada-002" => 1536,
        "text-embedding-3-large" | "gemini-embedding-001" => 3072,
        "nomic-embed-text" | "text-embedding-004" => 768,
        "mxbai-embed-large" => 1024,
        "all-minilm" => 384,
        _ => return None,
    })
}

impl HttpEmbedder {
    pub(super) fn new(
        spec: &EmbedderSpec,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, EmbedError> {
        let provider = spec.provider;
        let model = match spec.model.trim() {
            "" => provider.default_model(),
            m => m.strip_prefix("models/").unwrap_or(m),
        }
        .to_string();
        let dims = match spec.dims {
            Some(0) => return Err(EmbedError::ZeroDims),
            Some(d) => d,
            None => known_dims(&model).ok_or_else(|| EmbedError::UnknownDims {
                provider,
                model: model.clone(),
            })?,
        };
        let auth = match provider.default_key_env() {
            None => None,
            Some(default_env) => {
                let env_name = spec
                    .api_key_env
                    .as_deref()
                    .map(str::trim)
                    .filter(|e| !e.is_empty())
                    .unwrap_or(default_env);
                let key = env(env_name)
                    .map(|k| k.trim().to_string())
                    .filter(|k| !k.is_empty())
                    .ok_or_else(|| EmbedError::MissingKey {
                        provider,
                        env: env_name.to_string(),
                    })?;
                let (name, value) = key_header(provider, &key);
                let mut value = HeaderValue::from_str(&value).map_err(|_| EmbedError::BadKey {
                    env: env_name.to_string(),
                })?;
                value.set_sensitive(true);
                Some((name, value))
            }
        };
        let base = spec
            .base_url
            .as_deref()
            .map(str::trim)
            .filter(|b| !b.is_empty())
            .unwrap_or(provider.default_base_url())
            .trim_end_matches('/');
        let api = Api::new(provider, base, model, dims, spec.dims.is_some())?;
        let http = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .timeout(spec.timeout)
            .user_agent(concat!("ralph-loop/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| EmbedError::Http(chain(&e)))?;
        Ok(Self {
            api,
            http,
            auth,
            timeout: spec.timeout,
            policy: RetryPolicy::default()
                .with_max_retries(MAX_RETRIES)
                .with_max_server_delay(MAX_SERVER_DELAY),
        })
    }

    /// Sends one batch, retrying what is worth retrying; returns the reply's body.
    async fn send(&self, body: &Value) -> Result<Bytes, MemoryError> {
        let attempts = AtomicU32::new(0);
        let service = format!("{} embeddings", self.api.provider);
        retry(&self.policy, &service, None, &attempts, || {
            self.attempt(body)
        })
        .await
        .map_err(|failure| {
            let tries = attempts.load(Ordering::Relaxed);
            let after = if tries > 1 {
                format!(" (after {tries} attempts)")
            } else {
                String::new()
            };
            MemoryError::Embed {
                message: format!(
                    "{service} at {}: {}{after}",
                    self.api.url,
                    failure.describe()
                ),
                transient: failure.is_transient(),
            }
        })
    }

    async fn attempt(&self, body: &Value) -> Result<Bytes, Failure> {
        let mut request = self.http.post(self.api.url.clone()).json(body);
        if let Some((name, value)) = &self.auth {
            request = request.header(name, value.clone());
        }
        let response = request.send().await.map_err(|e| self.transport(e))?;
        let status = response.status();
        let delay = server_delay(response.headers());
        let bytes = response.bytes().await.map_err(|e| self.transport(e))?;
        if !status.is_success() {
            return Err(Failure::Status {
                status,
                message: error_text(&bytes),
                delay,
            });
        }
        Ok(bytes)
    }

    fn transport(&self, e: reqwest::Error) -> Failure {
        if e.is_timeout() {
            Failure::Other(format!("no reply within {}s", self.timeout.as_secs_f64()))
        } else if e.is_connect() {
            // Nothing reached the server, so another try cannot do anything twice.
            Failure::Connect(chain(&e))
        } else {
            Failure::Other(chain(&e))
        }
    }
}

#[async_trait::async_trait]
impl Embedder for HttpEmbedder {
    fn id(&self) -> String {
        format!("{}/{}/{}", self.api.provider, self.api.model, self.api.dims)
    }

    fn dims(&self) -> usize {
        self.api.dims
    }

    async fn embed(&self, texts: GuardedTexts) -> Result<Vec<Vec<f32>>, MemoryError> {
        let texts = texts.texts();
        let mut out = Vec::with_capacity(texts.len());
        // One batch after another: order is kept for free, and a big import does not hit the
        // provider's rate limit with all its requests at once.
        for batch in texts.chunks(BATCH) {
            let body = self.send(&self.api.body(batch)).await?;
            out.extend(
                self.api
                    .parse(&body, batch.len())
                    .map_err(MemoryError::embed)?,
            );
        }
        Ok(out)
    }
}

/// Why one attempt gave no reply to read.
#[derive(Debug)]
enum Failure {
    Status {
        status: StatusCode,
        message: String,
        delay: Option<Duration>,
    },
    Connect(String),
    Other(String),
}

impl Attempted for Failure {
    fn is_transient(&self) -> bool {
        match self {
            Self::Status { status, .. } => is_retryable_status(status.as_u16()),
            Self::Connect(_) => true,
            Self::Other(_) => false,
        }
    }

    fn server_delay(&self) -> Option<Duration> {
        match self {
            Self::Status { delay, .. } => *delay,
            _ => None,
        }
    }

    fn describe(&self) -> String {
        match self {
            Self::Status {
                status, message, ..
            } => format!("HTTP {status}: {message}"),
            Self::Connect(e) => format!("cannot connect: {e}"),
            Self::Other(e) => e.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use crate::testkit::wire::{mounted, serving};
    use crate::vault::embed::sealed_texts;
    use crate::vault::embed::{build_with_env, EmbedProvider};
    use serde_json::json;
    use std::time::Instant;
    use wiremock::matchers::{body_json, header, method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate, Times};

    const KEY_ENV: &str = "RALPH_TEST_EMBED_KEY";

    fn env_with_key(name: &str) -> Option<String> {
        (name == KEY_ENV).then(|| "sk-test".to_string())
    }

    fn spec(provider: EmbedProvider, model: &str, base: &str, dims: Option<usize>) -> EmbedderSpec {
        EmbedderSpec {
            provider,
            model: model.into(),
            base_url: Some(base.into()),
            api_key_env: Some(KEY_ENV.into()),
            dims,
            timeout: Duration::from_secs(5),
        }
    }

    /// An embedder whose retries wait a millisecond, not half a second.
    fn fast(spec: &EmbedderSpec) -> HttpEmbedder {
        let mut e = HttpEmbedder::new(spec, env_with_key).unwrap();
        e.policy = e.policy.with_base_delay(Duration::from_millis(1));
        e
    }

    /// [`fast`] for `provider`'s `model` at `base`, with the model's own dimensions.
    fn fast_at(provider: EmbedProvider, model: &str, base: &str) -> HttpEmbedder {
        fast(&spec(provider, model, base, None))
    }

    /// What `e` makes of `texts`; the test fails if it cannot.
    async fn embedded(e: &dyn Embedder, texts: Vec<String>) -> Vec<Vec<f32>> {
        e.embed(sealed_texts(texts)).await.unwrap()
    }

    /// Answers every POST to `server` with `reply`, and checks when the server is dropped that
    /// there were `times` of them (`..`: any number).
    async fn post_answers(server: &MockServer, reply: ResponseTemplate, times: impl Into<Times>) {
        Mock::given(method("POST"))
            .respond_with(reply)
            .expect(times)
            .mount(server)
            .await;
    }

    /// Answers the first POST to `server` with `reply`, and the others as mounted after it.
    async fn first_post_answers(server: &MockServer, reply: ResponseTemplate) {
        Mock::given(method("POST"))
            .respond_with(reply)
            .up_to_n_times(1)
            .expect(1)
            .mount(server)
            .await;
    }

    /// Asserts that `e` is `id` and embeds `a` and `b` as the server answered them: [`vector`]s
    /// 0 and 1 of `dims` numbers.
    async fn assert_embeds_a_and_b(e: &dyn Embedder, id: &str, dims: usize) {
        assert_eq!(e.id(), id);
        let out = embedded(e, vec!["a".into(), "b".into()]).await;
        assert_eq!(out, vec![vector(0, dims), vector(1, dims)]);
    }

    /// What `e` says when it cannot embed `texts`.
    async fn embed_err(e: &dyn Embedder, texts: Vec<String>) -> String {
        e.embed(sealed_texts(texts)).await.unwrap_err().to_string()
    }

    /// The error message `err` holds each of `parts`.
    fn assert_says(err: &str, parts: &[&str]) {
        for part in parts {
            assert!(err.contains(part), "{part:?} not in {err}");
        }
    }

    fn texts(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("text {i}")).collect()
    }

    /// A vector of `dims` numbers that says which text it is for.
    fn vector(i: usize, dims: usize) -> Vec<f32> {
        let mut v = vec![0.0; dims];
        v[0] = i as f32;
        v
    }

    fn openai_reply(n: usize, dims: usize) -> Value {
        // Reversed, as the API does not promise order: `index` must be what counts.
        let data: Vec<Value> = (0..n)
            .rev()
            .map(|i| json!({"object": "embedding", "index": i, "embedding": vector(i, dims)}))
            .collect();
        json!({"object": "list", "data": data, "model": "text-embedding-3-small",
               "usage": {"prompt_tokens": 8, "total_tokens": 8}})
    }

    #[tokio::test]
    async fn openai_request_and_reply() {
        let server = mounted(
            Mock::given(method("POST"))
                .and(path("/v1/embeddings"))
                .and(header("authorization", "Bearer sk-test"))
                .and(header("content-type", "application/json"))
                .and(body_json(json!({
                    "model": "text-embedding-3-small",
                    "input": ["a", "b"],
                    "dimensions": 4
                }))),
            ResponseTemplate::new(200).set_body_json(openai_reply(2, 4)),
            1,
        )
        .await;
        let s = spec(
            EmbedProvider::OpenAi,
            "text-embedding-3-small",
            &format!("{}/v1/", server.uri()),
            Some(4),
        );
        let e = build_with_env(&s, env_with_key).unwrap();
        assert_eq!(e.dims(), 4);
        assert_embeds_a_and_b(&*e, "openai/text-embedding-3-small/4", 4).await;
    }

    #[tokio::test]
    async fn openai_sends_no_dimensions_unless_configured() {
        let server = mounted(
            Mock::given(method("POST"))
                .and(path("/embeddings"))
                .and(body_json(
                    json!({"model": "text-embedding-3-small", "input": ["a"]}),
                )),
            ResponseTemplate::new(200).set_body_json(openai_reply(1, 1536)),
            1,
        )
        .await;
        let e = fast_at(EmbedProvider::OpenAi, "", &server.uri());
        assert_eq!(e.id(), "openai/text-embedding-3-small/1536");
        assert_eq!(embedded(&e, vec!["a".into()]).await[0].len(), 1536);
    }

    #[tokio::test]
    async fn ollama_request_and_reply() {
        let server = mounted(
            Mock::given(method("POST"))
                .and(path("/api/embed"))
                .and(body_json(
                    json!({"model": "all-minilm", "input": ["a", "b"]}),
                )),
            ResponseTemplate::new(200).set_body_json(json!({
                "model": "all-minilm",
                "embeddings": [vector(0, 384), vector(1, 384)],
                "total_duration": 14143917, "load_duration": 1019500, "prompt_eval_count": 8
            })),
            1,
        )
        .await;
        // Ollama needs no key, whatever the environment holds.
        let s = EmbedderSpec {
            api_key_env: None,
            ..spec(EmbedProvider::Ollama, "all-minilm", &server.uri(), None)
        };
        let e = build_with_env(&s, |_| None).unwrap();
        assert_embeds_a_and_b(&*e, "ollama/all-minilm/384", 384).await;
        let sent = &server.received_requests().await.unwrap()[0];
        assert!(!sent.headers.contains_key("authorization"));
    }

    #[tokio::test]
    async fn gemini_request_and_reply() {
        let server = mounted(
            Mock::given(method("POST"))
                .and(path(
                    "/v1beta/models/gemini-embedding-001:batchEmbedContents",
                ))
                .and(header("x-goog-api-key", "sk-test"))
                .and(body_json(json!({"requests": [
                    {"model": "models/gemini-embedding-001", "content": {"parts": [{"text": "a"}]},
                     "outputDimensionality": 3},
                    {"model": "models/gemini-embedding-001", "content": {"parts": [{"text": "b"}]},
                     "outputDimensionality": 3}
                ]}))),
            ResponseTemplate::new(200).set_body_json(json!({
                "embeddings": [{"values": vector(0, 3)}, {"values": vector(1, 3)}]
            })),
            1,
        )
        .await;
        let s = spec(
            EmbedProvider::Gemini,
            "models/gemini-embedding-001",
            &format!("{}/v1beta", server.uri()),
            Some(3),
        );
        let e = build_with_env(&s, env_with_key).unwrap();
        assert_embeds_a_and_b(&*e, "gemini/gemini-embedding-001/3", 3).await;
        let sent = &server.received_requests().await.unwrap()[0];
        assert!(!sent.headers.contains_key("authorization"));
        assert!(
            sent.url.query().is_none(),
            "the key goes in a header, not the URL"
        );
    }

    #[tokio::test]
    async fn unauthorised_names_the_provider_and_the_server_message() {
        let server = serving(
            ResponseTemplate::new(401).set_body_json(json!({"error": {
                "message": "Incorrect API key provided: sk-test.", "type": "invalid_request_error",
                "param": null, "code": "invalid_api_key"}})),
            1,
        )
        .await;
        let e = fast_at(EmbedProvider::OpenAi, "", &server.uri());
        let err = embed_err(&e, vec!["a".into()]).await;
        assert!(err.starts_with("openai embeddings at "), "{err}");
        assert_says(&err, &["401 Unauthorized", "Incorrect API key provided"]);
    }

    #[tokio::test]
    async fn a_server_error_is_retried() {
        let server = MockServer::start().await;
        first_post_answers(
            &server,
            ResponseTemplate::new(500).set_body_string("upstream hiccup"),
        )
        .await;
        post_answers(
            &server,
            ResponseTemplate::new(200).set_body_json(json!({
                "embeddings": [vector(7, 768)]})),
            1,
        )
        .await;
        let e = fast_at(
            EmbedProvider::Ollama,
            "nomic-embed-text:latest",
            &server.uri(),
        );
        assert_eq!(embedded(&e, vec!["a".into()]).await, vec![vector(7, 768)]);
    }

    #[tokio::test]
    async fn retries_give_up_after_three_tries() {
        let server = serving(
            ResponseTemplate::new(503).set_body_json(json!({"error": {
                "code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}})),
            3,
        )
        .await;
        let e = fast_at(EmbedProvider::Gemini, "text-embedding-004", &server.uri());
        let err = embed_err(&e, vec!["a".into()]).await;
        assert_says(
            &err,
            &[
                "gemini embeddings",
                "The model is overloaded.",
                "after 3 attempts",
            ],
        );
    }

    #[tokio::test]
    async fn a_rate_limit_waits_as_long_as_the_server_asks() {
        let server = MockServer::start().await;
        first_post_answers(
            &server,
            ResponseTemplate::new(429).insert_header("retry-after", "1"),
        )
        .await;
        post_answers(
            &server,
            ResponseTemplate::new(200).set_body_json(openai_reply(1, 1536)),
            ..,
        )
        .await;
        let e = fast_at(EmbedProvider::OpenAi, "", &server.uri());
        let start = Instant::now();
        embedded(&e, vec!["a".into()]).await;
        assert!(
            start.elapsed() >= Duration::from_millis(950),
            "{:?}",
            start.elapsed()
        );
    }

    #[tokio::test]
    async fn a_refused_connection_is_retried_then_reported() {
        // Bind then drop: nothing listens on the port.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let e = fast_at(
            EmbedProvider::Ollama,
            "all-minilm",
            &format!("http://127.0.0.1:{port}"),
        );
        let err = embed_err(&e, vec!["a".into()]).await;
        assert_says(&err, &["cannot connect", "after 3 attempts"]);
    }

    #[tokio::test]
    async fn a_vector_of_the_wrong_length_is_an_error() {
        let server = serving(
            ResponseTemplate::new(200).set_body_json(openai_reply(2, 512)),
            ..,
        )
        .await;
        let e = fast_at(
            EmbedProvider::OpenAi,
            "text-embedding-3-small",
            &server.uri(),
        );
        let err = embed_err(&e, vec!["a".into(), "b".into()]).await;
        assert_says(
            &err,
            &["512 numbers, expected 1536", "memory.embedder.dims"],
        );
    }

    #[tokio::test]
    async fn a_wrong_count_or_garbage_is_an_error() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path("/count/api/embed"))
            .respond_with(
                ResponseTemplate::new(200).set_body_json(json!({"embeddings": [vector(0, 384)]})),
            )
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .and(path("/garbage/api/embed"))
            .respond_with(ResponseTemplate::new(200).set_body_string("<html>proxy login</html>"))
            .mount(&server)
            .await;
        let at = |p: &str| {
            fast_at(
                EmbedProvider::Ollama,
                "all-minilm",
                &format!("{}/{p}", server.uri()),
            )
        };
        let err = embed_err(&at("count"), texts(2)).await;
        assert!(err.contains("returned 1 vectors for 2 texts"), "{err}");
        let err = embed_err(&at("garbage"), texts(1)).await;
        assert!(err.starts_with("ollama: unreadable reply"), "{err}");
        assert!(err.contains("proxy login"), "{err}");
    }

    #[tokio::test]
    async fn openai_indices_must_cover_every_text() {
        let server = MockServer::start().await;
        post_answers(&server, ResponseTemplate::new(200).set_body_json(json!({"data": [
                {"index": 0, "embedding": vector(0, 1536)}, {"index": 0, "embedding": vector(0, 1536)}]})), ..).await;
        let e = fast_at(EmbedProvider::OpenAi, "", &server.uri());
        let err = embed_err(&e, texts(2)).await;
        assert!(err.contains("`index`"), "{err}");
    }

    #[tokio::test]
    async fn a_hundred_texts_go_as_two_batches_in_order() {
        let server = MockServer::start().await;
        for n in [BATCH, 4] {
            let start = if n == BATCH { 0 } else { BATCH };
            let data: Vec<Value> = (0..n)
                .map(|i| json!({"index": i, "embedding": vector(start + i, 8)}))
                .collect();
            Mock::given(method("POST"))
                .and(body_json(
                    json!({"model": "m", "input": texts(100)[start..start + n], "dimensions": 8}),
                ))
                .respond_with(ResponseTemplate::new(200).set_body_json(json!({"data": data})))
                .expect(1)
                .mount(&server)
                .await;
        }
        let e = fast(&spec(EmbedProvider::OpenAi, "m", &server.uri(), Some(8)));
        let out = embedded(&e, texts(100)).await;
        assert_eq!(out, (0..100).map(|i| vector(i, 8)).collect::<Vec<_>>());
        assert_eq!(server.received_requests().await.unwrap().len(), 2);
    }

    #[tokio::test]
    async fn no_texts_send_no_request() {
        let server = MockServer::start().await;
        let e = fast_at(EmbedProvider::OpenAi, "", &server.uri());
        assert!(embedded(&e, vec![]).await.is_empty());
        assert!(server.received_requests().await.unwrap().is_empty());
    }

    #[test]
    fn the_key_never_shows_in_debug() {
        let e = HttpEmbedder::new(
            &spec(EmbedProvider::OpenAi, "", "http://localhost:1", None),
            env_with_key,
        )
        .unwrap();
        assert!(!format!("{e:?}").contains("sk-test"));
    }
}
