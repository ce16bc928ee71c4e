//! Azure OpenAI through `async-openai`'s [`AzureConfig`]: `azure/<deployment>` names a
//! deployment of the resource at `AZURE_OPENAI_ENDPOINT`, called at
//! `{endpoint}/openai/deployments/{deployment}/chat/completions?api-version=...` with the key in
//! the `api-key` header.
//!
//! The wire protocol is OpenAI's, so the call itself is OpenAI's own (`openai::Wire`: the
//! request, the retries, the stream reading, the error mapping and the usage), with Azure's
//! config; what is Azure's here is the endpoint, the deployment name, and which parameters the
//! `api-version` knows.

use async_openai::config::AzureConfig;
use async_openai::types::chat::CreateChatCompletionRequest;
use ralph_actors::ports::llm::{ChatReply, ChatRequest, GuardedRequest, LlmClient, LlmError};
use reqwest::header::HeaderValue;

use super::http::{missing_key, non_empty};
use super::openai::{self, chat_body, ChatBody, Wire};
use super::options::ClientOptions;
use crate::http::retry::RetryPolicy;

pub const PROVIDER: &str = "azure";
pub const API_KEY_ENV: &str = "AZURE_OPENAI_API_KEY";
pub const ENDPOINT_ENV: &str = "AZURE_OPENAI_ENDPOINT";
/// The latest generally available `api-version` of the data-plane inference API.
pub const DEFAULT_API_VERSION: &str = "2024-10-21";
/// The first `api-version` that knows `max_completion_tokens` (which reasoning deployments
/// require) and `stream_options` (usage at the end of a stream); older ones reject both.
const FIRST_MODERN_API_VERSION: &str = "2024-09-01";

/// An [`LlmClient`] for `azure/<deployment>` names.
pub struct AzureClient {
    /// The call's settings; its config, one per deployment, is made per call.
    wire: Wire<()>,
    /// The resource endpoint, or why there is no usable one. Kept rather than failed on, so a
    /// run whose roles never call Azure needs no Azure settings.
    endpoint: Result<String, String>,
    key: Option<String>,
    api_version: String,
}

impl std::fmt::Debug for AzureClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AzureClient")
            .field("endpoint", &self.endpoint)
            .field("has_key", &self.key.is_some())
            .field("api_version", &self.api_version)
            .field("stream", &self.wire.stream)
            .finish_non_exhaustive()
    }
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
        let api_key_env =
            non_empty(Some(opts.api_key_env.clone())).unwrap_or_else(|| API_KEY_ENV.into());
        let key = non_empty(opts.api_key.clone()).or_else(|| non_empty(env(&api_key_env)));
        Ok(Self {
            // Azure authenticates with `api-key`; there is no `Authorization` header to strip.
            wire: Wire::new(PROVIDER, &opts, api_key_env, false, ())?,
            endpoint: endpoint(opts.base_url, &env),
            key,
            api_version: non_empty(opts.api_version).unwrap_or_else(|| DEFAULT_API_VERSION.into()),
        })
    }

    /// Replaces the backoff timings (tests use short ones); keeps `max_retries` as given.
    pub fn with_retry_policy(mut self, policy: RetryPolicy) -> Self {
        self.wire.policy = policy;
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
        let key = self
            .key
            .as_deref()
            .ok_or_else(|| missing_key(PROVIDER, &self.wire.api_key_env, endpoint))?;
        // `AzureConfig` would panic on a key it cannot put in a header.
        if HeaderValue::from_str(key).is_err() {
            return Err(LlmError::Auth {
                provider: PROVIDER.into(),
                env_var: self.wire.api_key_env.clone(),
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
            stream: self.wire.stream,
            stream_usage: self.wire.stream && modern,
        })
    }
}

#[async_trait::async_trait]
impl LlmClient for AzureClient {
    async fn complete(&self, request: GuardedRequest) -> Result<ChatReply, LlmError> {
        let deployment = self.deployment(&request.model)?;
        let (endpoint, key) = self.endpoint_and_key()?;
        let config = AzureConfig::new()
            .with_api_base(endpoint)
            .with_api_key(key)
            .with_deployment_id(deployment)
            .with_api_version(&self.api_version);
        self.wire
            .with_config(config)
            .complete(self.body(deployment, &request), &request, deployment)
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

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::providers::conformance::{kind_of, Wire};
    use crate::providers::Provider;
    use crate::testkit::wire::*;
    use serde_json::json;
    use std::time::{Duration, Instant};
    use wiremock::matchers::{header, method, path, query_param};
    use wiremock::{Mock, MockServer, ResponseTemplate};

    const CHAT: &str = "/openai/deployments/prod-chat/chat/completions";
    const KEY: &str = "azure-test-key";

    /// A client for `server` as the resource endpoint, key [`KEY`], with an empty environment.
    fn azure(server: &MockServer, tweak: impl FnOnce(&mut ClientOptions)) -> AzureClient {
        azure_at(&server.uri(), tweak)
    }

    /// Azure's answers, for the providers' conformance table: OpenAI's streams, its own errors.
    pub(crate) fn wire() -> Wire {
        Wire {
            name: "azure",
            model: "azure/prod-chat",
            client: |base, tweak| Box::new(azure_at(base, tweak)),
            error: |status, message| {
                azure_error(
                    status,
                    kind_of(status, "429", "InternalServerError"),
                    message,
                )
            },
            ..openai_wire()
        }
    }

    fn azure_at(endpoint: &str, tweak: impl FnOnce(&mut ClientOptions)) -> AzureClient {
        let opts = options_at(endpoint, API_KEY_ENV, |o| {
            o.api_key = Some(KEY.into());
            o.api_version = Some(DEFAULT_API_VERSION.into());
            tweak(o)
        });
        let new = |o| AzureClient::with_env(o, |_| None);
        with_fast_retries(opts, new, AzureClient::with_retry_policy)
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
        let server = mounted(
            chat_call(DEFAULT_API_VERSION),
            sse_reply(&["Hel", "lo"], Some(usage_json(120, 7, 100))),
            1,
        )
        .await;
        let reply = reply_to(&azure(&server, |_| {}), "azure/prod-chat").await;
        assert_eq!(reply.text, "Hello");
        assert_eq!(reply.model, SERVED_MODEL);
        assert_eq!(reply.usage, usage_of(120, 7, 100));
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
        let server = mounted(
            chat_call(DEFAULT_API_VERSION),
            json_reply("All done.", Some(usage_json(50, 3, 0))),
            1,
        )
        .await;
        let reply = reply_to(&azure(&server, |o| o.stream = false), "azure/prod-chat").await;
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
        let server = mounted(chat_call("2024-06-01"), sse_reply(&["ok"], None), 1).await;
        let reply = reply_to(
            &azure(&server, |o| o.api_version = Some("2024-06-01".into())),
            "azure/prod-chat",
        )
        .await;
        // No usage in the stream before 2024-09-01: estimated.
        assert!(reply.usage.input_tokens > 5, "{:?}", reply.usage);
        let sent = last_body(&server).await;
        assert_eq!(sent["max_tokens"], 321);
        assert!(sent.get("max_completion_tokens").is_none());
        assert!(sent.get("stream_options").is_none());
    }

    #[tokio::test]
    async fn unauthorized_names_the_key_variable() {
        let server = mounted(
            chat_call(DEFAULT_API_VERSION),
            azure_error(
                401,
                "401",
                "Access denied due to invalid subscription key or wrong API endpoint.",
            ),
            1,
        )
        .await;
        let err = failure(&azure(&server, |_| {}), "azure/prod-chat").await;
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
        let reply = reply_to(&azure(&server, |_| {}), "azure/prod-chat").await;
        assert_eq!(reply.text, "ok");
        let waited = started.elapsed();
        assert!(
            waited >= Duration::from_millis(280) && waited < Duration::from_millis(950),
            "{waited:?}"
        );
    }

    #[tokio::test]
    async fn a_stalled_stream_is_sent_again() {
        use crate::testkit::server::stalling_then;
        use std::sync::atomic::Ordering;
        let client = |url: String, retries: u32| {
            azure_at(&url, |o| {
                o.idle_timeout = Duration::from_millis(200);
                o.max_retries = retries;
            })
        };
        let (url, served) =
            stalling_then("text/event-stream", FIRST_CHUNK, 1, &whole_stream()).await;
        let reply = reply_to(&client(url, 3), "azure/prod-chat").await;
        assert_eq!(reply.text, "Hello");
        assert_eq!(served.load(Ordering::SeqCst), 2);
        // The server had begun the stalled reply: the caller charges it.
        assert_eq!(reply.lost_attempts, 1);
        // One that stays stalled: the conformance table (`providers::conformance`).
    }

    #[tokio::test]
    async fn errors_name_azure() {
        let server = mounted(
            chat_call(DEFAULT_API_VERSION),
            ResponseTemplate::new(500).set_body_string("upstream exploded"),
            2,
        )
        .await;
        let err = failure(&azure(&server, |o| o.max_retries = 1), "azure/prod-chat").await;
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
        let err = failure(&azure(&missing, |_| {}), "azure/prod-chat").await;
        assert!(
            matches!(&err, LlmError::Request { provider, status: 404, message } if provider == PROVIDER && message.contains("deployment")),
            "{err:?}"
        );
    }

    #[tokio::test]
    async fn the_endpoint_may_end_in_openai() {
        let server = mounted(
            chat_call(DEFAULT_API_VERSION),
            sse_reply(&["ok"], Some(usage_json(1, 1, 0))),
            1,
        )
        .await;
        let c = azure(&server, |o| {
            o.base_url = Some(format!("{}/openai/", server.uri()))
        });
        reply_to(&c, "azure/prod-chat").await;
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
        let err = failure(&c, "azure/prod-chat").await;
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
