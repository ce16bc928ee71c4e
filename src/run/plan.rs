//! Planning a run: the flags over the config, the files found, the tests detected, the models
//! made callable. Everything that can be wrong with a run is found here, before a session
//! exists or a cent is spent.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use actix::Actor;
use ralph_actors::policy::budget::Prices;
use ralph_actors::policy::integrity;
use ralph_actors::ports::llm::LlmClient;
use ralph_actors::ports::runner::TestRunner;
use ralph_actors::role::Role;
use ralph_actors::roles::local_guard::LocalGuard;
use ralph_actors::settings::{ModelSpec, OnFailure, RunSettings};
use ralph_guard::Guard;
use serde::{Deserialize, Serialize};

use super::agent_artisan;
use crate::cli::{OnFailureArg, OutputFormat, RunArgs, TapeArgs};
use crate::config::{self, Config, SandboxType};
use crate::error::{Error, Result, UsageError};
use crate::process::groups::ProcessGroups;
use crate::providers::{self, ClientOptions, LlmSource, Tape};
use crate::runner::detect;
use crate::runner::language::Language;
use crate::runner::plan::{Limits, SandboxKind, TestingOptions};
use crate::runner::project::ProjectRunner;
use crate::runner::sandbox;
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
    /// What the front end could not honour (micro-agent's flags): notes on the run's event
    /// stream and in its report.
    #[serde(skip)]
    pub notes: Vec<String>,
    /// The recording a batch or an agent shares between its runs (`--record`, `--replay`),
    /// opened once; it takes the place of the run's own flags. Never saved.
    #[serde(skip)]
    pub tape: Option<Tape>,
    /// The run's name on that tape: the spec it belongs to.
    #[serde(skip)]
    pub run: Option<String>,
}

/// A run, resolved and checked, ready to execute.
pub(crate) struct Plan {
    pub(crate) root: PathBuf,
    pub(crate) workspace: FsWorkspace,
    pub(crate) test_command: String,
    pub(crate) runner: ProjectRunner,
    /// How the tests run: Chaos's files run the same way.
    pub(crate) testing: TestingOptions,
    /// Where the test tools write their reports; removed when the run ends (the results are
    /// saved in the session).
    pub(crate) report_dir: PathBuf,
    pub(crate) settings: RunSettings,
    pub(crate) prices: Prices,
    pub(crate) output: OutputFormat,
    /// `--ui` (the TUI or lines, when `output` is human) and where `--ui web`'s dashboard
    /// listens.
    pub(crate) view: crate::cli::ViewArgs,
    pub(crate) llm: Arc<dyn LlmClient>,
    /// Where the run's event bus goes for an agent Artisan's model gateway.
    pub(crate) gateway_bus: Option<agent_artisan::BusSlot>,
    /// The config the MemoryVault is opened with; `None` when `memory.enabled` is false.
    pub(crate) memory: Option<Config>,
    /// LocalGuard's engine, built from `local_guard` (its rules file read and checked now).
    pub(crate) guard: Arc<Guard>,
    /// Choices made for the user (a model skipped for a missing key) and flags not honoured:
    /// notes on the run's event stream.
    pub(crate) notes: Vec<String>,
    /// The user's hooks and enabled plugins, how they are isolated, and the target relative to
    /// the root they run in.
    pub(crate) hooks: Vec<crate::hooks::Declared>,
    pub(crate) hook_sandbox: Option<PathBuf>,
    pub(crate) target: String,
}

/// Resolves the flags, the config and the project into a run that can start: every file found,
/// the tests detected, the models callable. `groups` is where the tests' process groups are
/// registered while they run.
pub(crate) fn plan(
    args: &RunArgs,
    cwd: &Path,
    overrides: &Overrides,
    groups: &ProcessGroups,
) -> Result<Plan> {
    let file = args.file.as_ref().ok_or(UsageError::NoTarget)?;
    let (target, root) = locate(file, cwd)?;
    let shown_target = target
        .strip_prefix(&root)
        .unwrap_or(&target)
        .display()
        .to_string();
    let (mut config, config_path) = config::load_discovered(args.config.as_deref(), cwd)?;
    let hooks = crate::hooks::load(&config, config_path.as_deref(), &root)?;
    // A hook new or changed since the user trusted it stops the run before anything runs.
    crate::hooks::trust::enforce(&hooks, &root).map_err(crate::hooks::HooksError::from)?;
    let isolation = crate::hooks::isolation(config.sandbox.hooks, !hooks.is_empty())?;
    apply_flags(&mut config, args)?;
    let mut settings = config.run_settings()?;
    settings.validate()?;
    let guard = Arc::new(crate::guard::build(&config.local_guard)?);

    if !config.testing.allow_test_edits {
        let relative = target.strip_prefix(&root).unwrap_or(&target);
        if integrity::is_test_path(&relative.to_string_lossy()) {
            return Err(UsageError::TargetIsATest(file.clone()).into());
        }
    }
    let mut options = testing_options(&config, args, cwd, &root)?;
    if matches!(options.limits.sandbox, SandboxKind::Docker { .. }) {
        sandbox::check_docker()?;
    }
    let runner = super::gates::build_runner(&target, &root, &mut options, &config, &mut settings)?
        .with_groups(groups.clone());
    let test_command = runner.command();
    let report_dir = options.report_dir.clone();
    let workspace = workspace_of(args, cwd, &config, target, &root)?;

    let source = llm_source(args, cwd, &config, overrides)?;
    let models = models_of(
        &source,
        &config,
        overrides,
        groups,
        &workspace,
        &mut settings,
        (isolation.note, &guard),
    )?;
    let output = args.output.unwrap_or(config.output.into());
    Ok(Plan {
        root,
        workspace,
        test_command,
        runner,
        testing: options,
        report_dir,
        prices: models.prices,
        settings,
        output,
        view: args.view,
        llm: models.llm,
        gateway_bus: models.gateway_bus,
        memory: config.memory.enabled.then(|| config.clone()),
        guard,
        notes: models.notes,
        hooks,
        hook_sandbox: isolation.sandbox,
        target: shown_target,
    })
}

/// The target file named on the command line, found from `cwd`, and the project's root.
/// Sessions live at the target's git root; outside git, where the user ran the command (which
/// is where `status` and `resume` look).
fn locate(file: &Path, cwd: &Path) -> Result<(PathBuf, PathBuf)> {
    let target = cwd.join(file);
    if !target.is_file() {
        return Err(UsageError::TargetNotFound(file.to_path_buf()).into());
    }
    let target = target
        .canonicalize()
        .map_err(|e| Error::io(format!("cannot resolve {}", file.display()), e))?;
    let root = detect::project_root(target.parent().unwrap_or(cwd));
    let root = if root.join(".git").exists() {
        root
    } else {
        detect::project_root(cwd)
    };
    Ok((target, root))
}

/// The project's files the run reads: the target, its test file and its prompt file, each as
/// named by the flags, else the config, else found beside the target.
fn workspace_of(
    args: &RunArgs,
    cwd: &Path,
    config: &Config,
    target: PathBuf,
    root: &Path,
) -> Result<FsWorkspace> {
    let existing = |path: PathBuf, what: &'static str| -> Result<PathBuf> {
        if path.is_file() {
            Ok(path)
        } else {
            Err(UsageError::FileNotFound { what, path }.into())
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
    Ok(FsWorkspace {
        manifest: detect::find_manifest(&target),
        root: root.to_path_buf(),
        target,
        test_file,
        prompt_file,
        graph: Default::default(),
    })
}

/// What [`models_of`] makes.
struct Models {
    llm: Arc<dyn LlmClient>,
    prices: Prices,
    notes: Vec<String>,
    gateway_bus: Option<agent_artisan::BusSlot>,
}

/// The client every role's model is called through (a coding agent as the Artisan attached),
/// the prices it is billed at, and the notes on the choices made: each role runs on the first
/// of its models that can be called now (provider present, key set); a recording answers for
/// any.
fn models_of(
    source: &LlmSource,
    config: &Config,
    overrides: &Overrides,
    groups: &ProcessGroups,
    workspace: &FsWorkspace,
    settings: &mut RunSettings,
    (isolation, guard): (Option<String>, &Arc<Guard>),
) -> Result<Models> {
    let mut prices = providers::prices::with_overrides(config.prices.clone());
    let agent = agent_artisan::take(
        &mut settings.models,
        config,
        source,
        (&workspace.root, &workspace.target),
        groups,
        (&prices, guard, settings.max_cost_usd),
    )?;
    let (mut llm, mut notes) =
        providers::build(source, overrides.run.as_deref(), &mut settings.models)?;
    notes.splice(0..0, overrides.notes.iter().cloned());
    notes.extend(isolation);
    notes.extend(super::gates::notes(settings));
    let mut gateway_bus = None;
    if let Some(agent) = agent {
        let attached =
            agent_artisan::attach(agent, llm, &mut settings.models, &mut prices, &mut notes);
        (llm, gateway_bus) = attached;
    }
    // A replay bills nothing; a live run must be able to price every model it may call.
    if !matches!(source, LlmSource::Replay(_)) {
        notes.extend(check_priced(
            &settings.models,
            &prices,
            config.budgets.allow_unpriced,
        )?);
    }
    settings.context_windows = settings
        .models
        .iter()
        .filter_map(|(role, spec)| {
            Some((*role, providers::prices::info(&spec.model)?.context_window))
        })
        .collect();
    Ok(Models {
        llm,
        prices,
        notes,
        gateway_bus,
    })
}

/// A model to talk to before a run exists (micro-agent's interactive set-up): the Artisan's
/// model as the flags and config name it, metered by a ledger under the configured budget,
/// every call through LocalGuard as a run's are.
pub(crate) struct Assistant {
    pub caller: ralph_actors::roles::caller::Caller,
    pub spec: ModelSpec,
    pub events: ralph_actors::events::bus::EventBus,
    /// Puts the values back into a reply before it is shown or written.
    pub guard: Arc<Guard>,
}

/// The [`Assistant`] for `args` (their `--models` and config) in `cwd`: the Artisan's model.
/// Starts LocalGuard's actor: call inside an actix system.
pub(crate) fn assistant(args: &RunArgs, cwd: &Path, overrides: &Overrides) -> Result<Assistant> {
    assistant_for(Role::Artisan, args, cwd, overrides, None)
}

/// The [`Assistant`] on `role`'s model as `args` and the config name it; its ledger also draws
/// on `shared` when given (a batch's total, the agent's `--max-cost`).
pub(crate) fn assistant_for(
    role: Role,
    args: &RunArgs,
    cwd: &Path,
    overrides: &Overrides,
    shared: Option<Arc<ralph_actors::policy::budget::Budget>>,
) -> Result<Assistant> {
    let (mut config, _path) = config::load_discovered(args.config.as_deref(), cwd)?;
    apply_flags(&mut config, args)?;
    let spec = config
        .model(role)
        .ok_or_else(|| Error::Internal(format!("the config names no model for the {role}")))?;
    let mut models = BTreeMap::from([(role, spec)]);
    let source = llm_source(args, cwd, &config, overrides)?;
    let (llm, _notes) = providers::build(&source, overrides.run.as_deref(), &mut models)?;
    let prices = providers::prices::with_overrides(config.prices.clone());
    if !matches!(source, LlmSource::Replay(_)) {
        check_priced(&models, &prices, config.budgets.allow_unpriced)?;
    }
    let events = ralph_actors::events::bus::EventBus::new("micro-agent-setup");
    let mut ledger = ralph_actors::policy::budget::Ledger::new(
        config.budgets.max_cost_usd,
        prices,
        events.clone(),
    );
    if let Some(shared) = shared {
        ledger = ledger.within(shared);
    }
    let guard = Arc::new(crate::guard::build(&config.local_guard)?);
    let local_guard = LocalGuard::new(guard.clone(), events.clone()).start();
    let caller = ralph_actors::roles::caller::Caller::new(
        llm,
        local_guard,
        Arc::new(providers::tokens::TiktokenCounter::new()),
        Arc::new(ledger),
        events.clone(),
    );
    let spec = models.remove(&role).ok_or_else(|| {
        Error::Internal(format!("the {role}'s model was lost while resolving it"))
    })?;
    Ok(Assistant {
        caller,
        spec,
        events,
        guard,
    })
}

/// The overrides of a batch's or an agent's runs: the recording given by `--record` or
/// `--replay`, opened now, so a bad path fails before any work.
pub(crate) fn shared_tape(args: &TapeArgs) -> Result<Overrides> {
    let tape = match (&args.replay, &args.record) {
        (Some(file), _) => Some(Tape::replay(file)?),
        (None, Some(file)) => Some(Tape::record(file)?),
        (None, None) => None,
    };
    Ok(Overrides {
        tape,
        ..Overrides::default()
    })
}

/// What a run's model calls go to: the shared tape of a batch or an agent, else the run's own
/// `--replay` or `--record` file (opened now, so a bad path fails before any work), else the
/// live providers.
fn llm_source(
    args: &RunArgs,
    cwd: &Path,
    config: &Config,
    overrides: &Overrides,
) -> Result<LlmSource> {
    let tape = match (&overrides.tape, &args.tape.replay, &args.tape.record) {
        (Some(tape), _, _) => Some(tape.clone()),
        (None, Some(file), _) => Some(Tape::replay(&cwd.join(file))?),
        (None, None, Some(file)) => Some(Tape::record(&cwd.join(file))?),
        (None, None, None) => None,
    };
    Ok(LlmSource::with_tape(tape.as_ref(), || {
        provider_setups(config, overrides)
    }))
}

/// Every model the run may call (each role's, then its fallbacks) has a price, from config or
/// the bundled table; a provider's own cost report cannot be counted on before the call. With
/// `budgets.allow_unpriced` the unpriced ones are allowed, and a note says so.
fn check_priced(
    models: &BTreeMap<Role, ModelSpec>,
    prices: &Prices,
    allow_unpriced: bool,
) -> Result<Vec<String>> {
    let mut unpriced: Vec<&str> = Vec::new();
    for (role, spec) in models {
        for model in std::iter::once(&spec.model).chain(&spec.fallbacks) {
            if prices.get(model).is_some() || unpriced.contains(&model.as_str()) {
                continue;
            }
            if !allow_unpriced {
                return Err(UsageError::Unpriced {
                    model: model.clone(),
                    role: role.to_string(),
                }
                .into());
            }
            unpriced.push(model);
        }
    }
    Ok(unpriced
        .into_iter()
        .map(|m| {
            format!(
                "budgets.allow_unpriced: {m} has no known price; its calls count as $0 unless the provider reports their cost, so the budget does not bound them"
            )
        })
        .collect())
}

/// How to reach each provider: config, then micro-agent's overrides, then the environment.
pub(crate) fn provider_setups(config: &Config, overrides: &Overrides) -> providers::Providers {
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
    if let Some(m) = args.limits.max_iterations {
        if m == 0 {
            return Err(UsageError::flag(
                "--max-iterations",
                "--max-iterations must be at least 1",
            )
            .into());
        }
        config.budgets.max_iterations = m;
    }
    if let Some(b) = args.limits.budget {
        config.budgets.max_cost_usd = UsageError::positive("--budget", b, "dollars")?;
    }
    if let Some(d) = args.limits.max_duration {
        let minutes = UsageError::positive("--max-duration", d, "minutes")?;
        config.budgets.max_duration_minutes = Some(minutes);
    }
    if let Some(l) = &args.language {
        let language: Language = l
            .parse()
            .map_err(|e| UsageError::flag("--language", format!("--language: {e}")))?;
        config.testing.language = Some(language.as_str().to_string());
    }
    if let Some(policy) = args.on_failure {
        config.on_failure = match policy {
            OnFailureArg::Best => OnFailure::Best,
            OnFailureArg::Original => OnFailure::Original,
            OnFailureArg::Last => OnFailure::Last,
        };
    }
    if args.allow_test_edits {
        config.testing.allow_test_edits = true;
    }
    if args.adversarial {
        config.chaos.enabled = true;
    }
    if args.no_adversarial {
        config.chaos.enabled = false;
    }
    if let Some(profile) = args.profile {
        config.profile = profile;
    } else if args.quick {
        config.profile = ralph_actors::settings::Profile::Quick;
    }
    Ok(())
}

/// How the tests run, from the flags and the config's `testing`, `sandbox`, `success_criteria`
/// and `linting` sections.
pub(crate) fn testing_options(
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
        .map_err(|e| UsageError::flag("testing.language", e))?;
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
        coverage: config.changed_lines_coverage().is_some() || config.per_run_coverage().is_some(),
        lint: config.success_criteria.linter_errors.is_some(),
        lint_command: config.linting.command.clone(),
        // Inside the project, so a container running the tests sees them too; one directory
        // per process, so concurrent runs never read each other's reports.
        report_dir: root
            .join(crate::session::RALPH_DIR)
            .join("reports")
            .join(uuid::Uuid::new_v4().to_string()),
        coverage_of: None,
    })
}

/// `librarian=gpt-mini,artisan=openai/gpt-4.1` or one model for every role.
pub fn parse_models_flag(flag: &str) -> Result<Vec<(Role, String)>> {
    crate::models::parse_role_models(flag)
        .map_err(|e| UsageError::flag("--models", format!("--models: {e}")).into())
}

fn env(key: &str) -> Option<String> {
    std::env::var(key).ok().filter(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(flag: &str) -> String {
        parse_models_flag(flag).expect_err(flag).to_string()
    }

    #[test]
    fn models_flag_sets_every_role_or_the_named_ones() {
        let all = parse_models_flag("gpt-mini").expect("one model");
        assert_eq!(all.len(), Role::with_models().count());
        assert!(all.iter().all(|(_, m)| m == "openai/gpt-4.1-mini"));
        let some = parse_models_flag(" librarian = gemini ,artisan=claude,,").expect("pairs");
        assert_eq!(
            some,
            [
                (Role::Librarian, "gemini/gemini-2.5-pro".to_string()),
                (Role::Artisan, "anthropic/claude-sonnet-4-5".to_string()),
            ]
        );
        assert_eq!(
            parse_models_flag("critic=ollama/qwen2.5-coder:7b").expect("a tag's colon"),
            [(Role::Critic, "ollama/qwen2.5-coder:7b".to_string())]
        );
    }

    #[test]
    fn every_bad_models_flag_is_named() {
        let cases = [
            ("", "empty model name"),
            ("   ", "empty model name"),
            ("artisan=", "empty model name"),
            ("=gpt", "unknown role ``"),
            ("painter=gpt", "unknown role `painter`"),
            ("Artisan=gpt", "unknown role `Artisan`"),
            ("librarian=gemini,critic", "`critic` is not role=model"),
            (
                "artisan=gpt,artisan=claude",
                "the artisan is given a model twice",
            ),
            (
                "artisan=mistral",
                "`mistral` is neither `provider/model` nor an alias",
            ),
            ("artisan=acme/model", "unknown provider `acme`"),
            ("artisan=openai/", "names no model after the provider"),
            ("artisan=gpt=claude", "`gpt=claude` is neither"),
            ("artisan:gpt", "`artisan:gpt` is neither"),
        ];
        for (flag, expected) in cases {
            let message = err(flag);
            assert!(message.starts_with("--models: "), "{flag:?}: {message}");
            assert!(message.contains(expected), "{flag:?}: {message}");
        }
    }
}
