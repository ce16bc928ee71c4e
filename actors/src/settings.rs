//! The core's view of a run's settings, already merged from defaults, the config file and flags.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use crate::policy::adversarial::{ChaosSettings, Strategy};
use crate::policy::criteria::Thresholds;
pub use crate::policy::pace::{Analyze, CriticMode};
use crate::prompt::templates::Templates;
use crate::role::Role;
pub use crate::schema::promise::Profile;
pub use crate::schema::report::OnFailure;

/// The model a role runs on, and how it is sampled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelSpec {
    /// `provider/model`.
    pub model: String,
    pub temperature: Option<f32>,
    pub max_tokens: u32,
    /// Models to try in turn when this one's provider refuses, cannot be reached, or keeps
    /// failing; each call on one is checked against the budget like any other.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fallbacks: Vec<String>,
}

/// Settings a run cannot start with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SettingsError {
    #[error("no model for the {0}")]
    NoModel(Role),
    #[error("context_reset_frequency must be at least 1")]
    ZeroResetFrequency,
    #[error("entropy threshold must be at least 1")]
    ZeroEntropyThreshold,
}

#[derive(Debug, Clone)]
pub struct RunSettings {
    pub max_iterations: u32,
    pub max_cost_usd: f64,
    pub max_duration: Option<Duration>,
    /// 1: every iteration starts with no conversation history. N > 1: the Artisan and Critic keep
    /// their history for N iterations.
    pub context_reset_frequency: u32,
    pub entropy_threshold: u32,
    /// When the Critic reviews a proposal: before the tests, beside them, or not at all.
    pub critic_mode: CriticMode,
    pub critic_max_rejections: u32,
    /// When the Librarian asks its model for a short analysis of the last failure.
    pub librarian_analyze: Analyze,
    /// The Artisan's call waits for the Librarian's analysis of its iteration; otherwise the
    /// analysis runs beside it and reaches its next call.
    pub wait_for_analysis: bool,
    /// The most bytes of test failures and output shown to a model.
    pub max_test_output_bytes: usize,
    /// Re-runs of a failed test run; a test that fails and then passes is FLAKY.
    pub flaky_retries: u32,
    /// The Artisan may edit, delete or skip tests; otherwise such a proposal is rejected.
    pub allow_test_edits: bool,
    /// Success also needs this percent of lines covered by each test run: the coverage gate
    /// while Chaos is off (with Chaos on, the gate is [`ChaosSettings::coverage_min`], on the
    /// lines the run changed).
    pub coverage_threshold: Option<f64>,
    /// Success also needs at most this many linter errors.
    pub linter_errors: Option<u32>,
    pub models: BTreeMap<Role, ModelSpec>,
    /// The context window (prompt and reply, in tokens) of each role's model, where known.
    pub context_windows: BTreeMap<Role, u32>,
    /// The share of the Artisan's context window the Librarian may fill with the project's
    /// files (the target and its nearest imports).
    pub context_share: f64,
    pub templates: Templates,
    /// What a run that ends without success leaves in the target.
    pub on_failure: OnFailure,
    /// Chaos, the adversary: whether it attacks a fix whose unit tests pass, and how.
    pub chaos: ChaosSettings,
    /// What the run checks before it calls a fix done (`--quick`).
    pub profile: Profile,
    /// The gates (`coverage`, `mutation`) the run's promise holds but no tool here can measure,
    /// and why: the report lists them `unavailable`.
    pub unavailable: BTreeMap<String, String>,
}

impl RunSettings {
    pub fn model(&self, role: Role) -> &ModelSpec {
        // Every model role is filled by the config layer; a missing one is a programming error
        // caught by `RunSettings::validate`.
        &self.models[&role]
    }

    /// The roles that call a model in this run: Chaos only when it is on.
    pub fn roles(&self) -> impl Iterator<Item = Role> + '_ {
        Role::with_models().filter(|r| *r != Role::Chaos || self.chaos.enabled)
    }

    /// What success needs beyond the tests passing.
    pub fn thresholds(&self) -> Thresholds {
        Thresholds {
            coverage: self.coverage_threshold,
            linter_errors: self.linter_errors,
        }
    }

    pub fn validate(&self) -> Result<(), SettingsError> {
        if let Some(role) = self.roles().find(|r| !self.models.contains_key(r)) {
            return Err(SettingsError::NoModel(role));
        }
        if self.context_reset_frequency == 0 {
            return Err(SettingsError::ZeroResetFrequency);
        }
        if self.entropy_threshold == 0 {
            return Err(SettingsError::ZeroEntropyThreshold);
        }
        Ok(())
    }

    /// Defaults of the brief, with one model for every role, except that Chaos is off: it needs
    /// a runner of its own (`RunDeps::chaos`), which the caller turns it on with.
    pub fn with_model(model: &str) -> Self {
        let models = Role::with_models()
            .map(|role| {
                let spec = ModelSpec {
                    model: model.to_string(),
                    temperature: None,
                    max_tokens: role.info().default_max_tokens,
                    fallbacks: Vec::new(),
                };
                (role, spec)
            })
            .collect();
        Self {
            max_iterations: 30,
            max_cost_usd: 2.0,
            max_duration: None,
            context_reset_frequency: 1,
            entropy_threshold: 3,
            critic_mode: CriticMode::Auto,
            critic_max_rejections: 2,
            librarian_analyze: Analyze::Auto,
            wait_for_analysis: false,
            max_test_output_bytes: 12 * 1024,
            flaky_retries: 0,
            allow_test_edits: false,
            coverage_threshold: None,
            linter_errors: None,
            models,
            context_windows: BTreeMap::new(),
            context_share: 0.25,
            templates: Templates::default(),
            on_failure: OnFailure::Best,
            chaos: ChaosSettings::off(),
            profile: Profile::Full,
            unavailable: BTreeMap::new(),
        }
    }
}
