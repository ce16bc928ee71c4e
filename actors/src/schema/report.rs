//! How a run ends: its status, exit code and final report.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::role::Role;
use crate::schema::test_run::TestRun;
use crate::schema::usage::Usage;

/// The statuses of the brief; each has one exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Success,
    Error,
    BudgetExceeded,
    MaxIterations,
    EntropyDetected,
    Interrupted,
}

impl Status {
    pub fn exit_code(self) -> i32 {
        match self {
            Status::Success => 0,
            Status::Error => 1,
            Status::BudgetExceeded => 3,
            Status::MaxIterations => 4,
            Status::EntropyDetected => 5,
            Status::Interrupted => 130,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Success => "success",
            Status::Error => "error",
            Status::BudgetExceeded => "budget_exceeded",
            Status::MaxIterations => "max_iterations",
            Status::EntropyDetected => "entropy_detected",
            Status::Interrupted => "interrupted",
        }
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a run that ends without success leaves in the target file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnFailure {
    /// The best state reached: the written proposal (or the original) whose tests did best.
    #[default]
    Best,
    /// The file as it was before the run.
    Original,
    /// Whatever was written last, tested or not.
    Last,
}

impl OnFailure {
    pub fn as_str(self) -> &'static str {
        match self {
            OnFailure::Best => "best",
            OnFailure::Original => "original",
            OnFailure::Last => "last",
        }
    }
}

impl std::str::FromStr for OnFailure {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "best" => Ok(OnFailure::Best),
            "original" => Ok(OnFailure::Original),
            "last" => Ok(OnFailure::Last),
            other => Err(format!(
                "unknown on_failure `{other}` (expected best, original or last)"
            )),
        }
    }
}

/// A state of the target worth keeping: the original (iteration 0) or a written proposal, with
/// its tests' outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Checkpoint {
    pub iteration: u32,
    pub tests: TestsSnapshot,
}

/// What a run that ended without success left in the target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileLeft {
    /// The `on_failure` setting that chose it.
    pub policy: OnFailure,
    /// The iteration whose state the file holds (0: the original); `None` for a last proposal
    /// that was never tested.
    pub iteration: Option<u32>,
    /// That state's tests, when they ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tests: Option<TestsSnapshot>,
}

/// A count of tests at one moment of the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestsSnapshot {
    pub status: crate::schema::test_run::RunStatus,
    pub passed: u32,
    pub failed: u32,
    pub skipped: u32,
    /// Tests that failed and then passed on a re-run (counted in `passed`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub flaky: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<crate::schema::test_run::Category>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coverage_pct: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lint_errors: Option<u32>,
    /// Every success criterion judged is met.
    #[serde(default)]
    pub criteria_met: bool,
    pub summary: String,
    /// The first failing test and the first line of its message, for the live views.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_failure: Option<String>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl From<&TestRun> for TestsSnapshot {
    fn from(r: &TestRun) -> Self {
        Self {
            status: r.status,
            passed: r.totals.passed,
            failed: r.totals.failed,
            skipped: r.totals.skipped,
            flaky: r.totals.flaky,
            category: r.category,
            coverage_pct: r.coverage.as_ref().map(|c| c.lines_pct),
            lint_errors: r.lint.as_ref().map(|l| l.errors),
            criteria_met: r.criteria_met(),
            summary: match r.unmet_criteria() {
                Some(unmet) if r.passed() => format!("{}; unmet: {unmet}", r.summary()),
                _ => r.summary(),
            },
            first_failure: r.failures().next().map(|t| {
                let line = t
                    .message
                    .as_deref()
                    .and_then(|m| m.lines().map(str::trim).find(|l| !l.is_empty()));
                let text = match line {
                    Some(line) => format!("{}: {line}", t.name),
                    None => t.name.clone(),
                };
                text.chars().take(200).collect()
            }),
        }
    }
}

/// Where the wall time went, so orchestration overhead can be read off every run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Timings {
    /// Time at least one model call was in flight (calls beside each other count once).
    pub llm_ms: u64,
    /// Time spent running test commands (their durations added up).
    pub test_ms: u64,
    /// The time no model call and no test run was in flight: reading and writing files,
    /// prompts, parsing, actors.
    pub overhead_ms: u64,
}

/// The Critic's word on a proposal whose tests passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FixVerdict {
    Approved,
    /// Kept as a note (`critic.mode: parallel`), or the tests judged it once the Critic's
    /// rejections were spent (`gate`).
    Rejected,
    /// The review had not come in when the run ended (interrupted, or stopped by an error): the
    /// fix was not reviewed.
    Unreviewed,
}

impl FixVerdict {
    /// The verdict of a review that came in.
    pub fn of(approved: bool) -> FixVerdict {
        if approved {
            FixVerdict::Approved
        } else {
            FixVerdict::Rejected
        }
    }
}

/// The review of the last proposal whose tests passed (the fix a successful run ends with).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FixReview {
    pub iteration: u32,
    pub verdict: FixVerdict,
}

/// The final report, also written as `report.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub session_id: String,
    pub status: Status,
    pub exit_code: i32,
    pub reason: String,
    pub target: String,
    pub test_command: String,
    pub iterations: u32,
    pub duration_ms: u64,
    pub cost_usd: f64,
    pub cost_by_role: BTreeMap<String, f64>,
    pub cost_by_model: BTreeMap<String, f64>,
    pub tokens: Usage,
    pub tokens_by_role: BTreeMap<String, Usage>,
    /// Calls that cost more than was reserved for them (a provider that ignored the output
    /// cap): which, and by how much. The run stops at the first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overruns: Vec<crate::schema::usage::Overrun>,
    /// Calls abandoned before their reply, each charged its reservation.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub abandoned_calls: u32,
    /// Replies without usage from their provider, charged by estimate.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub estimated_calls: u32,
    pub tests_before: Option<TestsSnapshot>,
    pub tests_after: Option<TestsSnapshot>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stuck_on: Option<String>,
    pub context_resets: u32,
    pub critic_rejections: u32,
    /// The Critic's word on the last proposal whose tests passed; absent when none passed or
    /// the Critic is off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fix_review: Option<FixReview>,
    /// Proposals sent back for editing, deleting or skipping tests.
    #[serde(default)]
    pub test_integrity_rejections: u32,
    pub timings: Timings,
    pub warnings: Vec<String>,
    /// What the run chose on the user's behalf or could not honour (a model skipped for a
    /// missing key, a micro-agent flag ignored).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Each move from a role's model to a fallback.
    #[serde(default)]
    pub fallbacks: Vec<FallbackRecord>,
    /// Per role, the largest share of its model's context window a prompt used (0 to 1); roles
    /// whose model's window is unknown are absent.
    #[serde(default)]
    pub context_use: BTreeMap<String, f64>,
    /// What the MemoryVault did in this run.
    #[serde(default)]
    pub memory: MemoryReport,
    /// Proposals undone because they made the tests worse.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reverts: u32,
    /// What to try next, from how the run ended and its last test run (empty on a clean
    /// success).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub next_steps: Vec<String>,
    /// For a run that did not succeed: which state of the target it left, by `on_failure`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_left: Option<FileLeft>,
    /// What Chaos did (absent when it did not run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adversarial: Option<crate::schema::adversarial::AdversarialReport>,
    /// What the run's success stands on: its profile, and each check met, unmet, off or
    /// unavailable.
    #[serde(default)]
    pub promise: crate::schema::promise::Promise,
    /// What LocalGuard masked: kinds and counts, never values.
    #[serde(default)]
    pub local_guard: GuardReport,
    pub started_at: String,
    pub finished_at: String,
}

/// LocalGuard's part in a run: counts and kinds only.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GuardReport {
    /// Whether anything was looked at (`local_guard.enabled` and a mode other than `off`).
    pub enabled: bool,
    /// `mask`, `block` or `off`.
    pub mode: String,
    /// Distinct values masked, by kind (`SECRET_AWS_ACCESS_KEY_ID`: 1).
    pub masked: BTreeMap<String, usize>,
    /// Placeholders put back into text written to the project.
    pub restored: usize,
    /// Matches an allowlist let through.
    pub allowlisted: usize,
}

impl GuardReport {
    /// What `guard` has done so far.
    pub fn of(guard: &ralph_guard::Guard) -> Self {
        let stats = guard.stats();
        let mode = guard.mode();
        Self {
            enabled: mode != ralph_guard::Mode::Off,
            mode: mode.name().to_string(),
            masked: stats.masked,
            restored: stats.restored,
            allowlisted: stats.allowlisted,
        }
    }
}

/// A move from a role's model to its next fallback, for the log and the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FallbackRecord {
    pub iteration: u32,
    pub role: Role,
    pub from: String,
    pub to: String,
    pub reason: String,
}

/// Whether the MemoryVault took part in a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemoryStatus {
    /// Recalled and recorded throughout.
    On,
    /// `memory.enabled: false`.
    #[default]
    Off,
    /// Could not be opened (missing directory, corrupt, locked): the run went on without it.
    Unavailable,
    /// Stopped working during the run; what came before it counted.
    Failed,
}

/// The MemoryVault's part in a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MemoryReport {
    pub status: MemoryStatus,
    /// Why memory is unavailable or failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The embedding model the vault's vectors come from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedder: Option<String>,
    /// Iterations whose Artisan was shown recalled attempts.
    pub recalls: u32,
    /// Attempts shown, over all iterations.
    pub recalled: u32,
    /// Attempts recorded.
    pub recorded: u32,
}
