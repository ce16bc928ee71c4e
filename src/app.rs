//! The wiring of a run: flags and config into settings, the real trait implementations, the
//! actor system, signals and printers.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use actix::Actor;
use ralph_actors::budget::Prices;
use ralph_actors::events::{Event, EventSink};
use ralph_actors::integrity;
use ralph_actors::llm::{LlmClient, TokenCounter};
use ralph_actors::messages::{Interrupt, StartRun};
use ralph_actors::report::{MemoryStatus, Report};
use ralph_actors::roles::Role;
use ralph_actors::runner::TestRunner;
use ralph_actors::settings::RunSettings;
use ralph_actors::supervisor::{SessionState, Supervisor, SupervisorDeps};
use serde::{Deserialize, Serialize};

use crate::cli::{OutputFormat, ResumeArgs, RunArgs, StatusArgs};
use crate::config::{self, Config, SandboxType};
use crate::detect;
use crate::error::{Error, Result};
use crate::models::ModelName;
use crate::printers;
use crate::providers::{self, ClientOptions, LlmSource};
use crate::runner::language::Language;
use crate::runner::plan::{Limits, SandboxKind, TestingOptions};
use crate::runner::project::ProjectRunner;
use crate::runner::sandbox;
use crate::session::SessionDir;
use crate::vault;
use crate::workspace::FsWorkspace;

/// Provider settings that come from somewhere other than flags and config: micro-agent's
/// environment and INI file. Keyed by provider (`openai`, `anthropic`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Overrides {
    /// The variable a provider's key is read from, and named in errors (`OPENAI_KEY`).
    pub key_envs: BTreeMap<String, String>,
    /// Keys found elsewhere than the environment (`~/.micro-agent`). Never saved: a resumed
    /// session reads them again from `key_envs`.
    #[serde(skip)]
    pub keys: BTreeMap<String, String>,
    pub base_urls: BTreeMap<String, String>,
    /// What the front end could not honour, already said on stderr.
    #[serde(skip)]
    pub notes: Vec<String>,
}

/// What a session was started with; `run.json`, read back by `resume`.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct RunSpec {
    cwd: PathBuf,
    args: RunArgs,
    overrides: Overrides,
}

/// A run, resolved and checked, ready to execute.
struct Plan {
    root: PathBuf,
    workspace: FsWorkspace,
    test_command: String,
    runner: ProjectRunner,
    /// Where the test tools write their reports; removed when the run ends (the results are
    /// saved in the session).
    report_dir: PathBuf,
    settings: RunSettings,
    prices: Prices,
    output: OutputFormat,
    llm: Arc<dyn LlmClient>,
    /// The config the MemoryVault is opened with; `None` when `memory.enabled` is false.
    memory: Option<Config>,
}

pub fn init_tracing() {
    // Diagnostics go to stderr at `warn` unless RUST_LOG says otherwise; the live view is
    // separate (events), so logs never mix into `--output json`.
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("error"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

/// Turns a run's outcome into the process exit code, printing errors plainly.
pub fn exit_code(result: Result<i32>) -> ExitCode {
    match result {
        Ok(code) => ExitCode::from(code.clamp(0, 255) as u8),
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(e.exit_code() as u8)
        }
    }
}

fn current_dir() -> Result<PathBuf> {
    std::env::current_dir().map_err(|e| Error::io("cannot read the current directory", e))
}

fn env(key: &str) -> Option<String> {
    std::env::var(key).ok().filter(|v| !v.is_empty())
}

/// `ralph-loop [run] FILE ...`
pub fn run(args: RunArgs, overrides: Overrides) -> Result<i32> {
    let cwd = current_dir()?;
    let plan = plan(&args, &cwd, &overrides)?;
    let session = SessionDir::create(&plan.root)?;
    session.write_json(
        "run.json",
        &RunSpec {
            cwd,
            args,
            overrides,
        },
    )?;
    session.save_original(&plan.workspace.target)?;
    let state = new_state(&session, &plan);
    execute(plan, session, state)
}

fn new_state(session: &SessionDir, plan: &Plan) -> SessionState {
    SessionState::new(
        &session.id,
        &plan.workspace.display(&plan.workspace.target),
        &plan.test_command,
        plan.settings.entropy_threshold,
    )
}

/// `ralph-loop resume [SESSION]`
pub fn resume(args: ResumeArgs) -> Result<i32> {
    let cwd = current_dir()?;
    let root = detect::project_root(&cwd);
    let resumable = |s: &SessionDir| {
        s.read_json::<SessionState>("state.json")
            .ok()
            .flatten()
            .is_some_and(|st| is_resumable(&st.status))
    };
    let session = match args.session.as_deref() {
        Some(id) => SessionDir::find(&root, Some(id), |_| true)?,
        None => SessionDir::find(&root, None, resumable).map_err(|_| {
            Error::Usage(format!(
                "no interrupted session under {} to resume",
                root.display()
            ))
        })?,
    };
    let spec: RunSpec = session.read_json("run.json")?.ok_or_else(|| {
        Error::Usage(format!(
            "session {} has no run.json; it cannot be resumed",
            session.id
        ))
    })?;
    // No state.json: the session stopped before its first checkpoint, so it starts over.
    let state: Option<SessionState> = session.read_json("state.json")?;
    if let Some(st) = state.as_ref().filter(|st| !is_resumable(&st.status)) {
        return Err(Error::Usage(format!(
            "session {} ended with `{}`; only an interrupted session can be resumed",
            session.id, st.status
        )));
    }
    let mut run_args = spec.args;
    if args.budget.is_some() {
        run_args.budget = args.budget;
    }
    if args.output.is_some() {
        run_args.output = args.output;
    }
    let mut overrides = spec.overrides;
    overrides.keys = overrides
        .key_envs
        .iter()
        .filter_map(|(p, var)| Some((p.clone(), env(var)?)))
        .collect();
    let plan = plan(&run_args, &spec.cwd, &overrides)?;
    let mut state = state.unwrap_or_else(|| new_state(&session, &plan));
    state.status = "running".into();
    execute(plan, session, state)
}

fn is_resumable(status: &str) -> bool {
    status == "running" || status == "interrupted"
}

/// `ralph-loop status [SESSION]`
pub fn status(args: StatusArgs) -> Result<i32> {
    let cwd = current_dir()?;
    let root = detect::project_root(&cwd);
    let session = SessionDir::find(&root, args.session.as_deref(), |_| true)?;
    match session.read_json::<Report>("report.json")? {
        Some(report) if args.json => {
            let _ = printers::json_report(&report, &mut std::io::stdout().lock());
        }
        Some(report) => {
            let mut human = printers::Human::new();
            let event = ralph_actors::events::Event::SessionFinished {
                report: Box::new(report),
            };
            let _ = human.render(&event, &mut std::io::stdout().lock());
        }
        None => {
            let state: Option<SessionState> = session.read_json("state.json")?;
            match state {
                Some(st) => println!(
                    "session {} is {} after {} iterations, ${:.4} spent (no report yet)",
                    session.id, st.status, st.iteration, st.ledger.spent
                ),
                None => println!("session {} has not finished its first step", session.id),
            }
        }
    }
    Ok(0)
}

fn plan(args: &RunArgs, cwd: &Path, overrides: &Overrides) -> Result<Plan> {
    let file = args
        .file
        .as_ref()
        .ok_or_else(|| Error::Usage("no file to fix was given".into()))?;
    let target = cwd.join(file);
    if !target.is_file() {
        return Err(Error::Usage(format!(
            "target file not found: {} (create it, even empty, to have it written from its tests)",
            file.display()
        )));
    }
    let target = target
        .canonicalize()
        .map_err(|e| Error::io(format!("cannot resolve {}", file.display()), e))?;
    // Sessions live at the target's git root; outside git, where the user ran the command (which
    // is where `status` and `resume` look).
    let root = detect::project_root(target.parent().unwrap_or(cwd));
    let root = if root.join(".git").exists() {
        root
    } else {
        detect::project_root(cwd)
    };

    let (mut config, _path) = config::load_discovered(args.config.as_deref(), cwd)?;
    apply_flags(&mut config, args)?;
    let mut settings = config.run_settings()?;
    settings.validate().map_err(Error::Usage)?;

    if !config.testing.allow_test_edits {
        let relative = target.strip_prefix(&root).unwrap_or(&target);
        if integrity::is_test_path(&relative.to_string_lossy()) {
            return Err(Error::Usage(format!(
                "{} is a test file, and the Artisan may not edit tests: pass --allow-test-edits \
                 (or set testing.allow_test_edits: true) to let it",
                file.display()
            )));
        }
    }
    let options = testing_options(&config, args, cwd, &root)?;
    if matches!(options.limits.sandbox, SandboxKind::Docker { .. }) {
        sandbox::check_docker().map_err(|e| Error::Usage(e.to_string()))?;
    }
    let runner =
        ProjectRunner::build(&target, &root, &options).map_err(|e| Error::Usage(format!("{e}")))?;
    let test_command = runner.command();
    let report_dir = options.report_dir.clone();
    let existing = |p: PathBuf, what: &str| -> Result<PathBuf> {
        if p.is_file() {
            Ok(p)
        } else {
            Err(Error::Usage(format!("{what} not found: {}", p.display())))
        }
    };
    let test_file = match args
        .test_file
        .as_ref()
        .map(|f| cwd.join(f))
        .or_else(|| config.testing.test_file.clone())
    {
        Some(p) => Some(existing(p, "test file")?),
        None => detect::find_test_file(&target),
    };
    let prompt_file = match args
        .prompt
        .as_ref()
        .map(|p| cwd.join(p))
        .or_else(|| config.testing.prompt_file.clone())
    {
        Some(p) => Some(existing(p, "prompt file")?),
        None => {
            let mut conventional = target.clone().into_os_string();
            conventional.push(".prompt.md");
            Some(PathBuf::from(conventional)).filter(|p| p.is_file())
        }
    };
    let workspace = FsWorkspace {
        manifest: detect::find_manifest(&target),
        root: root.clone(),
        target,
        test_file,
        prompt_file,
    };

    let source = match (&args.replay, &args.record) {
        (Some(file), _) => LlmSource::Replay(cwd.join(file)),
        (None, record) => {
            let providers = provider_setups(&config, overrides);
            match record {
                Some(file) => LlmSource::Record(providers, cwd.join(file)),
                None => LlmSource::Live(providers),
            }
        }
    };
    // Each role runs on the first of its models that can be called now (provider present, key
    // set); a recording answers for any.
    let (llm, notes) = providers::build(&source, &mut settings.models)?;
    for note in notes {
        eprintln!("note: {note}");
    }
    settings.context_windows = settings
        .models
        .iter()
        .filter_map(|(role, spec)| {
            Some((*role, providers::prices::info(&spec.model)?.context_window))
        })
        .collect();
    let output = args.output.unwrap_or(match config.output {
        config::Output::Human => OutputFormat::Human,
        config::Output::Json => OutputFormat::Json,
        config::Output::Jsonl => OutputFormat::Jsonl,
    });
    Ok(Plan {
        root,
        workspace,
        test_command,
        runner,
        report_dir,
        prices: providers::prices::with_overrides(config.prices.clone()),
        settings,
        output,
        llm,
        memory: config.memory.enabled.then(|| config.clone()),
    })
}

/// How to reach each provider: config, then micro-agent's overrides, then the environment.
fn provider_setups(config: &Config, overrides: &Overrides) -> providers::Providers {
    crate::models::AVAILABLE
        .iter()
        .map(|&name| {
            let endpoint = config.endpoint(name, env);
            let mut key_env = overrides
                .key_envs
                .get(name)
                .cloned()
                .or(endpoint.api_key_env);
            // Gemini's key may also be under Google's own name.
            if name == "gemini"
                && key_env.as_deref().and_then(env).is_none()
                && env("GOOGLE_API_KEY").is_some()
            {
                key_env = Some("GOOGLE_API_KEY".into());
            }
            let api_key = overrides
                .keys
                .get(name)
                .cloned()
                .or_else(|| key_env.as_deref().and_then(env));
            let options = ClientOptions {
                base_url: overrides.base_urls.get(name).cloned().or(endpoint.base_url),
                api_key,
                api_key_env: key_env.unwrap_or_default(),
                timeout: endpoint.timeout,
                idle_timeout: endpoint.idle_timeout,
                max_retries: endpoint.max_retries,
                stream: endpoint.stream,
                api_version: endpoint.api_version,
            };
            let setup = providers::ProviderSetup {
                options,
                requests_per_minute: endpoint.requests_per_minute,
                tokens_per_minute: endpoint.tokens_per_minute,
            };
            (name.to_string(), setup)
        })
        .collect()
}

/// Flags over the file.
fn apply_flags(config: &mut Config, args: &RunArgs) -> Result<()> {
    if let Some(models) = &args.models {
        for (role, name) in parse_models_flag(models)? {
            if let Some(entry) = config.models.get_mut(role) {
                // A model picked on the command line is the one wanted: the fallbacks of the
                // model it replaces do not carry over.
                entry.model = name;
                entry.fallbacks.clear();
            }
        }
    }
    if let Some(m) = args.max_iterations {
        if m == 0 {
            return Err(Error::Usage("--max-iterations must be at least 1".into()));
        }
        config.budgets.max_iterations = m;
    }
    if let Some(b) = args.budget {
        if !(b.is_finite() && b > 0.0) {
            return Err(Error::Usage(format!(
                "--budget must be a positive number of dollars, not {b}"
            )));
        }
        config.budgets.max_cost_usd = b;
    }
    if let Some(d) = args.max_duration {
        if !(d.is_finite() && d > 0.0) {
            return Err(Error::Usage(format!(
                "--max-duration must be a positive number of minutes, not {d}"
            )));
        }
        config.budgets.max_duration_minutes = Some(d);
    }
    if let Some(l) = &args.language {
        let language: Language = l
            .parse()
            .map_err(|e| Error::Usage(format!("--language: {e}")))?;
        config.testing.language = Some(language.as_str().to_string());
    }
    if args.allow_test_edits {
        config.testing.allow_test_edits = true;
    }
    Ok(())
}

/// How the tests run, from the flags and the config's `testing`, `sandbox`, `success_criteria`
/// and `linting` sections.
fn testing_options(
    config: &Config,
    args: &RunArgs,
    cwd: &Path,
    root: &Path,
) -> Result<TestingOptions> {
    let language = config
        .testing
        .language
        .as_deref()
        .map(str::parse::<Language>)
        .transpose()
        .map_err(Error::Usage)?;
    let (command, command_cwd) = match (&args.test_command, &config.testing.command) {
        (Some(t), _) => (Some(t.clone()), Some(cwd.to_path_buf())),
        (None, Some(t)) => (
            Some(t.clone()),
            Some(config.base_dir.clone().unwrap_or_else(|| cwd.to_path_buf())),
        ),
        (None, None) => (None, None),
    };
    Ok(TestingOptions {
        command,
        command_cwd,
        language,
        limits: Limits {
            timeout: Duration::from_secs(config.testing.timeout_seconds),
            max_output_bytes: config.testing.max_output_bytes,
            memory_limit_mb: config.sandbox.memory_limit_mb,
            sandbox: match config.sandbox.kind {
                SandboxType::Process => SandboxKind::Process,
                SandboxType::Docker => SandboxKind::Docker {
                    image: config.sandbox.image.clone(),
                },
            },
        },
        coverage: config.success_criteria.coverage_threshold.is_some(),
        lint: config.success_criteria.linter_errors.is_some(),
        lint_command: config.linting.command.clone(),
        // Inside the project, so a container running the tests sees them too; one directory
        // per process, so concurrent runs never read each other's reports.
        report_dir: root
            .join(crate::session::RALPH_DIR)
            .join("reports")
            .join(uuid::Uuid::new_v4().to_string()),
    })
}

/// `librarian=gpt-mini,artisan=openai/gpt-4.1` or one model for every role.
pub fn parse_models_flag(flag: &str) -> Result<Vec<(Role, String)>> {
    let canonical = |name: &str| {
        ModelName::parse(name)
            .map(|m| m.to_string())
            .map_err(|e| Error::Usage(format!("--models: {e}")))
    };
    if !flag.contains('=') {
        let model = canonical(flag)?;
        return Ok(Role::MODEL_ROLES
            .iter()
            .map(|r| (*r, model.clone()))
            .collect());
    }
    flag.split(',')
        .filter(|p| !p.trim().is_empty())
        .map(|pair| {
            let (role, name) = pair
                .split_once('=')
                .ok_or_else(|| Error::Usage(format!("--models: `{pair}` is not role=model")))?;
            let role: Role = role
                .trim()
                .parse()
                .map_err(|e| Error::Usage(format!("--models: {e}")))?;
            Ok((role, canonical(name)?))
        })
        .collect()
}

/// Opens the MemoryVault for a run. A vault that cannot be opened (corrupt, unwritable, an
/// embedder without its key) is a warning: the run goes on without memory, and the report says
/// why.
async fn open_memory(
    root: &Path,
    config: Option<&Config>,
    events: &EventSink,
    state: &mut SessionState,
) -> (
    Option<ralph_actors::supervisor::MemoryDeps>,
    Option<Arc<vault::LanceStore>>,
) {
    let Some(config) = config else {
        state.memory.status = MemoryStatus::Off;
        return (None, None);
    };
    match vault::open(root, config).await {
        Ok((deps, store)) => (Some(deps), Some(store)),
        Err(e) => {
            let message = format!("{e}; the run goes on without memory");
            state.memory.status = MemoryStatus::Unavailable;
            state.memory.reason = Some(e.to_string());
            events.emit(Event::Warning {
                message: message.clone(),
            });
            state.warnings.push(message);
            (None, None)
        }
    }
}

fn execute(plan: Plan, session: SessionDir, state: SessionState) -> Result<i32> {
    // Built lazily: the ledger needs exact counts only near the end of the budget.
    let counter = providers::tokens::TiktokenCounter::new();
    let output = plan.output;
    let report_dir = plan.report_dir.clone();
    let settings = Arc::new(plan.settings);
    let system = actix::System::new();
    let report = system.block_on(async move {
        let (events, rx) = EventSink::channel();
        let printer = actix::spawn(printers::print(output, rx));
        let counter: Arc<dyn TokenCounter> = Arc::new(counter);
        let mut state = state;
        let (memory, vault_store) = open_memory(&plan.root, plan.memory.as_ref(), &events, &mut state).await;
        let supervisor = Supervisor::new(SupervisorDeps {
            settings,
            workspace: Arc::new(plan.workspace),
            store: Arc::new(session),
            runner: Arc::new(plan.runner),
            llm: plan.llm,
            counter,
            prices: plan.prices,
            events,
            state,
            memory,
        })
        .start();
        let on_signal = supervisor.clone();
        actix::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                eprintln!("interrupted: ending the current step and saving the session (Ctrl+C again to quit at once)");
                on_signal.do_send(Interrupt);
                if tokio::signal::ctrl_c().await.is_ok() {
                    crate::runner::kill_running();
                    std::process::exit(130);
                }
            }
        });
        let report = supervisor
            .send(StartRun)
            .await
            .map_err(|e| Error::Internal(format!("the supervisor stopped: {e}")))?;
        let _ = printer.await;
        if let (Some(store), Some(config)) = (vault_store, plan.memory.as_ref()) {
            // Best effort: a vault that cannot be pruned now is pruned after the next run.
            if let Err(e) = vault::housekeep(&store, config.memory.max_patterns).await {
                eprintln!("ralph-loop: memory vault housekeeping failed: {e}");
            }
        }
        Ok::<Report, Error>(report)
    });
    let _ = std::fs::remove_dir_all(&report_dir);
    Ok(report?.exit_code)
}
