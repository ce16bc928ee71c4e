//! The providers' connection settings: `providers:` as written ([`ProviderConfig`], keyed by a
//! known provider name) and as resolved for a run ([`Endpoint`]), with each provider's standard
//! environment variables and public endpoint.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::de::Deserializer;
use serde::{Deserialize, Serialize};

use super::checks::{at_least_one, opt_at_least_one, opt_non_empty, opt_url, Text};
use crate::models;

/// How to reach one provider. Only `openai` (any OpenAI-compatible server) is callable in this
/// build; the others are accepted here and refused at start-up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ProviderConfig {
    /// `None`: the provider's endpoint variable (`OPENAI_BASE_URL`), else its public endpoint.
    #[serde(deserialize_with = "opt_url")]
    pub base_url: Option<String>,
    /// `None`: the provider's standard key variable (`OPENAI_API_KEY`).
    #[serde(deserialize_with = "opt_non_empty")]
    pub api_key_env: Option<String>,
    #[serde(deserialize_with = "at_least_one")]
    pub timeout_seconds: u64,
    /// A reply stream silent this long counts as stalled and is retried.
    #[serde(deserialize_with = "at_least_one")]
    pub idle_timeout_seconds: u64,
    pub max_retries: u32,
    pub stream: bool,
    /// Requests per minute this run may send to the provider, shared by every role.
    #[serde(deserialize_with = "opt_at_least_one")]
    pub requests_per_minute: Option<u32>,
    /// Tokens (prompt and reply) per minute, likewise.
    #[serde(deserialize_with = "opt_at_least_one")]
    pub tokens_per_minute: Option<u32>,
    /// Azure OpenAI's `api-version`; only under `azure`.
    #[serde(
        deserialize_with = "opt_non_empty",
        skip_serializing_if = "Option::is_none"
    )]
    pub api_version: Option<String>,
}

/// The `api-version` Azure OpenAI is called with unless configured.
pub const AZURE_API_VERSION: &str = "2024-10-21";

impl ProviderConfig {
    /// The defaults of one provider: Azure has an `api_version`.
    pub fn default_for(provider: &str) -> Self {
        Self {
            api_version: (provider == "azure").then(|| AZURE_API_VERSION.to_string()),
            ..Self::default()
        }
    }
}

impl Default for ProviderConfig {
    fn default() -> Self {
        Self {
            base_url: None,
            api_key_env: None,
            timeout_seconds: 120,
            idle_timeout_seconds: 60,
            max_retries: 3,
            stream: true,
            requests_per_minute: None,
            tokens_per_minute: None,
            api_version: None,
        }
    }
}

/// A key of `providers:`; checked as a key so the error points at it.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct ProviderKey(String);

impl<'de> Deserialize<'de> for ProviderKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let known = Text {
            expecting: "a provider name",
            check: |name| {
                if models::PROVIDERS.contains(&name) {
                    Ok(name.to_string())
                } else {
                    Err(format!(
                        "unknown provider `{name}` (providers: {})",
                        models::PROVIDERS.join(", ")
                    ))
                }
            },
        };
        d.deserialize_str(known).map(ProviderKey)
    }
}

pub(super) fn provider_map<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<BTreeMap<String, ProviderConfig>, D::Error> {
    let raw = BTreeMap::<ProviderKey, ProviderConfig>::deserialize(d)?;
    Ok(raw.into_iter().map(|(k, v)| (k.0, v)).collect())
}

/// (provider, key variable, endpoint variable, public endpoint), as in the brief.
pub(super) const PROVIDER_ENV: &[(&str, Option<&str>, &str, Option<&str>)] = &[
    (
        "openai",
        Some("OPENAI_API_KEY"),
        "OPENAI_BASE_URL",
        Some("https://api.openai.com/v1"),
    ),
    (
        "anthropic",
        Some("ANTHROPIC_API_KEY"),
        "ANTHROPIC_BASE_URL",
        Some("https://api.anthropic.com"),
    ),
    (
        "gemini",
        Some("GEMINI_API_KEY"),
        "GEMINI_BASE_URL",
        Some("https://generativelanguage.googleapis.com"),
    ),
    (
        "ollama",
        None,
        "OLLAMA_HOST",
        Some("http://localhost:11434"),
    ),
    (
        "azure",
        Some("AZURE_OPENAI_API_KEY"),
        "AZURE_OPENAI_ENDPOINT",
        None,
    ),
];

/// A provider's resolved connection settings.
#[derive(Debug, Clone, PartialEq)]
pub struct Endpoint {
    /// `None` only for a provider with no public endpoint (azure) and none configured.
    pub base_url: Option<String>,
    /// The variable holding the key; `None` for a provider that needs none (ollama).
    pub api_key_env: Option<String>,
    pub timeout: Duration,
    pub idle_timeout: Duration,
    pub max_retries: u32,
    pub stream: bool,
    pub requests_per_minute: Option<u32>,
    pub tokens_per_minute: Option<u32>,
    pub api_version: Option<String>,
}
