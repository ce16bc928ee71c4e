//! The agents a user has: the built-ins, with the config's `agents:` definitions added (one of
//! the same name replaces the built-in); what each needs to run here (its executable on PATH,
//! its sign-in); and its models, listed by the agent and cached.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use super::builtin::builtins;
use super::definition::{AgentDef, AuthState, ModelSource};
use crate::process::groups::ProcessGroups;
use crate::process::supervise::{self, Ending, Spec};

/// How long an agent may take to list its models.
const LIST_TIMEOUT: Duration = Duration::from_secs(60);

/// Every agent, built-in and configured.
#[derive(Debug, Clone)]
pub struct Registry {
    agents: Vec<AgentDef>,
}

/// One agent as found on this machine.
#[derive(Debug, Clone, Serialize)]
pub struct Found {
    pub name: String,
    pub title: String,
    /// The executable on PATH; `None` when it is not installed.
    pub binary: Option<PathBuf>,
    pub auth: AuthState,
    pub format: &'static str,
    /// Configured in `agents:` rather than built in.
    pub configured: bool,
    /// A built-in whose definition no test here runs ([`super::builtin::UNVERIFIED`]); a
    /// configured agent is the user's own and never marked.
    pub unverified: bool,
    /// The provider whose protocol the model gateway serves it (`anthropic`), when its
    /// definition has a `gateway` section; `None`: it calls its provider itself.
    pub gateway: Option<&'static str>,
    /// A built-in that talks to its vendor's service only ([`super::builtin::VENDOR_ONLY`]):
    /// nothing can be put between it and its model.
    pub vendor_only: bool,
}

impl Found {
    /// Installed, and signed in as far as can be told.
    pub fn usable(&self) -> bool {
        self.binary.is_some() && !matches!(self.auth, AuthState::Missing { .. })
    }
}

/// Why an agent could not be used or its models listed.
#[derive(Debug, thiserror::Error)]
pub enum AgentsError {
    #[error("no agent named {name:?}; the agents are: {known}")]
    Unknown { name: String, known: String },
    #[error("{title} is not installed: none of {binaries} is on PATH")]
    NotInstalled { title: String, binaries: String },
    #[error("{title} is not signed in: set {wanted}")]
    NotSignedIn { title: String, wanted: String },
    #[error("{title} lists no models: it uses the model its own configuration names")]
    NoModels { title: String },
    #[error("`{command}` failed: {why}")]
    ListFailed { command: String, why: String },
}

/// A list of models and where it came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Models {
    pub agent: String,
    pub names: Vec<String>,
    /// `built-in` for a fixed list, else the command that listed them.
    pub source: String,
    /// When the agent listed them (RFC 3339); `None` for a fixed list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub listed_at: Option<String>,
    /// Read from the cache rather than asked now.
    #[serde(default)]
    pub cached: bool,
}

impl Registry {
    /// The built-ins with `configured` added, in that order (a configured agent of a built-in's
    /// name takes its place).
    pub fn new(configured: &[AgentDef]) -> Registry {
        let mut agents = builtins();
        for def in configured {
            match agents.iter_mut().find(|a| a.name == def.name) {
                Some(slot) => *slot = def.clone(),
                None => agents.push(def.clone()),
            }
        }
        Registry { agents }
    }

    pub fn all(&self) -> &[AgentDef] {
        &self.agents
    }

    pub fn get(&self, name: &str) -> Result<&AgentDef, AgentsError> {
        self.agents
            .iter()
            .find(|a| a.name == name)
            .ok_or_else(|| AgentsError::Unknown {
                name: name.to_string(),
                known: self
                    .agents
                    .iter()
                    .map(|a| a.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            })
    }

    /// Each agent as found with the PATH, environment and home directory of this process.
    pub fn detect(&self, configured: &[AgentDef]) -> Vec<Found> {
        let path = std::env::var_os("PATH");
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let env = |k: &str| std::env::var(k).ok();
        self.agents
            .iter()
            .map(|def| Found {
                name: def.name.clone(),
                title: def.title.clone(),
                binary: def.locate(path.as_deref()),
                auth: def.check(&env, home.as_deref()),
                format: def.format.as_str(),
                configured: configured.iter().any(|c| c.name == def.name),
                unverified: !configured.iter().any(|c| c.name == def.name)
                    && super::builtin::UNVERIFIED.contains(&def.name.as_str()),
                gateway: def.gateway.as_ref().map(|g| g.provider.name()),
                vendor_only: !configured.iter().any(|c| c.name == def.name)
                    && super::builtin::VENDOR_ONLY.contains(&def.name.as_str()),
            })
            .collect()
    }
}

/// Where the models agent `name` listed are kept.
pub fn models_cache(name: &str) -> PathBuf {
    crate::fsutil::cache_home()
        .join("agents")
        .join(format!("{name}.models.json"))
}

/// `def`'s models: a fixed list as it is; a listed one from the cache unless `refresh` (or
/// none is cached), else asked of the agent (in a scratch folder) and cached.
pub async fn models(
    def: &AgentDef,
    refresh: bool,
    cache: &Path,
    groups: &ProcessGroups,
) -> Result<Models, AgentsError> {
    let args = match &def.models {
        ModelSource::None => {
            return Err(AgentsError::NoModels {
                title: def.title.clone(),
            })
        }
        ModelSource::Fixed { names } => {
            return Ok(Models {
                agent: def.name.clone(),
                names: names.clone(),
                source: "built-in".into(),
                listed_at: None,
                cached: false,
            })
        }
        ModelSource::Command { args } => args,
    };
    if !refresh {
        let kept = std::fs::read(cache)
            .ok()
            .and_then(|b| serde_json::from_slice::<Models>(&b).ok())
            .filter(|m| m.agent == def.name);
        if let Some(mut kept) = kept {
            kept.cached = true;
            return Ok(kept);
        }
    }
    let binary = def
        .locate(std::env::var_os("PATH").as_deref())
        .ok_or_else(|| AgentsError::NotInstalled {
            title: def.title.clone(),
            binaries: def.binaries.join(", "),
        })?;
    let command = format!("{} {}", binary.display(), args.join(" "));
    let failed = |why: String| AgentsError::ListFailed {
        command: command.clone(),
        why,
    };
    // In a scratch folder: an agent may leave files where it runs (Aider starts a git
    // repository and its history files, even to list models).
    let scratch = tempfile::tempdir().map_err(|e| failed(e.to_string()))?;
    let spec = Spec::new(
        &binary,
        args,
        scratch.path(),
        std::env::vars_os().collect(),
        LIST_TIMEOUT,
        1 << 20,
    );
    let outcome = supervise::run(spec, CancellationToken::new(), groups)
        .await
        .map_err(|e| failed(e.to_string()))?;
    match outcome.ending {
        Ending::Exited(Some(status)) if status.success() => {}
        Ending::TimedOut => return Err(failed(format!("no answer in {LIST_TIMEOUT:?}"))),
        other => {
            let tail: String = outcome.output.lines().last().unwrap_or("").to_string();
            return Err(failed(format!("{other:?}: {tail}")));
        }
    }
    let models = Models {
        agent: def.name.clone(),
        names: parse_list(&outcome.output),
        source: command.clone(),
        listed_at: Some(chrono::Utc::now().to_rfc3339()),
        cached: false,
    };
    if let Ok(json) = serde_json::to_vec_pretty(&models) {
        if let Some(dir) = cache.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        // A cache that cannot be written costs the next call a listing, nothing else.
        let _ = crate::fsutil::write_atomic(cache, &json);
    }
    Ok(models)
}

/// Model names from a listing: one per line, bullets taken off, headings (ending in `:`) and
/// blank lines left out, and only the first word of a line (the rest describes it). A listing
/// that is one JSON catalog (`codex debug models`: `{"models": [{"slug", "visibility"}]}`)
/// gives its slugs, less those the agent hides from its own picker.
pub fn parse_list(output: &str) -> Vec<String> {
    if let Some(names) = catalog(output) {
        return names;
    }
    let mut seen = std::collections::HashSet::new();
    let mut names: Vec<String> = Vec::new();
    for line in output.lines() {
        let line = line.trim().trim_start_matches(['-', '*', '•']).trim();
        if line.is_empty() || line.ends_with(':') {
            continue;
        }
        let Some(name) = line.split_whitespace().next() else {
            continue;
        };
        if seen.insert(name) {
            names.push(name.to_string());
        }
    }
    names
}

/// The slugs of a JSON model catalog, or `None` when `output` is not one.
fn catalog(output: &str) -> Option<Vec<String>> {
    #[derive(serde::Deserialize)]
    struct Catalog {
        models: Vec<Entry>,
    }
    #[derive(serde::Deserialize)]
    struct Entry {
        slug: String,
        #[serde(default)]
        visibility: Option<String>,
    }
    let catalog: Catalog = serde_json::from_str(output.trim()).ok()?;
    let mut seen = std::collections::HashSet::new();
    let mut names: Vec<String> = Vec::new();
    for entry in catalog.models {
        if entry.visibility.as_deref() != Some("hide") && seen.insert(entry.slug.clone()) {
            names.push(entry.slug);
        }
    }
    Some(names)
}

/// The agent's executable, when it is installed and signed in as far as can be told.
pub fn ready(agent: &AgentDef) -> Result<PathBuf, AgentsError> {
    let path = std::env::var_os("PATH");
    let binary = agent
        .locate(path.as_deref())
        .ok_or_else(|| AgentsError::NotInstalled {
            title: agent.title.clone(),
            binaries: agent.binaries.join(", "),
        })?;
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let env = |k: &str| std::env::var(k).ok();
    if let AuthState::Missing { wanted } = agent.check(&env, home.as_deref()) {
        return Err(AgentsError::NotSignedIn {
            title: agent.title.clone(),
            wanted,
        });
    }
    Ok(binary)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn a_json_catalog_gives_its_listed_slugs() {
        let codex = r#"{"models":[{"slug":"gpt-6.2-sol","visibility":"list","priority":1},
            {"slug":"codex-auto-review","visibility":"hide"},{"slug":"gpt-5.5"},{"slug":"gpt-5.5"}]}"#;
        assert_eq!(parse_list(codex), ["gpt-6.2-sol", "gpt-5.5"]);
        // Not a catalog: read as lines.
        assert_eq!(parse_list("{\"other\": 1}\n"), ["{\"other\":"]);
    }

    #[test]
    fn listings_keep_one_name_per_line() {
        let aider = "Models which match \"/\":\n- anthropic/claude-sonnet-4-5\n- openai/gpt-4.1\n\n- openai/gpt-4.1\n";
        assert_eq!(
            parse_list(aider),
            ["anthropic/claude-sonnet-4-5", "openai/gpt-4.1"]
        );
        assert_eq!(
            parse_list("gpt-5 (default)\n  * sonnet-4.5  Anthropic\n"),
            ["gpt-5", "sonnet-4.5"]
        );
    }

    #[test]
    fn a_configured_agent_replaces_the_builtin_of_its_name_or_is_added() {
        let mut mine = builtins().remove(0);
        mine.title = "My Claude".into();
        let mut extra = builtins().remove(0);
        extra.name = "mine".into();
        let registry = Registry::new(&[mine, extra]);
        assert_eq!(registry.get("claude").unwrap().title, "My Claude");
        assert_eq!(registry.all().len(), builtins().len() + 1);
        let err = registry.get("nope").unwrap_err().to_string();
        assert!(err.contains("claude, codex"), "{err}");
    }
}
