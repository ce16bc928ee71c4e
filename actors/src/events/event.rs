//! The events a run emits, one type for every printer and view.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::role::Role;
use crate::schema::agent::AgentEvent;
use crate::schema::context::ContextChoice;
use crate::schema::regent::{LoopReport, RegentAction};
use crate::schema::report::{FallbackRecord, Report, TestsSnapshot};
use crate::schema::usage::Usage;
use crate::tracker::circuit::{Reason, State};
use crate::tracker::status::StatusBlock;

/// The steps of one iteration, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    Baseline,
    Context,
    Generate,
    Review,
    Test,
    Decide,
    /// Chaos attacks a fix whose unit tests pass.
    Adversarial,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Baseline => "baseline",
            Phase::Context => "context",
            Phase::Generate => "generate",
            Phase::Review => "review",
            Phase::Test => "test",
            Phase::Decide => "decide",
            Phase::Adversarial => "adversarial",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    SessionStarted {
        session_id: String,
        target: String,
        test_command: String,
        models: Vec<(Role, String)>,
        max_cost_usd: f64,
        max_iterations: u32,
        resumed_from_iteration: u32,
        /// What the session had spent before this run (a resumed session's ledger).
        #[serde(default, skip_serializing_if = "is_zero_usd")]
        spent_usd: f64,
    },
    IterationStarted {
        iteration: u32,
        max_iterations: u32,
    },
    PhaseChanged {
        iteration: u32,
        phase: Phase,
    },
    LlmCallFinished {
        iteration: u32,
        role: Role,
        model: String,
        usage: Usage,
        cost_usd: f64,
        total_cost_usd: f64,
        duration_ms: u64,
        /// Share of the model's context window the prompt used, when the window is known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        context_used: Option<f64>,
    },
    CriticVerdict {
        iteration: u32,
        approved: bool,
        reasons: String,
    },
    TestsFinished {
        iteration: u32,
        tests: TestsSnapshot,
    },
    /// The Artisan's proposal edited, deleted or skipped tests and was sent back.
    TestIntegrity {
        iteration: u32,
        violations: Vec<String>,
    },
    ContextReset {
        iteration: u32,
    },
    /// A role's prompt used at least 40% of its model's context window: its history is dropped
    /// before its next call.
    ContextHigh {
        iteration: u32,
        role: Role,
        model: String,
        /// The share of the window the prompt used, 0 to 1.
        used: f64,
    },
    /// A role's model failed and the next of its fallbacks takes over.
    Fallback(FallbackRecord),
    /// The project files the Librarian put in the iteration's prompt, nearest first.
    ContextGathered {
        iteration: u32,
        included: Vec<ContextChoice>,
        /// Files near the target left out for the budget.
        excluded: u32,
        tokens: u32,
        budget: u32,
    },
    /// Something the user should know went wrong or was degraded; also in the report's
    /// `warnings`.
    Warning {
        message: String,
    },
    /// A choice made on the user's behalf or a flag not honoured (a model skipped for a missing
    /// key); also in the report's `notes`.
    Note {
        message: String,
    },
    /// The MemoryVault found attempts at similar failures for this iteration's Artisan.
    MemoryRecalled {
        iteration: u32,
        attempts: u32,
        /// How many of them worked.
        worked: u32,
        best_similarity: f32,
    },
    /// This iteration's attempt was recorded in the vault.
    MemoryRecorded {
        iteration: u32,
        success: bool,
    },
    /// A hook changed the Artisan's proposal before it was checked.
    ProposalAmended {
        iteration: u32,
        hook: String,
    },
    /// The tests pass, but a hook vetoed the success; its reasons go to the Artisan.
    SuccessVetoed {
        iteration: u32,
        hook: String,
        reasons: Vec<String>,
    },
    /// Chaos's test file for a round ran against the fix (after `repairs` repairs).
    ChaosSuite {
        iteration: u32,
        round: u32,
        /// Where it is kept, relative to the project root.
        path: String,
        tests: u32,
        failed: u32,
        repairs: u32,
    },
    /// The Critic judged Chaos's failing tests: those kept are findings for the Artisan.
    ChaosJudged {
        iteration: u32,
        round: u32,
        kept: Vec<String>,
        /// `(test, reason)` of each test dropped.
        dropped: Vec<(String, String)>,
    },
    /// The findings of earlier rounds ran again on a new fix.
    ChaosRecheck {
        iteration: u32,
        fixed: Vec<String>,
        open: Vec<String>,
    },
    /// A mutation run on the lines the fix changed: how its mutants fared.
    ChaosMutation {
        iteration: u32,
        tool: String,
        /// Mutants run this time (the survivors only, after Chaos's tests to kill them).
        mutants: u32,
        /// Of those, noticed by a test (killed or timed out).
        detected: u32,
        /// Undetected and not excluded as equivalent, over every mutant in scope.
        surviving: u32,
        /// Undetected ones excluded as equivalent, with reasons.
        equivalent: u32,
        /// The operational score over every mutant in scope, percent.
        score: f64,
        /// The strict score, percent.
        strict: f64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        min_score: Option<f64>,
        duration_ms: u64,
    },
    /// LocalGuard sealed a model call that holds masked values: how many of each kind (never
    /// the values).
    Masked {
        iteration: u32,
        role: Role,
        /// Distinct values masked in the call, by kind (`SECRET_AWS_ACCESS_KEY_ID`).
        kinds: std::collections::BTreeMap<String, usize>,
    },
    /// A piece of a role's reply as the model streams it (the thought stream), gathered into
    /// lines or about a tenth of a second of text; as the model wrote it, masked values still
    /// masked.
    Thought {
        iteration: u32,
        role: Role,
        text: String,
    },
    /// The run stopped before its next step, as the user asked (a live view's pause).
    Paused {
        iteration: u32,
    },
    /// The run goes on after a pause.
    Resumed {
        iteration: u32,
    },
    SessionFinished {
        report: Box<Report>,
    },
    /// `ralph-loop loop` began: a coding agent, run again and again on a prompt.
    LoopStarted {
        agent: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
        prompt_file: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tasks_file: Option<String>,
        max_iterations: u32,
        max_cost_usd: f64,
    },
    /// The agent process of an iteration started (`run` counts restarts within it, from 1).
    AgentStarted {
        iteration: u32,
        run: u32,
        agent: String,
        /// The model it was started on, when one was named (the view's picker may change it
        /// between iterations).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
    },
    /// Something the agent's output said, as it said it: its thought stream.
    AgentOutput {
        iteration: u32,
        event: AgentEvent,
    },
    /// The agent process ended: how, and what it cost.
    AgentEnded {
        iteration: u32,
        run: u32,
        /// `exited`, `hung`, `active_timeout`, `stopped_after_result`, `over_cost`,
        /// `over_memory`, `cancelled`.
        ending: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit_code: Option<i32>,
        duration_ms: u64,
        cost_usd: f64,
        /// Estimated from the text: the agent reported no cost.
        cost_estimated: bool,
        total_cost_usd: f64,
    },
    /// The Regent acted on the agent or the tree (a restart, a kill, a commit, a revert).
    Regent {
        iteration: u32,
        action: RegentAction,
        message: String,
    },
    /// What the agent's RALPH_STATUS block and completion indicators said this iteration.
    StatusRead {
        iteration: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        block: Option<StatusBlock>,
        indicators: u32,
        /// Blocks that could not be read, and why.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        malformed: Vec<String>,
    },
    /// What the iteration changed, measured: files, tasks checked off, tests newly passing.
    ProgressMeasured {
        iteration: u32,
        files_changed: u32,
        tasks_checked: Vec<String>,
        newly_passing: u32,
        progress: bool,
    },
    /// The agent loop's circuit breaker moved.
    BreakerChanged {
        iteration: u32,
        from: State,
        to: State,
        reason: Reason,
    },
    LoopFinished {
        report: Box<LoopReport>,
    },
}

/// An event as subscribers receive it. Serialised flat: the event's own fields beside
/// `session`, `seq` and `time`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Envelope {
    /// The session (`.ralph/session-<uuid>`) that emitted it.
    pub session: String,
    /// 1 for the session's first event, then one more for each.
    pub seq: u64,
    pub time: DateTime<Utc>,
    #[serde(flatten)]
    pub event: Event,
}

fn is_zero_usd(usd: &f64) -> bool {
    *usd == 0.0
}
