//! Lifecycle hooks and plugins: commands the user adds to the fix loop's stages, in any
//! language.
//!
//! What is declared, and where, is the config's (`config::hooks`: the `hooks:` section of
//! `ralph.config.yaml` and `ralph-plugins.yaml`, checked). Here:
//! - [`prompt`]: an `agent` hook's prompt, its `${VAR}`s filled.
//! - [`protocol`]: the versioned JSON a plugin reads and answers, and its JSON Schema.
//! - [`exec`]: one run of one hook (process group, timeout, capped output, secrets removed) and
//!   the exit-code contract (0 passes, 2 blocks, anything else fails).
//! - [`stages`]: a declared hook as one of the run's `Hook`s: which transition is which stage,
//!   and what its answer or failure does.
//! - [`tasks`]: the hooks around a batch's tasks (`pre_task`, `post_task`).
//! - [`log`]: the error log, `.ralph/plugin-errors.log`.
//! - [`sdk`]: the plugin SDK of `sdk/`, compiled in and put on each hook's search paths.
//! - [`trust`]: trust by content hash: the store outside the project, each hook's hash (its
//!   declaration and the files its command names), and the refusal of new or changed hooks.
//! - [`import`]: Claude Code's and Codex's hooks, read and written as a `hooks:` section.

pub(crate) mod exec;
pub(crate) mod import;
pub mod log;
pub(crate) mod prompt;
pub mod protocol;
pub mod sdk;
pub mod stages;
pub(crate) mod tasks;
pub(crate) mod trust;

use std::path::Path;
use std::sync::Arc;

use ralph_actors::machine::hooks::Hook;
use tokio_util::sync::CancellationToken;

use crate::config::hooks as config;
use crate::config::hooks::HookIsolation;
use crate::config::{Config, ConfigError};
use crate::process::groups::ProcessGroups;
use crate::process::sandbox::Support;

pub use config::{Declared, HookEntry, HookType, OnFailure, PluginEntry, Stage};

/// The hooks of a project, read and checked: the config's `hooks:` and the enabled plugins of
/// the plugins file beside it (or at `root`).
pub fn load(
    config: &Config,
    config_file: Option<&Path>,
    root: &Path,
) -> Result<Vec<Declared>, ConfigError> {
    let plugins = config::load_plugins(&config::plugins_path(config_file, root))?;
    Ok(config::declared(&config.hooks, &plugins))
}

/// Why hooks cannot run as configured.
#[derive(Debug, thiserror::Error)]
pub enum HooksError {
    #[error(
        "sandbox.hooks is `required`, but this kernel has no Landlock (Linux 5.13 or later, \
         enabled at boot): the hooks cannot be isolated. Set sandbox.hooks to `landlock` to run \
         them without isolation where the kernel lacks it, or remove the hooks"
    )]
    NoLandlock,
    #[error("cannot make the hooks' temporary folder: {0}")]
    Tmp(std::io::Error),
    /// A hook is new or changed since the user trusted it, or the trust store is unusable.
    #[error(transparent)]
    Trust(#[from] trust::TrustError),
}

/// How the hooks of a run are isolated, decided before it starts: the sandbox's binary when
/// they run in it, and a note to say once when they cannot.
pub struct Isolation {
    pub sandbox: Option<std::path::PathBuf>,
    pub note: Option<String>,
}

/// Decides the hooks' isolation for `mode` on this kernel (`has_hooks`: there are any).
pub fn isolation(mode: HookIsolation, has_hooks: bool) -> Result<Isolation, HooksError> {
    let none = Isolation {
        sandbox: None,
        note: None,
    };
    if !has_hooks || mode == HookIsolation::Off {
        return Ok(none);
    }
    match (crate::process::sandbox::support(), mode) {
        (Support::None, HookIsolation::Required) => Err(HooksError::NoLandlock),
        (Support::None, _) => Ok(Isolation {
            note: Some(
                "this kernel has no Landlock: hooks and plugins run without isolation, with your rights (sandbox.hooks: required refuses instead)".into(),
            ),
            ..none
        }),
        (Support::Landlock(_), _) => {
            // `ralph-sandbox`, installed beside this binary, starts faster than this one.
            let exe = std::env::current_exe().ok();
            let small = exe
                .as_deref()
                .and_then(std::path::Path::parent)
                .map(|dir| dir.join("ralph-sandbox"))
                .filter(|p| p.is_file());
            Ok(Isolation {
                sandbox: small.or(exe),
                note: None,
            })
        }
    }
}

/// Where a run's hooks run, and with what.
pub struct Place {
    /// The project's root.
    pub root: std::path::PathBuf,
    pub groups: ProcessGroups,
    pub cancel: CancellationToken,
    /// The sandbox's binary, when hooks run in it ([`isolation`]).
    pub sandbox: Option<std::path::PathBuf>,
}

/// The run's [`Hook`]s for those of `declared` that serve the loop's stages, running in the
/// root on `target` (relative to it); the temporary folder they share lives as long as the
/// hooks.
pub fn into_hooks(
    declared: Vec<Declared>,
    place: Place,
    target: String,
) -> Result<Vec<Arc<dyn Hook>>, HooksError> {
    let declared: Vec<Declared> = declared
        .into_iter()
        .filter(|d| d.stages.iter().any(|s| !s.of_task()))
        .collect();
    if declared.is_empty() {
        return Ok(Vec::new());
    }
    let shared = shared(place, target)?;
    Ok(declared
        .into_iter()
        .map(|d| Arc::new(stages::DeclaredHook::new(d, shared.clone())) as Arc<dyn Hook>)
        .collect())
}

/// The `pre_task` and `post_task` hooks of `declared`, for the batch `batch_id`.
pub fn task_hooks(
    declared: Vec<Declared>,
    place: Place,
    batch_id: String,
) -> Result<tasks::TaskHooks, HooksError> {
    if !declared
        .iter()
        .any(|d| d.stages.iter().any(|s| s.of_task()))
    {
        return Ok(tasks::TaskHooks::new(Vec::new(), batch_id));
    }
    Ok(tasks::TaskHooks::build(
        declared,
        shared(place, String::new())?,
        batch_id,
    ))
}

/// What the hooks of one run share: a temporary folder with the SDK in it, removed with them.
fn shared(place: Place, target: String) -> Result<Arc<stages::Shared>, HooksError> {
    let tmp = tempfile::Builder::new()
        .prefix("ralph-hooks-")
        .tempdir()
        .map_err(HooksError::Tmp)?;
    let sdk = sdk::install(tmp.path()).map_err(HooksError::Tmp)?;
    Ok(Arc::new(stages::Shared {
        log: log::ErrorLog::new(place.root.join(crate::session::RALPH_DIR)),
        root: place.root,
        target,
        groups: place.groups,
        cancel: place.cancel,
        tmp: tmp.path().to_path_buf(),
        sdk,
        tools: match place.sandbox {
            Some(_) => stages::tools(),
            None => Vec::new(),
        },
        sandbox: place.sandbox,
        _tmp: tmp,
    }))
}
