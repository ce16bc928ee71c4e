//! What to run for a project's tests: the tool found (or configured), the command that asks it
//! for a machine-readable report, and the limits it runs under.

use std::path::PathBuf;
use std::time::Duration;

use super::language::Language;
use super::report::ReportFormat;

/// A test tool ralph-loop knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Framework {
    Jest,
    Vitest,
    Mocha,
    /// node's built-in runner (`node --test`).
    Node,
    Pytest,
    Unittest,
    Cargo,
    Nextest,
    /// A command given with `-t` or `testing.command`: run as is, its output read as text.
    Custom,
}

impl Framework {
    pub fn as_str(self) -> &'static str {
        match self {
            Framework::Jest => "jest",
            Framework::Vitest => "vitest",
            Framework::Mocha => "mocha",
            Framework::Node => "node",
            Framework::Pytest => "pytest",
            Framework::Unittest => "unittest",
            Framework::Cargo => "cargo",
            Framework::Nextest => "nextest",
            Framework::Custom => "custom",
        }
    }
}

/// Where the tool's machine-readable report will be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportSpec {
    pub format: ReportFormat,
    /// The file the tool writes; `None`: the report is in its output (libtest's JSON lines).
    pub file: Option<PathBuf>,
}

/// One test command to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestPlan {
    pub language: Option<Language>,
    pub framework: Framework,
    /// The shell command (`sh -c`), report flags included.
    pub command: String,
    /// Where to run it: the manifest's directory.
    pub cwd: PathBuf,
    /// Set when the command asks the tool for a report.
    pub report: Option<ReportSpec>,
    /// Variables the command needs (e.g. `RUSTC_BOOTSTRAP=1` for libtest's JSON output).
    pub env: Vec<(String, String)>,
}

/// How tests run in isolation.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum SandboxKind {
    /// A process group on this machine.
    #[default]
    Process,
    /// A `docker run` container; `image` `None` picks one for the language.
    Docker { image: Option<String> },
}

/// The limits every test run gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    pub timeout: Duration,
    pub max_output_bytes: usize,
    /// `None`: no memory limit.
    pub memory_limit_mb: Option<u64>,
    pub sandbox: SandboxKind,
}

/// Everything the user said about how to test (flags and `testing:`, `sandbox:`,
/// `success_criteria:`, `linting:` in the config).
#[derive(Debug, Clone, PartialEq)]
pub struct TestingOptions {
    /// `-t` or `testing.command`: run as is instead of detecting.
    pub command: Option<String>,
    /// Where a configured command runs (the config file's directory, or the current one for -t).
    pub command_cwd: Option<PathBuf>,
    /// `--language` / `testing.language`: only this language's tests; `None` runs each language
    /// found in turn.
    pub language: Option<Language>,
    pub limits: Limits,
    /// `success_criteria.coverage_threshold` is set: gather coverage with each run.
    pub coverage: bool,
    /// `success_criteria.linter_errors` is set: run the linter after the tests.
    pub lint: bool,
    /// `linting.command`: the linter command; `None` picks eslint, ruff or clippy.
    pub lint_command: Option<String>,
    /// A directory for report files, inside the project so a container sees it too
    /// (`.ralph/session-<id>/reports`).
    pub report_dir: PathBuf,
    /// The crate whose lines the coverage is read for when it is a dependency of the one tested
    /// (a Chaos harness crate testing the user's); `None`: the tested crate's own.
    pub coverage_of: Option<DependencyCoverage>,
}

/// A dependency measured by cargo-llvm-cov: instrumented (`--dep-coverage`), then reported from
/// the tested crate's manifest, which lists a path dependency's files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DependencyCoverage {
    /// Its package name.
    pub package: String,
    /// The manifest of the crate whose tests run.
    pub manifest: PathBuf,
}
