//! Where hooks are declared: the `hooks:` section of `ralph.config.yaml` (stage → hooks) and
//! `ralph-plugins.yaml` (named plugins, each serving some stages), both checked like the config
//! (file, line and key in every error).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::ConfigError;

/// The plugins file, looked for beside the config file (or at the project's root).
pub const PLUGINS_FILE: &str = "ralph-plugins.yaml";

/// A point of the fix loop where hooks run.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// Before the Artisan writes a proposal.
    OnBeforeGen,
    /// The Artisan's proposal, before it is checked, reviewed and written: may change it.
    OnAfterGen,
    /// The tests failed.
    OnTestFail,
    /// The tests pass and every criterion is met: may veto the success.
    OnBeforeSuccess,
    /// The run ended with success.
    OnSuccess,
    /// Before a task of a batch starts: may skip it.
    PreTask,
    /// After a task of a batch ended, however it ended.
    PostTask,
}

impl Stage {
    pub const ALL: [Stage; 7] = [
        Stage::OnBeforeGen,
        Stage::OnAfterGen,
        Stage::OnTestFail,
        Stage::OnBeforeSuccess,
        Stage::OnSuccess,
        Stage::PreTask,
        Stage::PostTask,
    ];

    /// The stage named `name`.
    pub fn named(name: &str) -> Option<Stage> {
        Stage::ALL.into_iter().find(|s| s.as_str() == name)
    }

    /// A stage around a whole task (of a batch), not inside its loop.
    pub fn of_task(self) -> bool {
        matches!(self, Stage::PreTask | Stage::PostTask)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Stage::OnBeforeGen => "on_before_gen",
            Stage::OnAfterGen => "on_after_gen",
            Stage::OnTestFail => "on_test_fail",
            Stage::OnBeforeSuccess => "on_before_success",
            Stage::OnSuccess => "on_success",
            Stage::PreTask => "pre_task",
            Stage::PostTask => "post_task",
        }
    }
}

/// How a hook runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HookType {
    /// A command: the context in environment variables and as JSON on stdin; judged by its exit
    /// code alone.
    Shell,
    /// An executable speaking the plugin protocol: a JSON request on stdin, a JSON response on
    /// stdout (see `hooks::protocol`).
    Plugin,
    /// A prompt (with `${VAR}`s filled from the stage's context) sent to a model of the run;
    /// its reply goes to the Artisan as notes.
    Agent,
}

/// What a hook's failure (an exit code other than 0 and 2, a crash, a timeout, an answer that
/// is not the protocol's) does to the run. Required on every hook: no failure is let through by
/// default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnFailure {
    /// A warning; the run goes on as if the hook had passed.
    WarnContinue,
    /// The failure goes into the Artisan's next prompt, and a warning.
    AskAgent,
    /// The run stops (status `error`, exit 1); a guarded success does not go through. At
    /// `pre_task` and `post_task`, the batch stops: no other task starts.
    AbortLoop,
    /// At `pre_task`, the task is skipped and the batch goes on; in the loop's stages, the
    /// task's run stops as with `abort_loop`.
    SkipTask,
}

/// How hooks are isolated (`sandbox.hooks`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HookIsolation {
    /// Under Landlock where the kernel has it; where it does not, said once and run without.
    #[default]
    Landlock,
    /// Under Landlock, or not at all: a kernel without it stops the run before it starts.
    Required,
    /// Not isolated: hooks run with the user's rights (the secrets are still removed).
    Off,
}

/// Seconds a hook may run when its entry does not say.
pub const DEFAULT_TIMEOUT_SECONDS: f64 = 60.0;

fn default_timeout() -> f64 {
    DEFAULT_TIMEOUT_SECONDS
}

/// One hook of the `hooks:` section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookEntry {
    #[serde(rename = "type")]
    pub kind: HookType,
    /// Run with `sh -c` in the project's directory (`shell` and `plugin`).
    #[serde(default)]
    pub command: String,
    /// What an `agent` hook asks, with `${VAR}`s (see [`PROMPT_VARS`]).
    #[serde(default)]
    pub prompt: Option<String>,
    /// The model an `agent` hook asks (as `--models` names them); the Critic's when not given.
    #[serde(default)]
    pub model: Option<String>,
    pub on_failure: OnFailure,
    /// Shown in warnings and the error log; the command when not given.
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default = "default_timeout")]
    pub timeout_seconds: f64,
    /// Variables the hook may see although they look like secrets (`*_API_KEY`, `*_TOKEN`, …),
    /// which are otherwise removed from its environment.
    #[serde(default)]
    pub allow_env: Vec<String>,
    /// The network (any IPv4 or IPv6 socket), in the sandbox (denied by default).
    #[serde(default)]
    pub network: bool,
    /// More paths it may read in the sandbox, relative to the project or absolute.
    #[serde(default)]
    pub read_paths: Vec<PathBuf>,
    /// More paths it may write in the sandbox.
    #[serde(default)]
    pub write_paths: Vec<PathBuf>,
}

/// What a hook may reach beyond the project and its temporary folder, in the sandbox.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Reach {
    /// The network (any IPv4 or IPv6 socket).
    pub network: bool,
    /// More paths it may read, relative to the project or absolute.
    pub read_paths: Vec<PathBuf>,
    /// More paths it may write.
    pub write_paths: Vec<PathBuf>,
}

/// One plugin of `ralph-plugins.yaml`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PluginEntry {
    pub name: String,
    #[serde(default)]
    pub version: Option<String>,
    #[serde(default = "enabled")]
    pub enabled: bool,
    /// Run with `sh -c` in the project's directory; it speaks the plugin protocol.
    pub command: String,
    /// The stages it serves.
    pub hooks: BTreeSet<Stage>,
    pub on_failure: OnFailure,
    #[serde(default = "default_timeout")]
    pub timeout_seconds: f64,
    #[serde(default)]
    pub allow_env: Vec<String>,
    /// The network (any IPv4 or IPv6 socket), in the sandbox (denied by default).
    #[serde(default)]
    pub network: bool,
    /// More paths it may read in the sandbox, relative to the project or absolute.
    #[serde(default)]
    pub read_paths: Vec<PathBuf>,
    /// More paths it may write in the sandbox.
    #[serde(default)]
    pub write_paths: Vec<PathBuf>,
    /// Given to the plugin as is, in each request's `config`.
    #[serde(default)]
    pub config: serde_json::Value,
}

fn enabled() -> bool {
    true
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PluginsFile {
    #[serde(default)]
    plugins: Vec<PluginEntry>,
}

/// A hook ready to run: from either file. Serialized whole into its trust hash
/// (`hooks::trust`), so every field, present and future, is covered.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Declared {
    pub name: String,
    pub kind: HookType,
    pub command: String,
    /// An `agent` hook's prompt, and its model (`provider/model`).
    pub prompt: Option<String>,
    pub model: Option<String>,
    pub stages: BTreeSet<Stage>,
    pub on_failure: OnFailure,
    pub timeout_seconds: f64,
    pub allow_env: Vec<String>,
    pub reach: Reach,
    pub config: serde_json::Value,
}

/// Every hook of the config's `hooks:` section and of the enabled plugins, in order: the
/// section's by stage, then the plugins as listed.
pub fn declared(
    section: &BTreeMap<String, Vec<HookEntry>>,
    plugins: &[PluginEntry],
) -> Vec<Declared> {
    let mut by_stage: Vec<(Stage, &Vec<HookEntry>)> = section
        .iter()
        .filter_map(|(name, entries)| Some((Stage::named(name)?, entries)))
        .collect();
    by_stage.sort_by_key(|(stage, _)| *stage);
    let mut all: Vec<Declared> = by_stage
        .into_iter()
        .flat_map(|(stage, entries)| {
            entries.iter().map(move |e| Declared {
                name: e.name.clone().unwrap_or_else(|| match &e.prompt {
                    Some(prompt) => format!("agent: {}", cut_words(prompt, 6)),
                    None => e.command.clone(),
                }),
                kind: e.kind,
                command: e.command.clone(),
                prompt: e.prompt.clone(),
                model: e
                    .model
                    .as_deref()
                    .and_then(|m| crate::models::ModelName::parse(m).ok())
                    .map(|m| m.to_string()),
                stages: BTreeSet::from([stage]),
                on_failure: e.on_failure,
                timeout_seconds: e.timeout_seconds,
                allow_env: e.allow_env.clone(),
                reach: Reach {
                    network: e.network,
                    read_paths: e.read_paths.clone(),
                    write_paths: e.write_paths.clone(),
                },
                config: serde_json::Value::Null,
            })
        })
        .collect();
    all.extend(plugins.iter().filter(|p| p.enabled).map(|p| Declared {
        name: p.name.clone(),
        kind: HookType::Plugin,
        command: p.command.clone(),
        prompt: None,
        model: None,
        stages: p.hooks.clone(),
        on_failure: p.on_failure,
        timeout_seconds: p.timeout_seconds,
        allow_env: p.allow_env.clone(),
        reach: Reach {
            network: p.network,
            read_paths: p.read_paths.clone(),
            write_paths: p.write_paths.clone(),
        },
        config: p.config.clone(),
    }));
    all
}

/// Checks what serde cannot: each stage's name, and each timeout a positive number of seconds.
pub fn check_section(
    section: &BTreeMap<String, Vec<HookEntry>>,
    file: &Path,
    source: &str,
) -> Result<(), ConfigError> {
    for (stage, entries) in section {
        let key = format!("hooks.{stage}");
        if Stage::named(stage).is_none() {
            let known: Vec<&str> = Stage::ALL.iter().map(|s| s.as_str()).collect();
            return Err(ConfigError::at_key(
                file,
                source,
                &key,
                format!("unknown stage, expected one of {}", known.join(", ")),
            ));
        }
        for (i, e) in entries.iter().enumerate() {
            let at = |message: String| {
                ConfigError::at_key(file, source, &key, format!("entry {}: {message}", i + 1))
            };
            if e.kind != HookType::Agent {
                if e.prompt.is_some() || e.model.is_some() {
                    return Err(at("`prompt` and `model` are for `type: agent`".into()));
                }
                check_entry(&e.command, e.timeout_seconds, file, source, &key, i + 1)?;
                continue;
            }
            check_agent(e, Stage::named(stage)).map_err(at)?;
        }
    }
    Ok(())
}

/// The `${VAR}`s an `agent` hook's prompt may hold.
pub const PROMPT_VARS: &[&str] = &[
    "STAGE",
    "ITERATION",
    "TARGET",
    "LANGUAGE",
    "CODE",
    "TESTS_SUMMARY",
    "FAILURES",
    "PROJECT_DIR",
    "SESSION_ID",
    "SPENT_USD",
    "MAX_COST_USD",
];

/// The `${NAME}`s of `prompt`, in order.
pub fn prompt_vars(prompt: &str) -> Vec<&str> {
    prompt
        .split("${")
        .skip(1)
        .filter_map(|rest| rest.split_once('}').map(|(name, _)| name))
        .collect()
}

/// An `agent` entry: a prompt with known variables, no command, a model that parses, and a
/// stage inside the loop (where there is a model to ask and an Artisan to tell).
fn check_agent(e: &HookEntry, stage: Option<Stage>) -> Result<(), String> {
    if !e.command.trim().is_empty() {
        return Err("`command` is for `shell` and `plugin`; an `agent` hook has a `prompt`".into());
    }
    let prompt = e.prompt.as_deref().unwrap_or("");
    if prompt.trim().is_empty() {
        return Err("an `agent` hook needs a `prompt`".into());
    }
    if let Some(unknown) = prompt_vars(prompt)
        .into_iter()
        .find(|v| !PROMPT_VARS.contains(v))
    {
        return Err(format!(
            "unknown variable `${{{unknown}}}` in `prompt` (known: {})",
            PROMPT_VARS.join(", ")
        ));
    }
    if let Some(model) = &e.model {
        let name =
            crate::models::ModelName::parse(model).map_err(|why| format!("`model`: {why}"))?;
        if name.provider == crate::models::AGENT_PROVIDER {
            return Err(format!(
                "`model`: `{model}` is an agent CLI; an `agent` hook asks a model of a provider"
            ));
        }
    }
    if stage.is_some_and(Stage::of_task) {
        return Err("an `agent` hook serves the loop's stages, not pre_task or post_task".into());
    }
    if !(e.timeout_seconds.is_finite() && e.timeout_seconds > 0.0) {
        return Err(format!(
            "`timeout_seconds` must be a positive number, not {}",
            e.timeout_seconds
        ));
    }
    Ok(())
}

/// The first `n` words of `text`.
fn cut_words(text: &str, n: usize) -> String {
    let words: Vec<&str> = text.split_whitespace().collect();
    let mut cut = words[..words.len().min(n)].join(" ");
    if words.len() > n {
        cut.push('…');
    }
    cut
}

fn check_entry(
    command: &str,
    timeout: f64,
    file: &Path,
    source: &str,
    key: &str,
    n: usize,
) -> Result<(), ConfigError> {
    if command.trim().is_empty() {
        return Err(ConfigError::at_key(
            file,
            source,
            key,
            format!("entry {n}: `command` is empty"),
        ));
    }
    if !(timeout.is_finite() && timeout > 0.0) {
        return Err(ConfigError::at_key(
            file,
            source,
            key,
            format!("entry {n}: `timeout_seconds` must be a positive number, not {timeout}"),
        ));
    }
    Ok(())
}

/// The plugins file at `path`, if there is one: its plugins, checked.
pub fn load_plugins(path: &Path) -> Result<Vec<PluginEntry>, ConfigError> {
    let source = match std::fs::read_to_string(path) {
        Ok(s) => s,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(ConfigError::Read {
                path: path.to_path_buf(),
                source,
            })
        }
    };
    parse_plugins(&source, path)
}

/// Parses and checks the text of a plugins file; `file` names it in errors.
pub fn parse_plugins(source: &str, file: &Path) -> Result<Vec<PluginEntry>, ConfigError> {
    if source.trim().is_empty() {
        return Ok(Vec::new());
    }
    super::nesting::check(source, file)?;
    let de = serde_yaml::Deserializer::from_str(source);
    let parsed: PluginsFile =
        serde_path_to_error::deserialize(de).map_err(|e| ConfigError::from_yaml(file, e))?;
    let mut names = BTreeSet::new();
    for (i, p) in parsed.plugins.iter().enumerate() {
        check_entry(
            &p.command,
            p.timeout_seconds,
            file,
            source,
            "plugins",
            i + 1,
        )?;
        if !names.insert(p.name.as_str()) {
            return Err(ConfigError::at_key(
                file,
                source,
                "plugins",
                format!("entry {}: a second plugin named `{}`", i + 1, p.name),
            ));
        }
        if p.hooks.is_empty() {
            return Err(ConfigError::at_key(
                file,
                source,
                "plugins",
                format!("entry {} (`{}`): `hooks` names no stage", i + 1, p.name),
            ));
        }
    }
    Ok(parsed.plugins)
}

/// Where the plugins file of a project is: beside its config file, else at `root`.
pub fn plugins_path(config_file: Option<&Path>, root: &Path) -> PathBuf {
    config_file
        .and_then(Path::parent)
        .unwrap_or(root)
        .join(PLUGINS_FILE)
}
