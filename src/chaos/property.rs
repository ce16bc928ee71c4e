//! The property-based testing library of each language (Hypothesis, fast-check, proptest), and
//! making it importable for Chaos's files without touching the project: when the project lacks
//! it, it is installed once into ralph-loop's cache (`~/.cache/ralph-loop/chaos/`) and put on the
//! run's path, never into the project's manifest or environment. proptest needs no install: the
//! harness crate Chaos's Rust files build in names it, and cargo fetches it as for any build.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::process::groups::ProcessGroups;
use crate::process::supervise::{self, Ending, Spec};
use crate::runner::language::Language;

/// How long installing a library may take.
const INSTALL_TIMEOUT: Duration = Duration::from_secs(300);

/// The library of `language` as Chaos's prompt names it: what it is and how to import it, and
/// how each property is sized and seeded.
pub fn library(language: Language) -> Option<(&'static str, &'static str)> {
    match language {
        Language::Python => Some((
            "Hypothesis (`from hypothesis import given, settings, strategies as st`)",
            "decorate each property with `@settings(max_examples=100, derandomize=True)`",
        )),
        Language::JavaScript | Language::TypeScript => Some((
            "fast-check (`const fc = require('fast-check')`, or `import fc from 'fast-check'`)",
            "run each property with `fc.assert(fc.property(...), { numRuns: 100, seed: 42 })`",
        )),
        Language::Rust => Some((
            "proptest (`use proptest::prelude::*;`)",
            "write the properties inside `proptest! { #![proptest_config(ProptestConfig::with_cases(100))] ... }`; \
             ralph-loop fixes the seed",
        )),
    }
}

/// The variables that make a proptest run repeatable and leave no file behind: a fixed seed,
/// and no `proptest-regressions/` written beside Chaos's files.
pub const PROPTEST_ENV: [(&str, &str); 2] = [
    ("PROPTEST_RNG_SEED", "42"),
    ("PROPTEST_DISABLE_FAILURE_PERSISTENCE", "true"),
];

/// Whether `suite` uses the language's library.
pub fn uses_library(language: Language, suite: &str) -> bool {
    match language {
        Language::Python => suite.contains("hypothesis"),
        Language::JavaScript | Language::TypeScript => suite.contains("fast-check"),
        Language::Rust => suite.contains("proptest"),
    }
}

/// Where ralph-loop keeps the libraries it installed for Chaos.
fn cache_dir() -> PathBuf {
    crate::fsutil::cache_home().join("chaos")
}

/// Makes `language`'s library importable from files in `chaos_dir` run in `cwd`: the variables
/// the run needs (a `PYTHONPATH` entry), or a `node_modules` link in `chaos_dir`. `Err` says why
/// it could not be installed; the run then goes on, and a file that imports it fails to load.
pub async fn ensure(
    language: Language,
    cwd: &Path,
    chaos_dir: &Path,
    groups: &ProcessGroups,
    cancel: &CancellationToken,
) -> Result<Vec<(String, String)>, String> {
    if project_has(language, cwd).await {
        return Ok(Vec::new());
    }
    match language {
        Language::Python => {
            let target = cache_dir().join("python");
            if !target.join("hypothesis").is_dir() {
                let dir = target.to_string_lossy().into_owned();
                install(
                    "python3",
                    &[
                        "-m",
                        "pip",
                        "install",
                        "--quiet",
                        "--disable-pip-version-check",
                        "--target",
                        &dir,
                        "hypothesis",
                    ],
                    cwd,
                    groups,
                    cancel,
                )
                .await?;
            }
            Ok(vec![(
                "PYTHONPATH".into(),
                target.to_string_lossy().into_owned(),
            )])
        }
        Language::JavaScript | Language::TypeScript => {
            let prefix = cache_dir().join("node");
            let modules = prefix.join("node_modules");
            if !modules.join("fast-check").is_dir() {
                let dir = prefix.to_string_lossy().into_owned();
                install(
                    "npm",
                    &[
                        "install",
                        "--prefix",
                        &dir,
                        "--no-audit",
                        "--no-fund",
                        "--loglevel=error",
                        "fast-check@3",
                    ],
                    cwd,
                    groups,
                    cancel,
                )
                .await?;
            }
            // Node, jest and vite resolve a bare import by walking up from the importing file:
            // a `node_modules` beside Chaos's files is found first.
            let link = chaos_dir.join("node_modules");
            if std::fs::symlink_metadata(&link).is_err() {
                std::os::unix::fs::symlink(&modules, &link)
                    .map_err(|e| format!("cannot link {}: {e}", link.display()))?;
            }
            Ok(Vec::new())
        }
        Language::Rust => Ok(Vec::new()),
    }
}

/// Whether the project itself has `language`'s library (Hypothesis importable by `python3`
/// from `cwd`, fast-check in a `node_modules` above it, proptest in the `Cargo.toml` of `cwd`).
pub async fn project_has(language: Language, cwd: &Path) -> bool {
    match language {
        Language::Python => succeeds("python3", &["-c", "import hypothesis"], cwd).await,
        Language::JavaScript | Language::TypeScript => cwd
            .ancestors()
            .any(|d| d.join("node_modules").join("fast-check").is_dir()),
        Language::Rust => std::fs::read_to_string(cwd.join("Cargo.toml")).is_ok_and(|t| {
            t.lines()
                .any(|l| l.trim_start().starts_with("proptest") || l.contains("\"proptest\""))
        }),
    }
}

async fn succeeds(program: &str, args: &[&str], cwd: &Path) -> bool {
    tokio::process::Command::new(program)
        .args(args)
        .current_dir(cwd)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .status()
        .await
        .is_ok_and(|s| s.success())
}

/// Runs an installer as a supervised process group with the user's own environment (their
/// package index and proxy settings apply).
async fn install(
    program: &str,
    args: &[&str],
    cwd: &Path,
    groups: &ProcessGroups,
    cancel: &CancellationToken,
) -> Result<(), String> {
    let env: Vec<(OsString, OsString)> = std::env::vars_os().collect();
    let spec = Spec::new(
        program,
        args.iter().copied(),
        cwd,
        env,
        INSTALL_TIMEOUT,
        64 * 1024,
    );
    let command = format!("{program} {}", args.join(" "));
    let outcome = supervise::run(spec, cancel.clone(), groups)
        .await
        .map_err(|e| format!("`{command}` did not start: {e}"))?;
    match outcome.ending {
        Ending::Exited(Some(status)) if status.success() => Ok(()),
        _ => Err(format!(
            "`{command}` failed: {}",
            outcome.output.lines().last().unwrap_or("no output")
        )),
    }
}
