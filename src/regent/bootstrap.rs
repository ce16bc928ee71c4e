//! Bootstrap detection (`build.bootstrap_detection`): a project too new to be tested (no test
//! command can be found, or no test file exists yet) runs its iterations without the test gate,
//! and says so; the first iteration that creates tests turns the gate on ("Bootstrap complete,
//! verification gates now active") and, in `tdd` mode, captures the baseline.
//!
//! - `auto`: bootstrapping while no test command is found (no manifest with tests and no
//!   `testing.command`), or while tests detected from a manifest have no test file to run
//!   (`*.test.js`, `*.spec.ts`, `test_*.py`, `*_test.py`, `*_test.go`, files under `tests/`,
//!   `test/`, `__tests__/` or `spec/`, Rust files with `#[test]`). A configured command is
//!   trusted: it is run.
//! - `manual`: bootstrapping while `build.bootstrap_check` exits 0.
//! - `disabled`: never; tests that cannot be found fail the gate.

use std::path::Path;
use std::time::Duration;

use crate::process::groups::ProcessGroups;
use crate::process::supervise::{self, Ending, Spec};

/// The most entries the walk for test files looks at.
const WALK_LIMIT: usize = 20_000;
/// `build.bootstrap_check` at most.
const CHECK_TIMEOUT: Duration = Duration::from_secs(120);

/// What the tests found and configured say of the project's phase.
pub enum Phase {
    /// Too new to be tested: why.
    Bootstrapping(String),
    Ready,
}

/// `auto`: the phase from whether a test command was found (`found`: `Err` says why not) and,
/// for tests detected from a manifest (`detected`), whether a test file exists under `root`.
pub fn auto(root: &Path, found: Result<(), String>, detected: bool) -> Phase {
    match found {
        Err(why) => Phase::Bootstrapping(format!("no tests yet ({why})")),
        Ok(()) if detected && !has_test_file(root) => {
            Phase::Bootstrapping("the project has a test command but no test file yet".into())
        }
        Ok(()) => Phase::Ready,
    }
}

/// `manual`: `check` run by the shell in `root`; exit 0 means still bootstrapping. A check
/// that cannot run or times out counts as ready (the gate stays on) and says why.
pub async fn manual(
    root: &Path,
    check: &str,
    env: Vec<(std::ffi::OsString, std::ffi::OsString)>,
    groups: &ProcessGroups,
) -> (Phase, Option<String>) {
    let spec = Spec::new("sh", ["-c", check], root, env, CHECK_TIMEOUT, 64 * 1024);
    match supervise::run(spec, Default::default(), groups).await {
        Ok(outcome) => match outcome.ending {
            Ending::Exited(Some(status)) if status.success() => (
                Phase::Bootstrapping(format!("`{check}` (build.bootstrap_check) exited 0")),
                None,
            ),
            Ending::Exited(_) => (Phase::Ready, None),
            other => (
                Phase::Ready,
                Some(format!(
                    "build.bootstrap_check `{check}` did not finish ({other:?}): the gates stay on"
                )),
            ),
        },
        Err(e) => (
            Phase::Ready,
            Some(format!(
                "build.bootstrap_check `{check}` could not run ({e}): the gates stay on"
            )),
        ),
    }
}

/// Whether any file under `root` (as git sees it: ignored files left out) is a test file.
pub fn has_test_file(root: &Path) -> bool {
    let walk = ignore::WalkBuilder::new(root)
        .hidden(true)
        .git_ignore(true)
        .require_git(false)
        .build();
    walk.filter_map(Result::ok)
        .take(WALK_LIMIT)
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
        .any(|e| is_test_file(e.path()))
}

fn is_test_file(path: &Path) -> bool {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return false;
    };
    let (stem, ext) = name.rsplit_once('.').unwrap_or((name, ""));
    const SOURCE: [&str; 9] = ["js", "jsx", "ts", "tsx", "mjs", "cjs", "py", "go", "rs"];
    if !SOURCE.contains(&ext) {
        return false;
    }
    let js = matches!(ext, "js" | "jsx" | "ts" | "tsx" | "mjs" | "cjs");
    if js && (stem.ends_with(".test") || stem.ends_with(".spec")) {
        return true;
    }
    if ext == "py" && (stem.starts_with("test_") || stem.ends_with("_test")) {
        return true;
    }
    if ext == "go" && stem.ends_with("_test") {
        return true;
    }
    let in_test_dir = path.components().any(|c| {
        matches!(
            c.as_os_str().to_str(),
            Some("tests" | "test" | "__tests__" | "spec")
        )
    });
    if in_test_dir {
        return true;
    }
    ext == "rs" && std::fs::read_to_string(path).is_ok_and(|text| text.contains("#[test]"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_files_are_found_by_the_seeds_patterns() {
        for name in [
            "src/median.test.js",
            "src/median.spec.ts",
            "tests/test_median.py",
            "median_test.py",
            "pkg/median_test.go",
            "__tests__/median.js",
            "tests/median.rs",
        ] {
            assert!(is_test_file(Path::new(name)), "{name}");
        }
        for name in ["src/median.js", "median.py", "README.md", "tests/notes.txt"] {
            assert!(!is_test_file(Path::new(name)), "{name}");
        }
    }

    #[test]
    fn a_project_without_tests_bootstraps_until_one_appears() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("package.json"), "{}").unwrap();
        std::fs::write(dir.path().join("median.js"), "module.exports = 1;\n").unwrap();
        assert!(matches!(
            auto(dir.path(), Ok(()), true),
            Phase::Bootstrapping(_)
        ));
        // A configured command is trusted.
        assert!(matches!(auto(dir.path(), Ok(()), false), Phase::Ready));
        assert!(matches!(
            auto(dir.path(), Err("no manifest".into()), false),
            Phase::Bootstrapping(_)
        ));
        std::fs::write(dir.path().join("median.test.js"), "test('x', () => {});\n").unwrap();
        assert!(matches!(auto(dir.path(), Ok(()), true), Phase::Ready));
        // A Rust file with a test.
        let rust = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(rust.path().join("src")).unwrap();
        std::fs::write(rust.path().join("src/lib.rs"), "pub fn f() {}\n").unwrap();
        assert!(!has_test_file(rust.path()));
        std::fs::write(
            rust.path().join("src/lib.rs"),
            "pub fn f() {}\n#[cfg(test)]\nmod t { #[test] fn x() {} }\n",
        )
        .unwrap();
        assert!(has_test_file(rust.path()));
    }
}
