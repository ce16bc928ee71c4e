//! The linter run after the tests (`success_criteria.linter_errors`): eslint, ruff or clippy by
//! language, or the configured `linting.command`, its findings counted into
//! [`ralph_actors::schema::test_run::Lint`] (`docs/coverage-and-linting.md`).
//!
//! Each linter is asked for JSON: eslint's `--format json` (`errorCount`, `warningCount`), ruff's
//! `--output-format json` (one entry per finding), cargo's `--message-format json` (one
//! `compiler-message` per diagnostic). A configured command is read the same way when its output
//! is one of these, and by its exit status otherwise.

use std::path::{Path, PathBuf};

use ralph_actors::schema::test_run::{Lint, RunStatus, TestRun};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::coverage::{capture, find_upward, node_bin, python_imports, sh_quote, ToolEnv};
use super::language::Language;
use super::plan::Limits;
use super::ProcessRunner;
use crate::process::groups::ProcessGroups;

/// How many findings a [`Lint`] keeps.
pub const MAX_FINDINGS: usize = 20;

/// The output cap for a linter: far above the tests' (`testing.max_output_bytes`), since the
/// counts are read from the whole JSON report, which a cut in the middle would spoil.
const LINT_OUTPUT_CAP: usize = 32 * 1024 * 1024;

/// The names eslint 9 and later read their flat config from.
const ESLINT_CONFIGS: &[&str] = &[
    "eslint.config.js",
    "eslint.config.mjs",
    "eslint.config.cjs",
    "eslint.config.ts",
    "eslint.config.mts",
    "eslint.config.cts",
];

/// ruff rules counted as warnings, not errors: the style-only families (import order `I`,
/// pycodestyle's warnings `W`, docstrings `D`, quotes `Q`, trailing commas `COM`) and long lines
/// (`E501`). Every other finding, syntax errors included, is an error, as ruff itself reports
/// them (`severity: error`). A family matches its letters followed by a digit, so `I001` is a
/// warning but `INP001` is not.
const RUFF_WARNING_FAMILIES: &[&str] = &["I", "W", "D", "Q", "COM"];
const RUFF_WARNING_CODES: &[&str] = &["E501"];

/// How a linter's output is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LintFormat {
    /// eslint's `--format json` array.
    Eslint,
    /// ruff's `--output-format json` array.
    Ruff,
    /// cargo's `--message-format json` lines.
    Clippy,
    /// A configured command: any of the above if its output is one, else its exit status.
    Detect,
}

/// One linter command to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LintPlan {
    /// `eslint`, `ruff`, `clippy`, or the configured command.
    pub tool: String,
    pub language: Language,
    /// The shell command (`sh -c`).
    pub command: String,
    /// Where to run it: the project's directory.
    pub cwd: PathBuf,
    /// Variables added to the command's environment.
    pub env: Vec<(String, String)>,
    pub format: LintFormat,
}

/// Why the linter cannot run; found before the run, so ralph-loop can stop (exit 2) before any
/// model is called.
#[derive(Debug, thiserror::Error)]
pub enum LintError {
    #[error("linter_errors is set but {tool} is not installed for {language}: {install_hint}")]
    ToolMissing {
        language: &'static str,
        tool: &'static str,
        install_hint: String,
    },
    #[error(
        "linter_errors is set but eslint finds no configuration for {}: eslint 9 and later need \
         an eslint.config.js (or .mjs, .cjs, .ts) in the project; add one, or set \
         linting.command",
        target.display()
    )]
    NoEslintConfig { target: PathBuf },
}

/// The linter for `target` (the file being fixed) in the project at `cwd`: the configured
/// `command` as is, else eslint (TypeScript, JavaScript), ruff (Python) or clippy (Rust), checked
/// to be installed. Runs the tools briefly to check them.
pub fn lint_plan(
    language: Language,
    target: &Path,
    cwd: &Path,
    command: Option<&str>,
) -> Result<LintPlan, LintError> {
    plan_with(language, target, cwd, command, &Tools::current())
}

/// Fails when the linter [`lint_plan`] would pick is not there, so startup can stop before any
/// model is called.
pub fn check_lint_tool(
    language: Language,
    target: &Path,
    cwd: &Path,
    command: Option<&str>,
) -> Result<(), LintError> {
    lint_plan(language, target, cwd, command).map(|_| ())
}

/// Where the linters are looked for; tests point these at empty places.
struct Tools {
    env: ToolEnv,
    python: String,
    cargo: String,
}

impl Tools {
    fn current() -> Self {
        Self {
            env: ToolEnv::current(),
            python: "python3".into(),
            cargo: "cargo".into(),
        }
    }
}

fn plan_with(
    language: Language,
    target: &Path,
    cwd: &Path,
    command: Option<&str>,
    tools: &Tools,
) -> Result<LintPlan, LintError> {
    let plan = |tool: &str, command: String, format| LintPlan {
        tool: tool.to_string(),
        language,
        command,
        cwd: cwd.to_path_buf(),
        env: Vec::new(),
        format,
    };
    if let Some(command) = command {
        return Ok(plan(
            &tool_named_in(command),
            command.to_string(),
            LintFormat::Detect,
        ));
    }
    let missing = |tool: &'static str, install_hint: String| LintError::ToolMissing {
        language: language.as_str(),
        tool,
        install_hint,
    };
    // `2>&1` joins the streams in one pipe, in order: read from two, a long JSON line could be
    // split by the other stream's text.
    match language {
        Language::TypeScript | Language::JavaScript => {
            if !node_bin(cwd, "eslint", &tools.env) {
                return Err(missing(
                    "eslint",
                    "run `npm install --save-dev eslint`".into(),
                ));
            }
            let file = cwd.join(target);
            let start = file.parent().unwrap_or(cwd);
            let configured = ESLINT_CONFIGS
                .iter()
                .any(|name| find_upward(start, name).is_some() || find_upward(cwd, name).is_some());
            if !configured {
                return Err(LintError::NoEslintConfig {
                    target: target.to_path_buf(),
                });
            }
            Ok(plan(
                "eslint",
                format!(
                    "npx --no-install eslint --format json {} 2>&1",
                    sh_quote(target)
                ),
                LintFormat::Eslint,
            ))
        }
        Language::Python => {
            let ruff = if python_imports(&tools.python, "ruff", cwd, &[]) {
                format!("{} -m ruff", tools.python)
            } else if tools.env.which("ruff").is_some() {
                "ruff".to_string()
            } else {
                return Err(missing(
                    "ruff",
                    format!("run `{} -m pip install ruff`", tools.python),
                ));
            };
            // --no-cache: no `.ruff_cache` left in the user's project.
            Ok(plan(
                "ruff",
                format!(
                    "{ruff} check --no-cache --output-format json {} 2>&1",
                    sh_quote(target)
                ),
                LintFormat::Ruff,
            ))
        }
        Language::Rust => {
            if capture(&format!("{} clippy --version", tools.cargo), cwd, &[]).is_none() {
                return Err(missing(
                    "clippy",
                    "run `rustup component add clippy`".into(),
                ));
            }
            Ok(plan(
                "clippy",
                format!(
                    "{} clippy --message-format json --all-targets 2>&1",
                    tools.cargo
                ),
                LintFormat::Clippy,
            ))
        }
    }
}

/// The linter a configured command names (a word `eslint`, `ruff`, `clippy`, or a path ending in
/// one), for `Lint::tool`; the command itself otherwise.
fn tool_named_in(command: &str) -> String {
    command
        .split_whitespace()
        .filter_map(|word| word.rsplit('/').next())
        .find_map(|name| {
            ["eslint", "ruff", "clippy"]
                .into_iter()
                .find(|t| *t == name)
        })
        .map_or_else(|| command.to_string(), str::to_string)
}

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

/// Findings read from a linter's report.
#[derive(Debug, Default)]
struct Found {
    /// The tool recognised, when the format says (a configured command).
    tool: Option<&'static str>,
    errors: u32,
    warnings: u32,
    error_lines: Vec<String>,
    warning_lines: Vec<String>,
}

impl Found {
    fn with_tool(tool: &'static str) -> Self {
        Self {
            tool: Some(tool),
            ..Self::default()
        }
    }

    /// The first [`MAX_FINDINGS`], errors before warnings.
    fn findings(self) -> Vec<String> {
        self.error_lines
            .into_iter()
            .chain(self.warning_lines)
            .take(MAX_FINDINGS)
            .collect()
    }

    fn push(&mut self, error: bool, line: String) {
        if error {
            self.errors += 1;
            self.error_lines.push(line);
        } else {
            self.warnings += 1;
            self.warning_lines.push(line);
        }
    }
}

/// A configured command's output, read as eslint, ruff or clippy JSON when it is one.
fn detect(output: &str, cwd: &Path) -> Option<Found> {
    if let Some(found) = clippy(output, cwd) {
        return Some(found);
    }
    let array = find_array(output)?;
    eslint(&array, cwd).or_else(|| ruff(&array, cwd))
}

/// The first JSON array in the output that starts a line (npm and cargo may print lines before
/// it; ruff's spans several lines).
fn find_array(output: &str) -> Option<Vec<Value>> {
    let mut offset = 0;
    for line in output.split_inclusive('\n') {
        let start = offset + (line.len() - line.trim_start().len());
        offset += line.len();
        if !line.trim_start().starts_with('[') {
            continue;
        }
        let mut values = serde_json::Deserializer::from_str(&output[start..]).into_iter::<Value>();
        if let Some(Ok(Value::Array(items))) = values.next() {
            return Some(items);
        }
    }
    None
}

/// eslint's `--format json`: per file `errorCount`, `warningCount` and `messages`.
fn eslint(files: &[Value], cwd: &Path) -> Option<Found> {
    let looks_like = |f: &Value| f.get("filePath").is_some() && f.get("messages").is_some();
    if !files.iter().all(looks_like) {
        return None;
    }
    let mut found = Found::with_tool("eslint");
    let count = |v: &Value, key: &str| {
        v.get(key)
            .and_then(Value::as_u64)
            .and_then(|n| u32::try_from(n).ok())
            .unwrap_or(0)
    };
    for file in files {
        let path = display_path(file.get("filePath").and_then(Value::as_str)?, cwd);
        for message in file.get("messages").and_then(Value::as_array)? {
            let line = finding(
                &path,
                message.get("line").and_then(Value::as_u64),
                message.get("column").and_then(Value::as_u64),
                message.get("message").and_then(Value::as_str).unwrap_or(""),
                message.get("ruleId").and_then(Value::as_str),
            );
            // Severity 2 is an error, 1 a warning; the counts below are eslint's own.
            if message.get("severity").and_then(Value::as_u64) == Some(2) {
                found.error_lines.push(line);
            } else {
                found.warning_lines.push(line);
            }
        }
        found.errors += count(file, "errorCount");
        found.warnings += count(file, "warningCount");
    }
    Some(found)
}

/// ruff's `--output-format json`: one entry per finding; see [`RUFF_WARNING_FAMILIES`].
fn ruff(findings: &[Value], cwd: &Path) -> Option<Found> {
    let looks_like = |f: &Value| f.get("filename").is_some() && f.get("location").is_some();
    if !findings.iter().all(looks_like) {
        return None;
    }
    let mut found = Found::with_tool("ruff");
    for f in findings {
        let code = f.get("code").and_then(Value::as_str);
        let severity = f.get("severity").and_then(Value::as_str);
        let location = f.get("location");
        let line = finding(
            &display_path(f.get("filename").and_then(Value::as_str)?, cwd),
            location.and_then(|l| l.get("row")).and_then(Value::as_u64),
            location
                .and_then(|l| l.get("column"))
                .and_then(Value::as_u64),
            f.get("message").and_then(Value::as_str).unwrap_or(""),
            code,
        );
        found.push(!ruff_is_warning(code, severity), line);
    }
    Some(found)
}

/// Whether a ruff finding counts as a warning; see [`RUFF_WARNING_FAMILIES`].
fn ruff_is_warning(code: Option<&str>, severity: Option<&str>) -> bool {
    if matches!(severity, Some("warning" | "info")) {
        return true;
    }
    let Some(code) = code else {
        return false;
    };
    RUFF_WARNING_CODES.contains(&code)
        || RUFF_WARNING_FAMILIES.iter().any(|family| {
            code.strip_prefix(family)
                .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()))
        })
}

/// cargo's `--message-format json` lines: `compiler-message` entries of level `error` or
/// `warning` whose primary span is in the project (not in a dependency or the standard
/// library). `--all-targets` checks a library twice (as itself and its tests), so the same
/// diagnostic is counted once. `None` when no line is a cargo message.
fn clippy(output: &str, cwd: &Path) -> Option<Found> {
    let mut found = Found::with_tool("clippy");
    let mut any = false;
    let mut seen = std::collections::HashSet::new();
    for line in output.lines() {
        let line = line.trim();
        if !line.starts_with("{\"reason\"") {
            continue;
        }
        let Ok(value) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        any = true;
        if value.get("reason").and_then(Value::as_str) != Some("compiler-message") {
            continue;
        }
        let Some(message) = value.get("message") else {
            continue;
        };
        let level = message.get("level").and_then(Value::as_str).unwrap_or("");
        let error = level.starts_with("error");
        if !error && level != "warning" {
            continue;
        }
        let Some(span) = message
            .get("spans")
            .and_then(Value::as_array)
            .and_then(|spans| {
                spans
                    .iter()
                    .find(|s| s.get("is_primary").and_then(Value::as_bool) == Some(true))
            })
        else {
            // No place: a summary such as "aborting due to 2 previous errors".
            continue;
        };
        let Some(file) = span.get("file_name").and_then(Value::as_str) else {
            continue;
        };
        if !in_project(file, cwd) {
            continue;
        }
        let text = finding(
            file,
            span.get("line_start").and_then(Value::as_u64),
            span.get("column_start").and_then(Value::as_u64),
            message.get("message").and_then(Value::as_str).unwrap_or(""),
            message
                .get("code")
                .and_then(|c| c.get("code"))
                .and_then(Value::as_str),
        );
        if seen.insert((error, text.clone())) {
            found.push(error, text);
        }
    }
    any.then_some(found)
}

/// Whether a diagnostic's file is the project's: rustc names the workspace's files relative to
/// its root, and others (the standard library, registry crates) absolute.
fn in_project(file: &str, cwd: &Path) -> bool {
    let path = Path::new(file);
    if path.is_absolute() {
        let cwd = std::path::absolute(cwd).unwrap_or_else(|_| cwd.to_path_buf());
        return path.starts_with(cwd);
    }
    !path.starts_with("..") && !file.starts_with('<')
}

/// `path` relative to `cwd` when under it. Node and ruff name files by the real path of their
/// working directory, which differs from `cwd` when a link is on the way.
fn display_path(path: &str, cwd: &Path) -> String {
    let candidates = [std::path::absolute(cwd).ok(), cwd.canonicalize().ok()];
    candidates
        .iter()
        .flatten()
        .find_map(|dir| Path::new(path).strip_prefix(dir).ok())
        .map_or_else(|| path.to_string(), |p| p.display().to_string())
}

/// `file:line:col: message (rule)`.
fn finding(
    file: &str,
    line: Option<u64>,
    column: Option<u64>,
    message: &str,
    rule: Option<&str>,
) -> String {
    let mut text = format!(
        "{file}:{}:{}: {}",
        line.unwrap_or(0),
        column.unwrap_or(0),
        message.trim()
    );
    if let Some(rule) = rule {
        text.push_str(&format!(" ({rule})"));
    }
    text
}

#[cfg(test)]
mod tests {
    use std::ffi::OsString;
    use std::time::Duration;

    use super::*;
    use crate::runner::plan::SandboxKind;
    use crate::runner::testkit::{bare_python, node_project, project};

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

    /// Where nothing is installed.
    fn nowhere() -> ToolEnv {
        ToolEnv {
            path: Some(OsString::new()),
            cargo_home: None,
        }
    }

    const ESLINT_CONFIG: &str = "module.exports = [{ rules: { 'no-unused-vars': 'error', \
                                 eqeqeq: 'warn' } }];\n";

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
        assert_eq!(
            (bad.tool.as_str(), bad.errors, bad.warnings),
            ("eslint", 1, 1),
            "{bad:?}"
        );
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
        assert_eq!((good.errors, good.warnings), (0, 0), "{good:?}");
        assert!(good.findings.is_empty());
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

    #[test]
    fn eslint_needs_a_config_and_an_install() {
        let dir = node_project(&[("package.json", r#"{"name":"l","private":true}"#)]);
        let err = lint_plan(Language::TypeScript, Path::new("a.ts"), dir.path(), None)
            .expect_err("no config");
        assert!(matches!(err, LintError::NoEslintConfig { .. }), "{err}");
        assert!(
            err.to_string().contains("need an eslint.config.js"),
            "{err}"
        );
        // A config in a directory above the target counts.
        std::fs::write(dir.path().join("eslint.config.mjs"), "export default [];\n")
            .expect("write");
        assert!(lint_plan(
            Language::TypeScript,
            Path::new("src/a.ts"),
            dir.path(),
            None
        )
        .is_ok());

        let bare = project(&[("eslint.config.js", ESLINT_CONFIG)]);
        let tools = Tools {
            env: nowhere(),
            ..Tools::current()
        };
        let err = plan_with(
            Language::JavaScript,
            Path::new("a.js"),
            bare.path(),
            None,
            &tools,
        )
        .expect_err("eslint missing");
        assert_eq!(
            err.to_string(),
            "linter_errors is set but eslint is not installed for javascript: run `npm install \
             --save-dev eslint`"
        );
    }

    const RUFF_CONFIG: &str = "[lint]\nselect = [\"E\", \"F\", \"I\"]\n";

    #[tokio::test]
    async fn ruff_counts_errors_and_style_warnings() {
        let dir = project(&[
            ("ruff.toml", RUFF_CONFIG),
            // Unsorted imports (I001, a warning), both unused (F401), an undefined name (F821).
            (
                "bad.py",
                "import sys\nimport os\n\n\ndef f():\n    return undefined_name\n",
            ),
            ("good.py", "import os\n\n\ndef f():\n    return os.sep\n"),
        ]);
        let bad = lint_file(Language::Python, dir.path(), "bad.py").await;
        assert_eq!(
            (bad.tool.as_str(), bad.errors, bad.warnings),
            ("ruff", 3, 1),
            "{bad:?}"
        );
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
        assert_eq!((good.errors, good.warnings), (0, 0), "{good:?}");
        assert!(!dir.path().join(".ruff_cache").exists());
    }

    #[tokio::test]
    async fn ruff_counts_a_syntax_error() {
        let dir = project(&[("broken.py", "def f(:\n    pass\n")]);
        let l = lint_file(Language::Python, dir.path(), "broken.py").await;
        assert!(l.errors >= 1 && l.warnings == 0, "{l:?}");
        assert!(l.findings[0].starts_with("broken.py:1:"), "{l:?}");
    }

    #[test]
    fn ruff_missing() {
        let dir = project(&[]);
        let python = bare_python(dir.path()).display().to_string();
        let tools = Tools {
            env: nowhere(),
            python: python.clone(),
            cargo: "cargo".into(),
        };
        let err = plan_with(
            Language::Python,
            Path::new("a.py"),
            dir.path(),
            None,
            &tools,
        )
        .expect_err("ruff missing");
        assert_eq!(
            err.to_string(),
            format!(
                "linter_errors is set but ruff is not installed for python: run `{python} -m \
                 pip install ruff`"
            )
        );
    }

    /// One target directory for every crate these tests build, so clippy compiles little.
    fn cargo_target() -> String {
        std::env::temp_dir()
            .join("ralph-loop-lint-tests-target")
            .display()
            .to_string()
    }

    fn crate_project(lib: &str) -> tempfile::TempDir {
        project(&[
            (
                "Cargo.toml",
                "[package]\nname = \"tiny\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
                 [workspace]\n",
            ),
            ("src/lib.rs", lib),
        ])
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
        assert_eq!(
            (bad.tool.as_str(), bad.errors, bad.warnings),
            ("clippy", 1, 1),
            "{bad:?}"
        );
        assert_eq!(
            bad.findings[0],
            "src/lib.rs:3:8: equal expressions as operands to `==` (clippy::eq_op)"
        );
        assert!(bad.findings[1].ends_with("(clippy::ptr_arg)"), "{bad:?}");

        let good = clippy_on("pub fn f(x: i32) -> i32 {\n    x + 1\n}\n").await;
        assert_eq!((good.errors, good.warnings), (0, 0), "{good:?}");
        assert!(good.findings.is_empty());
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

    #[test]
    fn clippy_missing() {
        let dir = crate_project("pub fn f() {}\n");
        let tools = Tools {
            cargo: "/nonexistent/cargo".into(),
            ..Tools::current()
        };
        let err = plan_with(
            Language::Rust,
            Path::new("src/lib.rs"),
            dir.path(),
            None,
            &tools,
        )
        .expect_err("clippy missing");
        assert_eq!(
            err.to_string(),
            "linter_errors is set but clippy is not installed for rust: run `rustup component \
             add clippy`"
        );
    }

    #[tokio::test]
    async fn a_configured_command_counts_by_exit_status() {
        let dir = project(&[]);
        let failing = lint_plan(
            Language::Python,
            Path::new("a.py"),
            dir.path(),
            Some("echo 'a.py:1: too many widgets'; echo; exit 3"),
        )
        .expect("plan");
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

        let passing = lint_plan(
            Language::Python,
            Path::new("a.py"),
            dir.path(),
            Some("true"),
        )
        .expect("plan");
        let l = lint(&passing).await;
        assert_eq!((l.errors, l.warnings, l.findings.len()), (0, 0, 0));
    }

    #[tokio::test]
    async fn a_configured_command_with_json_output_is_read_as_such() {
        let dir = project(&[
            ("ruff.toml", RUFF_CONFIG),
            (
                "bad.py",
                "import sys\nimport os\n\n\ndef f():\n    return undefined_name\n",
            ),
        ]);
        let plan = lint_plan(
            Language::Python,
            Path::new("bad.py"),
            dir.path(),
            Some("echo starting; python3 -m ruff check --no-cache --output-format json bad.py"),
        )
        .expect("plan");
        let l = lint(&plan).await;
        assert_eq!(
            (l.tool.as_str(), l.errors, l.warnings),
            ("ruff", 3, 1),
            "{l:?}"
        );
    }

    #[tokio::test]
    async fn a_linter_past_its_timeout_is_one_error() {
        let dir = project(&[]);
        let plan = lint_plan(
            Language::Python,
            Path::new("a.py"),
            dir.path(),
            Some("sleep 30"),
        )
        .expect("plan");
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

    #[test]
    fn configured_linters_are_named() {
        assert_eq!(tool_named_in("npx --no-install eslint ."), "eslint");
        assert_eq!(tool_named_in("./node_modules/.bin/eslint src"), "eslint");
        assert_eq!(tool_named_in("cargo clippy -- -D warnings"), "clippy");
        assert_eq!(tool_named_in("python3 -m ruff check ."), "ruff");
        assert_eq!(tool_named_in("truffle lint"), "truffle lint");
    }

    #[test]
    fn ruff_warning_set() {
        for code in ["I001", "W291", "W605", "D100", "Q000", "COM812", "E501"] {
            assert!(ruff_is_warning(Some(code), Some("error")), "{code}");
        }
        for code in ["F401", "E711", "INP001", "DTZ005", "invalid-syntax", "B006"] {
            assert!(!ruff_is_warning(Some(code), Some("error")), "{code}");
        }
        assert!(!ruff_is_warning(None, None));
        assert!(ruff_is_warning(Some("F401"), Some("warning")));
    }

    #[test]
    fn json_arrays_are_found_among_other_lines() {
        let output = "npm warn Unknown user config\n[{\"a\":\n  1}]\ntrailing text\n";
        assert_eq!(
            find_array(output).map(|a| a.len()),
            Some(1),
            "a pretty-printed array after a warning"
        );
        assert_eq!(find_array("[not json\n[]\n").map(|a| a.len()), Some(0));
        assert!(find_array("no json here\n").is_none());
    }

    #[test]
    fn project_files_and_others() {
        let cwd = Path::new("/work/p");
        assert!(in_project("src/lib.rs", cwd));
        assert!(in_project("/work/p/src/lib.rs", cwd));
        assert!(!in_project("../dep/src/lib.rs", cwd));
        assert!(!in_project("/rustc/abc/library/core/src/macros.rs", cwd));
        assert!(!in_project("<anon>", cwd));
    }
}
