//! One agent loop as a value, stepped to its end on the machine's driver ([`super::machine`]):
//! before each iteration the limits (budget, iterations, time), a breaker reset asked for, and
//! the breaker's admission; then a checkpoint, the prompt built afresh from disk, the agent's
//! turn ([`super::turn`]), and the judgement of what it did ([`super::judge`]). The state file
//! is written after every change.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;
use ralph_actors::events::bus::EventBus;
use ralph_actors::events::event::Event;
use ralph_actors::machine::hooks::Hook;
use ralph_actors::policy::budget::Price;
use ralph_actors::schema::agent::AgentTokens;
use ralph_actors::schema::regent::{
    IterationRecord, LoopReport, LoopStatus, RegentAction, RegentState,
};
use ralph_actors::schema::report::GuardReport;
use ralph_actors::schema::test_run::TestRun;
use ralph_actors::tracker::circuit::{Admission, Thresholds, Transition};
use ralph_actors::tracker::gate::GateSettings;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::baseline::Baseline;
use super::state::{self, Loaded, StateFile};
use super::tasks::{AroundTasks, TaskList};
use crate::agents::backoff::Backoff;
use crate::agents::invoke::Limits;
use crate::agents::AgentDef;
use crate::config::{BaselineScope, BootstrapDetection, GitConfig, TestMode};
use crate::gateway::Gateway;
use crate::git::Repo;
use crate::git::{Look, Snapshot};
use crate::hooks::tasks::TaskHooks;
use crate::process::groups::ProcessGroups;
use crate::runner::plan::TestingOptions;

/// The loop's limits and rules, from the flags and the config.
#[derive(Debug, Clone)]
pub struct LoopSettings {
    pub max_iterations: u32,
    pub max_cost_usd: f64,
    pub max_duration: Option<Duration>,
    pub max_cost_per_iteration: Option<f64>,
    pub limits: Limits,
    pub max_retries: u32,
    pub backoff_first: Duration,
    pub backoff_cap: Duration,
    pub rollback_on_test_failure: bool,
    pub mode: TestMode,
    /// `tdd`: where the baseline is kept, and what it holds.
    pub baseline_file: PathBuf,
    pub baseline_scope: BaselineScope,
    pub bootstrap: BootstrapDetection,
    pub bootstrap_check: Option<String>,
    pub git: GitConfig,
    pub thresholds: Thresholds,
    pub gate: GateSettings,
}

/// What a loop runs with.
pub struct LoopDeps {
    /// The project: where the agent runs and the tests are found.
    pub root: PathBuf,
    pub agent: AgentDef,
    pub binary: PathBuf,
    pub model: Option<String>,
    /// The agent's whole environment.
    pub env: Vec<(OsString, OsString)>,
    /// The model gateway the agent's calls go through, when its definition says how to point
    /// it there and the user's key is at hand: masked, paid for within the budget, its cost
    /// the provider's usage.
    pub gateway: Option<Arc<Gateway>>,
    pub prompt_file: PathBuf,
    pub tasks_file: Option<PathBuf>,
    pub settings: LoopSettings,
    pub testing: TestingOptions,
    /// The agent model's price, for costs the agent does not report.
    pub price: Price,
    pub events: EventBus,
    pub groups: ProcessGroups,
    /// ralph-loop's executable, to run the agent under its reaper.
    pub reaper: Option<PathBuf>,
    /// SIGINT, SIGTERM: finish the iteration under way, then stop.
    pub drain: CancellationToken,
    /// SIGQUIT: kill the agent now and stop.
    pub quit: CancellationToken,
    /// The live view's pause: while it holds `true`, the loop waits before its next iteration.
    pub pause: Option<watch::Receiver<bool>>,
    /// The agent's model as the live view's picker switches it, with its price: taken before
    /// each iteration.
    pub model_switch: Option<watch::Receiver<Option<(String, Price)>>>,
    /// Said at the start (a note on the price used for estimates, a state file replaced).
    pub notes: Vec<String>,
    /// The `pre_task` and `post_task` hooks around the list's tasks ([`super::around`]).
    pub task_hooks: TaskHooks,
    /// The project's hooks of the loop's stages (`on_before_gen`, `on_test_fail`,
    /// `on_success`, a plugin's `before_success`): [`super::machine`].
    pub hooks: Vec<Arc<dyn Hook>>,
}

/// A loop under way.
pub struct LoopRun {
    pub(super) deps: LoopDeps,
    pub(super) state: RegentState,
    pub(super) state_file: StateFile,
    pub(super) backoff: Backoff,
    /// What the iteration under way has cost so far (its agent runs).
    pub(super) spent_this_iteration: f64,
    pub(super) repo: Option<Repo>,
    /// `HEAD` and the tree [`super::judge::CHECKPOINT_REF`] was last made from by this loop: a
    /// tree unchanged since needs no new checkpoint.
    pub(super) checkpointed: Option<(String, Snapshot)>,
    /// The look at the tree that ended the last iteration, when nothing was committed or
    /// reverted after it: the next checkpoint starts from it instead of asking git again.
    pub(super) last_look: Option<Look>,
    pub(super) history: Vec<IterationRecord>,
    pub(super) commits: Vec<String>,
    pub(super) reverts: Vec<String>,
    pub(super) warnings: Vec<String>,
    /// What the next prompt tells the agent.
    pub(super) notes: Vec<String>,
    /// The last test run, for the prompt and for what passes anew.
    pub(super) last_tests: Option<TestRun>,
    pub(super) tokens: AgentTokens,
    pub(super) tokens_estimated: bool,
    /// `Some(true)` while the project is too new to be tested; `None` before the first look.
    pub(super) bootstrapping: Option<bool>,
    pub(super) bootstrap_completed_at: Option<chrono::DateTime<Utc>>,
    /// Why no tests can run, when they cannot (and the project is not bootstrapping).
    pub(super) tests_missing: Option<String>,
    /// `tdd`: the baseline, and whether it was captured from the iteration being judged.
    pub(super) baseline: Option<Baseline>,
    pub(super) baseline_fresh: bool,
    /// The tasks the task hooks have seen.
    pub(super) around: AroundTasks,
    /// The hooks of the loop's stages (from the deps).
    pub(super) hooks: Vec<Arc<dyn Hook>>,
    /// A hook's failure that stops the loop, until the iteration under way is closed.
    pub(super) hook_stop: Option<String>,
    /// Why the budget is spent, when the gateway refused the agent a call the run's budget
    /// could not pay (short of its cap by less than a call): the loop stops after the
    /// iteration.
    pub(super) budget_spent: Option<String>,
    started: Instant,
}

impl LoopRun {
    pub fn new(mut deps: LoopDeps) -> Self {
        let ralph_dir = deps.root.join(crate::session::RALPH_DIR);
        let state_file = StateFile::new(&ralph_dir);
        let mut warnings = Vec::new();
        let previous = match state_file.load() {
            Ok(Loaded::Found(previous)) => Some(previous.breaker),
            Ok(Loaded::Missing) => None,
            Ok(Loaded::Unreadable { why, kept }) => {
                warnings.push(format!(
                    "{} could not be read ({why}); it was kept as {} and a new state begun",
                    state_file.path().display(),
                    kept.display()
                ));
                None
            }
            Err(e) => {
                warnings.push(format!("{e}; a new state was begun"));
                None
            }
        };
        let mut state = state::fresh(&deps.agent.name, deps.model.as_deref(), previous);
        state.prompt_file = shown(&deps.root, &deps.prompt_file);
        state.tasks_file = deps.tasks_file.as_ref().map(|t| shown(&deps.root, t));
        let backoff = Backoff::new(deps.settings.backoff_first, deps.settings.backoff_cap);
        let hooks = std::mem::take(&mut deps.hooks);
        Self {
            repo: Repo::at(&deps.root),
            checkpointed: None,
            last_look: None,
            deps,
            state,
            state_file,
            backoff,
            spent_this_iteration: 0.0,
            history: Vec::new(),
            commits: Vec::new(),
            reverts: Vec::new(),
            warnings,
            notes: Vec::new(),
            last_tests: None,
            tokens: AgentTokens::default(),
            tokens_estimated: false,
            bootstrapping: None,
            bootstrap_completed_at: None,
            tests_missing: None,
            baseline: None,
            baseline_fresh: false,
            around: AroundTasks::default(),
            hooks,
            hook_stop: None,
            budget_spent: None,
            started: Instant::now(),
        }
    }

    pub(super) fn emit(&self, event: Event) {
        self.deps.events.emit(event);
    }

    /// A line of the Regent's, with its shield in the human view.
    pub(super) fn regent(&self, iteration: u32, action: RegentAction, message: String) {
        tracing::info!(target: "regent", "{message}");
        self.emit(Event::Regent {
            iteration,
            action,
            message,
        });
    }

    pub(super) fn warn(&mut self, message: String) {
        self.emit(Event::Warning {
            message: message.clone(),
        });
        self.warnings.push(message);
    }

    pub(super) fn save_state(&mut self) {
        self.state.updated_at = Utc::now();
        if let Err(e) = self.state_file.save(&self.state) {
            let message = e.to_string();
            if !self.warnings.contains(&message) {
                self.warn(message);
            }
        }
    }

    pub(super) fn breaker_moved(&self, iteration: u32, moved: Option<Transition>) {
        if let Some(t) = moved {
            self.emit(Event::BreakerChanged {
                iteration,
                from: t.from,
                to: t.to,
                reason: t.reason,
            });
        }
    }

    /// The model chosen in the live view, if it changed: the agent runs on it from the next
    /// iteration, and its costs are estimated at its price.
    pub(super) fn take_model_switch(&mut self) {
        let Some(switch) = self.deps.model_switch.as_mut() else {
            return;
        };
        if !switch.has_changed().unwrap_or(false) {
            return;
        }
        let Some((model, price)) = switch.borrow_and_update().clone() else {
            return;
        };
        if self.deps.model.as_deref() == Some(model.as_str()) {
            return;
        }
        self.emit(Event::Note {
            message: format!(
                "the agent now runs on {model}, as chosen in the view (from iteration {})",
                self.state.iteration + 1
            ),
        });
        self.deps.model = Some(model.clone());
        self.deps.price = price;
        self.state.model = Some(model);
        self.save_state();
    }

    /// The limits and the breaker, before an iteration: `Some` stops the loop.
    pub(super) async fn before_iteration(&mut self) -> Option<(LoopStatus, String)> {
        let thresholds = self.deps.settings.thresholds.clone();
        loop {
            if let Some(stop) = self.limit_reached() {
                return Some(stop);
            }
            let done = self.state.iteration;
            let now = Utc::now().timestamp_millis();
            if self.state_file.take_reset_request() {
                let moved = self.state.breaker.reset(now);
                self.breaker_moved(done, Some(moved));
                self.save_state();
            }
            let (admission, moved) = self.state.breaker.admit(&thresholds, now);
            self.breaker_moved(done, moved);
            match admission {
                Admission::Run => return None,
                Admission::Probe => {
                    self.regent(
                        done + 1,
                        RegentAction::Waiting,
                        "the breaker is HALF_OPEN: this iteration is its one probe".into(),
                    );
                    return None;
                }
                Admission::Stop => {
                    return Some((
                        LoopStatus::BreakerOpen,
                        format!(
                            "the circuit breaker is OPEN ({}); `ralph-loop breaker reset` closes it",
                            self.state.breaker.reason.as_str()
                        ),
                    ));
                }
                Admission::Wait(ms) => {
                    self.regent(
                        done,
                        RegentAction::Waiting,
                        format!(
                            "the breaker is OPEN: cooling down {:.1}s before a probe",
                            ms as f64 / 1000.0
                        ),
                    );
                    self.save_state();
                    tokio::select! {
                        _ = tokio::time::sleep(Duration::from_millis(ms)) => {}
                        // A reset asked for meanwhile (`breaker reset`, the dashboard) is taken
                        // at once, not after the cooldown it ends.
                        _ = reset_asked(&self.state_file) => {}
                        _ = self.deps.drain.cancelled() => {}
                        _ = self.deps.quit.cancelled() => {
                            return Some((LoopStatus::Quit, "quit while the breaker cooled down".into()));
                        }
                    }
                }
            }
        }
    }

    /// The loop's limits (a stop asked for, iterations, budget, time), between iterations.
    fn limit_reached(&self) -> Option<(LoopStatus, String)> {
        let s = &self.deps.settings;
        let done = self.state.iteration;
        if self.deps.quit.is_cancelled() {
            return Some((LoopStatus::Quit, format!("SIGQUIT after iteration {done}")));
        }
        if self.deps.drain.is_cancelled() {
            return Some((
                LoopStatus::Interrupted,
                format!("stopped after iteration {done}"),
            ));
        }
        if done >= s.max_iterations {
            return Some((
                LoopStatus::MaxIterations,
                format!("{done} iterations, the limit"),
            ));
        }
        if let Some(why) = &self.budget_spent {
            return Some((LoopStatus::BudgetExceeded, why.clone()));
        }
        if self.state.total_cost_usd >= s.max_cost_usd {
            return Some((
                LoopStatus::BudgetExceeded,
                format!(
                    "${:.4} spent of a ${:.2} budget",
                    self.state.total_cost_usd, s.max_cost_usd
                ),
            ));
        }
        let max = s.max_duration?;
        (self.started.elapsed() >= max).then(|| {
            (
                LoopStatus::BudgetExceeded,
                format!(
                    "the time limit ({:.1} minutes) is reached",
                    max.as_secs_f64() / 60.0
                ),
            )
        })
    }

    /// The task list's text and tasks, when the loop has one.
    pub(super) fn read_tasks(&mut self) -> Option<(String, TaskList)> {
        let path = self.deps.tasks_file.clone()?;
        match std::fs::read_to_string(&path) {
            Ok(text) => {
                let list = TaskList::parse(&text);
                Some((text, list))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                Some((String::new(), TaskList::default()))
            }
            Err(e) => {
                self.warn(format!("cannot read {}: {e}", path.display()));
                None
            }
        }
    }

    pub(super) fn finish(mut self, status: LoopStatus, reason: String) -> LoopReport {
        let iteration = self.state.iteration;
        // The loop's commits and reverts ran with git's automatic maintenance off; it runs
        // once now, in the foreground (not after SIGQUIT, which means now).
        let committed = !self.commits.is_empty() || !self.reverts.is_empty();
        if let Some(repo) = self.repo.clone().filter(|_| committed) {
            if status != LoopStatus::Quit {
                if let Err(e) = repo.maintain() {
                    self.warn(format!("git maintenance after the loop's commits: {e}"));
                }
            }
        }
        self.regent(
            iteration,
            RegentAction::Stopping,
            format!("the loop stops: {} ({reason})", status.as_str()),
        );
        self.state.status = status;
        self.state.reason = reason.clone();
        self.save_state();
        let report = LoopReport {
            status,
            exit_code: status.exit_code(),
            reason,
            agent: self.deps.agent.name.clone(),
            model: self.deps.model.clone(),
            iterations: iteration,
            duration_ms: self.started.elapsed().as_millis() as u64,
            total_cost_usd: self.state.total_cost_usd,
            cost_estimated: self.state.cost_estimated,
            tokens: self.tokens,
            tokens_estimated: self.tokens_estimated,
            breaker: self.state.breaker.clone(),
            gate: self.state.gate.clone(),
            tasks: self.state.tasks,
            tests: self.state.last_tests.clone(),
            commits: self.commits,
            reverts: self.reverts,
            history: self.history,
            warnings: self.warnings,
            local_guard: self
                .deps
                .gateway
                .as_ref()
                .map(|g| GuardReport::of(g.guard()))
                .unwrap_or_default(),
        };
        let dir = self.deps.root.join(crate::session::RALPH_DIR).join("loop");
        let written = std::fs::create_dir_all(&dir).and_then(|()| {
            let mut bytes = serde_json::to_vec_pretty(&report).map_err(std::io::Error::other)?;
            bytes.push(b'\n');
            crate::fsutil::write_atomic(&dir.join("report.json"), &bytes)
        });
        if let Err(e) = written {
            tracing::warn!("cannot write the loop's report: {e}");
        }
        self.deps.events.emit(Event::LoopFinished {
            report: Box::new(report.clone()),
        });
        report
    }
}

/// `path` relative to `root` when it is inside, as the agent and the user see it.
fn shown(root: &std::path::Path, path: &std::path::Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .to_string_lossy()
        .into_owned()
}

/// Returns once a breaker reset is asked for (another process leaves the request file).
async fn reset_asked(file: &crate::regent::state::StateFile) {
    while !file.reset_requested() {
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}
