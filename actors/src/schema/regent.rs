//! The agent loop's documents (`ralph-loop loop`, the Regent): the state file
//! `.ralph/regent-state.json` that `ralph-loop status` and `ralph-loop breaker reset` read, the
//! loop's report, and each iteration's record in it.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::schema::agent::AgentTokens;
use crate::schema::report::{GuardReport, TestsSnapshot};
use crate::tracker::circuit::Breaker;
use crate::tracker::gate::ExitGate;
use crate::tracker::status::StatusBlock;

/// The version of `.ralph/regent-state.json`'s layout. A file of another version is reported
/// and replaced, never read as this one.
pub const STATE_SCHEMA: u32 = 1;

/// How a loop ended, or that it is still running.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LoopStatus {
    Running,
    /// The exit gate opened: enough completion indicators, the agent's EXIT_SIGNAL, and the
    /// tests agree.
    Complete,
    BudgetExceeded,
    MaxIterations,
    /// The circuit breaker is OPEN: no progress, the same error again and again, or tests
    /// failing for too long.
    BreakerOpen,
    /// The agent asked to stop while the tests failed, too many iterations in a row.
    GateDisagreement,
    /// The agent crashed or hung more than `regent.max_retries` times in a row.
    AgentFailed,
    /// A rollback's `git revert` failed; the tree was left as it was.
    RevertFailed,
    /// SIGINT or SIGTERM: the iteration under way was finished first.
    Interrupted,
    /// SIGQUIT: the agent was killed at once.
    Quit,
    Error,
}

impl LoopStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            LoopStatus::Running => "running",
            LoopStatus::Complete => "complete",
            LoopStatus::BudgetExceeded => "budget_exceeded",
            LoopStatus::MaxIterations => "max_iterations",
            LoopStatus::BreakerOpen => "breaker_open",
            LoopStatus::GateDisagreement => "gate_disagreement",
            LoopStatus::AgentFailed => "agent_failed",
            LoopStatus::RevertFailed => "revert_failed",
            LoopStatus::Interrupted => "interrupted",
            LoopStatus::Quit => "quit",
            LoopStatus::Error => "error",
        }
    }

    /// The process's exit code for a loop that ended so (documented in `docs/agents.md`).
    pub fn exit_code(self) -> i32 {
        match self {
            LoopStatus::Complete => 0,
            LoopStatus::Running | LoopStatus::Error => 1,
            LoopStatus::BudgetExceeded => 3,
            LoopStatus::MaxIterations => 4,
            LoopStatus::BreakerOpen | LoopStatus::GateDisagreement => 5,
            LoopStatus::AgentFailed => 6,
            LoopStatus::RevertFailed => 7,
            LoopStatus::Interrupted => 130,
            LoopStatus::Quit => 131,
        }
    }
}

/// `.ralph/regent-state.json`: written atomically after every change while a loop runs, and
/// left with its final status when it ends. The breaker carries over to the next loop.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RegentState {
    /// [`STATE_SCHEMA`].
    pub schema: u32,
    /// The ralph-loop process that runs (or ran) the loop.
    pub ralph_pid: u32,
    pub status: LoopStatus,
    /// Why the loop stopped, in words (empty while it runs).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    pub agent: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    pub prompt_file: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tasks_file: Option<String>,
    pub iteration: u32,
    /// Agent runs in a row that crashed or hung; a finished run resets it.
    pub consecutive_errors: u32,
    /// When the agent last printed anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_output_at: Option<DateTime<Utc>>,
    /// The last commit the loop made (or reverted to).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_commit: Option<String>,
    pub total_cost_usd: f64,
    /// Some of the cost was estimated from the text (the agent reports none).
    #[serde(default)]
    pub cost_estimated: bool,
    pub breaker: Breaker,
    pub gate: ExitGate,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_tests: Option<TestsSnapshot>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tasks: Option<TaskCounts>,
    pub started_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// A task list's progress.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskCounts {
    pub done: u32,
    pub total: u32,
}

/// What one iteration did, as measured (never as the agent said).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IterationRecord {
    pub iteration: u32,
    /// Agent runs this iteration took (restarts after a crash or a hang count).
    pub runs: u32,
    /// How the last run ended: `exited`, `hung`, `active_timeout`, `over_cost`, ...
    pub ending: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    pub duration_ms: u64,
    pub cost_usd: f64,
    pub cost_estimated: bool,
    pub tokens: AgentTokens,
    #[serde(default)]
    pub tokens_estimated: bool,
    /// Files the iteration changed, as git sees them (commits the agent made included).
    pub files_changed: u32,
    /// Tasks checked off in the task list during the iteration.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tasks_checked: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tests: Option<TestsSnapshot>,
    /// Tests that failed (or did not exist) before the iteration and pass after it.
    pub newly_passing: u32,
    pub progress: bool,
    /// The agent's last well-formed RALPH_STATUS block.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_block: Option<StatusBlock>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// The revert commit, when the iteration's commits were rolled back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reverted: Option<String>,
}

/// The loop's final report (`.ralph/loop/report.json`, `--output json`, the last JSON line).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoopReport {
    pub status: LoopStatus,
    pub exit_code: i32,
    pub reason: String,
    pub agent: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    pub iterations: u32,
    pub duration_ms: u64,
    pub total_cost_usd: f64,
    pub cost_estimated: bool,
    pub tokens: AgentTokens,
    /// Some of the tokens were estimated from the text (the agent reports none).
    #[serde(default)]
    pub tokens_estimated: bool,
    pub breaker: Breaker,
    pub gate: ExitGate,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tasks: Option<TaskCounts>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tests: Option<TestsSnapshot>,
    pub commits: Vec<String>,
    pub reverts: Vec<String>,
    pub history: Vec<IterationRecord>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// What LocalGuard masked in the agent's calls through the model gateway; off when its
    /// calls did not go through it.
    #[serde(default)]
    pub local_guard: GuardReport,
}

/// What the Regent did, for the log and the live view (each shown with a shield mark).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RegentAction {
    /// The agent exited non-zero, or reported an error as its result.
    Crashed,
    /// No output and no work in its tree for the hang timeout: killed.
    Hung,
    /// Silent, but its tree used CPU or did I/O: left to work.
    SilentButWorking,
    /// It ran past `regent.active_timeout_minutes`: killed.
    TimedOut,
    /// The iteration's cost passed `regent.max_cost_per_iteration`: killed.
    OverCost,
    /// Waiting before the next run (backoff, or the breaker's cooldown).
    Waiting,
    Restarted,
    Committed,
    Pushed,
    Reverted,
    RevertFailed,
    /// The loop stops, and why.
    Stopping,
}
