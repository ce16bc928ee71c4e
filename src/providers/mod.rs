//! LLM providers: the real [`LlmClient`]s, and the [`Router`] that picks one by the provider
//! part of a model name (`openai/gpt-4.1`).
//!
//! - [`openai`]: OpenAI and every OpenAI-compatible server, through `async-openai`.
//! - [`retry`]: the retry policy every HTTP call goes through.
//! - [`replay`]: `--record FILE` and `--replay FILE`.
//! - [`prices`]: the bundled price table; [`tokens`]: prompt token counts before a call.
//!
//! [`build`] makes what a run talks to from an [`LlmSource`]: live, live and recorded, or replayed.

pub mod openai;
pub mod options;
pub mod prices;
pub mod replay;
pub mod retry;
pub mod tokens;

#[cfg(test)]
pub(crate) mod testkit;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use ralph_actors::llm::{ChatReply, ChatRequest, LlmClient, LlmError};

use crate::models::ModelName;

pub use openai::OpenAiClient;
pub use options::ClientOptions;
pub use prices::{bundled as bundled_prices, with_overrides as prices_with_overrides};
pub use replay::{Exchange, Recorder, ReplayClient, ReplayError};
pub use retry::RetryPolicy;
pub use tokens::TiktokenCounter;

/// A client for one provider, as the router holds it.
pub trait Provider: LlmClient {
    /// How a user reaches it, for the "available" list of errors.
    fn describe(&self) -> String;
    /// Fails when a call could not be sent (no key, say), without sending anything.
    fn check(&self) -> Result<(), LlmError> {
        Ok(())
    }
}

impl Provider for OpenAiClient {
    fn describe(&self) -> String {
        format!(
            "{} (any OpenAI-compatible server via {})",
            openai::PROVIDER,
            openai::BASE_URL_ENV
        )
    }

    fn check(&self) -> Result<(), LlmError> {
        OpenAiClient::check(self)
    }
}

/// Routes each request to the client of its model's provider.
#[derive(Default)]
pub struct Router {
    providers: BTreeMap<String, Arc<dyn Provider>>,
}

impl std::fmt::Debug for Router {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Router")
            .field("providers", &self.providers.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl Router {
    /// A router with no providers: every request is a configuration error.
    pub fn new() -> Self {
        Self::default()
    }

    /// Every provider this build has, configured from the options.
    pub fn live(openai: ClientOptions) -> Result<Self, LlmError> {
        Ok(Self::new().with_provider(openai::PROVIDER, OpenAiClient::new(openai)?))
    }

    pub fn with_provider(
        mut self,
        name: impl Into<String>,
        client: impl Provider + 'static,
    ) -> Self {
        self.providers.insert(name.into(), Arc::new(client));
        self
    }

    fn resolve(&self, model: &str) -> Result<(ModelName, &Arc<dyn Provider>), LlmError> {
        let name = ModelName::parse(model).map_err(|message| LlmError::Config {
            model: model.into(),
            message,
        })?;
        match self.providers.get(&name.provider) {
            Some(p) => Ok((name, p)),
            None => {
                let available: Vec<String> =
                    self.providers.values().map(|p| p.describe()).collect();
                let available = if available.is_empty() {
                    "none".to_string()
                } else {
                    available.join(", ")
                };
                Err(LlmError::Config {
                    model: model.into(),
                    message: format!(
                        "the {} provider is not available in this build; available: {available}",
                        name.provider
                    ),
                })
            }
        }
    }

    /// Whether calls to `model` could be sent: its provider exists here and has what it needs
    /// (a key for the official OpenAI API). For a start-up check, before any work is done.
    pub fn check(&self, model: &str) -> Result<(), LlmError> {
        self.resolve(model)?.1.check()
    }
}

#[async_trait::async_trait]
impl LlmClient for Router {
    async fn complete(&self, mut request: ChatRequest) -> Result<ChatReply, LlmError> {
        let (name, provider) = self.resolve(&request.model)?;
        // Aliases and bare names reach the client in canonical form.
        request.model = name.to_string();
        provider.complete(request).await
    }
}

/// What a run talks to, as the command line chose it.
#[derive(Debug, Clone)]
pub enum LlmSource {
    /// The live providers.
    Live(ClientOptions),
    /// The live providers, every exchange appended to the file (`--record FILE`).
    Record(ClientOptions, PathBuf),
    /// The recording played back (`--replay FILE`): no network, no key.
    Replay(PathBuf),
}

/// Builds the client for a run, checking that every model in `models` can be called (its
/// provider exists in this build and has what it needs, such as a key), so a run fails before any
/// work is done. Files are opened here too. A replay needs no provider and checks nothing.
pub fn build(source: &LlmSource, models: &[&str]) -> Result<Arc<dyn LlmClient>, LlmError> {
    let live = |openai: &ClientOptions| -> Result<Router, LlmError> {
        let router = Router::live(openai.clone())?;
        models.iter().try_for_each(|m| router.check(m))?;
        Ok(router)
    };
    Ok(match source {
        LlmSource::Live(openai) => Arc::new(live(openai)?),
        LlmSource::Record(openai, path) => Arc::new(Recorder::create(path, live(openai)?)?),
        LlmSource::Replay(path) => Arc::new(ReplayClient::open(path)?),
    })
}

#[cfg(test)]
mod tests {
    use super::testkit::*;
    use super::*;
    use wiremock::matchers::method;
    use wiremock::{Mock, MockServer};

    #[tokio::test]
    async fn routes_by_provider_and_resolves_aliases() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(sse_reply(&["ok"], Some(usage_json(5, 1, 0))))
            .mount(&server)
            .await;
        let router = Router::new().with_provider("openai", client(&server, |_| {}));
        let reply = router.complete(request("gpt-mini")).await.expect("reply");
        assert_eq!(reply.text, "ok");
        assert_eq!(last_body(&server).await["model"], "gpt-4.1-mini");
        assert!(router.check("openai/gpt-4.1").is_ok());
    }

    #[tokio::test]
    async fn other_providers_are_a_configuration_error() {
        let server = MockServer::start().await;
        let router = Router::new().with_provider("openai", client(&server, |_| {}));
        let err = router
            .complete(request("anthropic/claude-sonnet-4-5"))
            .await
            .expect_err("unavailable");
        let text = err.to_string();
        assert!(matches!(err, LlmError::Config { .. }), "{err:?}");
        assert!(
            text.contains("the anthropic provider is not available in this build; available: openai (any OpenAI-compatible server via OPENAI_BASE_URL)"),
            "{text}"
        );
        assert!(matches!(
            router.check("acme/x"),
            Err(LlmError::Config { .. })
        ));
    }

    #[tokio::test]
    async fn builds_each_source() {
        let no_key = ClientOptions {
            base_url: Some("https://api.openai.com/v1".into()),
            api_key: None,
            api_key_env: "RALPH_TEST_SURELY_UNSET_KEY".into(),
            ..ClientOptions::default()
        };
        // Live without a key: refused at build time when a model needs the key, named.
        let err = build(&LlmSource::Live(no_key.clone()), &["openai/gpt-4.1"]).err();
        assert!(
            matches!(&err, Some(LlmError::Auth { env_var, .. }) if env_var == "RALPH_TEST_SURELY_UNSET_KEY"),
            "{err:?}"
        );
        // A provider this build lacks is a configuration error.
        let err = build(
            &LlmSource::Live(no_key.clone()),
            &["anthropic/claude-sonnet-4-5"],
        )
        .err();
        assert!(matches!(&err, Some(LlmError::Config { .. })), "{err:?}");
        // With no model to check it builds, and the first call fails before sending anything.
        let live = build(&LlmSource::Live(no_key.clone()), &[]).expect("live");
        let err = live
            .complete(request("openai/gpt-4.1"))
            .await
            .expect_err("no key");
        assert!(matches!(&err, LlmError::Auth { .. }), "{err:?}");

        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("rec.jsonl");
        build(&LlmSource::Record(no_key, file.clone()), &[]).expect("record");
        assert!(file.exists(), "the recording is created up front");

        let replay =
            build(&LlmSource::Replay(file), &["anthropic/claude-sonnet-4-5"]).expect("replay");
        let err = replay
            .complete(request("openai/gpt-4.1"))
            .await
            .expect_err("empty");
        assert!(matches!(err, LlmError::Replay(_)));
        let err = build(&LlmSource::Replay(dir.path().join("missing.jsonl")), &[]).err();
        assert!(matches!(err, Some(LlmError::Replay(m)) if m.contains("missing.jsonl")));
    }
}
