//! LocalGuard in the binary: the run's [`Guard`] built from the `local_guard` section, the
//! process's environment and the token table the counter already holds ([`build`]), and the scan
//! behind `ralph-loop guard scan` ([`scan`]).

pub mod scan;

use std::sync::Arc;

use ralph_guard::rules::RuleError;
use ralph_guard::scan::Detector;
use ralph_guard::tokens::O200k;
use ralph_guard::Guard;

use crate::config::LocalGuardConfig;

/// The guard a run (or a command that reaches a provider) uses. `Err`: the rules file named in
/// `local_guard.rules` cannot be read or holds a bad rule (file, line and key).
///
/// Each guard has its own table of values, but the compiled rules are kept for the process: the
/// next run with the same `local_guard` section (a batch's, the agent's), its rules file
/// unchanged, builds on them instead of compiling them again.
pub fn build(config: &LocalGuardConfig) -> Result<Guard, RuleError> {
    let mut settings = config.guard_config(environment());
    settings.lens = Some(Arc::new(O200k));
    let key = (config.clone(), rules_stamp(config));
    let mut compiled = COMPILED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, detector)) = compiled.as_ref().filter(|(k, _)| *k == key) {
        return Ok(Guard::sharing(detector.clone(), &settings));
    }
    let guard = Guard::new(&settings)?;
    *compiled = Some((key, guard.shared_detector()));
    Ok(guard)
}

/// The last compiled detector, and the config (with its rules file's stamp) it was built from.
type Compiled = Option<(
    (LocalGuardConfig, Option<(u64, std::time::SystemTime)>),
    Arc<Detector>,
)>;
static COMPILED: std::sync::Mutex<Compiled> = std::sync::Mutex::new(None);

/// The rules file's length and modification time: a file edited between two runs is read again.
fn rules_stamp(config: &LocalGuardConfig) -> Option<(u64, std::time::SystemTime)> {
    let meta = std::fs::metadata(config.rules.as_ref()?).ok()?;
    Some((meta.len(), meta.modified().ok()?))
}

/// The process's environment, as text (a variable that is not UTF-8 cannot appear in a prompt
/// as it is).
fn environment() -> Vec<(String, String)> {
    std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn guards_of_one_config_share_the_compiled_rules_and_nothing_else() {
        let config = LocalGuardConfig::default();
        let a = build(&config).unwrap();
        let b = build(&config).unwrap();
        assert!(Arc::ptr_eq(&a.shared_detector(), &b.shared_detector()));
        let key = "AKIAIOSFODNN7EXAMPLX";
        let masked = a.mask(&format!("key = {key}"), None);
        assert!(!masked.text.contains(key), "{}", masked.text);
        // `b` has a table of its own: `a`'s placeholder means nothing to it.
        let placeholder = masked.text.trim_start_matches("key = ").to_string();
        assert!(b.unmask(&placeholder).is_err(), "b never saw it");
        assert_eq!(a.unmask(&placeholder).unwrap(), key);

        let other = LocalGuardConfig {
            secrets: false,
            ..LocalGuardConfig::default()
        };
        let c = build(&other).unwrap();
        assert!(!Arc::ptr_eq(&a.shared_detector(), &c.shared_detector()));
        assert_eq!(
            c.mask(&format!("key = {key}"), None).text,
            format!("key = {key}")
        );
    }
}
