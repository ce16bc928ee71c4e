//! Executing a planned run: the actor system, the session's event bus and its printer, the
//! MemoryVault, the ledger, and Ctrl+C, all at the binary's edge. The run itself is a value
//! ([`ralph_actors::supervisor::run::RunDeps`]) that knows nothing of signals or terminals.

use std::path::Path;
use std::sync::Arc;

use actix::Actor;
use ralph_actors::events::bus::EventBus;
use ralph_actors::events::event::Event;
use ralph_actors::policy::budget::Ledger;
use ralph_actors::ports::llm::TokenCounter;
use ralph_actors::schema::report::{MemoryStatus, Report};
use ralph_actors::schema::state::SessionState;
use ralph_actors::supervisor::actor::{StartRun, Supervisor};
use ralph_actors::supervisor::run::{MemoryDeps, RunDeps};
use tokio_util::sync::CancellationToken;

use crate::app::plan::Plan;
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
        let ledger = Ledger::resume(
            plan.settings.max_cost_usd,
            plan.prices,
            events.clone(),
            state.ledger.clone(),
        );
        let cancel = CancellationToken::new();
        let signals = tokio::spawn(on_ctrl_c(cancel.clone(), groups));
        let supervisor = Supervisor::new(RunDeps {
            settings: Arc::new(plan.settings),
            workspace: Arc::new(plan.workspace),
            store: Arc::new(session),
            runner: Arc::new(plan.runner),
            llm: plan.llm,
            counter,
            ledger: Arc::new(ledger),
            events: events.clone(),
            cancel,
            state,
            memory,
            hooks: Vec::new(),
            preamble,
        })
        .start();
        let report = supervisor
            .send(StartRun)
            .await
            .map_err(|e| Error::Internal(format!("the supervisor stopped: {e}")))?;
        signals.abort();
        let _ = printer.await;
        if let (Some(store), Some(config)) = (vault_store, plan.memory.as_ref()) {
            // Best effort: a vault that cannot be pruned now is pruned after the next run. The
            // session has ended (its report is written), so this goes to stderr alone.
            if let Err(e) = vault::housekeep(&store, config.memory.max_patterns).await {
                eprintln!("ralph-loop: memory vault housekeeping failed: {e}");
            }
        }
        Ok::<Report, Error>(report)
    });
    let _ = std::fs::remove_dir_all(&report_dir);
    Ok(report?.exit_code)
}

/// Ctrl+C once: the run stops its step, saves its session and reports (exit 130). Twice: every
/// test process group is killed and the process exits at once.
async fn on_ctrl_c(cancel: CancellationToken, groups: ProcessGroups) {
    if tokio::signal::ctrl_c().await.is_err() {
        return;
    }
    eprintln!(
        "interrupted: ending the current step and saving the session (Ctrl+C again to quit at once)"
    );
    cancel.cancel();
    if tokio::signal::ctrl_c().await.is_ok() {
        groups.kill_all();
        std::process::exit(130);
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
