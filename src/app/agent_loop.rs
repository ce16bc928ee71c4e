//! `ralph-loop loop PROMPT.md --agent NAME`: the agent chosen (never silently: a terminal asks,
//! a headless run refuses with the list), checked (installed, signed in), the loop's settings
//! from the flags and the config, one loop per project at a time, and the Regent actor run under
//! an actix system with the printers and the signals: SIGINT, SIGTERM or SIGHUP finish the
//! iteration under way (its commit included) then stop, a second one quits at once; SIGQUIT
//! kills the agent now and stops.

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use actix::Actor;
use ralph_actors::events::bus::EventBus;
use ralph_actors::policy::budget::{Price, Prices};
use ralph_actors::schema::regent::LoopReport;
use ralph_guard::Guard;
use tokio::sync::watch;

use crate::agents::cost::price_of;
use crate::agents::registry::Registry;
use crate::agents::wire::{self, Route};
use crate::agents::AgentDef;
use crate::cli::{LoopArgs, OutputFormat, RunArgs};
use crate::config::{self, Config};
use crate::error::{Error, Result, UsageError};
use crate::gateway::{Gateway, Purse, Upstream};
use crate::launch::stops::Stops;
use crate::launch::view::{Show, StopKey, View};
use crate::launch::{Launch, Rule};
use crate::printers;
use crate::process::groups::ProcessGroups;
use crate::regent::actor::{Regent, StartLoop};
use crate::regent::run::{LoopDeps, LoopSettings};
use crate::runner::detect;
use crate::runner::plan::TestingOptions;
use crate::views::tui::picker::Picker;

pub fn run(args: LoopArgs) -> Result<i32> {
    let cwd =
        std::env::current_dir().map_err(|e| Error::io("cannot read the current directory", e))?;
    let (config, config_path) = config::load_discovered(args.config.as_deref(), &cwd)?;
    let prompt_file = prompt_file(&cwd, &args.prompt)?;
    let root = detect::project_root(&cwd);
    let picked = picked(&args, &config)?;
    let output = args.output.unwrap_or(config.output.into());
    let ralph_dir = root.join(crate::session::RALPH_DIR);
    let _lock = crate::regent::state::hold_lock(&ralph_dir)?;
    let mut notes: Vec<String> = picked.note.into_iter().collect();
    let testing = testing(&config, &args, &cwd, &root)?;
    let settings = settings(&config, &args, &root);
    let loop_id = format!("loop-{}", uuid::Uuid::new_v4());
    let loop_dir = ralph_dir.join(&loop_id);
    let event_log = open_event_log(&loop_dir, &mut notes);
    let (view, why_not_tui) = View::choose(args.view.ui, output == OutputFormat::Human);
    notes.extend(why_not_tui);
    let tui = view.is_tui();
    let launch = Launch::new(Rule::DrainAll, ProcessGroups::new()).announced_in(loop_dir.clone());
    let stops = launch.stops().clone();
    let hooks =
        crate::work::entry::loop_hooks(&config, config_path.as_deref(), &root, &stops, &loop_id)?;
    notes.extend(hooks.note);
    let (switch_tx, switch_rx) = watch::channel(None);
    let picked_prices = picked.prices.clone();
    let mut show = Show::new(&root, loop_dir, StopKey::Iteration, STOP_MEANS);
    show.bind = args.view.ui_bind;
    show.page = Some(loop_id.clone());
    if tui {
        show.picker = Some(picker(
            &picked.agent,
            &picked.model,
            picked.prices,
            &stops,
            switch_tx,
        ));
    }
    let printer = view.feed().unwrap_or_else(|| printers::for_format(output));
    let events = EventBus::new(&loop_id);
    let wire = wire(
        &picked.agent,
        picked.model.as_deref(),
        &config,
        &settings,
        &picked_prices,
        &events,
    )?;
    let mut deps = LoopDeps {
        root,
        agent: picked.agent,
        binary: picked.binary,
        model: picked.model,
        env: std::env::vars_os().collect(),
        gateway: None,
        prompt_file,
        tasks_file: args.tasks.as_ref().map(|t| cwd.join(t)),
        settings,
        testing,
        price: picked.price,
        events,
        groups: stops.groups.clone(),
        reaper: std::env::current_exe().ok(),
        drain: stops.drain.clone(),
        quit: stops.quit.clone(),
        pause: None,
        model_switch: Some(switch_rx),
        notes,
        task_hooks: hooks.tasks,
        hooks: hooks.stages,
    };
    let report_dir = deps.testing.report_dir.clone();
    let printers: Vec<_> = std::iter::once(printer).chain(event_log).collect();
    let report = launch.shown(view, show).run(|pause| async move {
        deps.pause = Some(pause);
        match wire {
            Wire::Through(upstream, guard, purse) => {
                let gateway = Gateway::start(upstream, guard, purse).await?;
                deps.notes.push(wire::through_note(&deps.agent, &gateway));
                deps.gateway = Some(Arc::new(gateway));
            }
            Wire::Direct(note) => deps.notes.extend(note),
        }
        Ok(drive(deps, printers).await)
    });
    let _ = std::fs::remove_dir_all(&report_dir);
    let report =
        report?.ok_or_else(|| Error::Internal("the Regent stopped without a report".into()))?;
    if tui {
        let _ = printers::loop_lines::write_summary(&report, &mut std::io::stderr());
    }
    Ok(report.exit_code)
}

/// How the loop's agent reaches its model.
enum Wire {
    /// Through a gateway started with these.
    Through(Upstream, Arc<Guard>, Purse),
    /// Directly, said in the note when the agent could have gone through the gateway.
    Direct(Option<String>),
}

/// Whether the agent's calls can go through the model gateway, and what it then starts with.
fn wire(
    agent: &AgentDef,
    model: Option<&str>,
    config: &Config,
    settings: &LoopSettings,
    prices: &Prices,
    events: &EventBus,
) -> Result<Wire> {
    let env = |name: &str| std::env::var(name).ok();
    let upstream = match wire::route(agent, model, &env)? {
        Route::Through(upstream) => upstream,
        Route::Direct(note) => return Ok(Wire::Direct(note)),
    };
    let guard = Arc::new(crate::guard::build(&config.local_guard)?);
    let purse = Purse {
        max_cost_usd: settings.max_cost_usd,
        prices: prices.clone(),
        events: events.clone(),
    };
    Ok(Wire::Through(upstream, guard, purse))
}

/// The prompt file, `prompt` from `cwd`, which must exist.
fn prompt_file(cwd: &Path, prompt: &Path) -> Result<PathBuf> {
    let file = cwd.join(prompt);
    if !file.is_file() {
        return Err(UsageError::FileNotFound {
            what: "prompt file",
            path: prompt.to_path_buf(),
        }
        .into());
    }
    Ok(file)
}

/// The loop's coding agent and how it is priced.
struct Picked {
    agent: AgentDef,
    binary: PathBuf,
    model: Option<String>,
    prices: Prices,
    price: Price,
    /// Said when its costs are estimated at another model's price.
    note: Option<String>,
}

/// The agent `--agent` (or `regent.agent`) names, else the one a person picks; checked
/// installed and signed in; its model and price.
fn picked(args: &LoopArgs, config: &Config) -> Result<Picked> {
    let registry = Registry::new(&config.agents);
    let name = match args.agent.clone().or_else(|| config.regent.agent.clone()) {
        Some(name) => name,
        None => choose(&registry, config)?,
    };
    let agent = registry.get(&name)?.clone();
    let binary = crate::agents::registry::ready(&agent)?;
    let model = args.model.clone().or_else(|| config.regent.model.clone());
    let prices = crate::providers::prices::with_overrides(config.prices.clone());
    let (price, priced_as, known) = price_of(&prices, model.as_deref());
    let note = (!known && !agent.reports_cost).then(|| {
        format!(
            "{} reports no cost and its model's price is not known: costs are estimated at {priced_as}'s price",
            if agent.title.is_empty() { &agent.name } else { &agent.title }
        )
    });
    Ok(Picked {
        agent,
        binary,
        model,
        prices,
        price,
        note,
    })
}

/// How the loop runs the tests: as a fix run would, but with coverage only when the config
/// asks for it (the loop has no Chaos to reach the default gate with).
fn testing(config: &Config, args: &LoopArgs, cwd: &Path, root: &Path) -> Result<TestingOptions> {
    let run_args = RunArgs {
        test_command: args.test_command.clone(),
        ..RunArgs::default()
    };
    let mut testing = crate::run::plan::testing_options(config, &run_args, cwd, root)?;
    let coverage = config.success_criteria.coverage_threshold;
    testing.coverage = coverage.set && coverage.is_some();
    Ok(testing)
}

/// Runs the Regent's loop to its end, its events rendered by `printers`; its report.
async fn drive(deps: LoopDeps, printers: Vec<Box<dyn printers::Printer>>) -> Option<LoopReport> {
    let events = deps.events.clone();
    let warnings = events.clone();
    let _warnings = crate::run::edge::observe_warnings(move |message| {
        warnings.emit(ralph_actors::events::event::Event::Warning { message });
    });
    let printers: Vec<_> = printers
        .into_iter()
        .map(|printer| tokio::spawn(printers::drive(printer, events.subscribe())))
        .collect();
    let report = Regent::new(deps)
        .start()
        .send(StartLoop)
        .await
        .ok()
        .flatten();
    for printer in printers {
        let _ = printer.await;
    }
    report
}

/// The TUI's model picker of the loop's agent (made inside the loop's actix system): a choice
/// goes into `switch`, taken before the next iteration.
fn picker(
    agent: &AgentDef,
    model: &Option<String>,
    prices: Prices,
    stops: &Stops,
    switch: watch::Sender<Option<(String, Price)>>,
) -> Box<dyn FnOnce() -> Picker> {
    let (agent, model, groups) = (agent.clone(), model.clone(), stops.groups.clone());
    Box::new(move || crate::run::pickers::agent(&agent, model.as_deref(), prices, &groups, switch))
}

/// What the view's stop key does to the loop.
const STOP_MEANS: &str =
    "the iteration under way finishes, its commit included; then the loop stops";

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
        max_iterations: args
            .limits
            .max_iterations
            .unwrap_or(config.budgets.max_iterations),
        max_cost_usd: args.limits.budget.unwrap_or(config.budgets.max_cost_usd),
        max_duration: args
            .limits
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
