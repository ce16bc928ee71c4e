//! The [`Router`]: one client per provider, each request sent to its model's provider, and
//! for each role the first of its models that can be called.

use std::collections::BTreeMap;
use std::sync::Arc;

use ralph_actors::ports::llm::{ChatReply, GuardedRequest, LlmClient, LlmError};
use ralph_actors::role::Role;
use ralph_actors::settings::ModelSpec;

use super::anthropic::{self, AnthropicClient};
use super::azure::{self, AzureClient};
use super::gemini::{self, GeminiClient};
use super::limits::{Limited, Limiter, RateLimits};
use super::ollama::{self, OllamaClient};
use super::openai::{self, OpenAiClient};
use super::options::Providers;
use super::prices;
use super::provider::Provider;
use crate::models::ModelName;

fn limited<P: Provider + 'static>(client: P, limiter: Option<Limiter>) -> Arc<dyn Provider> {
    match limiter {
        Some(l) => Arc::new(Limited::new(client, l)),
        None => Arc::new(client),
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

    /// Every provider this build has, each configured from its setup and, when the setup sets
    /// a rate limit, behind one limiter that every role of the run shares.
    pub fn live(providers: &Providers) -> Result<Self, LlmError> {
        // The connection pool is built beside the run's start, not in front of it.
        super::http::prewarm();
        let mut router = Self::new();
        for (name, setup) in providers {
            let limiter = Limiter::new(&RateLimits {
                requests_per_minute: setup.requests_per_minute,
                tokens_per_minute: setup.tokens_per_minute,
            });
            let options = setup.options.clone();
            let client: Arc<dyn Provider> = match name.as_str() {
                openai::PROVIDER => limited(OpenAiClient::new(options)?, limiter),
                anthropic::PROVIDER => limited(AnthropicClient::new(options)?, limiter),
                gemini::PROVIDER => limited(GeminiClient::new(options)?, limiter),
                ollama::PROVIDER => limited(OllamaClient::new(options)?, limiter),
                azure::PROVIDER => limited(AzureClient::new(options)?, limiter),
                _ => continue,
            };
            router.providers.insert(name.clone(), client);
        }
        Ok(router)
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
        let name = ModelName::parse(model).map_err(|why| LlmError::Config {
            model: model.into(),
            message: why.to_string(),
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

    /// Puts `spec` on the first of its models that can be called; returns a note for each model
    /// skipped. Fails with the first model's error when none can.
    pub(super) fn pick_callable(
        &self,
        role: Role,
        spec: &mut ModelSpec,
    ) -> Result<Vec<String>, LlmError> {
        let candidates: Vec<String> = std::iter::once(spec.model.clone())
            .chain(spec.fallbacks.iter().cloned())
            .collect();
        let mut callable = Vec::new();
        let mut skipped = Vec::new();
        let mut first_error = None;
        for model in candidates {
            match self.check(&model) {
                Ok(()) => callable.push(model),
                Err(e) => {
                    skipped.push(format!("{model} ({e})"));
                    first_error.get_or_insert(e);
                }
            }
        }
        if callable.is_empty() {
            // The first model's own error, so a missing key still reads as one (exit 1), with
            // what each fallback lacks after it.
            let others = skipped
                .iter()
                .skip(1)
                .cloned()
                .collect::<Vec<_>>()
                .join("; ");
            let also = |m: String| {
                if others.is_empty() {
                    m
                } else {
                    format!("{m}; the {role}'s fallbacks cannot be called either: {others}")
                }
            };
            return Err(match first_error {
                Some(LlmError::Auth {
                    provider,
                    env_var,
                    message,
                }) => LlmError::Auth {
                    provider,
                    env_var,
                    message: also(message),
                },
                Some(LlmError::Config { model, message }) => LlmError::Config {
                    model,
                    message: also(message),
                },
                Some(other) => other,
                None => LlmError::Config {
                    model: spec.model.clone(),
                    message: "no model to call".into(),
                },
            });
        }
        let notes = if spec.model == callable[0] {
            Vec::new()
        } else {
            vec![format!(
                "the {role} runs on {}: skipped {}",
                callable[0],
                skipped.join("; ")
            )]
        };
        spec.model = callable.remove(0);
        spec.fallbacks = callable;
        Ok(notes)
    }

    /// Whether calls to `model` could be sent: its provider exists here and has what it needs
    /// (a key for the official OpenAI API). For a start-up check, before any work is done.
    pub fn check(&self, model: &str) -> Result<(), LlmError> {
        self.resolve(model)?.1.check()
    }
}

#[async_trait::async_trait]
impl LlmClient for Router {
    async fn complete(&self, request: GuardedRequest) -> Result<ChatReply, LlmError> {
        let (name, provider) = self.resolve(&request.model)?;
        // Aliases and bare names reach the client in canonical form.
        let mut request = request.with_model(name.to_string());
        // A cap above what the model can write would be refused by some providers (Anthropic
        // answers 400); the budget reserved for the larger cap is settled by the real usage.
        if let Some(info) = prices::info(&request.model) {
            let cap = request.max_tokens.min(info.max_output);
            request = request.with_max_tokens(cap);
        }
        provider.complete(request).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::options::ClientOptions;
    use crate::testkit::wire::{self as testkit, *};
    use wiremock::MockServer;

    /// A server that streams `ok` to every request, and a router whose `openai` is that server.
    async fn ok_router() -> (MockServer, Router) {
        let server = serving(sse_reply(&["ok"], Some(usage_json(5, 1, 0))), ..).await;
        let router = Router::new().with_provider("openai", client(&server, |_| {}));
        (server, router)
    }

    #[tokio::test]
    async fn caps_max_tokens_at_the_models_most_output() {
        let (server, router) = ok_router().await;
        let mut asked = request("openai/gpt-4o").into_inner();
        asked.max_tokens = 100_000;
        router.complete(sealed(asked)).await.expect("reply");
        // One request only, so the last is the one sent.
        assert_eq!(server.received_requests().await.expect("recorded").len(), 1);
        // gpt-4o writes at most 16,384 tokens.
        assert_eq!(last_body(&server).await["max_completion_tokens"], 16_384);
    }

    #[tokio::test]
    async fn routes_by_provider_and_resolves_aliases() {
        let (server, router) = ok_router().await;
        let reply = reply_to(&router, "gpt-mini").await;
        assert_eq!(reply.text, "ok");
        assert_eq!(last_body(&server).await["model"], "gpt-4.1-mini");
        assert!(router.check("openai/gpt-4.1").is_ok());
    }

    #[tokio::test]
    async fn other_providers_are_a_configuration_error() {
        let server = MockServer::start().await;
        let router = Router::new().with_provider("openai", client(&server, |_| {}));
        let err = failure(&router, "anthropic/claude-sonnet-4-5").await;
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

    #[test]
    fn each_role_runs_on_its_first_callable_model() {
        let keyed = ClientOptions {
            base_url: Some("http://127.0.0.1:9/v1".into()),
            api_key: Some("sk-x".into()),
            ..ClientOptions::default()
        };
        let router = Router::live(&setups(&keyed)).expect("router");
        // Not in this router: skipped with a note, the callable fallback takes over.
        let mut s = spec(
            "gemini/gemini-2.5-pro",
            &["openai/gpt-4.1", "gemini/gemini-2.5-flash"],
        );
        let spec = s.get_mut(&Role::Artisan).expect("artisan");
        let notes = router.pick_callable(Role::Artisan, spec).expect("callable");
        assert_eq!(spec.model, "openai/gpt-4.1");
        assert!(spec.fallbacks.is_empty());
        assert_eq!(notes.len(), 1);
        assert!(notes[0].contains("gemini/gemini-2.5-pro"), "{notes:?}");
        // Nothing callable: the first model's error, naming the others too.
        let mut s = testkit::spec("gemini/gemini-2.5-pro", &["gemini/gemini-2.5-flash"]);
        let spec = s.get_mut(&Role::Artisan).expect("artisan");
        let err = router.pick_callable(Role::Artisan, spec).expect_err("none");
        assert!(err.to_string().contains("gemini-2.5-flash"), "{err}");
    }
}
