//! The client for `openai/<model>` names: OpenAI's endpoint and key (the official API needs one,
//! a local server may not), and the parameters OpenAI's models take.

use async_openai::config::{OpenAIConfig, OPENAI_API_BASE};
use async_openai::types::chat::CreateChatCompletionRequest;
use ralph_actors::ports::llm::{ChatReply, ChatRequest, GuardedRequest, LlmClient, LlmError};

use super::request::{chat_body, ChatBody};
use super::wire::Wire;
use crate::http::retry::RetryPolicy;
use crate::providers::http;
use crate::providers::options::ClientOptions;
use crate::providers::Provider;

pub const PROVIDER: &str = "openai";
pub const DEFAULT_API_KEY_ENV: &str = "OPENAI_API_KEY";
pub const BASE_URL_ENV: &str = "OPENAI_BASE_URL";
/// The base URL when neither the options nor [`BASE_URL_ENV`] name one.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
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
    async fn complete(&self, request: GuardedRequest) -> Result<ChatReply, LlmError> {
        let model = http::model_id(PROVIDER, &request.model)?;
        self.check()?;
        self.wire
            .complete(self.body(model, &request), &request, model)
            .await
    }
}

impl Provider for OpenAiClient {
    fn describe(&self) -> String {
        format!("{PROVIDER} (any OpenAI-compatible server via {BASE_URL_ENV})")
    }

    fn check(&self) -> Result<(), LlmError> {
        OpenAiClient::check(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::server::stalling_then;
    use crate::testkit::wire::*;
    use std::sync::atomic::Ordering;
    use std::time::{Duration, Instant};
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};

    #[tokio::test]
    async fn streams_text_and_usage() {
        let server = mounted(
            Mock::given(method("POST")).and(path("/v1/chat/completions")),
            sse_reply(&["Hel", "lo"], Some(usage_json(120, 7, 100))),
            1,
        )
        .await;
        let reply = reply_to(&client(&server, |_| {}), "openai/gpt-4.1-mini").await;
        assert_eq!(reply.text, "Hello");
        assert_eq!(reply.model, "gpt-4.1-mini-2025-04-14");
        assert_eq!(reply.usage, usage_of(120, 7, 100));

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
        let reply = reply_to(&client(&server, |o| o.stream = false), "openai/gpt-4o").await;
        assert_eq!(reply.text, "All done.");
        assert_eq!(reply.usage, usage_of(50, 3, 20));
        let sent = last_body(&server).await;
        assert_eq!(sent["max_completion_tokens"], 321);
        assert!(sent.get("stream").is_none_or(|s| s == false));
        assert!(sent.get("stream_options").is_none());
    }

    #[tokio::test]
    async fn estimates_missing_usage() {
        let server = serving(sse_reply(&["some ", "text"], None), ..).await;
        let reply = reply_to(&client(&server, |_| {}), "openai/gpt-4.1").await;
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
        let err = failure(&client(&server, |_| {}), "openai/gpt-4o").await;
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
        let err = failure(&client(&server, |_| {}), "openai/gpt-4o").await;
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
        let err = failure(&client(&server, |_| {}), "openai/gpt-4o").await;
        assert!(
            matches!(&err, LlmError::ContextTooLong { message, .. } if message.contains("context length")),
            "{err:?}"
        );
    }

    /// A provider's own price for a call: OpenRouter's `usage.cost` in a whole reply's body,
    /// LiteLLM's `x-litellm-response-cost` header (which wins when both are there).
    #[tokio::test]
    async fn reads_the_cost_a_provider_reports() {
        let mut usage = usage_json(50, 3, 0);
        usage["cost"] = serde_json::json!(0.000_321);
        let server = serving(json_reply("All done.", Some(usage.clone())), 1).await;
        let reply = reply_to(&client(&server, |o| o.stream = false), "openai/gpt-4o").await;
        assert_eq!(reply.cost_usd, Some(0.000_321));
        assert_eq!(reply.text, "All done.", "the body is handed on whole");
        assert_eq!(reply.usage.input_tokens, 50);

        let server = serving(
            json_reply("ok", Some(usage)).insert_header("x-litellm-response-cost", "0.00125"),
            1,
        )
        .await;
        let reply = reply_to(&client(&server, |o| o.stream = false), "openai/gpt-4o").await;
        assert_eq!(reply.cost_usd, Some(0.00125));

        let server = serving(json_reply("ok", Some(usage_json(5, 1, 0))), 1).await;
        let reply = reply_to(&client(&server, |o| o.stream = false), "openai/gpt-4o").await;
        assert_eq!(
            reply.cost_usd, None,
            "no report, no cost: the price table decides"
        );
    }

    /// Found against llama.cpp's server: its error bodies carry a numeric `code`, which
    /// async-openai cannot read; they are still the typed errors they are.
    #[tokio::test]
    async fn llama_cpp_and_vllm_error_bodies_are_typed() {
        let llama = r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":4301,"n_ctx":4096}}"#;
        let server = serving(
            ResponseTemplate::new(400).set_body_raw(llama, "application/json"),
            1,
        )
        .await;
        let err = failure(&client(&server, |_| {}), "openai/smollm2-135m").await;
        assert!(
            matches!(&err, LlmError::ContextTooLong { message, .. } if message == "the request exceeds the available context size, try increasing it"),
            "{err:?}"
        );
        let vllm = r#"{"object":"error","message":"The model `qwen` does not exist.","type":"NotFoundError","param":null,"code":404}"#;
        let server = serving(
            ResponseTemplate::new(404).set_body_raw(vllm, "application/json"),
            1,
        )
        .await;
        let err = failure(&client(&server, |_| {}), "openai/qwen").await;
        assert!(
            matches!(&err, LlmError::Request { status: 404, message, .. } if message == "The model `qwen` does not exist."),
            "{err:?}"
        );
        // A retried status with such a body: after the retries, its message, not raw JSON.
        let busy = r#"{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}"#;
        let server = serving(
            ResponseTemplate::new(503).set_body_raw(busy, "application/json"),
            1,
        )
        .await;
        let err = failure(&client(&server, |o| o.max_retries = 0), "openai/qwen").await;
        assert!(
            matches!(&err, LlmError::Server { status: 503, message, .. } if message == "Loading model"),
            "{err:?}"
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
        let reply = reply_to(&client(&server, |o| o.stream = false), "openai/gpt-4o").await;
        assert_eq!(reply.text, "ok");
        let waited = started.elapsed();
        // Our own backoff in these tests is 10 ms, so only the header explains the wait.
        assert!(
            waited >= Duration::from_millis(380) && waited < Duration::from_secs(3),
            "{waited:?}"
        );
    }

    #[tokio::test]
    async fn rate_limited_after_the_retries() {
        let server = serving(error_reply(429, "slow down", "rate_limit_exceeded"), 3).await;
        let err = failure(&client(&server, |o| o.max_retries = 2), "openai/gpt-4o").await;
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
        let err = failure(&client(&server, |_| {}), "openai/gpt-4o").await;
        assert!(
            matches!(err, LlmError::Request { status: 429, .. }),
            "{err:?}"
        );
    }

    #[tokio::test]
    async fn a_bad_chunk_is_an_invalid_reply() {
        let server = MockServer::start().await;
        let body = "data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\ndata: {oops\n\ndata: [DONE]\n\n";
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(200).set_body_raw(body, "text/event-stream"))
            .mount(&server)
            .await;
        let err = failure(&client(&server, |_| {}), "openai/gpt-4o").await;
        assert!(matches!(err, LlmError::InvalidReply { .. }), "{err:?}");
    }

    #[tokio::test]
    async fn a_stall_then_a_whole_stream_succeeds() {
        let (url, served) =
            stalling_then("text/event-stream", FIRST_CHUNK, 1, &whole_stream()).await;
        let stalls_briefly = client_at(&format!("{url}/v1"), |o| {
            o.idle_timeout = Duration::from_millis(200)
        });
        let reply = reply_to(&stalls_briefly, "openai/gpt-4o").await;
        // Only the second attempt's text: the stalled one is dropped.
        assert_eq!(reply.text, "Hello");
        assert_eq!(served.load(Ordering::SeqCst), 2);
        // The server had begun the stalled reply: the caller charges it.
        assert_eq!(reply.lost_attempts, 1);
    }

    #[tokio::test]
    async fn a_closed_port_is_a_network_error() {
        let port = closed_port();
        let c = client_at(&format!("http://127.0.0.1:{port}/v1"), |o| {
            o.max_retries = 1
        });
        let err = failure(&c, "openai/gpt-4o").await;
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
        let err = failure(&c, "openai/gpt-4o").await;
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
        let err = failure(&client(&server, |_| {}), "anthropic/claude-sonnet-4-5").await;
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
