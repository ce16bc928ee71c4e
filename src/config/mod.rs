//! `ralph.config.yaml`: discovery, parsing, validation and defaults.
//!
//! Precedence is flags > file > built-in defaults; the caller applies flags to the [`Config`]
//! this returns. Every key is documented in `docs/configuration.md` and shown, with its default,
//! in the repository's `ralph.config.yaml`, which a test keeps in sync with [`Config`].

mod error;
mod schema;
#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};
use std::time::Duration;

use ralph_actors::prompt::templates::Templates;
use ralph_actors::role::Role;
use ralph_actors::settings::{ModelSpec, RunSettings};

pub use error::ConfigError;
pub use schema::{
    Budgets, CircuitBreaker, Config, CriticConfig, EmbedderConfig, EmbedderKind, LibrarianConfig,
    Linting, Memory, ModelEntry, Models, Output, Prompts, ProviderConfig, SandboxConfig,
    SandboxType, SuccessCriteria, Testing,
};

/// The file name looked for in the current directory and its parents.
pub const FILE_NAME: &str = "ralph.config.yaml";

/// The config file to use: `explicit` (which must exist; relative to `cwd`), else
/// `cwd/ralph.config.yaml`, else the nearest one in a parent directory up to and including the
/// git root (the first ancestor holding `.git`). Outside a git repository only `cwd` is searched,
/// so a stray file in a home directory never configures an unrelated project. `None`: use the
/// built-in defaults.
pub fn discover(explicit: Option<&Path>, cwd: &Path) -> Result<Option<PathBuf>, ConfigError> {
    let cwd = std::path::absolute(cwd).unwrap_or_else(|_| cwd.to_path_buf());
    if let Some(path) = explicit {
        let full = cwd.join(path);
        if !full.exists() {
            return Err(ConfigError::NotFound {
                path: path.to_path_buf(),
            });
        }
        return Ok(Some(full));
    }
    let git_root = cwd.ancestors().find(|dir| dir.join(".git").exists());
    for dir in cwd.ancestors() {
        let candidate = dir.join(FILE_NAME);
        if candidate.is_file() {
            return Ok(Some(candidate));
        }
        if git_root.is_none_or(|root| dir == root) {
            break;
        }
    }
    Ok(None)
}

/// Reads, parses and validates the file at `path`.
pub fn load(path: &Path) -> Result<Config, ConfigError> {
    let source = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    parse(&source, path)
}

/// [`discover`] then [`load`]; the defaults when no file is found.
pub fn load_discovered(
    explicit: Option<&Path>,
    cwd: &Path,
) -> Result<(Config, Option<PathBuf>), ConfigError> {
    match discover(explicit, cwd)? {
        Some(path) => Ok((load(&path)?, Some(path))),
        None => Ok((Config::default(), None)),
    }
}

/// Parses and validates `source`, the text of `file`: `file` names it in errors and its
/// directory is the base of the relative paths in it. An empty file gives the defaults.
pub fn parse(source: &str, file: &Path) -> Result<Config, ConfigError> {
    let de = serde_yaml::Deserializer::from_str(source);
    let mut config: Config =
        serde_path_to_error::deserialize(de).map_err(|e| ConfigError::from_yaml(file, e))?;
    let base = file.parent().map(Path::to_path_buf).unwrap_or_default();
    let resolve = |p: &mut Option<PathBuf>| {
        if let Some(p) = p {
            *p = base.join(&*p);
        }
    };
    resolve(&mut config.testing.test_file);
    resolve(&mut config.testing.prompt_file);
    for path in config.prompts.paths_mut() {
        *path = base.join(&*path);
    }
    config.base_dir = Some(base);
    check_templates(&config, source, file)?;
    for (name, provider) in &config.providers {
        if provider.api_version.is_some() && name != "azure" {
            return Err(ConfigError::at_key(
                file,
                source,
                &format!("providers.{name}.api_version"),
                "api_version applies to azure only".into(),
            ));
        }
    }
    if config.memory.global_sharing && config.memory.global_uri.is_none() {
        return Err(ConfigError::at_key(
            file,
            source,
            "memory.global_sharing",
            "global_sharing needs memory.global_uri, the shared directory".into(),
        ));
    }
    Ok(config)
}

/// Template overrides must exist and compile now, not in the middle of a paid run.
fn check_templates(config: &Config, source: &str, file: &Path) -> Result<(), ConfigError> {
    for role in Role::with_models() {
        let Some(path) = config.prompts.get(role) else {
            continue;
        };
        let key = format!("prompts.{role}");
        let text = std::fs::read_to_string(path).map_err(|e| {
            ConfigError::at_key(
                file,
                source,
                &key,
                format!("cannot read {}: {e}", path.display()),
            )
        })?;
        Templates::check(&text).map_err(|e| {
            ConfigError::at_key(file, source, &key, format!("{}: {e}", path.display()))
        })?;
    }
    Ok(())
}

impl Config {
    /// The text of `role`'s template override, `None` to keep the bundled template.
    pub fn prompt_template(&self, role: Role) -> Result<Option<String>, ConfigError> {
        let Some(path) = self.prompts.get(role) else {
            return Ok(None);
        };
        let path = self.resolve(path);
        std::fs::read_to_string(&path)
            .map(Some)
            .map_err(|source| ConfigError::Read { path, source })
    }

    /// `path` against the config file's directory (a path set by `load` is already absolute).
    pub fn resolve(&self, path: &Path) -> PathBuf {
        match &self.base_dir {
            Some(base) => base.join(path),
            None => path.to_path_buf(),
        }
    }

    /// The model, sampling and reply budget of a model role (the Tester has none).
    pub fn model(&self, role: Role) -> Option<ModelSpec> {
        self.models.get(role).map(|entry| entry.spec(role))
    }

    pub fn max_duration(&self) -> Option<Duration> {
        self.budgets
            .max_duration_minutes
            .map(|m| Duration::from_secs_f64(m * 60.0))
    }

    /// The core's settings for a run, template overrides read. Apply flags to `self` first.
    pub fn run_settings(&self) -> Result<RunSettings, ConfigError> {
        let mut templates = Templates::default();
        for role in Role::with_models() {
            if let Some(text) = self.prompt_template(role)? {
                templates.set(role, text);
            }
        }
        let models = Role::with_models()
            .filter_map(|r| Some((r, self.model(r)?)))
            .collect();
        Ok(RunSettings {
            max_iterations: self.budgets.max_iterations,
            max_cost_usd: self.budgets.max_cost_usd,
            max_duration: self.max_duration(),
            context_reset_frequency: self.memory.context_reset_frequency,
            entropy_threshold: self.circuit_breaker.entropy_threshold,
            critic_enabled: self.critic.enabled,
            critic_max_rejections: self.critic.max_rejections,
            librarian_analyze: self.librarian.analyze,
            max_test_output_bytes: self.testing.prompt_output_bytes,
            flaky_retries: self.testing.flaky_retries,
            allow_test_edits: self.testing.allow_test_edits,
            coverage_threshold: self.success_criteria.coverage_threshold,
            linter_errors: self.success_criteria.linter_errors,
            models,
            context_windows: std::collections::BTreeMap::new(),
            context_share: self.librarian.context_share,
            templates,
        })
    }

    /// How to reach `provider`: its `providers:` entry or the defaults, with the blanks filled in
    /// from the environment (`env` looks a variable up; pass `|k| std::env::var(k).ok()`).
    pub fn endpoint(&self, provider: &str, env: impl Fn(&str) -> Option<String>) -> Endpoint {
        let entry = self.providers.get(provider).cloned().unwrap_or_default();
        let known = PROVIDER_ENV.iter().find(|p| p.0 == provider);
        let base_url = entry
            .base_url
            .or_else(|| {
                known
                    .and_then(|p| env(p.2))
                    .filter(|u| !u.trim().is_empty())
            })
            .or_else(|| known.and_then(|p| p.3).map(str::to_string));
        let api_key_env = entry
            .api_key_env
            .or_else(|| known.and_then(|p| p.1).map(str::to_string));
        Endpoint {
            base_url,
            api_key_env,
            timeout: Duration::from_secs(entry.timeout_seconds),
            idle_timeout: Duration::from_secs(entry.idle_timeout_seconds),
            max_retries: entry.max_retries,
            stream: entry.stream,
            requests_per_minute: entry.requests_per_minute,
            tokens_per_minute: entry.tokens_per_minute,
            api_version: entry.api_version,
        }
    }
}

/// (provider, key variable, endpoint variable, public endpoint), as in the brief.
const PROVIDER_ENV: &[(&str, Option<&str>, &str, Option<&str>)] = &[
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
