//! The agent loop as a machine on the fix loop's driver (`ralph_actors::machine::driver`): its
//! own states, stepped one at a time, the pause between two steps shared with the fix loop, and
//! the project's hooks told of every move as a fix run's are.
//!
//! ```text
//!  Baseline ─► Begin ─► Task ─► Turn ─► Verify ─► Judge ─► Commit ─► Revert ─► Gate ─┐
//!                ▲  │      │      │                 │                   │         │   │
//!                │  ▼      ▼      ▼                 ▼                   ▼         ▼   │
//!                │ stop:  stop:  stop:            stop:               stop:     stop: │
//!                │ limits, a hook SIGQUIT, the    SIGQUIT during      the revert complete, the
//!                │ breaker        agent failed    the tests           failed    agent and the
//!                │                                                              tests disagree
//!                └──────────────────────────────────────────────────────────────────┘
//! ```
//!
//! Each iteration that reached `Judge` is closed whichever way it ends: its record kept, the
//! state saved, and the `post_task` hooks run for the tasks it checked off ([`LoopRun::close`]).
//!
//! The hooks' stages in `loop`: `on_before_gen` before each agent turn (the move into `Turn`),
//! `on_test_fail` when the tests after a turn fail (`Verify` to `Judge`), `on_success` when the
//! loop ends complete; `before_success` (a plugin's veto) is asked at the exit gate, and a veto's
//! reasons go to the agent's next prompt; `pre_task` and `post_task` around the list's tasks.
//! `on_after_gen` has nothing to amend: the agent writes the files itself.

use std::collections::BTreeSet;
use std::path::PathBuf;

use ralph_actors::events::event::Event;
use ralph_actors::machine::driver::Machine;
use ralph_actors::machine::hold;
use ralph_actors::machine::hooks::{self, Gate, HookError, Transition};
use ralph_actors::machine::state::{Next, StateKind};
use ralph_actors::schema::regent::{IterationRecord, LoopReport, LoopStatus};
use ralph_actors::schema::report::Status;
use ralph_actors::schema::test_run::TestRun;
use ralph_actors::tracker::gate::Said;

use super::outcome::{Turn, TurnEnd};
use super::prompt::{build, PromptParts};
use super::run::LoopRun;
use super::tasks::TaskList;
use crate::git::Snapshot;

/// How the loop ended: its status and the reason in words.
pub type LoopEnd = (LoopStatus, String);

/// What a step of the loop decides.
pub(super) type Step = Next<LoopState, LoopEnd>;

/// The agent loop's states. Those of an iteration carry its [`Work`].
pub enum LoopState {
    /// The tests before the first iteration.
    Baseline,
    /// Between iterations: the model the view chose, the limits, a breaker reset asked for,
    /// and the breaker's admission.
    Begin,
    /// The list's next task: its `pre_task` hooks.
    Task,
    /// The agent's turn on a prompt built afresh from disk.
    Turn,
    /// The tests after the turn.
    Verify(Box<Work>),
    /// What the turn did, measured: files, commits, tasks, tests newly passing, the status
    /// block, and the tests' verdict by `testing.mode`.
    Judge(Box<Work>),
    /// The iteration's changes committed (and pushed), when the agent finished its turn.
    Commit(Box<Work>),
    /// The iteration's commits reverted when the tests fail after them.
    Revert(Box<Work>),
    /// The breaker told what happened, and the exit gate asked (the hooks' `before_success`
    /// too, when it would let the loop end).
    Gate(Box<Work>),
}

/// The tree before an iteration ([`LoopRun::checkpoint`]).
pub struct Checkpoint {
    /// `HEAD` then (`None` in a repository with no commit yet).
    pub(super) head: Option<String>,
    pub(super) snapshot: Snapshot,
    /// The paths of `snapshot` git did not track then.
    pub(super) untracked: BTreeSet<PathBuf>,
}

/// An iteration's work so far, carried from state to state.
pub struct Work {
    pub n: u32,
    pub(super) turn: Turn,
    pub(super) checkpoint: Option<Checkpoint>,
    /// The task list before the turn.
    pub(super) tasks_before: TaskList,
    /// The tests after the turn (`None`: none could run).
    pub(super) tests: Option<TestRun>,
    /// What `Judge` measured.
    pub(super) record: Option<IterationRecord>,
    pub(super) changed: Vec<PathBuf>,
    pub(super) checked: Vec<String>,
    pub(super) progress: bool,
    pub(super) tests_ok: bool,
    pub(super) said: Said,
}

impl LoopState {
    fn kind(&self) -> StateKind {
        match self {
            LoopState::Baseline => StateKind::Baseline,
            LoopState::Begin => StateKind::Begin,
            LoopState::Task => StateKind::Task,
            LoopState::Turn => StateKind::Turn,
            LoopState::Verify(_) => StateKind::Verify,
            LoopState::Judge(_) => StateKind::Judge,
            LoopState::Commit(_) => StateKind::Commit,
            LoopState::Revert(_) => StateKind::Revert,
            LoopState::Gate(_) => StateKind::Gate,
        }
    }

    fn work(&self) -> Option<&Work> {
        match self {
            LoopState::Verify(w)
            | LoopState::Judge(w)
            | LoopState::Commit(w)
            | LoopState::Revert(w)
            | LoopState::Gate(w) => Some(w),
            LoopState::Baseline | LoopState::Begin | LoopState::Task | LoopState::Turn => None,
        }
    }
}

/// The fix run's status a loop's end stands for, as its hooks are told it (`on_success` when
/// the loop is complete).
fn as_status(status: LoopStatus) -> Status {
    match status {
        LoopStatus::Complete => Status::Success,
        LoopStatus::BudgetExceeded => Status::BudgetExceeded,
        LoopStatus::MaxIterations => Status::MaxIterations,
        LoopStatus::BreakerOpen | LoopStatus::GateDisagreement => Status::EntropyDetected,
        LoopStatus::Interrupted | LoopStatus::Quit => Status::Interrupted,
        LoopStatus::Running
        | LoopStatus::AgentFailed
        | LoopStatus::RevertFailed
        | LoopStatus::Error => Status::Error,
    }
}

impl Machine for LoopRun {
    type State = LoopState;
    type Outcome = LoopEnd;

    fn kind(state: &LoopState) -> StateKind {
        state.kind()
    }

    /// The views are told of an iteration by its own events (`iteration_started`,
    /// `agent_started`, ...), not of each state.
    fn enter(&mut self, _state: &LoopState) {}

    /// Waits while the live view holds the loop paused; a quit meanwhile ends it, a stop
    /// between iterations lets the loop go on to its end as it would.
    async fn hold(&mut self) -> Result<(), LoopEnd> {
        let Some(mut pause) = self.deps.pause.take() else {
            return Ok(());
        };
        let (events, iteration) = (self.deps.events.clone(), self.state.iteration);
        let (quit, drain) = (self.deps.quit.clone(), self.deps.drain.clone());
        let held = hold::hold(&mut pause, &events, iteration, &quit, &drain).await;
        self.deps.pause = Some(pause);
        held.map_err(|hold::Stopped| (LoopStatus::Quit, "quit while paused".into()))
    }

    async fn step(&mut self, state: LoopState) -> Step {
        match state {
            LoopState::Baseline => {
                self.last_tests = self.run_tests(0).await;
                Next::Continue(LoopState::Begin)
            }
            LoopState::Begin => {
                self.take_model_switch();
                match self.before_iteration().await {
                    Some(stop) => Next::Stop(stop),
                    None => Next::Continue(LoopState::Task),
                }
            }
            LoopState::Task => match self.before_task().await {
                Some(stop) => Next::Stop(stop),
                None => Next::Continue(LoopState::Turn),
            },
            LoopState::Turn => self.turn().await,
            LoopState::Verify(mut work) => {
                work.tests = self.run_tests(work.n).await;
                Next::Continue(LoopState::Judge(work))
            }
            LoopState::Judge(work) => self.judge(work).await,
            LoopState::Commit(work) => self.commit_step(work),
            LoopState::Revert(work) => self.revert_step(work).await,
            LoopState::Gate(work) => self.gate_step(work).await,
        }
    }

    /// The hooks are told of the move. A hook's failure that stops the loop ends it once the
    /// iteration under way is closed (judged, recorded), before the next one begins.
    async fn moved(&mut self, from: StateKind, next: &Step) -> Option<LoopEnd> {
        if !self.hooks.is_empty() {
            let (to, work, ended) = match next {
                Next::Continue(s) => (s.kind(), s.work(), None),
                Next::Stop((status, _)) => (StateKind::Done, None, Some(as_status(*status))),
            };
            // The move into `Turn` begins the next iteration.
            let n = match (work, to) {
                (Some(w), _) => w.n,
                (None, StateKind::Turn) => self.state.iteration + 1,
                (None, _) => self.state.iteration,
            };
            let session = self.deps.events.session();
            let failures = {
                let tests = work.and_then(|w| w.tests.as_ref());
                let at = self.transition(&session, n, (from, to), tests, ended);
                hooks::tell(&self.hooks, &at).await
            };
            self.hook_failed(failures, "ignored");
        }
        match next {
            Next::Continue(LoopState::Begin | LoopState::Task | LoopState::Turn) => self
                .hook_stop
                .take()
                .map(|why| (LoopStatus::Error, format!("stopped by a hook: {why}"))),
            _ => None,
        }
    }
}

impl LoopRun {
    /// Runs the loop to its end; its report.
    pub async fn execute(mut self) -> LoopReport {
        let s = &self.deps.settings;
        self.emit(Event::LoopStarted {
            agent: self.deps.agent.name.clone(),
            model: self.deps.model.clone(),
            prompt_file: self.state.prompt_file.clone(),
            tasks_file: self.state.tasks_file.clone(),
            max_iterations: s.max_iterations,
            max_cost_usd: s.max_cost_usd,
        });
        for note in std::mem::take(&mut self.deps.notes) {
            self.emit(Event::Note { message: note });
        }
        for warning in self.warnings.clone() {
            self.emit(Event::Warning { message: warning });
        }
        if self.repo.is_none() {
            self.warn(format!(
                "{} is not in a git repository: no checkpoints, commits or rollbacks, and progress is measured by tasks and tests alone",
                self.deps.root.display()
            ));
        }
        self.save_state();
        self.load_baseline();
        let (status, reason) =
            ralph_actors::machine::driver::drive(&mut self, LoopState::Baseline).await;
        self.end_task(status, &reason).await;
        self.finish(status, reason)
    }

    /// What a hook is shown of the loop at a move `(from, to)` of iteration `n`; `tests`: the
    /// iteration's own, once they ran.
    fn transition<'a>(
        &'a self,
        session: &'a str,
        n: u32,
        (from, to): (StateKind, StateKind),
        tests: Option<&'a TestRun>,
        ended: Option<Status>,
    ) -> Transition<'a> {
        Transition {
            session,
            iteration: n,
            from,
            to,
            spent_usd: self.state.total_cost_usd,
            max_cost_usd: self.deps.settings.max_cost_usd,
            context: None,
            last_run: tests.or(self.last_tests.as_ref()),
            ended,
            // An `agent` hook asks the run's models; the loop has an agent, not models.
            ask: None,
        }
    }

    /// Hooks' failures: warnings, and the first that stops the loop kept for [`Machine::moved`].
    fn hook_failed(&mut self, failures: Vec<HookError>, then: &str) {
        for e in failures {
            if e.stop {
                self.warn(format!("{e}; the loop stops"));
                self.hook_stop.get_or_insert_with(|| e.to_string());
            } else {
                self.warn(format!("{e}; {then}"));
            }
        }
    }

    /// The hooks' `before_success`, asked when the exit gate would end the loop complete; a
    /// veto's reasons go to the agent, and the loop goes on.
    pub(super) async fn hooks_gate(&mut self, n: u32, tests: &TestRun) -> Gate {
        if self.hooks.is_empty() {
            return Gate::Pass;
        }
        let session = self.deps.events.session();
        let gated = {
            let at = self.transition(
                &session,
                n,
                (StateKind::Gate, StateKind::Done),
                Some(tests),
                None,
            );
            hooks::gate(&self.hooks, &at, tests, &self.deps.events).await
        };
        if let (Some(hook), Gate::Veto { reasons }) = (&gated.by, &gated.gate) {
            for reason in reasons {
                self.notes
                    .push(format!("Not done yet, says the hook {hook}: {reason}"));
            }
        }
        self.hook_failed(gated.failures, "its gate counts as passed");
        gated.gate
    }

    /// The agent's turn: the iteration begins (checkpoint, prompt), the agent runs.
    async fn turn(&mut self) -> Step {
        let n = self.state.iteration + 1;
        self.state.iteration = n;
        self.spent_this_iteration = 0.0;
        if let Some(gateway) = &self.deps.gateway {
            gateway.begin_iteration(
                self.state.total_cost_usd,
                self.deps.settings.max_cost_per_iteration,
            );
        }
        self.save_state();
        self.emit(Event::IterationStarted {
            iteration: n,
            max_iterations: self.deps.settings.max_iterations,
        });
        let checkpoint = self.checkpoint(n);
        let tasks_before = self.read_tasks();
        let prompt_text = match std::fs::read_to_string(&self.deps.prompt_file) {
            Ok(text) => text,
            Err(e) => {
                let why = format!("cannot read {}: {e}", self.deps.prompt_file.display());
                return Next::Stop((LoopStatus::Error, why));
            }
        };
        // What the hooks have for the agent: their notes, as a fix run's go to the Artisan.
        let hooked: Vec<String> = self.hooks.iter().flat_map(|h| h.take_notes()).collect();
        self.notes.extend(hooked);
        let notes = std::mem::take(&mut self.notes);
        let tasks_shown = self.state.tasks_file.clone();
        let prompt = build(&PromptParts {
            iteration: n,
            prompt: &prompt_text,
            tasks: match (&tasks_shown, &tasks_before) {
                (Some(path), Some((text, list))) => Some((path.as_str(), text.as_str(), list)),
                _ => None,
            },
            tests: self.last_tests.as_ref(),
            tests_skipped: None,
            notes: &notes,
        });
        let turn = self.agent_turn(n, &prompt).await;
        self.tokens.add(turn.tokens);
        self.tokens_estimated |= turn.tokens_estimated;
        let agent = &self.deps.agent.name;
        let stop = match &turn.end {
            TurnEnd::Finished | TurnEnd::OverCost => None,
            TurnEnd::Quit => Some((
                LoopStatus::Quit,
                format!("SIGQUIT: {agent} was killed in iteration {n}"),
            )),
            TurnEnd::Interrupted => Some((
                LoopStatus::Interrupted,
                format!("stopped while waiting to restart {agent}"),
            )),
            TurnEnd::Failed(why) => Some((LoopStatus::AgentFailed, why.clone())),
        };
        if let Some(stop) = stop {
            return Next::Stop(stop);
        }
        Next::Continue(LoopState::Verify(Box::new(Work {
            n,
            turn,
            checkpoint,
            tasks_before: tasks_before.map(|(_, list)| list).unwrap_or_default(),
            tests: None,
            record: None,
            changed: Vec::new(),
            checked: Vec::new(),
            progress: false,
            tests_ok: false,
            said: Said::default(),
        })))
    }

    /// The iteration ends, whichever way: its record kept, the state saved, the `post_task`
    /// hooks run for the tasks it checked off; then the loop stops (`stop`, or a hook's, or a
    /// stop asked for between iterations) or the next iteration begins.
    pub(super) async fn close(&mut self, mut work: Box<Work>, stop: Option<LoopEnd>) -> Step {
        if let Some(record) = work.record.take() {
            self.history.push(record);
        }
        self.save_state();
        let hooked = self.after_tasks(&work.tasks_before).await;
        if let Some(stop) = stop.or(hooked) {
            return Next::Stop(stop);
        }
        if self.deps.drain.is_cancelled() {
            let done = self.state.iteration;
            return Next::Stop((
                LoopStatus::Interrupted,
                format!("stopped after iteration {done}"),
            ));
        }
        Next::Continue(LoopState::Begin)
    }
}
