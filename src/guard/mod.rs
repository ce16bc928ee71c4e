//! LocalGuard in the binary: the run's [`Guard`] built from the `local_guard` section, the
//! process's environment and the token table the counter already holds ([`build`]), and the scan
//! behind `ralph-loop guard scan` ([`scan`]).

pub mod scan;

use std::sync::Arc;

use ralph_guard::rules::RuleError;
use ralph_guard::tokens::O200k;
use ralph_guard::Guard;

use crate::config::LocalGuardConfig;

/// The guard a run (or a command that reaches a provider) uses. `Err`: the rules file named in
/// `local_guard.rules` cannot be read or holds a bad rule (file, line and key).
pub fn build(config: &LocalGuardConfig) -> Result<Guard, RuleError> {
    let mut settings = config.guard_config(environment());
    settings.lens = Some(Arc::new(O200k));
    Guard::new(&settings)
}

/// The process's environment, as text (a variable that is not UTF-8 cannot appear in a prompt
/// as it is).
fn environment() -> Vec<(String, String)> {
    std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect()
}
