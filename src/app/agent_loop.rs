//! `ralph-loop loop PROMPT.md --agent NAME`: the agent chosen (never silently: a terminal asks,
//! a headless run refuses with the list), checked (installed, signed in), the loop's settings
//! from the flags and the config, one loop per project at a time, and the Regent actor run under
//! an actix system with the printers and the signals: SIGINT, SIGTERM or SIGHUP finish the
//! iteration under way (its commit included) then stop, a second one quits at once; SIGQUIT
//! kills the agent now and stops.

use std::fs::File;
use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use actix::Actor;
use nix::fcntl::{Flock, FlockArg};
use ralph_actors::events::bus::EventBus;
use ralph_actors::schema::regent::LoopReport;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::agents::cost::price_of;
use crate::agents::registry::Registry;
use crate::app::execute::{open_dashboard, DASHBOARD_GRACE};
use crate::cli::{LoopArgs, OutputFormat, RunArgs};
use crate::config::{self, Config, Output};
use crate::error::{Error, Result, UsageError};
use crate::printers;
use crate::process::groups::ProcessGroups;
use crate::regent::actor::{Regent, StartLoop};
use crate::regent::run::{LoopDeps, LoopSettings};
use crate::remote;
use crate::runner::detect;
use crate::views::{self, Chosen};

/// After SIGQUIT, how long the loop has to write its state before the process exits anyway.
const QUIT_GRACE: Duration = Duration::from_secs(3);

pub fn run(args: LoopArgs) -> Result<i32> {
    let cwd =
        std::env::current_dir().map_err(|e| Error::io("cannot read the current directory", e))?;
    let (config, _) = config::load_discovered(args.config.as_deref(), &cwd)?;
    let prompt_file = cwd.join(&args.prompt);
    if !prompt_file.is_file() {
        return Err(UsageError::FileNotFound {
            what: "prompt file",
            path: args.prompt.clone(),
        }
        .into());
    }
    let root = detect::project_root(&cwd);
    let registry = Registry::new(&config.agents);
    let name = match args.agent.clone().or_else(|| config.regent.agent.clone()) {
        Some(name) => name,
        None => choose(&registry, &config)?,
    };
    let agent = registry.get(&name)?.clone();
    let binary = crate::agents::registry::ready(&agent)?;
    let output = args.output.unwrap_or(match config.output {
        Output::Human => OutputFormat::Human,
        Output::Json => OutputFormat::Json,
        Output::Jsonl => OutputFormat::Jsonl,
    });
    let ralph_dir = root.join(crate::session::RALPH_DIR);
    std::fs::create_dir_all(&ralph_dir)
        .map_err(|e| Error::io(format!("cannot create {}", ralph_dir.display()), e))?;
    let _lock = lock(&ralph_dir)?;
    let model = args.model.clone().or_else(|| config.regent.model.clone());
    let prices = crate::providers::prices::with_overrides(config.prices.clone());
    let (price, priced_as, known) = price_of(&prices, model.as_deref());
    let mut notes = Vec::new();
    if !known && !agent.reports_cost {
        notes.push(format!(
            "{} reports no cost and its model's price is not known: costs are estimated at {priced_as}'s price",
            if agent.title.is_empty() { &agent.name } else { &agent.title }
        ));
    }
    let run_args = RunArgs {
        test_command: args.test_command.clone(),
        ..RunArgs::default()
    };
    let mut testing = crate::app::plan::testing_options(&config, &run_args, &cwd, &root)?;
    // The loop has no Chaos to reach the default gate with: coverage only when the file asks.
    let coverage = config.success_criteria.coverage_threshold;
    testing.coverage = coverage.set && coverage.is_some();
    let settings = settings(&config, &args, &root);
    let loop_id = format!("loop-{}", uuid::Uuid::new_v4());
    let event_log = open_event_log(&ralph_dir.join(&loop_id), &mut notes);
    let groups = ProcessGroups::new();
    let drain = CancellationToken::new();
    let quit = CancellationToken::new();
    let chosen = views::choose(args.ui.unwrap_or_default(), output == OutputFormat::Human);
    if let Chosen::Lines { why_not_tui } = &chosen {
        notes.extend(why_not_tui.clone());
    }
    let tui = chosen == Chosen::Tui;
    let (pause_tx, pause_rx) = watch::channel(false);
    let (switch_tx, switch_rx) = watch::channel(None);
    let picked = (agent.clone(), model.clone(), prices.clone());
    let deps = LoopDeps {
        root: root.clone(),
        agent,
        binary,
        model,
        env: std::env::vars_os().collect(),
        prompt_file,
        tasks_file: args.tasks.as_ref().map(|t| cwd.join(t)),
        settings,
        testing,
        price,
        events: EventBus::new(&loop_id),
        groups: groups.clone(),
        reaper: std::env::current_exe().ok(),
        drain: drain.clone(),
        quit: quit.clone(),
        pause: Some(pause_rx),
        model_switch: Some(switch_rx),
        notes,
    };
    let events = deps.events.clone();
    let report_dir = deps.testing.report_dir.clone();
    let system = actix::System::new();
    let loop_dir = ralph_dir.join(&loop_id);
    let (root_dir, ui_bind) = (root.clone(), args.ui_bind);
    let report: Option<LoopReport> = system.block_on(async move {
        let stop_signal = Arc::new(AtomicI32::new(0));
        // Another process (the dashboard, `kill -USR1`) may pause the loop: see crate::remote.
        let _announced = remote::announce(&loop_dir);
        let listening = tokio::spawn(remote::listen(pause_tx.clone()));
        let dashboard = match chosen {
            Chosen::Web => {
                let dashboard = open_dashboard(&root_dir, ui_bind).await?;
                eprintln!("dashboard: {}", dashboard.url_for(&loop_id));
                Some(dashboard)
            }
            _ => None,
        };
        let (printer, view) = if tui {
            let (feed, _asker, inbox) = views::tui::channels();
            let (agent, model, prices) = picked;
            let picker =
                crate::app::pickers::agent(&agent, model.as_deref(), prices, &groups, switch_tx);
            let handles = views::tui::Handles {
                pause: Some(pause_tx),
                cancel: drain.clone(),
                stop_signal: stop_signal.clone(),
                groups: groups.clone(),
                stop_means:
                    "the iteration under way finishes, its commit included; then the loop stops",
                picker: Some(picker),
                skip: None,
            };
            let place = views::tui::Place {
                dir: loop_dir,
                target: None,
                original: None,
                replayed: false,
            };
            let view = actix_rt::spawn(views::tui::run(inbox, handles, place));
            (Box::new(feed) as Box<dyn printers::Printer>, Some(view))
        } else {
            (printers::for_format(output), None)
        };
        let printer = tokio::spawn(printers::drive(printer, events.subscribe()));
        let log = event_log.map(|log| tokio::spawn(printers::drive(log, events.subscribe())));
        let signals = tokio::spawn(on_signals(drain, quit, groups, stop_signal));
        let regent = Regent::new(deps).start();
        let report = regent.send(StartLoop).await.ok().flatten();
        signals.abort();
        listening.abort();
        let _ = printer.await;
        if let Some(log) = log {
            let _ = log.await;
        }
        if let Some(view) = view {
            views::tui::ended(view).await;
            if let Some(report) = &report {
                let _ = printers::loop_lines::write_summary(report, &mut std::io::stderr());
            }
        }
        if let Some(dashboard) = dashboard {
            dashboard.close(DASHBOARD_GRACE).await;
        }
        Ok::<_, Error>(report)
    })?;
    let _ = std::fs::remove_dir_all(&report_dir);
    let report =
        report.ok_or_else(|| Error::Internal("the Regent stopped without a report".into()))?;
    Ok(report.exit_code)
}

/// The loop's event log, `.ralph/loop-<uuid>/events.jsonl` (as a session's): what the dashboard
/// and `replay` read. A log that cannot be written is said, and the loop goes on without it.
fn open_event_log(dir: &Path, notes: &mut Vec<String>) -> Option<Box<dyn printers::Printer>> {
    let path = dir.join(printers::event_log::FILE);
    let opened =
        std::fs::create_dir_all(dir).and_then(|()| printers::event_log::EventLog::append(&path));
    match opened {
        Ok(log) => Some(Box::new(log)),
        Err(e) => {
            notes.push(format!(
                "cannot write the event log {} ({e}): replay and the dashboard will not have this loop",
                path.display()
            ));
            None
        }
    }
}

/// The loop's settings: the flags over the config.
fn settings(config: &Config, args: &LoopArgs, root: &Path) -> LoopSettings {
    let r = &config.regent;
    let secs = Duration::from_secs_f64;
    LoopSettings {
        max_iterations: args.max_iterations.unwrap_or(config.budgets.max_iterations),
        max_cost_usd: args.budget.unwrap_or(config.budgets.max_cost_usd),
        max_duration: args
            .max_duration
            .or(config.budgets.max_duration_minutes)
            .map(|m| secs(m * 60.0)),
        max_cost_per_iteration: r.max_cost_per_iteration,
        limits: r.limits(),
        max_retries: r.max_retries,
        backoff_first: secs(r.retry_backoff_seconds),
        backoff_cap: secs(r.max_backoff_seconds),
        rollback_on_test_failure: r.rollback_on_test_failure,
        mode: config.testing.mode,
        baseline_file: root.join(&config.testing.baseline_file),
        baseline_scope: config.testing.baseline_scope,
        bootstrap: config.build.bootstrap_detection,
        bootstrap_check: config.build.bootstrap_check.clone(),
        git: config.git.clone(),
        thresholds: r.breaker.clone(),
        gate: r.exit_gate.clone(),
    }
}

/// No agent named: a person at a terminal picks one of those installed; a headless run is
/// refused with the list (no silent default).
fn choose(registry: &Registry, config: &Config) -> Result<String> {
    let usable: Vec<_> = registry
        .detect(&config.agents)
        .into_iter()
        .filter(|f| f.usable())
        .collect();
    let names: Vec<&str> = usable.iter().map(|f| f.name.as_str()).collect();
    if usable.is_empty() {
        return Err(UsageError::flag(
            "--agent",
            "no coding agent is installed and signed in here (`ralph-loop agents list` shows what ralph-loop knows)",
        )
        .into());
    }
    let interactive = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    if !interactive {
        return Err(UsageError::flag(
            "--agent",
            format!(
                "no agent chosen: pass --agent NAME or set regent.agent in ralph.config.yaml (installed here: {})",
                names.join(", ")
            ),
        )
        .into());
    }
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "Which coding agent should run the loop?");
    for (i, f) in usable.iter().enumerate() {
        let _ = writeln!(err, "  {}. {} ({})", i + 1, f.name, f.title);
    }
    let mut line = String::new();
    loop {
        let _ = write!(err, "agent [1-{}]: ", usable.len());
        let _ = err.flush();
        line.clear();
        let read = std::io::stdin().lock().read_line(&mut line);
        if matches!(read, Ok(0) | Err(_)) {
            return Err(UsageError::flag("--agent", "no agent chosen").into());
        }
        let answer = line.trim();
        let picked = answer
            .parse::<usize>()
            .ok()
            .and_then(|n| n.checked_sub(1))
            .and_then(|i| names.get(i))
            .or_else(|| names.iter().find(|n| **n == answer));
        if let Some(name) = picked {
            return Ok((*name).to_string());
        }
    }
}

/// One loop per project at a time: an exclusive lock on `.ralph/loop.lock`, held while the
/// returned value lives.
fn lock(ralph_dir: &Path) -> Result<Flock<File>> {
    let path = ralph_dir.join(crate::regent::state::LOCK);
    let file = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| Error::io(format!("cannot open {}", path.display()), e))?;
    Flock::lock(file, FlockArg::LockExclusiveNonblock).map_err(|_| {
        UsageError::flag(
            "loop",
            format!(
                "another `ralph-loop loop` runs in this project ({} is locked); `ralph-loop status` shows it",
                path.display()
            ),
        )
        .into()
    })
}

/// SIGINT, SIGTERM or SIGHUP: finish the iteration, then stop; again: kill everything and exit.
/// SIGQUIT: kill the agent now; the loop writes its state and stops (or the process exits after
/// a short grace).
async fn on_signals(
    drain: CancellationToken,
    quit: CancellationToken,
    groups: ProcessGroups,
    stop_signal: Arc<AtomicI32>,
) {
    let Some(mut signals) = crate::app::execute::Signals::listen() else {
        eprintln!("warning: cannot listen for signals; Ctrl+C will stop the loop at once");
        return;
    };
    let first = signals.next().await;
    // Nobody is at a view a signal stopped: it closes by itself at the end.
    stop_signal.store(first, Ordering::SeqCst);
    if first == libc::SIGQUIT {
        eprintln!("quit: killing the agent now");
        quit.cancel();
        tokio::time::sleep(QUIT_GRACE).await;
        groups.kill_all();
        views::tui::term::restore();
        std::process::exit(128 + first);
    }
    eprintln!(
        "stopping: finishing the iteration under way, its commit included (Ctrl+C again to quit at once)"
    );
    drain.cancel();
    let second = signals.next().await;
    groups.kill_all();
    views::tui::term::restore();
    std::process::exit(128 + second);
}
