//! Model names: `provider/model`, a bare model name whose family names its provider, or an alias.

use std::fmt;

use ralph_actors::role::Role;

/// Providers a model name may name. Which of them this build can call is [`AVAILABLE`].
pub const PROVIDERS: &[&str] = &["openai", "anthropic", "gemini", "ollama", "azure"];

/// Providers this build has a client for. Any OpenAI-compatible server (LiteLLM, vLLM,
/// llama.cpp) is reached as `openai` through `OPENAI_BASE_URL`.
pub const AVAILABLE: &[&str] = &["openai", "anthropic", "gemini", "ollama", "azure"];

/// Aliases, documented in `docs/providers.md`.
pub const ALIASES: &[(&str, &str)] = &[
    ("gpt", "openai/gpt-4.1"),
    ("gpt-mini", "openai/gpt-4.1-mini"),
    ("gpt-nano", "openai/gpt-4.1-nano"),
    ("gpt5", "openai/gpt-5"),
    ("gpt5-mini", "openai/gpt-5-mini"),
    ("4o", "openai/gpt-4o"),
    ("4o-mini", "openai/gpt-4o-mini"),
    ("claude", "anthropic/claude-sonnet-4-5"),
    ("sonnet", "anthropic/claude-sonnet-4-5"),
    ("opus", "anthropic/claude-opus-4-5"),
    ("haiku", "anthropic/claude-haiku-4-5"),
    ("gemini", "gemini/gemini-2.5-pro"),
    ("flash", "gemini/gemini-2.5-flash"),
    ("ollama", "ollama/qwen2.5-coder:7b"),
];

/// A role's model when nothing is configured, and the models it falls back to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DefaultModels {
    pub model: &'static str,
    pub fallbacks: &'static [&'static str],
}

/// The spec's defaults when nothing is configured: the Librarian on Gemini (long context for
/// reading), the Artisan on Claude (writing code), the Critic on a small GPT (a cheap second
/// opinion from another family), Chaos on a strong model of another family than the Artisan's
/// (an adversary that thinks alike finds less). Each falls back to the same kind of model of the other two
/// providers, so one key of any of them is enough to run. `None` for a role that calls no
/// model.
pub fn default_models(role: Role) -> Option<DefaultModels> {
    let (model, fallbacks): (&'static str, &'static [&'static str]) = match role {
        Role::Librarian => (
            "gemini/gemini-2.5-pro",
            &["openai/gpt-4.1-mini", "anthropic/claude-haiku-4-5"],
        ),
        Role::Artisan => (
            "anthropic/claude-sonnet-4-5",
            &["openai/gpt-4.1", "gemini/gemini-2.5-pro"],
        ),
        Role::Critic => (
            "openai/gpt-4.1-mini",
            &["anthropic/claude-haiku-4-5", "gemini/gemini-2.5-flash"],
        ),
        Role::Chaos => (
            "openai/gpt-4.1",
            &["anthropic/claude-sonnet-4-5", "gemini/gemini-2.5-pro"],
        ),
        Role::Tester => return None,
    };
    Some(DefaultModels { model, fallbacks })
}

/// The provider of agent models (`agent/claude`): a coding-agent CLI as the Artisan.
pub const AGENT_PROVIDER: &str = "agent";

/// Why an agent model cannot serve `role`, when it cannot.
pub fn agent_misplaced(role: Role, model: &str) -> Option<String> {
    let agent = model.starts_with("agent/") || model.starts_with("agent:");
    (agent && role != Role::Artisan).then(|| {
        format!(
            "the {role} cannot be an agent CLI ({model}): an agent serves only the Artisan \
             (as in --models artisan=agent:claude)"
        )
    })
}

/// Why a model's name, or the `--models` flag's value, names no model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    #[error("empty model name")]
    Empty,
    #[error("`{0}` names no agent (as in agent:claude or agent:codex/gpt-5.5)")]
    NoAgent(String),
    #[error("unknown provider `{provider}` in `{name}` (providers: {})", PROVIDERS.join(", "))]
    UnknownProvider { provider: String, name: String },
    #[error("`{0}` names no model after the provider")]
    NoModel(String),
    #[error("`{name}` is neither `provider/model` nor an alias ({aliases})")]
    Unknown { name: String, aliases: String },
    #[error("`{0}` is not role=model")]
    NotAPair(String),
    #[error("{0}")]
    Role(String),
    #[error("the {0} is given a model twice")]
    Twice(Role),
    /// An agent CLI named for a role other than the Artisan.
    #[error("{0}")]
    AgentMisplaced(String),
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ModelName {
    pub provider: String,
    pub model: String,
}

impl fmt::Display for ModelName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.provider, self.model)
    }
}

impl ModelName {
    /// Resolves an alias, a `provider/model` name, or a bare name of a known family
    /// (`gpt-4o`, `o3-mini`, `claude-...`, `gemini-...`), as micro-agent's `MODEL` holds.
    pub fn parse(name: &str) -> Result<Self, ModelError> {
        let name = name.trim();
        if name.is_empty() {
            return Err(ModelError::Empty);
        }
        // An agent CLI in the Artisan's place: `agent:claude`, `agent:codex/gpt-5.5` (the model
        // as the agent names it).
        if let Some(rest) = name
            .strip_prefix("agent:")
            .or_else(|| name.strip_prefix("agent/"))
        {
            if rest.split('/').next().unwrap_or("").is_empty() {
                return Err(ModelError::NoAgent(name.into()));
            }
            return Ok(Self {
                provider: AGENT_PROVIDER.into(),
                model: rest.into(),
            });
        }
        if let Some((_, full)) = ALIASES.iter().find(|(a, _)| *a == name) {
            return Self::parse(full);
        }
        if let Some((provider, model)) = name.split_once('/') {
            if !PROVIDERS.contains(&provider) {
                return Err(ModelError::UnknownProvider {
                    provider: provider.into(),
                    name: name.into(),
                });
            }
            if model.is_empty() {
                return Err(ModelError::NoModel(name.into()));
            }
            return Ok(Self {
                provider: provider.into(),
                model: model.into(),
            });
        }
        let family = |prefixes: &[&str]| prefixes.iter().any(|p| name.starts_with(p));
        let provider = if family(&["gpt-", "chatgpt-", "o1", "o3", "o4", "text-"]) {
            "openai"
        } else if family(&["claude-"]) {
            "anthropic"
        } else if family(&["gemini-"]) {
            "gemini"
        } else {
            let aliases: Vec<&str> = ALIASES.iter().map(|(a, _)| *a).collect();
            return Err(ModelError::Unknown {
                name: name.into(),
                aliases: aliases.join(", "),
            });
        };
        Ok(Self {
            provider: provider.into(),
            model: name.into(),
        })
    }
}

/// `librarian=gpt-mini,artisan=openai/gpt-4.1`, or one model for every role: each role with its
/// canonical `provider/model`.
pub fn parse_role_models(flag: &str) -> Result<Vec<(Role, String)>, ModelError> {
    let canonical = |name: &str| ModelName::parse(name).map(|m| m.to_string());
    if !flag.contains('=') {
        let model = canonical(flag)?;
        if let Some(why) = agent_misplaced(Role::Librarian, &model) {
            return Err(ModelError::AgentMisplaced(why));
        }
        return Ok(Role::with_models().map(|r| (r, model.clone())).collect());
    }
    let mut pairs: Vec<(Role, String)> = Vec::new();
    for pair in flag.split(',').filter(|p| !p.trim().is_empty()) {
        let (role, name) = pair
            .split_once('=')
            .ok_or_else(|| ModelError::NotAPair(pair.into()))?;
        let role: Role = role
            .trim()
            .parse()
            .map_err(|e: <Role as std::str::FromStr>::Err| ModelError::Role(e.to_string()))?;
        if pairs.iter().any(|(r, _)| *r == role) {
            return Err(ModelError::Twice(role));
        }
        let model = canonical(name)?;
        if let Some(why) = agent_misplaced(role, &model) {
            return Err(ModelError::AgentMisplaced(why));
        }
        pairs.push((role, model));
    }
    Ok(pairs)
}

/// Models per role, in the `--models` flag's syntax.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(transparent)]
pub struct RoleModels(pub String);

impl<'de> serde::Deserialize<'de> for RoleModels {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = RoleModels;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("`role=model,...`, one model, or a map of role to model")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<RoleModels, E> {
                Ok(RoleModels(v.to_string()))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<RoleModels, A::Error> {
                let mut pairs = Vec::new();
                while let Some((role, model)) = map.next_entry::<String, String>()? {
                    pairs.push(format!("{role}={model}"));
                }
                Ok(RoleModels(pairs.join(",")))
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_names_and_aliases() {
        assert_eq!(
            ModelName::parse("gpt-mini").map(|m| m.to_string()),
            Ok("openai/gpt-4.1-mini".into())
        );
        assert_eq!(
            ModelName::parse("openai/gpt-4o").map(|m| m.to_string()),
            Ok("openai/gpt-4o".into())
        );
        assert_eq!(
            ModelName::parse("gpt-4o").map(|m| m.provider),
            Ok("openai".into())
        );
        assert_eq!(
            ModelName::parse("claude").map(|m| m.provider),
            Ok("anthropic".into())
        );
        assert_eq!(
            ModelName::parse("ollama/qwen2.5-coder:7b").map(|m| m.model),
            Ok("qwen2.5-coder:7b".into())
        );
        assert!(ModelName::parse("acme/x").is_err());
        assert!(ModelName::parse("mystery").is_err());
        // Agent CLIs, the Artisan's only.
        assert_eq!(
            ModelName::parse("agent:codex/gpt-5.5").map(|m| m.to_string()),
            Ok("agent/codex/gpt-5.5".into())
        );
        assert!(ModelName::parse("agent:").is_err());
        assert_eq!(
            parse_role_models("librarian=gpt-mini,artisan=agent:claude").map(|p| p[1].1.clone()),
            Ok("agent/claude".into())
        );
        let misplaced = parse_role_models("critic=agent:claude").unwrap_err();
        assert!(
            matches!(misplaced, ModelError::AgentMisplaced(_)),
            "{misplaced}"
        );
        assert!(
            misplaced.to_string().contains("only the Artisan"),
            "{misplaced}"
        );
        assert!(parse_role_models("agent:claude").is_err());
    }
}
