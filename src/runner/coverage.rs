//! Code coverage for a test plan (`success_criteria.coverage_threshold`): the flags or wrapper
//! that make each test tool also write a coverage summary file, and the reader of that file
//! (`docs/coverage-and-linting.md`).
//!
//! | framework        | tool                                  | summary read                  |
//! |------------------|---------------------------------------|-------------------------------|
//! | jest             | jest's own (`--coverage`)             | istanbul `json-summary`       |
//! | vitest           | `@vitest/coverage-v8`                 | istanbul `json-summary`       |
//! | mocha, node      | `c8` wrapping the command             | istanbul `json-summary`       |
//! | pytest, unittest | coverage.py (`python -m coverage`)    | `coverage json`               |
//! | cargo, nextest   | `cargo llvm-cov`, else `cargo tarpaulin` | llvm-cov export / tarpaulin JSON |
//!
//! [`check_coverage_tool`] answers before any model is called whether the tool is there;
//! [`with_coverage`] returns the changed plan and a [`CoverageReader`] for after the run.

use std::ffi::{OsStr, OsString};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use ralph_actors::schema::test_run::Coverage;
use serde_json::Value;

use super::plan::{Framework, TestPlan};

/// A coverage tool ralph-loop drives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CoverageTool {
    /// jest's built-in coverage (istanbul).
    Jest,
    /// vitest with the `@vitest/coverage-v8` provider.
    Vitest,
    /// `c8`, wrapping a mocha or `node --test` command.
    C8,
    /// coverage.py, running pytest or unittest.
    CoveragePy,
    /// `cargo llvm-cov`.
    LlvmCov,
    /// `cargo tarpaulin`.
    Tarpaulin,
}

impl CoverageTool {
    /// The name saved in results' `coverage.tool`.
    pub fn as_str(self) -> &'static str {
        match self {
            CoverageTool::Jest => "jest",
            CoverageTool::Vitest => "vitest",
            CoverageTool::C8 => "c8",
            CoverageTool::CoveragePy => "coverage.py",
            CoverageTool::LlvmCov => "cargo-llvm-cov",
            CoverageTool::Tarpaulin => "cargo-tarpaulin",
        }
    }
}

impl std::fmt::Display for CoverageTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why coverage cannot be gathered or read.
#[derive(Debug, thiserror::Error)]
pub enum CoverageError {
    /// The tool the framework needs is not installed; found before the run, so ralph-loop can
    /// stop (exit 2) before any model is called.
    #[error(
        "coverage_threshold is set but {tool} is not installed for {framework}: {install_hint}"
    )]
    ToolMissing {
        framework: &'static str,
        tool: &'static str,
        install_hint: String,
    },
    /// The test command is not one coverage can be added to (a configured command, or a detected
    /// one in an unexpected shape).
    #[error(
        "coverage_threshold is set but ralph-loop cannot add coverage to the {framework} command \
         `{command}`: {why}"
    )]
    Unsupported {
        framework: &'static str,
        command: String,
        why: &'static str,
    },
    /// The run ended (a crash, a timeout, a build failure) before the tool wrote its summary: the
    /// run is recorded without coverage and the coverage criterion is unmet.
    #[error(
        "{tool} wrote no coverage summary ({}): the test run ended before coverage was reported",
        path.display()
    )]
    NoSummary { tool: &'static str, path: PathBuf },
    #[error("{tool}'s coverage summary {} is unreadable: {reason}", path.display())]
    Unreadable {
        tool: &'static str,
        path: PathBuf,
        reason: String,
    },
    #[error("could not prepare the coverage directory {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Reads the coverage summary a run of the plan from [`with_coverage`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CoverageReader {
    tool: CoverageTool,
    summary: PathBuf,
}

impl CoverageReader {
    pub fn tool(&self) -> CoverageTool {
        self.tool
    }

    /// The summary file the run writes (the plan's command deletes it first, so a stale one from
    /// an earlier iteration is never read).
    pub fn summary_path(&self) -> &Path {
        &self.summary
    }

    /// The run's coverage. [`CoverageError::NoSummary`] when the run wrote none.
    pub fn read(&self) -> Result<Coverage, CoverageError> {
        let data = match std::fs::read_to_string(&self.summary) {
            Ok(data) => data,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(CoverageError::NoSummary {
                    tool: self.tool.as_str(),
                    path: self.summary.clone(),
                })
            }
            Err(e) => {
                return Err(CoverageError::Unreadable {
                    tool: self.tool.as_str(),
                    path: self.summary.clone(),
                    reason: e.to_string(),
                })
            }
        };
        parse_summary(self.tool, &data).map_err(|reason| CoverageError::Unreadable {
            tool: self.tool.as_str(),
            path: self.summary.clone(),
            reason,
        })
    }
}

/// Fails when the coverage tool `plan`'s framework needs is not installed, so startup can stop
/// before any model is called. Runs the project's Python (or `rustc`) briefly for some checks.
pub fn check_coverage_tool(plan: &TestPlan) -> Result<(), CoverageError> {
    pick_tool(plan, &ToolEnv::current()).map(|_| ())
}

/// `plan` changed to also write a coverage summary under `report_dir` (in a directory of its own,
/// `coverage-<framework>`), and the reader of that summary.
///
/// The changed command first deletes the summary a previous run left, so a run that ends before
/// writing one reads as [`CoverageError::NoSummary`], never as old numbers.
pub fn with_coverage(
    plan: &TestPlan,
    report_dir: &Path,
) -> Result<(TestPlan, CoverageReader), CoverageError> {
    let tool = pick_tool(plan, &ToolEnv::current())?;
    coverage_plan(plan, tool, report_dir)
}

/// `plan` changed to run under `tool`, which is known to be installed.
fn coverage_plan(
    plan: &TestPlan,
    tool: CoverageTool,
    report_dir: &Path,
) -> Result<(TestPlan, CoverageReader), CoverageError> {
    // The command runs in plan.cwd and the reader in ours: both must name the same files.
    let report_dir = std::path::absolute(report_dir).map_err(|source| CoverageError::Io {
        path: report_dir.to_path_buf(),
        source,
    })?;
    let dir = report_dir.join(format!("coverage-{}", plan.framework.as_str()));
    std::fs::create_dir_all(&dir).map_err(|source| CoverageError::Io {
        path: dir.clone(),
        source,
    })?;
    let mut out = plan.clone();
    let summary = match tool {
        CoverageTool::Jest => {
            let summary = dir.join("coverage-summary.json");
            // An empty coverageThreshold: thresholds in the project's jest config would fail a
            // run that only asked for coverage; ralph-loop judges the threshold itself.
            out.command = format!(
                "rm -f {} && {} --coverage --coverageReporters=json-summary \
                 --coverageDirectory={} '--coverageThreshold={{}}'",
                sh_quote(&summary),
                plan.command,
                sh_quote(&dir)
            );
            summary
        }
        CoverageTool::Vitest => {
            let summary = dir.join("coverage-summary.json");
            // reportOnFailure: vitest writes no coverage when a test fails otherwise. Zeroed
            // thresholds, as for jest: the project's global thresholds would fail the run.
            out.command = format!(
                "rm -f {} && {} --coverage.enabled --coverage.provider=v8 \
                 --coverage.reporter=json-summary --coverage.reportsDirectory={} \
                 --coverage.reportOnFailure --coverage.thresholds.lines=0 \
                 --coverage.thresholds.functions=0 --coverage.thresholds.branches=0 \
                 --coverage.thresholds.statements=0",
                sh_quote(&summary),
                plan.command,
                sh_quote(&dir)
            );
            summary
        }
        CoverageTool::C8 => {
            let summary = dir.join("coverage-summary.json");
            out.command = format!(
                "rm -f {} && npx --no-install c8 --reporter=json-summary --report-dir={} {}",
                sh_quote(&summary),
                sh_quote(&dir),
                plan.command
            );
            summary
        }
        CoverageTool::CoveragePy => {
            let py = split_python(&plan.command).ok_or_else(|| unsupported_python(plan))?;
            let summary = dir.join("coverage.json");
            let data = dir.join(".coverage");
            let omit = if has_coverage_config(&plan.cwd) {
                String::new()
            } else {
                // Test files are not the code under test; jest, vitest and c8 leave them out by
                // default too. A project with its own coverage config decides for itself.
                format!(" '--omit={PY_TEST_FILES}'")
            };
            // `coverage json` must run even when the tests fail, and the tests' exit status
            // is the command's.
            out.command = format!(
                "rm -f {summary_q} {data_q} && {python} -m coverage run --data-file={data_q} \
                 --branch{omit} -m {module}{rest}; status=$?; {python} -m coverage json \
                 --data-file={data_q} -o {summary_q} -q; exit $status",
                summary_q = sh_quote(&summary),
                data_q = sh_quote(&data),
                python = py.python,
                module = py.module,
                rest = py.rest,
            );
            summary
        }
        CoverageTool::LlvmCov => {
            let summary = dir.join("llvm-cov.json");
            let (sub, rest) = split_cargo(plan).ok_or_else(|| unsupported_cargo(plan))?;
            let sub = if sub == CargoTests::Nextest {
                " nextest"
            } else {
                ""
            };
            // Without --ignore-run-fail: with it, failing tests would exit 0. The price: a run
            // with a failing test writes no summary (NoSummary).
            out.command = format!(
                "rm -f {summary_q} && cargo llvm-cov{sub} --json --summary-only \
                 --output-path {summary_q}{rest}",
                summary_q = sh_quote(&summary),
            );
            // Fail instead of asking on a closed stdin to install llvm-tools.
            out.env.push(("CARGO_LLVM_COV_SETUP".into(), "no".into()));
            summary
        }
        CoverageTool::Tarpaulin => {
            let summary = dir.join("tarpaulin-report.json");
            let (sub, rest) = split_cargo(plan).ok_or_else(|| unsupported_cargo(plan))?;
            let rest = if sub == CargoTests::Nextest {
                // tarpaulin runs the test binaries itself, not nextest: ask them for libtest's
                // JSON lines, as under `cargo test`.
                out.framework = Framework::Cargo;
                out.env.retain(|(k, _)| !k.starts_with("NEXTEST_"));
                out.env.push(("RUSTC_BOOTSTRAP".into(), "1".into()));
                " --no-fail-fast -- -Z unstable-options --format json --report-time".to_string()
            } else {
                rest.to_string()
            };
            out.command = format!(
                "rm -f {} && cargo tarpaulin --out Json --output-dir {} --skip-clean{rest}",
                sh_quote(&summary),
                sh_quote(&dir),
            );
            summary
        }
    };
    Ok((out, CoverageReader { tool, summary }))
}

/// Files coverage.py leaves out when the project has no coverage config of its own.
const PY_TEST_FILES: &str = "*/test_*.py,*/*_test.py,*/tests/*,*/conftest.py";

/// The tool for `plan`, checked to be installed.
fn pick_tool(plan: &TestPlan, env: &ToolEnv) -> Result<CoverageTool, CoverageError> {
    let framework = plan.framework.as_str();
    let missing = |tool: &'static str, install_hint: String| CoverageError::ToolMissing {
        framework,
        tool,
        install_hint,
    };
    match plan.framework {
        // Coverage ships with jest.
        Framework::Jest => Ok(CoverageTool::Jest),
        Framework::Vitest => {
            if node_package(&plan.cwd, "@vitest/coverage-v8") {
                Ok(CoverageTool::Vitest)
            } else {
                Err(missing(
                    "@vitest/coverage-v8",
                    "run `npm install --save-dev @vitest/coverage-v8`".into(),
                ))
            }
        }
        Framework::Mocha | Framework::Node => {
            if node_bin(&plan.cwd, "c8", env) {
                Ok(CoverageTool::C8)
            } else {
                Err(missing("c8", "run `npm install --save-dev c8`".into()))
            }
        }
        Framework::Pytest | Framework::Unittest => {
            let py = split_python(&plan.command).ok_or_else(|| unsupported_python(plan))?;
            if python_imports(py.python, "coverage", &plan.cwd, &plan.env) {
                Ok(CoverageTool::CoveragePy)
            } else {
                Err(missing(
                    "coverage.py",
                    format!("run `{} -m pip install coverage`", py.python),
                ))
            }
        }
        Framework::Cargo | Framework::Nextest => {
            split_cargo(plan).ok_or_else(|| unsupported_cargo(plan))?;
            let llvm_cov = env.cargo_subcommand("cargo-llvm-cov");
            let tarpaulin = env.cargo_subcommand("cargo-tarpaulin");
            if llvm_cov && llvm_tools_installed(&plan.cwd, &plan.env) {
                Ok(CoverageTool::LlvmCov)
            } else if tarpaulin {
                Ok(CoverageTool::Tarpaulin)
            } else if llvm_cov {
                Err(missing(
                    "llvm-tools-preview (needed by cargo-llvm-cov)",
                    "run `rustup component add llvm-tools-preview`".into(),
                ))
            } else {
                Err(missing(
                    "cargo-llvm-cov (or cargo-tarpaulin)",
                    "run `cargo install cargo-llvm-cov` and `rustup component add \
                     llvm-tools-preview`, or `cargo install cargo-tarpaulin`"
                        .into(),
                ))
            }
        }
        Framework::Custom => Err(CoverageError::Unsupported {
            framework,
            command: plan.command.clone(),
            why: "a configured test command is run as is; unset testing.command (and -t) so \
                  ralph-loop detects the test tool, or unset coverage_threshold",
        }),
    }
}

fn unsupported_python(plan: &TestPlan) -> CoverageError {
    CoverageError::Unsupported {
        framework: plan.framework.as_str(),
        command: plan.command.clone(),
        why: "expected `<python> -m pytest ...`, `<python> -m unittest ...` or `pytest ...`",
    }
}

fn unsupported_cargo(plan: &TestPlan) -> CoverageError {
    CoverageError::Unsupported {
        framework: plan.framework.as_str(),
        command: plan.command.clone(),
        why: "expected `cargo test ...` or `cargo nextest run ...`",
    }
}

/// A Python test command cut around its module: `<python> -m <module><rest>`.
#[derive(Debug, PartialEq, Eq)]
struct PythonCommand<'a> {
    /// The interpreter, as the command calls it (`python3`, `.venv/bin/python`, `uv run python`).
    python: &'a str,
    module: &'static str,
    /// The arguments after the module, with their leading space.
    rest: &'a str,
}

fn split_python(command: &str) -> Option<PythonCommand<'_>> {
    let command = command.trim();
    for module in ["pytest", "unittest"] {
        let marker = format!(" -m {module}");
        if let Some(at) = command.find(&marker) {
            let rest = &command[at + marker.len()..];
            if rest.is_empty() || rest.starts_with(char::is_whitespace) {
                return Some(PythonCommand {
                    python: command[..at].trim(),
                    module,
                    rest,
                });
            }
        }
    }
    // A bare `pytest` script: coverage.py runs its module instead.
    let rest = command.strip_prefix("pytest")?;
    (rest.is_empty() || rest.starts_with(char::is_whitespace)).then_some(PythonCommand {
        python: "python3",
        module: "pytest",
        rest,
    })
}

/// Whether the project configures coverage.py itself (it reads these from the directory it runs
/// in).
fn has_coverage_config(cwd: &Path) -> bool {
    let has = |file: &str, section: &str| {
        std::fs::read_to_string(cwd.join(file)).is_ok_and(|text| text.contains(section))
    };
    cwd.join(".coveragerc").is_file()
        || has("pyproject.toml", "[tool.coverage")
        || has("setup.cfg", "[coverage:")
        || has("tox.ini", "[coverage:")
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CargoTests {
    Test,
    Nextest,
}

/// `cargo test<rest>` or `cargo nextest run<rest>`.
fn split_cargo(plan: &TestPlan) -> Option<(CargoTests, &str)> {
    let command = plan.command.trim();
    let after = |prefix: &str| {
        command
            .strip_prefix(prefix)
            .filter(|rest| rest.is_empty() || rest.starts_with(char::is_whitespace))
    };
    after("cargo test")
        .map(|rest| (CargoTests::Test, rest))
        .or_else(|| after("cargo nextest run").map(|rest| (CargoTests::Nextest, rest)))
}

/// Whether `llvm-profdata`, which cargo-llvm-cov needs, is in the toolchain (or named by
/// `LLVM_PROFDATA`).
fn llvm_tools_installed(cwd: &Path, env: &[(String, String)]) -> bool {
    if std::env::var_os("LLVM_PROFDATA").is_some() && std::env::var_os("LLVM_COV").is_some() {
        return true;
    }
    // `rustc` in the project's directory: a rust-toolchain file there picks the toolchain.
    let Some(sysroot) = capture("rustc --print sysroot", cwd, env) else {
        return false;
    };
    let Ok(hosts) = std::fs::read_dir(Path::new(sysroot.trim()).join("lib/rustlib")) else {
        return false;
    };
    hosts
        .flatten()
        .any(|host| host.path().join("bin/llvm-profdata").is_file())
}

/// Whether `python` (as the test command calls it) imports `module` in `cwd`.
pub(super) fn python_imports(
    python: &str,
    module: &str,
    cwd: &Path,
    env: &[(String, String)],
) -> bool {
    capture(&format!("{python} -c 'import {module}'"), cwd, env).is_some()
}

/// Runs `sh -c <command>` in `cwd`; its stdout when it succeeds. For quick tool checks only: no
/// timeout.
pub(super) fn capture(command: &str, cwd: &Path, env: &[(String, String)]) -> Option<String> {
    let out = Command::new("sh")
        .arg("-c")
        .arg(command)
        .current_dir(cwd)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Where tools are looked for: `PATH`, and cargo's bin directory for cargo subcommands.
#[derive(Debug, Clone)]
pub(super) struct ToolEnv {
    pub path: Option<OsString>,
    pub cargo_home: Option<PathBuf>,
}

impl ToolEnv {
    pub fn current() -> Self {
        let cargo_home = std::env::var_os("CARGO_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")));
        Self {
            path: std::env::var_os("PATH"),
            cargo_home,
        }
    }

    /// The executable `name` on `PATH`.
    pub fn which(&self, name: &str) -> Option<PathBuf> {
        let path = self.path.as_deref()?;
        std::env::split_paths(path)
            .map(|dir| dir.join(name))
            .find(|file| is_executable(file))
    }

    /// Whether cargo finds the subcommand binary `name` (`cargo-llvm-cov`): on `PATH` or in
    /// `$CARGO_HOME/bin`, where `cargo install` puts it.
    pub fn cargo_subcommand(&self, name: &str) -> bool {
        self.which(name).is_some()
            || self
                .cargo_home
                .as_ref()
                .is_some_and(|home| is_executable(&home.join("bin").join(name)))
    }
}

fn is_executable(file: &Path) -> bool {
    std::fs::metadata(file).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// `rel` in `start` or the nearest ancestor that has it, as node resolves `node_modules`.
pub(super) fn find_upward(start: &Path, rel: &str) -> Option<PathBuf> {
    let start = std::path::absolute(start).ok()?;
    start
        .ancestors()
        .map(|dir| dir.join(rel))
        .find(|candidate| candidate.exists())
}

/// Whether the node package resolves from `cwd`.
fn node_package(cwd: &Path, package: &str) -> bool {
    find_upward(cwd, &format!("node_modules/{package}/package.json")).is_some()
}

/// Whether `npx --no-install <bin>` finds `bin` from `cwd`: a local install, or one on `PATH`.
pub(super) fn node_bin(cwd: &Path, bin: &str, env: &ToolEnv) -> bool {
    find_upward(cwd, &format!("node_modules/.bin/{bin}")).is_some() || env.which(bin).is_some()
}

/// `path` as one shell word.
pub(super) fn sh_quote(path: impl AsRef<OsStr>) -> String {
    let text = path.as_ref().to_string_lossy();
    if !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+=:,@%".contains(c))
    {
        return text.into_owned();
    }
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// Reads a summary file `tool` wrote. Percentages are computed from the covered and total counts
/// (more precise than the tools' rounded ones) and rounded to two decimals. A metric with nothing
/// to count (no branches) is `None`; lines with nothing to count are 0%, since then the tests
/// loaded no code at all.
pub fn parse_summary(tool: CoverageTool, data: &str) -> Result<Coverage, String> {
    let value: Value = serde_json::from_str(data).map_err(|e| format!("not JSON: {e}"))?;
    let (lines, branches, functions) = match tool {
        CoverageTool::Jest | CoverageTool::Vitest | CoverageTool::C8 => istanbul(&value)?,
        CoverageTool::CoveragePy => coverage_py(&value)?,
        CoverageTool::LlvmCov => llvm_cov(&value)?,
        CoverageTool::Tarpaulin => (tarpaulin(&value)?, None, None),
    };
    Ok(Coverage {
        tool: tool.as_str().to_string(),
        lines_pct: lines.unwrap_or(0.0),
        branches_pct: branches,
        functions_pct: functions,
    })
}

type Metrics = (Option<f64>, Option<f64>, Option<f64>);

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

fn percent(covered: f64, total: f64) -> Option<f64> {
    (total > 0.0).then(|| round2(covered / total * 100.0))
}

fn number(v: &Value, key: &str) -> Option<f64> {
    v.get(key).and_then(Value::as_f64)
}

/// istanbul's `coverage-summary.json`: `total.{lines,branches,functions}.{total,covered,pct}`.
fn istanbul(v: &Value) -> Result<Metrics, String> {
    let total = v.get("total").ok_or("no `total` entry")?;
    let metric = |name: &str| -> Result<Option<f64>, String> {
        let m = total
            .get(name)
            .ok_or_else(|| format!("no `total.{name}` entry"))?;
        match (number(m, "covered"), number(m, "total")) {
            (Some(covered), Some(all)) => Ok(percent(covered, all)),
            // `pct` is "Unknown" when there was nothing to count.
            _ => Ok(number(m, "pct")),
        }
    };
    Ok((metric("lines")?, metric("branches")?, metric("functions")?))
}

/// `coverage json`: `totals.{covered_lines,num_statements,covered_branches,num_branches}`.
/// `percent_covered` is not the lines figure when branches were measured (it counts both), so
/// it is only a fallback.
fn coverage_py(v: &Value) -> Result<Metrics, String> {
    let totals = v.get("totals").ok_or("no `totals` entry")?;
    let lines = match (
        number(totals, "covered_lines"),
        number(totals, "num_statements"),
    ) {
        (Some(covered), Some(all)) => percent(covered, all),
        _ => Some(
            number(totals, "percent_statements_covered")
                .or_else(|| number(totals, "percent_covered"))
                .ok_or("no line counts in `totals`")?,
        ),
    };
    let branches = match (
        number(totals, "covered_branches"),
        number(totals, "num_branches"),
    ) {
        (Some(covered), Some(all)) => percent(covered, all),
        _ => None,
    };
    Ok((lines, branches, coverage_py_functions(v)))
}

/// The share of functions that ran at least one line, from the per-file `functions` regions
/// (coverage.py 7.5 and later). The region named "" is module-level code, not a function.
fn coverage_py_functions(v: &Value) -> Option<f64> {
    let files = v.get("files")?.as_object()?;
    let (mut called, mut all) = (0u32, 0u32);
    for file in files.values() {
        for (name, function) in file.get("functions")?.as_object()? {
            let summary = function.get("summary")?;
            if name.is_empty() || number(summary, "num_statements")? == 0.0 {
                continue;
            }
            all += 1;
            if number(summary, "covered_lines")? > 0.0 {
                called += 1;
            }
        }
    }
    percent(f64::from(called), f64::from(all))
}

/// `llvm-cov export -format=text` (cargo llvm-cov --json):
/// `data[].totals.{lines,branches,functions}.{count,covered,percent}`.
fn llvm_cov(v: &Value) -> Result<Metrics, String> {
    let data = v
        .get("data")
        .and_then(Value::as_array)
        .filter(|d| !d.is_empty())
        .ok_or("no `data` entries")?;
    let sum = |name: &str| -> Result<(f64, f64), String> {
        data.iter()
            .try_fold((0.0, 0.0), |(covered, count), export| {
                let m = export
                    .get("totals")
                    .and_then(|t| t.get(name))
                    .ok_or_else(|| format!("no `totals.{name}` entry"))?;
                match (number(m, "covered"), number(m, "count")) {
                    (Some(c), Some(n)) => Ok((covered + c, count + n)),
                    _ => Err(format!("no counts in `totals.{name}`")),
                }
            })
    };
    let lines = sum("lines")?;
    let functions = sum("functions")?;
    // Branch counts are there only with `--branch` (nightly); absent, they are not measured.
    let branches = sum("branches").ok();
    Ok((
        percent(lines.0, lines.1),
        branches.and_then(|(c, n)| percent(c, n)),
        percent(functions.0, functions.1),
    ))
}

/// tarpaulin's `tarpaulin-report.json`: `covered` and `coverable` lines (tarpaulin 0.29 and
/// later), else summed over `files`, else its `coverage` percent.
fn tarpaulin(v: &Value) -> Result<Option<f64>, String> {
    if let (Some(covered), Some(all)) = (number(v, "covered"), number(v, "coverable")) {
        return Ok(percent(covered, all));
    }
    if let Some(files) = v.get("files").and_then(Value::as_array) {
        let (covered, all) = files.iter().fold((0.0, 0.0), |(c, n), file| {
            (
                c + number(file, "covered").unwrap_or(0.0),
                n + number(file, "coverable").unwrap_or(0.0),
            )
        });
        return Ok(percent(covered, all));
    }
    number(v, "coverage")
        .map(|pct| Some(round2(pct)))
        .ok_or_else(|| "no `covered`/`coverable` counts, `files` or `coverage`".to_string())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use ralph_actors::schema::test_run::{RunStatus, TestRun};
    use tokio_util::sync::CancellationToken;

    use super::*;
    use crate::runner::testkit::{bare_python, node_project, node_tools, project};
    use crate::runner::ProcessRunner;

    fn plan(framework: Framework, command: &str, cwd: &Path) -> TestPlan {
        TestPlan {
            language: None,
            framework,
            command: command.to_string(),
            cwd: cwd.to_path_buf(),
            report: None,
            env: Vec::new(),
        }
    }

    async fn run(plan: &TestPlan) -> TestRun {
        let mut runner = ProcessRunner::new(
            plan.command.clone(),
            plan.cwd.clone(),
            Duration::from_secs(180),
            1024 * 1024,
        );
        for (k, v) in &plan.env {
            runner = runner.with_env(k.clone(), v.clone());
        }
        runner.run_once(CancellationToken::new()).await
    }

    /// Gathers coverage for `plan` and reads it; the run must end with `status`.
    async fn covered(plan: &TestPlan, status: RunStatus) -> Coverage {
        check_coverage_tool(plan).expect("tool installed");
        let reports = plan.cwd.join(".ralph/reports");
        let (changed, reader) = with_coverage(plan, &reports).expect("coverage plan");
        assert!(reader.summary_path().starts_with(&reports));
        let run = run(&changed).await;
        assert_eq!(run.status, status, "{}\n{}", changed.command, run.output);
        reader
            .read()
            .unwrap_or_else(|e| panic!("{e}\n{}\n{}", changed.command, run.output))
    }

    /// Two functions, one with a branch; the tests call `a(1)` only: half the functions run,
    /// about half the lines (each tool counts lines its own way) and some of the branches.
    const HALF_JS: &str = "function a(x) {\n  if (x > 0) {\n    return 1;\n  }\n  return 2;\n}\n\
                           function b() {\n  const y = 3;\n  const z = 4;\n  return y + z;\n}\n";

    fn assert_half(c: &Coverage, tool: &str) {
        assert_eq!(c.tool, tool);
        assert!((25.0..=75.0).contains(&c.lines_pct), "{c:?}");
        assert_eq!(c.functions_pct, Some(50.0), "{c:?}");
        // Branches too are counted differently: c8 counts v8's blocks, so `a`'s body is one.
        assert!(
            c.branches_pct.is_some_and(|b| b > 0.0 && b < 100.0),
            "{c:?}"
        );
    }

    #[tokio::test]
    async fn jest_coverage_of_a_half_covered_module() {
        let dir = node_project(&[
            ("package.json", r#"{"name":"half","private":true}"#),
            (
                "half.js",
                &format!("{HALF_JS}module.exports = {{ a, b }};\n"),
            ),
            (
                "half.test.js",
                "const { a } = require('./half');\ntest('a', () => expect(a(1)).toBe(1));\n",
            ),
            // A threshold the run would fail if ralph-loop did not override it.
            (
                "jest.config.js",
                "module.exports = { coverageThreshold: { global: { lines: 99 } } };\n",
            ),
        ]);
        let out = dir.path().join(".ralph/reports/jest.json");
        let p = plan(
            Framework::Jest,
            &format!(
                "npx --no-install jest --json --outputFile={}",
                out.display()
            ),
            dir.path(),
        );
        let c = covered(&p, RunStatus::Passed).await;
        assert_half(&c, "jest");
        // The test report the plan asked for is still written.
        assert!(out.is_file());
    }

    #[tokio::test]
    async fn jest_coverage_is_read_when_a_test_fails() {
        let dir = node_project(&[
            ("package.json", r#"{"name":"half","private":true}"#),
            (
                "half.js",
                &format!("{HALF_JS}module.exports = {{ a, b }};\n"),
            ),
            (
                "half.test.js",
                "const { a } = require('./half');\ntest('a', () => expect(a(1)).toBe(7));\n",
            ),
        ]);
        let p = plan(Framework::Jest, "npx --no-install jest", dir.path());
        assert_half(&covered(&p, RunStatus::Failed).await, "jest");
    }

    #[tokio::test]
    async fn vitest_coverage_of_a_half_covered_module() {
        let dir = node_project(&[
            (
                "package.json",
                r#"{"name":"half","private":true,"type":"module"}"#,
            ),
            ("half.js", &format!("{HALF_JS}export {{ a, b }};\n")),
            (
                "half.test.js",
                "import { test, expect } from 'vitest';\nimport { a } from './half.js';\n\
                 test('a', () => expect(a(1)).toBe(1));\n",
            ),
            (
                "vitest.config.js",
                "export default { test: { coverage: { thresholds: { lines: 99 } } } };\n",
            ),
        ]);
        let out = dir.path().join(".ralph/reports/vitest.json");
        let p = plan(
            Framework::Vitest,
            &format!(
                "npx --no-install vitest run --reporter=default --reporter=json \
                 --outputFile.json={}",
                out.display()
            ),
            dir.path(),
        );
        assert_half(&covered(&p, RunStatus::Passed).await, "vitest");
        // vitest empties its coverage directory: the test report lives outside it.
        assert!(out.is_file());
    }

    #[tokio::test]
    async fn c8_coverage_of_mocha_and_node_test() {
        let dir = node_project(&[
            ("package.json", r#"{"name":"half","private":true}"#),
            (
                "half.js",
                &format!("{HALF_JS}module.exports = {{ a, b }};\n"),
            ),
            (
                "test/half.test.js",
                "const assert = require('assert');\nconst { a } = require('../half');\n\
                 describe('half', () => { it('a', () => assert.equal(a(1), 1)); });\n",
            ),
            (
                "node/half.test.js",
                "const test = require('node:test');\nconst assert = require('assert');\n\
                 const { a } = require('../half');\ntest('a', () => assert.equal(a(1), 1));\n",
            ),
        ]);
        let mocha = plan(
            Framework::Mocha,
            "npx --no-install mocha --reporter json --reporter-option output=.ralph/mocha.json",
            dir.path(),
        );
        assert_half(&covered(&mocha, RunStatus::Passed).await, "c8");
        let node = plan(Framework::Node, "node --test node/", dir.path());
        assert_half(&covered(&node, RunStatus::Passed).await, "c8");
    }

    #[tokio::test]
    async fn c8_keeps_the_tests_exit_status() {
        let dir = node_project(&[
            ("package.json", r#"{"name":"half","private":true}"#),
            (
                "half.js",
                &format!("{HALF_JS}module.exports = {{ a, b }};\n"),
            ),
            (
                "test/half.test.js",
                "const assert = require('assert');\nconst { a } = require('../half');\n\
                 describe('half', () => { it('a', () => assert.equal(a(1), 9)); });\n",
            ),
        ]);
        let p = plan(Framework::Mocha, "npx --no-install mocha", dir.path());
        assert_half(&covered(&p, RunStatus::Failed).await, "c8");
    }

    const HALF_PY: &str = "def a(x):\n    if x > 0:\n        return 1\n    return 2\n\n\n\
                           def b():\n    y = 3\n    z = 4\n    return y + z\n";

    #[tokio::test]
    async fn coverage_py_with_pytest_and_unittest() {
        let dir = project(&[
            ("half.py", HALF_PY),
            (
                "test_half.py",
                "import unittest\n\nfrom half import a\n\n\nclass T(unittest.TestCase):\n    \
                 def test_a(self):\n        self.assertEqual(a(1), 1)\n",
            ),
        ]);
        let junit = dir.path().join(".ralph/junit.xml");
        let pytest = plan(
            Framework::Pytest,
            &format!(
                "python3 -m pytest -rfE --junitxml={} -o junit_family=xunit1",
                junit.display()
            ),
            dir.path(),
        );
        // 8 statements in half.py, 4 run; the test file is left out, or it would count too.
        let c = covered(&pytest, RunStatus::Passed).await;
        assert_eq!(c.tool, "coverage.py");
        assert_eq!(c.lines_pct, 50.0, "{c:?}");
        assert_eq!(c.branches_pct, Some(50.0), "{c:?}");
        assert_eq!(c.functions_pct, Some(50.0), "{c:?}");
        assert!(junit.is_file());

        let unittest = plan(Framework::Unittest, "python3 -m unittest", dir.path());
        assert_eq!(covered(&unittest, RunStatus::Passed).await.lines_pct, 50.0);
    }

    #[tokio::test]
    async fn coverage_py_respects_the_projects_config() {
        // With its own config (no omit), the project's test file is measured too.
        let dir = project(&[
            ("half.py", HALF_PY),
            (
                "test_half.py",
                "from half import a\n\n\ndef test_a():\n    assert a(1) == 1\n",
            ),
            ("pyproject.toml", "[tool.coverage.run]\nbranch = true\n"),
        ]);
        let p = plan(Framework::Pytest, "python3 -m pytest", dir.path());
        let c = covered(&p, RunStatus::Passed).await;
        assert!(c.lines_pct > 50.0, "{c:?}");
    }

    #[tokio::test]
    async fn a_run_that_crashes_has_no_summary_not_the_last_one() {
        let dir = project(&[
            ("half.py", HALF_PY),
            (
                "test_half.py",
                "from half import a\n\n\ndef test_a():\n    assert a(1) == 1\n",
            ),
        ]);
        let p = plan(Framework::Pytest, "python3 -m pytest", dir.path());
        let reports = dir.path().join(".ralph/reports");
        let (changed, reader) = with_coverage(&p, &reports).expect("coverage plan");
        assert_eq!(run(&changed).await.status, RunStatus::Passed);
        assert_eq!(reader.read().expect("first summary").lines_pct, 50.0);

        // The process dies before coverage.py saves its data.
        std::fs::write(
            dir.path().join("conftest.py"),
            "import os\n\n\ndef pytest_sessionstart(session):\n    os._exit(3)\n",
        )
        .expect("write conftest");
        let second = run(&changed).await;
        assert_eq!(second.exit_code, Some(3), "{}", second.output);
        let err = reader.read().expect_err("no summary");
        assert!(
            matches!(
                err,
                CoverageError::NoSummary {
                    tool: "coverage.py",
                    ..
                }
            ),
            "{err}"
        );
        assert!(
            err.to_string().contains("wrote no coverage summary"),
            "{err}"
        );
    }

    #[test]
    fn vitest_without_its_coverage_provider() {
        // vitest itself, but not @vitest/coverage-v8.
        let dir = project(&[("package.json", r#"{"name":"v","private":true}"#)]);
        std::fs::create_dir_all(dir.path().join("node_modules")).expect("mkdir");
        std::os::unix::fs::symlink(
            node_tools().join("vitest"),
            dir.path().join("node_modules/vitest"),
        )
        .expect("link vitest");
        let p = plan(Framework::Vitest, "npx --no-install vitest run", dir.path());
        let err = check_coverage_tool(&p).expect_err("provider missing");
        assert_eq!(
            err.to_string(),
            "coverage_threshold is set but @vitest/coverage-v8 is not installed for vitest: \
             run `npm install --save-dev @vitest/coverage-v8`"
        );
        assert!(with_coverage(&p, &dir.path().join("r")).is_err());
    }

    #[test]
    fn mocha_without_c8() {
        let dir = project(&[("package.json", r#"{"name":"m","private":true}"#)]);
        let p = plan(Framework::Mocha, "npx --no-install mocha", dir.path());
        // No node_modules and nothing on PATH: c8 is nowhere.
        let nowhere = ToolEnv {
            path: Some(OsString::new()),
            cargo_home: None,
        };
        let err = pick_tool(&p, &nowhere).expect_err("c8 missing");
        assert_eq!(
            err.to_string(),
            "coverage_threshold is set but c8 is not installed for mocha: run `npm install \
             --save-dev c8`"
        );
        // With the tools linked in, it is found.
        std::os::unix::fs::symlink(node_tools(), dir.path().join("node_modules"))
            .expect("link node_modules");
        assert_eq!(pick_tool(&p, &nowhere).ok(), Some(CoverageTool::C8));
    }

    #[test]
    fn pytest_without_coverage_py() {
        // A virtual environment without pip has neither pytest nor coverage.
        let dir = project(&[]);
        let python = bare_python(dir.path());
        let p = plan(
            Framework::Pytest,
            &format!("{} -m pytest -rfE", python.display()),
            dir.path(),
        );
        let err = check_coverage_tool(&p).expect_err("coverage.py missing");
        assert_eq!(
            err.to_string(),
            format!(
                "coverage_threshold is set but coverage.py is not installed for pytest: run \
                 `{} -m pip install coverage`",
                python.display()
            )
        );
    }

    #[test]
    fn cargo_without_llvm_cov_or_tarpaulin() {
        let dir = project(&[]);
        let p = plan(
            Framework::Cargo,
            "cargo test --no-fail-fast -- -Z unstable-options --format json --report-time",
            dir.path(),
        );
        let bare = ToolEnv {
            path: Some(OsString::new()),
            cargo_home: Some(dir.path().to_path_buf()),
        };
        let err = pick_tool(&p, &bare).expect_err("nothing installed");
        assert_eq!(
            err.to_string(),
            "coverage_threshold is set but cargo-llvm-cov (or cargo-tarpaulin) is not installed \
             for cargo: run `cargo install cargo-llvm-cov` and `rustup component add \
             llvm-tools-preview`, or `cargo install cargo-tarpaulin`"
        );
        let nextest = plan(
            Framework::Nextest,
            "cargo nextest run --no-fail-fast",
            dir.path(),
        );
        assert!(matches!(
            pick_tool(&nextest, &bare),
            Err(CoverageError::ToolMissing {
                framework: "nextest",
                ..
            })
        ));

        // On this machine, as ralph-loop would see it.
        let here = ToolEnv::current();
        if !here.cargo_subcommand("cargo-llvm-cov") && !here.cargo_subcommand("cargo-tarpaulin") {
            let err = check_coverage_tool(&p).expect_err("neither is installed here");
            assert!(matches!(err, CoverageError::ToolMissing { .. }), "{err}");
        }
    }

    #[test]
    fn a_configured_command_cannot_gather_coverage() {
        let p = plan(Framework::Custom, "make test", Path::new("."));
        let err = check_coverage_tool(&p).expect_err("unsupported");
        assert!(
            err.to_string()
                .starts_with("coverage_threshold is set but ralph-loop cannot add coverage"),
            "{err}"
        );
    }

    #[test]
    fn cargo_commands_for_llvm_cov_and_tarpaulin() {
        let reports = tempfile::tempdir().expect("temp dir");
        let reports = reports.path();
        let test = plan(
            Framework::Cargo,
            "cargo test --no-fail-fast -- -Z unstable-options --format json --report-time",
            Path::new("/work/p"),
        );
        let (llvm, reader) = coverage_plan(&test, CoverageTool::LlvmCov, reports).expect("plan");
        let summary = reader.summary_path().display().to_string();
        assert_eq!(
            summary,
            format!("{}/coverage-cargo/llvm-cov.json", reports.display())
        );
        assert_eq!(
            llvm.command,
            format!(
                "rm -f {summary} && cargo llvm-cov --json --summary-only --output-path \
                 {summary} --no-fail-fast -- -Z unstable-options --format json --report-time"
            )
        );
        assert!(llvm
            .env
            .contains(&("CARGO_LLVM_COV_SETUP".into(), "no".into())));

        let nextest = TestPlan {
            env: vec![("NEXTEST_EXPERIMENTAL_LIBTEST_JSON".into(), "1".into())],
            ..plan(
                Framework::Nextest,
                "cargo nextest run --no-fail-fast --message-format libtest-json",
                Path::new("/work/p"),
            )
        };
        let (llvm, reader) = coverage_plan(&nextest, CoverageTool::LlvmCov, reports).expect("plan");
        let summary = reader.summary_path().display().to_string();
        assert_eq!(
            llvm.command,
            format!(
                "rm -f {summary} && cargo llvm-cov nextest --json --summary-only --output-path \
                 {summary} --no-fail-fast --message-format libtest-json"
            )
        );
        assert_eq!(llvm.framework, Framework::Nextest);

        let (tarp, reader) =
            coverage_plan(&nextest, CoverageTool::Tarpaulin, reports).expect("plan");
        let summary = reader.summary_path();
        assert!(summary.ends_with("coverage-nextest/tarpaulin-report.json"));
        assert_eq!(
            tarp.command,
            format!(
                "rm -f {} && cargo tarpaulin --out Json --output-dir {} --skip-clean \
                 --no-fail-fast -- -Z unstable-options --format json --report-time",
                summary.display(),
                summary.parent().expect("dir").display()
            )
        );
        // tarpaulin runs the test binaries as `cargo test` would.
        assert_eq!(tarp.framework, Framework::Cargo);
        assert!(tarp.env.contains(&("RUSTC_BOOTSTRAP".into(), "1".into())));
        assert!(!tarp.env.iter().any(|(k, _)| k.starts_with("NEXTEST_")));
    }

    fn testdata(name: &str) -> String {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("src/runner/testdata/coverage")
            .join(name);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    #[test]
    fn llvm_cov_summary() {
        let c = parse_summary(CoverageTool::LlvmCov, &testdata("llvm-cov.json")).expect("read");
        assert_eq!(c.tool, "cargo-llvm-cov");
        // 11 of 32 lines, 3 of 6 functions; no branch counts without --branch.
        assert_eq!(c.lines_pct, 34.38);
        assert_eq!(c.functions_pct, Some(50.0));
        assert_eq!(c.branches_pct, None);
    }

    #[test]
    fn tarpaulin_summaries_old_and_new() {
        let c = parse_summary(CoverageTool::Tarpaulin, &testdata("tarpaulin-report.json"))
            .expect("read");
        assert_eq!((c.tool.as_str(), c.lines_pct), ("cargo-tarpaulin", 50.0));
        // Before 0.29, only per-file counts: 2 of 6 lines.
        let old = parse_summary(
            CoverageTool::Tarpaulin,
            &testdata("tarpaulin-report-0.28.json"),
        )
        .expect("read");
        assert_eq!(old.lines_pct, 33.33);
        assert_eq!(
            parse_summary(CoverageTool::Tarpaulin, r#"{"coverage": 71.428571}"#)
                .expect("percent only")
                .lines_pct,
            71.43
        );
    }

    #[test]
    fn istanbul_with_nothing_to_count() {
        // What c8 writes when the tests loaded no code: "Unknown" for empty metrics.
        let empty = r#"{"total":{"lines":{"total":0,"covered":0,"skipped":0,"pct":"Unknown"},
            "statements":{"total":0,"covered":0,"skipped":0,"pct":"Unknown"},
            "functions":{"total":0,"covered":0,"skipped":0,"pct":"Unknown"},
            "branches":{"total":0,"covered":0,"skipped":0,"pct":"Unknown"}}}"#;
        let c = parse_summary(CoverageTool::C8, empty).expect("read");
        assert_eq!(
            (c.lines_pct, c.branches_pct, c.functions_pct),
            (0.0, None, None)
        );
        assert!(parse_summary(CoverageTool::C8, "{}").is_err());
        assert!(parse_summary(CoverageTool::C8, "not json").is_err());
    }

    #[test]
    fn coverage_py_falls_back_on_percentages() {
        let c = parse_summary(
            CoverageTool::CoveragePy,
            r#"{"totals":{"percent_covered":64.5,"percent_covered_display":"64"}}"#,
        )
        .expect("read");
        assert_eq!((c.lines_pct, c.branches_pct), (64.5, None));
    }

    #[test]
    fn python_commands_are_split_at_their_module() {
        let p = split_python("python3 -m pytest -rfE --junitxml=/r/j.xml").expect("pytest");
        assert_eq!(
            (p.python, p.module, p.rest),
            ("python3", "pytest", " -rfE --junitxml=/r/j.xml")
        );
        let p = split_python("uv run python -m unittest").expect("unittest");
        assert_eq!(
            (p.python, p.module, p.rest),
            ("uv run python", "unittest", "")
        );
        let p = split_python("pytest -q").expect("bare pytest");
        assert_eq!((p.python, p.module, p.rest), ("python3", "pytest", " -q"));
        assert_eq!(split_python("python3 -m pytest_cov"), None);
        assert_eq!(split_python("make test"), None);
    }

    #[test]
    fn shell_quoting() {
        assert_eq!(sh_quote("/tmp/a-b/c.json"), "/tmp/a-b/c.json");
        assert_eq!(sh_quote("/tmp/a b/it's"), r"'/tmp/a b/it'\''s'");
        assert_eq!(sh_quote(""), "''");
    }
}
