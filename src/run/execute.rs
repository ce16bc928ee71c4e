//! Executing a planned run: the actor system, the session's event bus and its printer, the
//! MemoryVault, the ledger, and Ctrl+C, all at the binary's edge. The run itself is a value
//! ([`ralph_actors::supervisor::run::RunDeps`]) that knows nothing of signals or terminals.

use std::path::Path;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;

use actix::Actor;
use ralph_actors::events::bus::EventBus;
use ralph_actors::events::event::Event;
use ralph_actors::policy::budget::{Budget, Ledger};
use ralph_actors::ports::chaos::ChaosRunner;
use ralph_actors::ports::llm::TokenCounter;
use ralph_actors::ports::user::User;
use ralph_actors::roles::switch::ModelSwitch;
use ralph_actors::schema::report::{MemoryStatus, Report};
use ralph_actors::schema::state::SessionState;
use ralph_actors::supervisor::actor::{StartRun, Supervisor};
use ralph_actors::supervisor::run::{MemoryDeps, RunDeps};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::chaos::FsChaosRunner;
use crate::cli::OutputFormat;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::launch::stops::Stops;
use crate::launch::view::{Show, StopKey, View};
use crate::launch::{Launch, Rule};
use crate::printers::{self, Printer};
use crate::process::groups::ProcessGroups;
use crate::providers;
use crate::run::plan::Plan;
use crate::session::{SessionDir, WriteBehind};
use crate::vault;
use crate::views::tui::ui::STOP_STEP;

/// How a run is stopped and watched, and what it shares with other runs: given by its caller
/// (a single run, a batch entry, the agent).
pub(crate) struct Control {
    /// Ends the step under way (the single run's Ctrl+C).
    pub(crate) cancel: CancellationToken,
    /// Ends the run between two iterations (the agent's Ctrl+C).
    pub(crate) drain: CancellationToken,
    /// The signal behind `cancel`, when one was.
    pub(crate) stop_signal: Arc<AtomicI32>,
    /// A budget shared with other runs (a batch's total, the agent's `--max-cost`).
    pub(crate) shared: Option<Arc<Budget>>,
    /// Renderings of the run's events, each driven to the session's end.
    pub(crate) printers: Vec<Box<dyn Printer>>,
    /// No one to ask at the terminal (the breaker stops without asking).
    pub(crate) headless: bool,
    /// Who the breaker asks instead of the terminal's lines (the TUI).
    pub(crate) asker: Option<Arc<dyn User>>,
    /// The live view's pause.
    pub(crate) pause: Option<watch::Receiver<bool>>,
    /// The roles' models as the live view's picker switches them.
    pub(crate) models: ModelSwitch,
}

impl Control {
    /// A run on its own, stopped by `stops`, rendered by `printers`.
    pub(crate) fn alone(stops: &Stops, printers: Vec<Box<dyn Printer>>) -> Self {
        Self {
            cancel: stops.cancel.clone(),
            drain: stops.drain.clone(),
            stop_signal: stops.signal.clone(),
            shared: None,
            printers,
            headless: false,
            asker: None,
            pause: None,
            models: ModelSwitch::new(),
        }
    }
}

/// Runs the planned session to its end and returns its exit code: printed as `--output` says,
/// or drawn by the TUI (fed the session's events, asked the breaker's questions, pausing and
/// stopping the run; when the user quits it, the run's summary is printed as the line view
/// ends it, so the terminal keeps the result), or beside the web dashboard. `groups` holds the
/// tests' process groups, killed at once on a second Ctrl+C.
pub(crate) fn execute(
    plan: Plan,
    session: SessionDir,
    state: SessionState,
    groups: ProcessGroups,
) -> Result<i32> {
    let report_dir = plan.report_dir.clone();
    let (mut view, why_not_tui) = View::choose(plan.view.ui, plan.output == OutputFormat::Human);
    if let Some(why) = why_not_tui {
        eprintln!("note: {why}");
    }
    let tui = view.is_tui();
    let launch = Launch::new(Rule::EndStep, groups.clone()).announced_in(session.dir.clone());
    let printer = view
        .feed()
        .unwrap_or_else(|| printers::for_format(plan.output));
    let mut control = Control::alone(launch.stops(), vec![printer]);
    control.asker = view.asker().map(|asker| Arc::new(asker) as Arc<dyn User>);
    let mut show = Show::new(&plan.root, session.path(""), StopKey::Step, STOP_STEP);
    show.bind = plan.view.ui_bind;
    show.page = session
        .dir
        .file_name()
        .map(|n| n.to_string_lossy().to_string());
    if tui {
        let (settings, models) = (plan.settings.clone(), control.models.clone());
        show.picker = Some(Box::new(move || {
            crate::run::pickers::roles(&settings, models)
        }));
        show.target = Some(plan.root.join(&plan.target));
        show.original = Path::new(&plan.target)
            .file_name()
            .map(|name| session.path("original").join(name));
    }
    let report = launch.shown(view, show).run(|pause| async move {
        control.pause = Some(pause);
        execute_in(plan, session, state, groups, control).await
    });
    let _ = std::fs::remove_dir_all(&report_dir);
    let report = report?;
    if tui {
        let _ = printers::summary::write_summary(&report, &mut std::io::stderr().lock());
    }
    Ok(report.exit_code)
}

/// Runs the planned session to its end inside the current actix system and returns its report.
/// Any number may run at once in one system, each with its own [`Control`].
pub(crate) async fn execute_in(
    mut plan: Plan,
    session: SessionDir,
    mut state: SessionState,
    groups: ProcessGroups,
    mut control: Control,
) -> Result<Report> {
    let log_path = session.path(printers::event_log::FILE);
    let events = EventBus::continuing(&session.id, printers::event_log::last_seq(&log_path));
    let mut preamble: Vec<Event> = plan
        .notes
        .iter()
        .map(|message| Event::Note {
            message: message.clone(),
        })
        .collect();
    let printing = start_printers(
        std::mem::take(&mut control.printers),
        &events,
        &log_path,
        &mut preamble,
    );
    let memory_config = plan.memory.take();
    let (memory, vault_store) = open_memory(
        &plan.root,
        memory_config.as_ref(),
        &mut preamble,
        &mut state,
    );
    warm_up(&plan, vault_store.clone());
    let chaos = chaos_runner(&plan, &session, &groups, &mut preamble);
    let _heard = heard_on(&events);
    let said = tokio::spawn(say_stops(
        events.clone(),
        control.cancel.clone(),
        control.drain.clone(),
        control.stop_signal.clone(),
    ));
    let session_dir = session.clone();
    let deps = run_deps(plan, session, state, groups, control, &events)?;
    let supervisor = Supervisor::new(RunDeps {
        chaos,
        memory,
        preamble,
        ..deps
    })
    .start();
    let mut report = supervisor
        .send(StartRun)
        .await
        .map_err(|e| Error::Internal(format!("the supervisor stopped: {e}")))?;
    said.abort();
    for printer in printing {
        let _ = printer.await;
    }
    if let (Some(opening), Some(config)) = (vault_store, memory_config.as_ref()) {
        housekeep(opening, config, &mut report, &session_dir).await;
    }
    Ok(report)
}

/// Drives each of `printers`, and the session's event log, on the run's events. A log that
/// cannot be written is a warning at the start of the run.
fn start_printers(
    printers: Vec<Box<dyn Printer>>,
    events: &EventBus,
    log_path: &Path,
    preamble: &mut Vec<Event>,
) -> Vec<tokio::task::JoinHandle<Option<Report>>> {
    let mut all = printers;
    match printers::event_log::EventLog::append(log_path) {
        Ok(log) => all.push(Box::new(log)),
        Err(e) => preamble.push(Event::Warning {
            message: format!(
                "cannot write the event log {} ({e}): replay and the dashboard will not have this run",
                log_path.display()
            ),
        }),
    }
    all.into_iter()
        .map(|printer| tokio::spawn(printers::drive(printer, events.subscribe())))
        .collect()
}

/// What the Supervisor runs on, but for Chaos, the memory and the preamble, which the caller
/// gathers first.
fn run_deps(
    plan: Plan,
    session: SessionDir,
    state: SessionState,
    groups: ProcessGroups,
    control: Control,
    events: &EventBus,
) -> Result<RunDeps> {
    let mut ledger = Ledger::resume(
        plan.settings.max_cost_usd,
        plan.prices,
        events.clone(),
        state.ledger.clone(),
    );
    if let Some(shared) = control.shared {
        ledger = ledger.within(shared);
    }
    if let Some(slot) = &plan.gateway_bus {
        let _ = slot.set(events.clone());
    }
    let hooks = crate::hooks::into_hooks(
        plan.hooks,
        crate::hooks::Place {
            root: plan.root.clone(),
            groups,
            cancel: control.cancel.clone(),
            sandbox: plan.hook_sandbox,
        },
        plan.target,
    )?;
    let user = match control.headless {
        true => None,
        false => control
            .asker
            .or_else(|| crate::run::terminal::user(plan.output)),
    };
    Ok(RunDeps {
        settings: Arc::new(plan.settings),
        workspace: Arc::new(plan.workspace),
        store: Arc::new(
            WriteBehind::new(session)
                .map_err(|e| Error::Internal(format!("cannot start the session's writer: {e}")))?,
        ),
        runner: Arc::new(plan.runner),
        chaos: None,
        llm: plan.llm,
        // Built lazily: the ledger needs exact counts only near the end of the budget.
        counter: Arc::new(providers::tokens::TiktokenCounter::new()) as Arc<dyn TokenCounter>,
        ledger: Arc::new(ledger),
        events: events.clone(),
        cancel: control.cancel,
        stop_signal: control.stop_signal,
        drain: control.drain,
        guard: plan.guard,
        state,
        memory: None,
        hooks,
        user,
        pause: control.pause,
        models: control.models,
        preamble: Vec::new(),
    })
}

/// Prunes the vault after the run. Best effort: a vault that cannot be pruned now is pruned
/// after the next run. The printers have finished, so the warning is said on stderr and added
/// to the report already written: nothing is said that the report lacks.
async fn housekeep(
    opening: vault::Opening,
    config: &Config,
    report: &mut Report,
    session: &SessionDir,
) {
    let warning = match opening.store().await {
        Ok(store) => vault::housekeep(&store, config.memory.max_patterns)
            .await
            .err()
            .map(|e| format!("memory vault housekeeping failed: {e}")),
        // A vault the run never used (its tests passed at once) and that did not open.
        Err(e) if report.memory.status == MemoryStatus::On => {
            report.memory.status = MemoryStatus::Unavailable;
            report.memory.reason = Some(e.clone());
            Some(format!("{e}; the run went on without memory"))
        }
        Err(_) => None,
    };
    if let Some(warning) = warning {
        eprintln!("warning: {warning}");
        report.warnings.push(warning);
        if let Err(e) = session.write_json("report.json", report) {
            eprintln!("ralph-loop: cannot add that to report.json: {e}");
        }
    }
}

/// Every provider's retries, and the warnings of every part below the run (a reply cut short,
/// a cache not saved), said on `events`: so in the live view and the report's warnings, until
/// the returned guards are dropped.
fn heard_on(
    events: &EventBus,
) -> (
    crate::http::retry::RetryObserver,
    crate::run::edge::Warnings,
) {
    let (retries, warnings) = (events.clone(), events.clone());
    (
        crate::http::retry::observe_retries(move |message| {
            retries.emit(Event::Warning { message });
        }),
        crate::run::edge::observe_warnings(move |message| {
            warnings.emit(Event::Warning { message });
        }),
    )
}

/// Says on the run's events (and so in its report) that it was asked to stop, and how.
async fn say_stops(
    events: EventBus,
    cancel: CancellationToken,
    drain: CancellationToken,
    stop_signal: Arc<AtomicI32>,
) {
    let message = tokio::select! {
        _ = cancel.cancelled() => {
            let name = match stop_signal.load(Ordering::SeqCst) {
                libc::SIGTERM => "terminated",
                libc::SIGHUP => "hung up",
                _ => "interrupted",
            };
            format!("{name}: ending the current step and saving the session (Ctrl+C again to quit at once)")
        }
        _ = drain.cancelled() => "interrupted: finishing the iteration under way, then saving the session (Ctrl+C again to quit at once)".to_string(),
    };
    events.emit(Event::Note { message });
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

/// Starts, beside the baseline test run, the work of the first iteration that does not
/// depend on its result: the import graph (its cache, kept in the run's memory, then holds every
/// file, so the iteration's own build reads what changed, usually nothing), the vault's rows
/// for recall, LocalGuard's keyword automaton, and the patterns test output and replies are
/// read with (every parser's, as the first output read tries each in turn). Each iteration still
/// reads everything from disk; this only moves work off the path to the first model call.
/// Nothing waits for it: a warm-up still running when its result is needed is joined or
/// overtaken by the real call (a run whose baseline passes at once ends when it is done).
fn warm_up(plan: &Plan, vault: Option<vault::Opening>) {
    let root = plan.workspace.root.clone();
    let graph = plan.workspace.graph.clone();
    let guard = plan.guard.clone();
    tokio::task::spawn_blocking(move || {
        guard.detector().warm();
        crate::runner::parse::warm();
        crate::runner::classify::warm();
        ralph_actors::warm();
        // Into the run's memory of the graph: the first iteration's build then reads only
        // what changed, and nothing from `.ralph/`.
        match crate::context::ImportGraph::build_kept(&root, &graph) {
            Ok(_) => graph.persist(),
            Err(e) => tracing::debug!("warming the import graph: {e}"),
        }
    });
    if let Some(opening) = vault {
        tokio::spawn(async move {
            if let Ok(store) = opening.store().await {
                store.warm().await;
            }
        });
    }
}

/// Opens the MemoryVault for a run (its stores in the background). A vault that cannot be
/// opened (corrupt, unwritable, an embedder without its key) is a warning: the run goes on
/// without memory, and the report says why; a store that fails to open says so at its first
/// use.
fn open_memory(
    root: &Path,
    config: Option<&Config>,
    preamble: &mut Vec<Event>,
    state: &mut SessionState,
) -> (Option<MemoryDeps>, Option<vault::Opening>) {
    let Some(config) = config else {
        state.memory.status = MemoryStatus::Off;
        return (None, None);
    };
    match vault::open(root, config) {
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
