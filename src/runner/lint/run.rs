//! Running a linter ([`run_lint`]) under the tests' limits, and what its run counts as: the
//! findings its report holds, or, when it reported none, one error saying why (it failed, timed
//! out or could not start), so a broken linter never meets the criterion.

use ralph_actors::schema::test_run::{Lint, RunStatus, TestRun};
use tokio_util::sync::CancellationToken;

use super::findings::{clippy, detect, eslint, find_array, ruff, MAX_FINDINGS};
use super::plan::{LintFormat, LintPlan};
use crate::process::groups::ProcessGroups;
use crate::runner::plan::Limits;
use crate::runner::ProcessRunner;

/// The output cap for a linter: far above the tests' (`testing.max_output_bytes`), since the
/// counts are read from the whole JSON report, which a cut in the middle would spoil.
const LINT_OUTPUT_CAP: usize = 32 * 1024 * 1024;

/// Runs the linter under `limits` (timeout, memory, sandbox: where the tests run, so it sees the
/// same tools) and counts its findings. Never fails: a linter that could not run, or ran without
/// reporting, counts as one error whose finding says why, so the criterion is not met by default.
pub async fn run_lint(
    plan: &LintPlan,
    limits: &Limits,
    cancel: CancellationToken,
    groups: &ProcessGroups,
) -> Lint {
    let mut runner = ProcessRunner::new(
        plan.command.clone(),
        plan.cwd.clone(),
        limits.timeout,
        limits.max_output_bytes,
    )
    .with_limits(limits)
    .with_language(Some(plan.language))
    .with_groups(groups.clone());
    runner.max_output_bytes = runner.max_output_bytes.max(LINT_OUTPUT_CAP);
    for (name, value) in &plan.env {
        runner = runner.with_env(name.clone(), value.clone());
    }
    let run = runner.run_once(cancel).await;
    read_lint(plan, &run)
}

/// The counts read from a finished linter run.
fn read_lint(plan: &LintPlan, run: &TestRun) -> Lint {
    let lint = |tool: &str, errors, warnings, findings| Lint {
        tool: tool.to_string(),
        command: plan.command.clone(),
        errors,
        warnings,
        findings,
    };
    let finished = matches!(run.status, RunStatus::Passed | RunStatus::Failed);
    let read = if finished {
        match plan.format {
            LintFormat::Eslint => find_array(&run.output).and_then(|a| eslint(&a, &plan.cwd)),
            LintFormat::Ruff => find_array(&run.output).and_then(|a| ruff(&a, &plan.cwd)),
            LintFormat::Clippy => clippy(&run.output, &plan.cwd),
            LintFormat::Detect => detect(&run.output, &plan.cwd),
        }
    } else {
        None
    };
    let failed = run.exit_code != Some(0);
    match read {
        // A linter that reported nothing yet failed (a broken manifest, a crash) did not lint.
        Some(found) if !(failed && found.errors == 0 && found.warnings == 0) => lint(
            found.tool.unwrap_or(&plan.tool),
            found.errors,
            found.warnings,
            found.findings(),
        ),
        _ if plan.format == LintFormat::Detect && finished => {
            let findings = if failed {
                first_lines(&run.output)
            } else {
                Vec::new()
            };
            lint(&plan.tool, u32::from(failed), 0, findings)
        }
        _ => {
            let how = match run.status {
                RunStatus::Timeout => "ran past its timeout".to_string(),
                RunStatus::Error => "could not run or was interrupted".to_string(),
                _ => match run.exit_code {
                    Some(code) => format!("exited with status {code} without reporting findings"),
                    None => "was killed without reporting findings".to_string(),
                },
            };
            let mut findings = vec![format!("{} {how}", plan.tool)];
            findings.extend(failure_lines(&run.output));
            findings.truncate(MAX_FINDINGS);
            lint(&plan.tool, 1, 0, findings)
        }
    }
}

/// The first non-empty lines of the output: what a plain linter printed.
fn first_lines(output: &str) -> Vec<String> {
    output
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.trim().is_empty())
        .take(MAX_FINDINGS)
        .map(str::to_string)
        .collect()
}

/// The lines of a failed run that say why: from the first that mentions an error (its context
/// follows it), else the last lines.
fn failure_lines(output: &str) -> Vec<String> {
    let lines: Vec<&str> = output
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.trim().is_empty())
        .collect();
    let first_error = lines
        .iter()
        .position(|l| l.to_ascii_lowercase().contains("error"));
    let from = first_error.unwrap_or_else(|| lines.len().saturating_sub(MAX_FINDINGS - 1));
    lines[from..]
        .iter()
        .take(MAX_FINDINGS - 1)
        .map(|l| l.to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::time::Duration;

    use super::*;
    use crate::runner::language::Language;
    use crate::runner::lint::lint_plan;
    use crate::runner::lint::plan::check_lint_tool;
    use crate::runner::plan::SandboxKind;
    use crate::testkit::projects::{crate_project, ESLINT_CONFIG};
    use crate::testkit::projects::{node_project, project};

    fn limits(timeout: Duration) -> Limits {
        Limits {
            timeout,
            max_output_bytes: 64 * 1024,
            memory_limit_mb: None,
            sandbox: SandboxKind::Process,
        }
    }

    async fn lint(plan: &LintPlan) -> Lint {
        run_lint(
            plan,
            &limits(Duration::from_secs(300)),
            CancellationToken::new(),
            &ProcessGroups::new(),
        )
        .await
    }

    async fn lint_file(language: Language, dir: &Path, target: &str) -> Lint {
        let plan = lint_plan(language, Path::new(target), dir, None).expect("linter installed");
        lint(&plan).await
    }

    #[tokio::test]
    async fn eslint_counts_a_planted_error_and_a_warning() {
        let dir = node_project(&[
            ("package.json", r#"{"name":"l","private":true}"#),
            ("eslint.config.js", ESLINT_CONFIG),
            (
                "src/bad.js",
                "const unused = 1;\nif (1 == 2) {\n  void 0;\n}\n",
            ),
            (
                "src/good.js",
                "const used = 1;\nif (used === 2) {\n  void 0;\n}\n",
            ),
        ]);
        let bad = lint_file(Language::JavaScript, dir.path(), "src/bad.js").await;
        assert_counts(&bad, "eslint", 1, 1);
        assert_eq!(
            bad.findings,
            [
                "src/bad.js:1:7: 'unused' is assigned a value but never used. (no-unused-vars)",
                "src/bad.js:2:7: Expected '===' and instead saw '=='. (eqeqeq)",
            ]
        );
        assert_eq!(
            bad.command,
            "npx --no-install eslint --format json src/bad.js 2>&1"
        );
        let good = lint_file(Language::JavaScript, dir.path(), "src/good.js").await;
        assert_clean(&good);
    }

    #[tokio::test]
    async fn eslint_counts_a_syntax_error() {
        let dir = node_project(&[
            ("package.json", r#"{"name":"l","private":true}"#),
            ("eslint.config.js", ESLINT_CONFIG),
            ("broken.js", "const = ;\n"),
        ]);
        let l = lint_file(Language::JavaScript, dir.path(), "broken.js").await;
        assert_eq!(l.errors, 1, "{l:?}");
        assert!(
            l.findings[0].starts_with("broken.js:1:7: Parsing error"),
            "{l:?}"
        );
    }

    const RUFF_CONFIG: &str = "[lint]\nselect = [\"E\", \"F\", \"I\"]\n";
    /// Unsorted imports (I001, a warning), both unused (F401), an undefined name (F821).
    const BAD_PY: &str = "import sys\nimport os\n\n\ndef f():\n    return undefined_name\n";

    /// The plan for a Python project in `dir` whose configured lint command is `command`.
    fn python_plan(dir: &Path, target: &str, command: &str) -> LintPlan {
        lint_plan(Language::Python, Path::new(target), dir, Some(command)).expect("plan")
    }

    #[tokio::test]
    async fn ruff_counts_errors_and_style_warnings() {
        let dir = project(&[
            ("ruff.toml", RUFF_CONFIG),
            ("bad.py", BAD_PY),
            ("good.py", "import os\n\n\ndef f():\n    return os.sep\n"),
        ]);
        let bad = lint_file(Language::Python, dir.path(), "bad.py").await;
        assert_counts(&bad, "ruff", 3, 1);
        assert_eq!(
            bad.command,
            "python3 -m ruff check --no-cache --output-format json bad.py 2>&1"
        );
        assert!(bad
            .findings
            .contains(&"bad.py:6:12: Undefined name `undefined_name` (F821)".into()));
        // Errors first, warnings after.
        assert!(bad.findings[3].ends_with("(I001)"), "{bad:?}");
        let good = lint_file(Language::Python, dir.path(), "good.py").await;
        assert_clean(&good);
        assert!(!dir.path().join(".ruff_cache").exists());
    }

    #[tokio::test]
    async fn ruff_counts_a_syntax_error() {
        let dir = project(&[("broken.py", "def f(:\n    pass\n")]);
        let l = lint_file(Language::Python, dir.path(), "broken.py").await;
        assert!(l.errors >= 1 && l.warnings == 0, "{l:?}");
        assert!(l.findings[0].starts_with("broken.py:1:"), "{l:?}");
    }

    /// Asserts that `l` is `tool`'s and counts these errors and warnings.
    fn assert_counts(l: &Lint, tool: &str, errors: u32, warnings: u32) {
        assert_eq!(
            (l.tool.as_str(), l.errors, l.warnings),
            (tool, errors, warnings),
            "{l:?}"
        );
    }

    /// Asserts that `l` found nothing.
    fn assert_clean(l: &Lint) {
        assert_eq!((l.errors, l.warnings), (0, 0), "{l:?}");
        assert!(l.findings.is_empty(), "{l:?}");
    }

    /// One target directory for every crate these tests build, so clippy compiles little.
    fn cargo_target() -> String {
        std::env::temp_dir()
            .join("ralph-loop-lint-tests-target")
            .display()
            .to_string()
    }

    async fn clippy_on(lib: &str) -> Lint {
        let dir = crate_project(lib);
        let mut plan =
            lint_plan(Language::Rust, Path::new("src/lib.rs"), dir.path(), None).expect("clippy");
        plan.env.push(("CARGO_TARGET_DIR".into(), cargo_target()));
        lint(&plan).await
    }

    #[tokio::test]
    async fn clippy_counts_an_error_and_a_warning_once() {
        // `y == y` is denied by default (clippy::eq_op); `&Vec` is warned (clippy::ptr_arg).
        // --all-targets checks the library twice; each counts once.
        let bad = clippy_on(
            "pub fn f(x: i32) -> i32 {\n    let y = x;\n    if y == y {\n        return 1;\n    }\n    \
             0\n}\n\npub fn g(v: &Vec<i32>) -> usize {\n    v.len()\n}\n",
        )
        .await;
        assert_counts(&bad, "clippy", 1, 1);
        assert_eq!(
            bad.findings[0],
            "src/lib.rs:3:8: equal expressions as operands to `==` (clippy::eq_op)"
        );
        assert!(bad.findings[1].ends_with("(clippy::ptr_arg)"), "{bad:?}");

        let good = clippy_on("pub fn f(x: i32) -> i32 {\n    x + 1\n}\n").await;
        assert_clean(&good);
    }

    #[tokio::test]
    async fn clippy_counts_a_compile_error() {
        let l = clippy_on("pub fn f() -> i32 {\n    \"one\"\n}\n").await;
        assert_eq!(l.errors, 1, "{l:?}");
        assert!(
            l.findings[0].starts_with("src/lib.rs:2:5: mismatched types (E0308)"),
            "{l:?}"
        );
    }

    #[tokio::test]
    async fn a_broken_manifest_is_one_error_that_says_why() {
        let dir = crate_project("pub fn f() {}\n");
        std::fs::write(dir.path().join("Cargo.toml"), "[package\n").expect("write");
        let mut plan =
            lint_plan(Language::Rust, Path::new("src/lib.rs"), dir.path(), None).expect("clippy");
        plan.env.push(("CARGO_TARGET_DIR".into(), cargo_target()));
        let l = lint(&plan).await;
        assert_eq!((l.errors, l.warnings), (1, 0), "{l:?}");
        assert_eq!(
            l.findings[0],
            "clippy exited with status 101 without reporting findings"
        );
        assert!(l.findings.iter().any(|f| f.contains("Cargo.toml")), "{l:?}");
    }

    #[tokio::test]
    async fn a_configured_command_counts_by_exit_status() {
        let dir = project(&[]);
        let failing = python_plan(
            dir.path(),
            "a.py",
            "echo 'a.py:1: too many widgets'; echo; exit 3",
        );
        assert!(check_lint_tool(
            Language::Python,
            Path::new("a.py"),
            dir.path(),
            Some("true")
        )
        .is_ok());
        let l = lint(&failing).await;
        assert_eq!((l.errors, l.warnings), (1, 0));
        assert_eq!(l.findings, ["a.py:1: too many widgets"]);
        assert_eq!(l.tool, l.command);

        let passing = python_plan(dir.path(), "a.py", "true");
        let l = lint(&passing).await;
        assert_eq!((l.errors, l.warnings, l.findings.len()), (0, 0, 0));
    }

    #[tokio::test]
    async fn a_configured_command_with_json_output_is_read_as_such() {
        let dir = project(&[("ruff.toml", RUFF_CONFIG), ("bad.py", BAD_PY)]);
        let plan = python_plan(
            dir.path(),
            "bad.py",
            "echo starting; python3 -m ruff check --no-cache --output-format json bad.py",
        );
        let l = lint(&plan).await;
        assert_counts(&l, "ruff", 3, 1);
    }

    #[tokio::test]
    async fn a_linter_past_its_timeout_is_one_error() {
        let dir = project(&[]);
        let plan = python_plan(dir.path(), "a.py", "sleep 30");
        let l = run_lint(
            &plan,
            &limits(Duration::from_millis(300)),
            CancellationToken::new(),
            &ProcessGroups::new(),
        )
        .await;
        assert_eq!(l.errors, 1);
        assert_eq!(l.findings[0], "sleep 30 ran past its timeout");
    }
}
