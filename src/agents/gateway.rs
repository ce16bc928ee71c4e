//! How an agent is pointed at the model gateway ([`crate::gateway`]): its definition's
//! `gateway` section names the provider its calls go to and the variables (and arguments) that
//! set its base URL and key; the run then starts it with the gateway's URL and the run's token
//! in their place, and without any provider key of the user's in its environment.

use std::collections::BTreeMap;
use std::ffi::OsString;

use serde::{Deserialize, Serialize};

use crate::gateway::{Gateway, Provider};

/// An agent definition's `gateway` section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GatewayDef {
    /// The provider the agent's calls go to: `anthropic`, `openai` or `gemini`.
    pub provider: Provider,
    /// Variables set in its environment: `{url}` is the gateway's base URL
    /// (`http://127.0.0.1:PORT`), `{token}` the run's token, which it sends as its key.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Arguments put before its own; `{url}` is replaced (the token is never put on a command
    /// line, where other users' `ps` would read it).
    #[serde(default)]
    pub args: Vec<String>,
    /// The models it serves, by the start of their names (`openai/`, `gpt-`); empty: all. An
    /// agent that reaches several providers (Aider) is behind the gateway only with a model of
    /// the section's provider.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub models: Vec<String>,
}

/// The variables that hold a provider's key: none is left in an agent's environment when it
/// runs behind the gateway, so the agent never holds the user's key.
pub const PROVIDER_KEYS: &[&str] = &[
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "OPENAI_API_KEY",
    "CODEX_API_KEY",
    "AZURE_OPENAI_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "DEEPSEEK_API_KEY",
    "OPENROUTER_API_KEY",
    "MISTRAL_API_KEY",
    "GROQ_API_KEY",
    "XAI_API_KEY",
    "TOGETHER_API_KEY",
    "FIREWORKS_API_KEY",
    "COHERE_API_KEY",
    "PERPLEXITY_API_KEY",
    "DASHSCOPE_API_KEY",
];

impl GatewayDef {
    /// Whether a run with `model` (the agent's own choice when `None`) goes through the gateway.
    pub fn serves(&self, model: Option<&str>) -> bool {
        self.models.is_empty()
            || model.is_some_and(|m| self.models.iter().any(|p| m.starts_with(p.as_str())))
    }

    /// `env` (the agent's whole environment) pointed at `gateway`: every provider key taken
    /// out, the section's variables set.
    pub fn environment(
        &self,
        env: &[(OsString, OsString)],
        gateway: &Gateway,
    ) -> Vec<(OsString, OsString)> {
        let mut out: Vec<(OsString, OsString)> = env
            .iter()
            .filter(|(k, _)| {
                let name = k.to_string_lossy();
                !PROVIDER_KEYS.contains(&name.as_ref()) && !self.env.contains_key(name.as_ref())
            })
            .cloned()
            .collect();
        for (name, value) in &self.env {
            let value = value
                .replace("{url}", gateway.url())
                .replace("{token}", gateway.token());
            out.push((name.into(), value.into()));
        }
        out
    }

    /// The section's arguments, with the gateway's URL in place.
    pub fn arguments(&self, gateway: &Gateway) -> Vec<String> {
        self.args
            .iter()
            .map(|a| a.replace("{url}", gateway.url()))
            .collect()
    }
}
