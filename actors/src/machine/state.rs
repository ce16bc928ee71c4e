//! The states of a run and how a step ends.
//!
//! ```text
//!  Baseline ─► TestBaseline ─┬─► Stop(success: the tests already pass)
//!                            ▼
//!  ┌──────────────────────► Begin ─► Stop(max_iterations)
//!  │                          │
//!  │                          ▼
//!  │     Context ─► Recall ─► Generate ◄────────────────────────┐
//!  │                              │                             │ no code, tests edited,
//!  │                              ▼                             │ or the Critic rejects
//!  │                            Check ─────────────────────────►┤ (within critic.max_rejections)
//!  │                              │        ▲                    │
//!  │                              ▼        │                    │
//!  │                           Review ─────┘────────────────────┘
//!  │                              │
//!  │                              ▼
//!  │                            Write ─► Test ─► Decide ─┬─► Stop(success)
//!  │                                                     ├─► Stop(entropy_detected)
//!  ├─────────────────────────────────────────────────────┤   (a hook's veto, or tests failing)
//!  │                                                     ▼   (tests pass, Chaos on)
//!  │                                                  Attack ─┬─► Stop(success)
//!  └──────────────────────────────────────────────────────────┤   (Chaos's findings)
//!                                                             └─► Stop(max_iterations: rounds spent)
//! ```
//!
//! `Check` goes straight to `Write` when the Critic's review does not gate the tests
//! (`critic.mode` resolved to `parallel`, or `off`); in `parallel` the review runs during `Test`.
//!
//! Any step may also end the run with `budget_exceeded` (cost or time), `interrupted` or
//! `error`. Every state carries what its step needs; the work of the iteration so far travels
//! in [`Iteration`].

use std::sync::Arc;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::events::event::Phase;
use crate::memory::signature::Failure;
use crate::policy::pace::CriticMode;
use crate::prompt::bundle::ContextBundle;
use crate::prompt::reply::Proposal;
use crate::schema::report::Status;
use crate::schema::test_run::TestRun;
use crate::schema::usage::Usage;

/// How a run ended: a status (with its exit code) and the reason in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub status: Status,
    pub reason: String,
    /// The process's exit code when it is not the status's own (an interrupt by SIGTERM
    /// exits 143, by SIGHUP 129).
    pub exit_code: Option<i32>,
}

impl Outcome {
    pub fn new(status: Status, reason: impl Into<String>) -> Self {
        Self {
            status,
            reason: reason.into(),
            exit_code: None,
        }
    }
}

/// What a step decides: of the fix loop's states by default, or of another machine's
/// ([`crate::machine::driver::Machine`]).
#[derive(Debug)]
pub enum Next<S = State, O = Outcome> {
    /// Go on in this state.
    Continue(S),
    /// The run ends.
    Stop(O),
}

/// The work of one iteration so far, carried from state to state.
#[derive(Debug)]
pub struct Iteration {
    /// 1 for the first iteration.
    pub n: u32,
    pub started: Instant,
    pub started_at: String,
    /// The ledger's spend and tokens when the iteration began, for its own cost and tokens.
    pub cost_before: f64,
    pub tokens_before: Usage,
    /// What the Librarian gathered; set by the Context step.
    pub context: Option<Arc<ContextBundle>>,
    /// The failure this iteration tries to fix, when the last run failed.
    pub fixing: Option<Failure>,
    /// Why the last proposal was sent back, for the Artisan's next try.
    pub critique: Option<String>,
    /// Proposals the Critic rejected in this iteration.
    pub rejections: u32,
    /// Proposals sent back without the Critic: no code block, or tests edited.
    pub retries: u32,
    /// The Critic approved the proposal written (true when there is no Critic).
    pub approved: bool,
    /// The Artisan's last reply.
    pub reply: String,
    /// The code written to the target, if any.
    pub written: Option<String>,
    /// How the Critic's review and the tests are ordered in this iteration: `auto` resolved
    /// at the last proposal's check.
    pub critic_mode: CriticMode,
    /// The proposal passed its tests and its review goes on beside Chaos's round.
    pub review_pending: bool,
    /// The checkpoint the target held when the iteration began (`state.on_disk`): what a
    /// proposal the Critic rejects during its tests is undone to.
    pub on_disk: Option<u32>,
}

impl Iteration {
    /// Proposals sent back so far, by the Critic or the checks: they share one allowance.
    pub fn sent_back(&self) -> u32 {
        self.rejections + self.retries
    }

    /// The context the Librarian gathered. The machine sets it before any state that reads it.
    pub fn context(&self) -> Option<&Arc<ContextBundle>> {
        self.context.as_ref()
    }
}

/// Where a run is.
#[derive(Debug)]
pub enum State {
    /// A new session: about to run the tests as they are.
    Baseline,
    /// The baseline test run.
    TestBaseline,
    /// Between iterations: the limits are checked and the next iteration starts.
    Begin,
    /// The Librarian gathers the iteration's context.
    Context(Box<Iteration>),
    /// The MemoryVault recalls attempts at similar failures.
    Recall(Box<Iteration>),
    /// The Artisan proposes the whole new file.
    Generate(Box<Iteration>),
    /// The proposal is amended by hooks and checked: a code block, the tests left alone.
    Check(Box<Iteration>, Proposal),
    /// The Critic reviews the code.
    Review(Box<Iteration>, String),
    /// The code, or nothing when no proposal passed, is written to the target.
    Write(Box<Iteration>, Option<String>),
    /// The tests run on what was written.
    Test(Box<Iteration>),
    /// The run is judged: the success criteria, the hooks' gate, the breaker.
    Decide(Box<Iteration>, Arc<TestRun>),
    /// The unit tests pass: Chaos re-runs its earlier findings and attacks the fix.
    Attack(Box<Iteration>),
}

/// A state's name without its data, for observers: the fix loop's states, then the agent
/// loop's (the Regent's, in the binary's crate), which share `Baseline`, `Begin` and `Done`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StateKind {
    Baseline,
    TestBaseline,
    Begin,
    Context,
    Recall,
    Generate,
    Check,
    Review,
    Write,
    Test,
    Decide,
    Attack,
    /// The agent loop's next task, before its `pre_task` hooks.
    Task,
    /// The agent's turn: it reads the prompt and changes the project itself.
    Turn,
    /// The tests after the agent's turn.
    Verify,
    /// What the turn did, measured: progress, the status block, the tests' verdict.
    Judge,
    /// The iteration's changes committed.
    Commit,
    /// The iteration's commits reverted, the tests failing after them.
    Revert,
    /// The breaker told, and the exit gate asked.
    Gate,
    /// The run has ended.
    Done,
}

impl State {
    pub fn kind(&self) -> StateKind {
        match self {
            State::Baseline => StateKind::Baseline,
            State::TestBaseline => StateKind::TestBaseline,
            State::Begin => StateKind::Begin,
            State::Context(_) => StateKind::Context,
            State::Recall(_) => StateKind::Recall,
            State::Generate(_) => StateKind::Generate,
            State::Check(..) => StateKind::Check,
            State::Review(..) => StateKind::Review,
            State::Write(..) => StateKind::Write,
            State::Test(_) => StateKind::Test,
            State::Decide(..) => StateKind::Decide,
            State::Attack(_) => StateKind::Attack,
        }
    }

    /// The iteration under way, if any.
    pub fn iteration(&self) -> Option<&Iteration> {
        match self {
            State::Baseline | State::TestBaseline | State::Begin => None,
            State::Context(it)
            | State::Recall(it)
            | State::Generate(it)
            | State::Check(it, _)
            | State::Review(it, _)
            | State::Write(it, _)
            | State::Test(it)
            | State::Decide(it, _)
            | State::Attack(it) => Some(it),
        }
    }
}

impl StateKind {
    /// The phase the live view shows on entering this state; the bookkeeping states show none.
    pub fn phase(self) -> Option<Phase> {
        match self {
            StateKind::Baseline => Some(Phase::Baseline),
            StateKind::Context => Some(Phase::Context),
            StateKind::Generate => Some(Phase::Generate),
            StateKind::Review => Some(Phase::Review),
            StateKind::TestBaseline | StateKind::Test => Some(Phase::Test),
            StateKind::Decide => Some(Phase::Decide),
            StateKind::Attack => Some(Phase::Adversarial),
            StateKind::Begin
            | StateKind::Recall
            | StateKind::Check
            | StateKind::Write
            | StateKind::Task
            | StateKind::Turn
            | StateKind::Verify
            | StateKind::Judge
            | StateKind::Commit
            | StateKind::Revert
            | StateKind::Gate
            | StateKind::Done => None,
        }
    }
}
