//! What the rest of ralph-loop reads off a loaded [`Config`]: the core's [`RunSettings`], each
//! role's model, template overrides, and a provider's resolved [`Endpoint`].

use std::path::{Path, PathBuf};
use std::time::Duration;

use ralph_actors::prompt::templates::Templates;
use ralph_actors::role::Role;
use ralph_actors::settings::{ChaosSettings, ModelSpec, Profile, RunSettings};

use super::error::ConfigError;
use super::providers::{Endpoint, PROVIDER_ENV};
use super::sections::Config;

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

    /// Whether Chaos attacks this run's fixes: on unless `chaos.enabled` is false or the
    /// profile is `quick`.
    pub fn chaos_on(&self) -> bool {
        self.chaos.enabled && self.profile != Profile::Quick
    }

    /// The coverage gate on the lines a run changed, judged once Chaos's attacks find nothing.
    pub fn changed_lines_coverage(&self) -> Option<f64> {
        self.success_criteria
            .coverage_threshold
            .min
            .filter(|_| self.chaos_on())
    }

    /// The coverage gate of each test run, while Chaos is off: only a threshold the config set
    /// (the default gate needs Chaos to reach it).
    pub fn per_run_coverage(&self) -> Option<f64> {
        let gate = self.success_criteria.coverage_threshold;
        gate.min
            .filter(|_| gate.set && !self.chaos_on() && self.profile != Profile::Quick)
    }

    /// The mutation gate, while Chaos is on.
    pub fn mutation_gate(&self) -> Option<f64> {
        self.success_criteria
            .mutation_score_min
            .min
            .filter(|_| self.chaos_on())
    }

    /// The core's settings for a run, template overrides read. Apply flags to `self` first.
    pub fn run_settings(&self) -> Result<RunSettings, ConfigError> {
        let mut templates = Templates::default();
        for role in Role::with_models() {
            if let Some(text) = self.prompt_template(role)? {
                templates.set(role, text);
            }
        }
        // Chaos's model is resolved (and its provider's key checked) only when Chaos runs.
        let models = Role::with_models()
            .filter(|r| *r != Role::Chaos || self.chaos_on())
            .filter_map(|r| Some((r, self.model(r)?)))
            .collect();
        Ok(RunSettings {
            max_iterations: self.budgets.max_iterations,
            max_cost_usd: self.budgets.max_cost_usd,
            max_duration: self.max_duration(),
            context_reset_frequency: self.memory.context_reset_frequency,
            entropy_threshold: self.circuit_breaker.entropy_threshold,
            critic_mode: self.critic.effective_mode(),
            critic_max_rejections: self.critic.max_rejections,
            librarian_analyze: self.librarian.analyze,
            wait_for_analysis: self.librarian.wait_for_analysis,
            max_test_output_bytes: self.testing.prompt_output_bytes,
            flaky_retries: self.testing.flaky_retries,
            allow_test_edits: self.testing.allow_test_edits,
            coverage_threshold: self.per_run_coverage(),
            linter_errors: self.success_criteria.linter_errors,
            models,
            context_windows: std::collections::BTreeMap::new(),
            context_share: self.librarian.context_share,
            templates,
            on_failure: self.on_failure,
            chaos: ChaosSettings {
                enabled: self.chaos_on(),
                strategies: self.chaos.strategies.clone(),
                max_rounds: self.chaos.max_rounds,
                max_repairs: self.chaos.max_repairs,
                must_pass: self.success_criteria.adversarial_tests_pass,
                mutation_score_min: self.mutation_gate(),
                coverage_min: self.changed_lines_coverage(),
                mutation_timeout: Duration::from_secs(self.chaos.mutation_timeout_seconds),
                keep_tests: self.chaos.keep_tests,
            },
            profile: self.profile,
            unavailable: Default::default(),
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
