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
use crate::config::{Config, ConfigError};
use crate::process::groups::ProcessGroups;

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

/// The run's [`Hook`]s for `declared`, running in `root` on `target` (relative to it).
pub fn into_hooks(
    declared: Vec<Declared>,
    root: &Path,
    target: String,
    groups: ProcessGroups,
    cancel: CancellationToken,
) -> Vec<Arc<dyn Hook>> {
    let shared = Arc::new(stages::Shared {
        root: root.to_path_buf(),
        target,
        groups,
        cancel,
        log: log::ErrorLog::new(root.join(crate::session::RALPH_DIR)),
    });
    declared
        .into_iter()
        .map(|d| Arc::new(stages::DeclaredHook::new(d, shared.clone())) as Arc<dyn Hook>)
        .collect()
}
