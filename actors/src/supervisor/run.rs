//! A run as a value: what it is made of ([`RunDeps`]), and the [`Run`] those parts become once
//! its actors are started. [`Run::execute`] (in `driver`) steps it to its end.

use std::sync::atomic::AtomicI32;
use std::sync::Arc;
use std::time::Instant;

use actix::{Actor, Addr};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use ralph_guard::Guard;

use crate::events::bus::EventBus;
use crate::events::event::Event;
use crate::guard::{GuardedChaos, GuardedRunner, GuardedWorkspace};
use crate::machine::hooks::Hook;
use crate::policy::budget::Ledger;
use crate::ports::chaos::ChaosRunner;
use crate::ports::llm::{LlmClient, TokenCounter};
use crate::ports::memory::{Embedder, VectorStore};
use crate::ports::runner::TestRunner;
use crate::ports::store::SessionStore;
use crate::ports::user::User;
use crate::ports::workspace::Workspace;
use crate::role::Role;
use crate::roles::artisan::Artisan;
use crate::roles::caller::Caller;
use crate::roles::chaos::Chaos;
use crate::roles::critic::Critic;
use crate::roles::history::ResetContext;
use crate::roles::librarian::Librarian;
use crate::roles::local_guard::{Check, LocalGuard};
use crate::roles::switch::ModelSwitch;
use crate::roles::tester::Tester;
use crate::roles::vault::{MemoryVault, Remember, VaultSettings};
use crate::schema::report::MemoryStatus;
use crate::schema::state::SessionState;
use crate::schema::test_run::TestRun;
use crate::settings::RunSettings;
use crate::supervisor::pending::{PendingAnalysis, PendingReview};

/// Everything a session needs from outside. The money, the events and the stop signal are
/// passed in, so that the caller may run several sessions at once under one budget and watch
/// or stop each.
pub struct RunDeps {
    pub settings: Arc<RunSettings>,
    pub workspace: Arc<dyn Workspace>,
    pub store: Arc<dyn SessionStore>,
    pub runner: Arc<dyn TestRunner>,
    /// Runs Chaos's test files; Chaos attacks only with one (and `settings.chaos.enabled`).
    pub chaos: Option<Arc<dyn ChaosRunner>>,
    pub llm: Arc<dyn LlmClient>,
    pub counter: Arc<dyn TokenCounter>,
    /// This run's accounts, drawing on its budget (and any budget shared with other runs).
    pub ledger: Arc<Ledger>,
    /// The session's event bus; the run emits on it and folds its warnings and notes from it.
    pub events: EventBus,
    /// Stops the run as a user would (Ctrl+C): the step under way ends, the state and report
    /// are written, the run ends `interrupted`.
    pub cancel: CancellationToken,
    /// The signal behind `cancel`, when one was (its number; 0 for none, as when a caller
    /// cancels of its own accord): SIGTERM and SIGHUP end the run `interrupted` with their own
    /// exit codes (143, 129) and reasons.
    pub stop_signal: Arc<AtomicI32>,
    /// Stops the run between iterations: the iteration under way ends as it would, its
    /// checkpoint is saved, and the run ends `interrupted` before the next one begins, so a
    /// resume redoes nothing (the agent's first Ctrl+C).
    pub drain: CancellationToken,
    /// LocalGuard's engine for this run: the run wraps its ports in it (reads masked, writes
    /// unmasked) and seals every call with it. `Guard::off()` lets everything through.
    pub guard: Arc<Guard>,
    /// A new session's state, or the state of the session being resumed. Without `memory`,
    /// `state.memory` says why (off, or unavailable with the reason).
    pub state: SessionState,
    /// The MemoryVault's parts, when memory is on and the vault opened.
    pub memory: Option<MemoryDeps>,
    /// Parts that join the run at its hook points, in order.
    pub hooks: Vec<Arc<dyn Hook>>,
    /// The person at the terminal, when there is one to ask (the breaker asks before it
    /// stops); `None` for a headless run.
    pub user: Option<Arc<dyn User>>,
    /// The live view's pause: while it holds `true`, the run waits before its next step.
    pub pause: Option<watch::Receiver<bool>>,
    /// The roles' models as the live view's picker switches them (empty: as configured).
    pub models: ModelSwitch,
    /// What the caller had to say while preparing the run (notes on models skipped, a vault
    /// that could not open): emitted right after `session_started`, so they reach every
    /// printer and the report.
    pub preamble: Vec<Event>,
}

/// SIGHUP's number, as [`RunDeps::stop_signal`] holds it.
pub const SIGHUP: i32 = 1;
/// SIGTERM's number, as [`RunDeps::stop_signal`] holds it.
pub const SIGTERM: i32 = 15;

/// What the MemoryVault actor is built from.
pub struct MemoryDeps {
    pub embedder: Arc<dyn Embedder>,
    pub store: Arc<dyn VectorStore>,
    /// The shared store, when `memory.global_sharing` is on.
    pub shared: Option<Arc<dyn VectorStore>>,
    pub settings: VaultSettings,
    /// Recorded with each attempt (a hash of the project root).
    pub project_id: String,
}

/// The role actors of a run.
pub(super) struct Team {
    pub(super) librarian: Addr<Librarian>,
    pub(super) artisan: Addr<Artisan>,
    pub(super) critic: Addr<Critic>,
    pub(super) tester: Addr<Tester>,
    /// `None` when Chaos is off.
    pub(super) chaos: Option<Addr<Chaos>>,
}

impl Team {
    /// Drops `role`'s conversation history; false for a role that keeps none.
    pub(super) fn reset(&self, role: Role) -> bool {
        if !role.info().keeps_history {
            return false;
        }
        match role {
            Role::Artisan => self.artisan.do_send(ResetContext),
            Role::Critic => self.critic.do_send(ResetContext),
            Role::Librarian | Role::Chaos | Role::Tester => return false,
        }
        true
    }
}

/// The attempt being recorded: its iteration, its outcome, the vault's answer to come.
pub(super) type PendingRecord = (
    u32,
    bool,
    std::pin::Pin<Box<actix::dev::Request<MemoryVault, Remember>>>,
);

/// The mutants of the fix on disk, as the last mutation runs left them.
#[derive(Debug, Clone)]
pub(super) struct Measured {
    /// The checkpoint they were measured on: a new fix is measured afresh.
    pub(super) on_disk: Option<u32>,
    pub(super) mutants: Vec<crate::schema::mutation::Mutant>,
}

/// A session under way. Its fields are the Supervisor's bookkeeping; the steps (in `steps`,
/// `memory`, `finish`) read and update them.
pub struct Run {
    pub(super) settings: Arc<RunSettings>,
    pub(super) workspace: Arc<dyn Workspace>,
    pub(super) store: Arc<dyn SessionStore>,
    pub(super) events: EventBus,
    pub(super) caller: Arc<Caller>,
    pub(super) team: Team,
    pub(super) guard: Arc<Guard>,
    pub(super) local_guard: Addr<LocalGuard>,
    pub(super) hooks: Vec<Arc<dyn Hook>>,
    pub(super) user: Option<Arc<dyn User>>,
    pub(super) state: SessionState,
    /// The warnings and notes of the session's earlier runs (before a resume); this run's come
    /// from the event bus.
    pub(super) earlier_warnings: Vec<String>,
    pub(super) earlier_notes: Vec<String>,
    pub(super) started: Instant,
    /// The caller's stop (Ctrl+C).
    pub(super) user_cancel: CancellationToken,
    pub(super) stop_signal: Arc<AtomicI32>,
    /// The caller's stop between iterations.
    pub(super) drain: CancellationToken,
    /// The live view's pause, between steps.
    pub(super) pause: Option<watch::Receiver<bool>>,
    /// Ctrl+C or the time limit: ends the step under way.
    pub(super) steps: CancellationToken,
    pub(super) time_up: CancellationToken,
    /// Cancelled when the run ends, so that its watcher tasks end too.
    pub(super) done: CancellationToken,
    pub(super) test_ms: u64,
    pub(super) stuck_on: Option<String>,
    /// The last test run, carried in memory from one iteration to the next.
    pub(super) last_run: Option<Arc<TestRun>>,
    /// The best state's content and tests (`state.best` says which iteration it is).
    pub(super) best_content: Option<String>,
    pub(super) best_run: Option<Arc<TestRun>>,
    /// `None` when memory is off, unavailable, or stopped working during the run.
    pub(super) vault: Option<Addr<MemoryVault>>,
    pub(super) project_id: String,
    pub(super) pending_record: Option<PendingRecord>,
    /// Reviews of failing proposals still to come in (`critic.mode: parallel`).
    pub(super) pending_reviews: Vec<PendingReview>,
    /// The review of a passing fix under way beside Chaos's round.
    pub(super) passing_review: Option<PendingReview>,
    /// The Librarian's analysis under way beside the Artisan's call.
    pub(super) pending_analysis: Option<PendingAnalysis>,
    /// The last analysis that came in: the iteration that asked for it, and its text.
    pub(super) analysis: Option<(u32, String)>,
    /// The fingerprints of this process's failing test runs, the baseline's first: a failure
    /// seen before asks for the Librarian's analysis (`librarian.analyze: auto`).
    pub(super) fingerprints: Vec<String>,
    pub(super) preamble: Vec<Event>,
    /// The last mutation run's mutants, merged with the re-runs of their survivors.
    pub(super) mutation: Option<Measured>,
    /// Why a hook stopped the run, until the driver ends it (see `machine::hooks`).
    pub(super) hook_stop: Option<String>,
    /// The models as hooks ask them.
    pub(super) ask: super::ask::RunAsk,
}

impl Run {
    /// Starts the run's actors; call inside an actix system. Nothing else happens until
    /// [`Run::execute`].
    pub fn new(mut d: RunDeps) -> Self {
        // Every port the run reads the machine through is wrapped here, so none is unguarded.
        // A resumed session's placeholders are numbered on from the stopped run's, so an old
        // one left in its texts never names a new value.
        d.guard.continue_from(&d.state.guard_counters);
        let typed = mask_typed(&d.guard, &mut d.state);
        let workspace: Arc<dyn Workspace> =
            Arc::new(GuardedWorkspace::new(d.workspace, d.guard.clone()));
        let runner: Arc<dyn TestRunner> = Arc::new(GuardedRunner::new(d.runner, d.guard.clone()));
        let chaos = d
            .chaos
            .map(|c| Arc::new(GuardedChaos::new(c, d.guard.clone())) as Arc<dyn ChaosRunner>);
        let local_guard = LocalGuard::new(d.guard.clone(), d.events.clone()).start();
        let caller = Arc::new(
            Caller::new(
                d.llm,
                local_guard.clone(),
                d.counter,
                d.ledger,
                d.events.clone(),
            )
            .with_fallbacks(d.state.fallbacks.clone())
            .with_windows(d.settings.context_windows.clone())
            .with_context_peaks(d.state.context_use.clone())
            .with_switch(d.models),
        );
        let team = Team {
            librarian: Librarian::new(
                workspace.clone(),
                caller.clone(),
                d.settings.clone(),
                d.state.test_command.clone(),
            )
            .start(),
            artisan: Artisan::new(caller.clone(), d.settings.clone()).start(),
            critic: Critic::new(caller.clone(), d.settings.clone()).start(),
            tester: Tester::new(runner, d.settings.flaky_retries).start(),
            chaos: chaos
                .filter(|_| d.settings.chaos.enabled)
                .map(|runner| Chaos::new(caller.clone(), d.settings.clone(), runner).start()),
        };
        let mut state = d.state;
        let mut preamble = d.preamble;
        preamble.extend(typed);
        let (vault, project_id) = match d.memory {
            Some(m) => {
                state.memory.status = MemoryStatus::On;
                state.memory.reason = None;
                state.memory.embedder = Some(m.embedder.id());
                let vault = MemoryVault::new(
                    m.embedder,
                    m.store,
                    m.shared,
                    m.settings,
                    local_guard.clone(),
                )
                .start();
                (Some(vault), m.project_id)
            }
            None => (None, String::new()),
        };
        let steps = d.cancel.child_token();
        let ask = super::ask::RunAsk {
            caller: caller.clone(),
            critic: d.settings.models.get(&Role::Critic).cloned(),
            cancel: steps.clone(),
        };
        Self {
            settings: d.settings,
            workspace,
            store: d.store,
            events: d.events,
            caller,
            team,
            guard: d.guard,
            local_guard,
            hooks: d.hooks,
            user: d.user,
            earlier_warnings: std::mem::take(&mut state.warnings),
            earlier_notes: std::mem::take(&mut state.notes),
            state,
            started: Instant::now(),
            steps,
            user_cancel: d.cancel,
            stop_signal: d.stop_signal,
            drain: d.drain,
            pause: d.pause,
            time_up: CancellationToken::new(),
            done: CancellationToken::new(),
            test_ms: 0,
            stuck_on: None,
            last_run: None,
            best_content: None,
            best_run: None,
            vault,
            project_id,
            pending_record: None,
            pending_reviews: Vec::new(),
            passing_review: None,
            pending_analysis: None,
            analysis: None,
            fingerprints: Vec::new(),
            preamble,
            mutation: None,
            hook_stop: None,
            ask,
        }
    }

    /// Tells the user something went wrong or was degraded: on the event stream, and so in
    /// the report's warnings.
    pub(super) fn warn(&self, message: String) {
        tracing::warn!(on_bus = true, "{message}");
        self.events.emit(Event::Warning { message });
    }

    /// Why LocalGuard could not put the values back into a model's `text` (a placeholder it
    /// invented or mangled), if it could not.
    pub(super) async fn unrestorable(&self, text: &str) -> Option<String> {
        match self.local_guard.send(Check(text.to_string())).await {
            Ok(Ok(())) => None,
            Ok(Err(e)) => Some(e.to_string()),
            Err(e) => Some(format!("LocalGuard did not answer: {e}")),
        }
    }

    /// Brings the state up to date with the ledger, the caller and the event stream.
    pub(super) fn sync_state(&mut self) {
        self.state.ledger = self.caller.ledger.snapshot();
        self.state.fallbacks = self.caller.fallbacks();
        self.state.context_use = self.caller.context_peaks();
        self.state.guard_counters = self.guard.counters();
        let seen = self.events.said();
        self.state.warnings = self.earlier_warnings.clone();
        self.state.warnings.extend(seen.warnings);
        self.state.notes = self.earlier_notes.clone();
        self.state.notes.extend(seen.notes);
    }
}

/// Masks what the user typed that the run keeps and shows (the target's path, the test command,
/// the guidance): state.json, the report and the event stream hold placeholders like every other
/// text of the session. The command line itself is kept as typed in `run.json` (readable by its
/// owner only), because a resumed run must run the real command; the note says so.
fn mask_typed(guard: &Guard, state: &mut SessionState) -> Option<Event> {
    let mut held = Vec::new();
    let mut mask = |text: &mut String, what: &'static str| {
        let masked = guard.mask_typed(text, Some(what));
        if !masked.found.is_empty() {
            held.push(format!(
                "{what} holds {}",
                masked.found.keys().cloned().collect::<Vec<_>>().join(", ")
            ));
        }
        *text = masked.text;
    };
    mask(&mut state.target, "the target's path");
    mask(&mut state.test_command, "the test command");
    if let Some(g) = state.guidance.as_mut() {
        mask(g, "your guidance");
    }
    (!held.is_empty()).then(|| Event::Note {
        message: format!(
            "LocalGuard: {}; the models, the report, state.json and the event stream see placeholders, \
             run.json keeps the command line as typed (readable by you only) so that resume can run it",
            held.join("; ")
        ),
    })
}
