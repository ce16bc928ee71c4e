//! The agent loop's sections (`ralph-loop loop`): `regent:` (how the Regent supervises the
//! agent process, its circuit breaker and exit gate) and `git:` (commits and pushes).

use ralph_actors::tracker::circuit::Thresholds;
use ralph_actors::tracker::gate::GateSettings;
use serde::{Deserialize, Serialize};

use super::checks::{opt_non_empty, opt_positive, positive};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RegentConfig {
    /// The agent `ralph-loop loop` runs when `--agent` is not given.
    #[serde(deserialize_with = "opt_non_empty")]
    pub agent: Option<String>,
    /// The agent's model when `--model` is not given (`None`: the agent's own default).
    #[serde(deserialize_with = "opt_non_empty")]
    pub model: Option<String>,
    /// Agent runs in a row that may crash or hang before the loop stops (`agent_failed`).
    pub max_retries: u32,
    /// The wait before the first restart; each next one doubles, with jitter, up to
    /// `max_backoff_seconds`.
    #[serde(deserialize_with = "positive")]
    pub retry_backoff_seconds: f64,
    #[serde(deserialize_with = "positive")]
    pub max_backoff_seconds: f64,
    /// No output for this long, and no CPU or I/O in the agent's process tree: hung.
    #[serde(deserialize_with = "positive")]
    pub hang_timeout_seconds: f64,
    /// An agent run at most, even while it prints.
    #[serde(deserialize_with = "positive")]
    pub active_timeout_minutes: f64,
    /// After its final result, how long the agent may take to exit.
    #[serde(deserialize_with = "positive")]
    pub result_grace_seconds: f64,
    /// Tests that fail after the iteration's commit: the iteration's commits are reverted.
    pub rollback_on_test_failure: bool,
    /// An iteration whose agent spends more is killed (`None`: no cap but the budget's).
    #[serde(deserialize_with = "opt_positive")]
    pub max_cost_per_iteration: Option<f64>,
    pub breaker: Thresholds,
    pub exit_gate: GateSettings,
}

impl RegentConfig {
    /// The limits of one agent run.
    pub fn limits(&self) -> crate::agents::invoke::Limits {
        let secs = std::time::Duration::from_secs_f64;
        crate::agents::invoke::Limits {
            hang: secs(self.hang_timeout_seconds),
            active: secs(self.active_timeout_minutes * 60.0),
            result_grace: secs(self.result_grace_seconds),
            max_output_bytes: 16 * 1024 * 1024,
        }
    }

    /// How a crashed or hung agent is run again.
    pub fn retry(&self) -> crate::agents::artisan::Retry {
        let secs = std::time::Duration::from_secs_f64;
        crate::agents::artisan::Retry {
            max_retries: self.max_retries,
            first: secs(self.retry_backoff_seconds),
            cap: secs(self.max_backoff_seconds),
        }
    }
}

impl Default for RegentConfig {
    fn default() -> Self {
        Self {
            agent: None,
            model: None,
            max_retries: 3,
            retry_backoff_seconds: 5.0,
            max_backoff_seconds: 300.0,
            hang_timeout_seconds: 300.0,
            active_timeout_minutes: 120.0,
            result_grace_seconds: 10.0,
            rollback_on_test_failure: false,
            max_cost_per_iteration: None,
            breaker: Thresholds::default(),
            exit_gate: GateSettings::default(),
        }
    }
}

impl RegentConfig {
    /// The thresholds that must be at least one, by key, for the loader's check.
    pub(super) fn counts(&self) -> [(&'static str, u64); 6] {
        let b = &self.breaker;
        [
            ("regent.breaker.half_open_after", b.half_open_after.into()),
            ("regent.breaker.open_after", b.open_after.into()),
            ("regent.breaker.same_error", b.same_error.into()),
            ("regent.breaker.tests_failing", b.tests_failing.into()),
            (
                "regent.exit_gate.indicators",
                self.exit_gate.indicators.into(),
            ),
            (
                "regent.exit_gate.disagreements",
                self.exit_gate.disagreements.into(),
            ),
        ]
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GitConfig {
    /// Commit what an iteration changed once the agent has finished its turn.
    pub auto_commit: bool,
    /// The first word of every commit the loop makes.
    pub commit_prefix: String,
    /// Push after each commit (and each revert) to the branch's upstream.
    pub push: bool,
}

impl Default for GitConfig {
    fn default() -> Self {
        Self {
            auto_commit: true,
            commit_prefix: "[ralph]".into(),
            push: false,
        }
    }
}

/// How the agent loop judges the tests (`testing.mode`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TestMode {
    /// Every test must pass: failing tests hold the exit gate shut, count against the breaker
    /// and trigger `regent.rollback_on_test_failure`.
    #[default]
    Gate,
    /// Tests written before the code: only a test that passed in the baseline and fails now
    /// (a regression) fails the gate; tests that pass anew are progress.
    Tdd,
    /// The tests are run and recorded, and judge nothing.
    Report,
}

/// Which tests a TDD baseline holds (`testing.baseline_scope`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BaselineScope {
    /// Captured once, the first time the project has tests, and kept across loops.
    #[default]
    Global,
    /// Captured anew when each loop starts.
    Session,
    /// Captured anew when each loop starts and after each task checked off with no regression.
    Task,
}

/// When a project is too new to be tested (`build:`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BuildConfig {
    pub bootstrap_detection: BootstrapDetection,
    /// `manual`: a command whose exit 0 means the project is still bootstrapping.
    #[serde(deserialize_with = "opt_non_empty")]
    pub bootstrap_check: Option<String>,
}

impl Default for BuildConfig {
    fn default() -> Self {
        Self {
            bootstrap_detection: BootstrapDetection::Auto,
            bootstrap_check: None,
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BootstrapDetection {
    /// No tests can be found yet (no manifest with tests, or no test file): bootstrapping.
    #[default]
    Auto,
    /// `build.bootstrap_check` decides.
    Manual,
    /// The tests always run; none found is a failure.
    Disabled,
}
