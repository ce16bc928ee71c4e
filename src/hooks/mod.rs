//! Lifecycle hooks and plugins: commands the user adds to the fix loop's stages, in any
//! language.
//!
//! What is declared, and where, is the config's (`config::hooks`: the `hooks:` section of
//! `ralph.config.yaml` and `ralph-plugins.yaml`, checked). Here:
//! - [`protocol`]: the versioned JSON a plugin reads and answers, and its JSON Schema.
//! - [`exec`]: one run of one hook (process group, timeout, capped output, secrets removed) and
//!   the exit-code contract (0 passes, 2 blocks, anything else fails).
//! - [`stages`]: a declared hook as one of the run's `Hook`s: which transition is which stage,
//!   and what its answer or failure does.
//! - [`log`]: the error log, `.ralph/plugin-errors.log`.

pub mod exec;
pub mod log;
pub mod protocol;
pub mod stages;

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

/// The run's [`Hook`]s for `declared`, running in `root` on `target` (relative to it); the
/// temporary folder they share lives as long as the hooks.
pub fn into_hooks(
    declared: Vec<Declared>,
    root: &Path,
    target: String,
    groups: ProcessGroups,
    cancel: CancellationToken,
    sandbox: Option<std::path::PathBuf>,
) -> Result<Vec<Arc<dyn Hook>>, HooksError> {
    if declared.is_empty() {
        return Ok(Vec::new());
    }
    let tmp = tempfile::Builder::new()
        .prefix("ralph-hooks-")
        .tempdir()
        .map_err(HooksError::Tmp)?;
    let shared = Arc::new(stages::Shared {
        root: root.to_path_buf(),
        target,
        groups,
        cancel,
        log: log::ErrorLog::new(root.join(crate::session::RALPH_DIR)),
        tmp: tmp.path().to_path_buf(),
        sandbox,
        _tmp: tmp,
    });
    Ok(declared
        .into_iter()
        .map(|d| Arc::new(stages::DeclaredHook::new(d, shared.clone())) as Arc<dyn Hook>)
        .collect())
}
