//! Executing a planned run: the actor system, the session's event bus and its printer, the
//! MemoryVault, the ledger, and Ctrl+C, all at the binary's edge. The run itself is a value
//! ([`ralph_actors::supervisor::run::RunDeps`]) that knows nothing of signals or terminals.

use std::path::Path;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;

use actix::Actor;
use ralph_actors::events::bus::EventBus;
use ralph_actors::events::event::Event;
use ralph_actors::policy::budget::Ledger;
use ralph_actors::ports::chaos::ChaosRunner;
use ralph_actors::ports::llm::TokenCounter;
use ralph_actors::schema::report::{MemoryStatus, Report};
use ralph_actors::schema::state::SessionState;
use ralph_actors::supervisor::actor::{StartRun, Supervisor};
use ralph_actors::supervisor::run::{MemoryDeps, RunDeps};
use tokio::signal::unix::{signal, Signal, SignalKind};
use tokio_util::sync::CancellationToken;

use crate::app::plan::Plan;
use crate::chaos::FsChaosRunner;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::printers;
use crate::process::groups::ProcessGroups;
use crate::providers;
use crate::session::SessionDir;
use crate::vault;

/// Runs the planned session to its end and returns its exit code. `groups` holds the tests'
/// process groups, killed at once on a second Ctrl+C.
pub(crate) fn execute(
    plan: Plan,
    session: SessionDir,
    state: SessionState,
    groups: ProcessGroups,
) -> Result<i32> {
    // Built lazily: the ledger needs exact counts only near the end of the budget.
    let counter: Arc<dyn TokenCounter> = Arc::new(providers::tokens::TiktokenCounter::new());
    let report_dir = plan.report_dir.clone();
    let system = actix::System::new();
    let report = system.block_on(async move {
        let events = EventBus::new(&session.id);
        let printer = tokio::spawn(printers::drive(
            printers::for_format(plan.output),
            events.subscribe(),
        ));
        let mut preamble: Vec<Event> = plan
            .notes
            .iter()
            .map(|message| Event::Note {
                message: message.clone(),
            })
            .collect();
        let mut state = state;
        let (memory, vault_store) =
            open_memory(&plan.root, plan.memory.as_ref(), &mut preamble, &mut state).await;
        let chaos = chaos_runner(&plan, &session, &groups, &mut preamble);
        let ledger = Ledger::resume(
            plan.settings.max_cost_usd,
            plan.prices,
            events.clone(),
            state.ledger.clone(),
        );
        // Every provider's retries reach the live view and the report's warnings.
        let retry_events = events.clone();
        let _retries = crate::http::retry::observe_retries(move |message| {
            retry_events.emit(Event::Warning { message });
        });
        let cancel = CancellationToken::new();
        let stop_signal = Arc::new(AtomicI32::new(0));
        let signals = tokio::spawn(on_signals(
            cancel.clone(),
            stop_signal.clone(),
            groups,
            events.clone(),
        ));
        let session_dir = session.clone();
        let supervisor = Supervisor::new(RunDeps {
            settings: Arc::new(plan.settings),
            workspace: Arc::new(plan.workspace),
            store: Arc::new(session),
            runner: Arc::new(plan.runner),
            chaos,
            llm: plan.llm,
            counter,
            ledger: Arc::new(ledger),
            events: events.clone(),
            cancel,
            stop_signal,
            guard: plan.guard,
            state,
            memory,
            hooks: Vec::new(),
            user: crate::app::terminal::user(plan.output),
            preamble,
        })
        .start();
        let mut report = supervisor
            .send(StartRun)
            .await
            .map_err(|e| Error::Internal(format!("the supervisor stopped: {e}")))?;
        signals.abort();
        let _ = printer.await;
        if let (Some(store), Some(config)) = (vault_store, plan.memory.as_ref()) {
            // Best effort: a vault that cannot be pruned now is pruned after the next run. The
            // printer has finished, so the warning is said on stderr and added to the report
            // already written: nothing is said that the report lacks.
            if let Err(e) = vault::housekeep(&store, config.memory.max_patterns).await {
                let warning = format!("memory vault housekeeping failed: {e}");
                eprintln!("warning: {warning}");
                report.warnings.push(warning);
                if let Err(e) = session_dir.write_json("report.json", &report) {
                    eprintln!("ralph-loop: cannot add that to report.json: {e}");
                }
            }
        }
        Ok::<Report, Error>(report)
    });
    let _ = std::fs::remove_dir_all(&report_dir);
    Ok(report?.exit_code)
}

/// Chaos's runner, when Chaos is on and can attack this target; a note says why not otherwise.
fn chaos_runner(
    plan: &Plan,
    session: &SessionDir,
    groups: &ProcessGroups,
    preamble: &mut Vec<Event>,
) -> Option<Arc<dyn ChaosRunner>> {
    if !plan.settings.chaos.enabled {
        return None;
    }
    let workspace = &plan.workspace;
    let plans: Vec<_> = plan.runner.plans().cloned().collect();
    match FsChaosRunner::new(
        &workspace.target,
        &plan.root,
        &session.dir,
        &plans,
        workspace.test_file.as_deref(),
        &plan.testing,
        groups.clone(),
    ) {
        Ok(runner) => Some(Arc::new(runner) as Arc<dyn ChaosRunner>),
        Err(why) => {
            preamble.push(Event::Note {
                message: format!(
                    "Chaos cannot attack {} ({why}): the run ends when the unit tests pass",
                    workspace.target.display()
                ),
            });
            None
        }
    }
}

/// Ctrl+C (SIGINT), SIGTERM or SIGHUP once: the run stops its step, saves its session and
/// reports, and exits 130, 143 or 129. Any of them again: every test process group is killed
/// and the process exits at once with that signal's code. SIGQUIT quits at once (131), killing
/// the test groups first; the session keeps the state saved at its last step and resumes from
/// there.
async fn on_signals(
    cancel: CancellationToken,
    stop_signal: Arc<AtomicI32>,
    groups: ProcessGroups,
    events: EventBus,
) {
    let Some(mut signals) = Signals::listen() else {
        events.emit(Event::Warning {
            message: "cannot listen for signals; Ctrl+C will stop the run at once".into(),
        });
        return;
    };
    let first = signals.next().await;
    if first == libc::SIGQUIT {
        eprintln!("quit: killing the test processes and exiting now");
        groups.kill_all();
        std::process::exit(128 + first);
    }
    let name = match first {
        libc::SIGTERM => "terminated",
        libc::SIGHUP => "hung up",
        _ => "interrupted",
    };
    events.emit(Event::Note {
        message: format!(
            "{name}: ending the current step and saving the session (Ctrl+C again to quit at once)"
        ),
    });
    stop_signal.store(first, Ordering::SeqCst);
    cancel.cancel();
    let second = signals.next().await;
    groups.kill_all();
    std::process::exit(128 + second);
}

/// The signals that stop a run.
struct Signals {
    int: Signal,
    term: Signal,
    hup: Signal,
    quit: Signal,
}

impl Signals {
    fn listen() -> Option<Self> {
        Some(Self {
            int: signal(SignalKind::interrupt()).ok()?,
            term: signal(SignalKind::terminate()).ok()?,
            hup: signal(SignalKind::hangup()).ok()?,
            quit: signal(SignalKind::quit()).ok()?,
        })
    }

    /// The number of the next signal to arrive.
    async fn next(&mut self) -> i32 {
        tokio::select! {
            _ = self.int.recv() => libc::SIGINT,
            _ = self.term.recv() => libc::SIGTERM,
            _ = self.hup.recv() => libc::SIGHUP,
            _ = self.quit.recv() => libc::SIGQUIT,
        }
    }
}

/// Opens the MemoryVault for a run. A vault that cannot be opened (corrupt, unwritable, an
/// embedder without its key) is a warning: the run goes on without memory, and the report says
/// why.
async fn open_memory(
    root: &Path,
    config: Option<&Config>,
    preamble: &mut Vec<Event>,
    state: &mut SessionState,
) -> (Option<MemoryDeps>, Option<Arc<vault::LanceStore>>) {
    let Some(config) = config else {
        state.memory.status = MemoryStatus::Off;
        return (None, None);
    };
    match vault::open(root, config).await {
        Ok((deps, store)) => (Some(deps), Some(store)),
        Err(e) => {
            state.memory.status = MemoryStatus::Unavailable;
            state.memory.reason = Some(e.to_string());
            preamble.push(Event::Warning {
                message: format!("{e}; the run goes on without memory"),
            });
            (None, None)
        }
    }
}
