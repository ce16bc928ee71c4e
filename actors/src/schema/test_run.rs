//! The unified test-result schema (version 2).
//!
//! Every test tool's output (jest, vitest, mocha, node, pytest, unittest, cargo test, nextest) is
//! read into these types, saved as `test-results-iteration-<N>.json` and documented, with a JSON
//! Schema generated from these types, in `docs/test-results.md`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub const SCHEMA_VERSION: u32 = 2;

/// How the test command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// The command exited 0 (and, after flaky retries, no test failed for good).
    Passed,
    /// The command exited non-zero.
    Failed,
    /// The command ran past its timeout and its process group was killed.
    Timeout,
    /// The command's processes used more memory than the sandbox allows and were killed.
    MemoryLimit,
    /// The command could not be started, or the run was interrupted.
    Error,
}

/// One test's outcome.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CaseStatus {
    #[default]
    Pass,
    Fail,
    Skip,
    Timeout,
}

/// What kind of failure a test (or a run that named no test) shows.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Category {
    /// The code does not parse or compile: SyntaxError, IndentationError, rustc errors, TS errors.
    Syntax,
    /// The code runs and gives a wrong answer or throws: assertion failures, TypeError, panics.
    Logic,
    /// The project cannot run as set up: a missing module or crate, a missing command, no
    /// permission, a refused connection.
    Environment,
    /// The test failed and then passed when run again.
    Flaky,
    /// A time or memory limit: a test or run timeout, out of memory, a stack overflow.
    Performance,
}

impl Category {
    pub fn as_str(self) -> &'static str {
        match self {
            Category::Syntax => "SYNTAX",
            Category::Logic => "LOGIC",
            Category::Environment => "ENVIRONMENT",
            Category::Flaky => "FLAKY",
            Category::Performance => "PERFORMANCE",
        }
    }

    /// The category an [`as_str`](Category::as_str) name stands for.
    pub fn parse(name: &str) -> Option<Category> {
        [
            Category::Syntax,
            Category::Logic,
            Category::Environment,
            Category::Flaky,
            Category::Performance,
        ]
        .into_iter()
        .find(|c| c.as_str() == name)
    }
}

impl std::fmt::Display for Category {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A place in a source file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Location {
    /// Relative to the directory the command ran in, when under it.
    pub file: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub column: Option<u32>,
}

/// One test the tool reported.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TestCase {
    /// A stable id: `file::name` where the tool gives both (pytest's node id, cargo's path).
    pub id: String,
    /// The test's own name, with its suite or describe blocks (`median > handles even length`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The test file, relative to the directory the command ran in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    pub status: CaseStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<f64>,
    /// Set on failing and timed-out tests, and on FLAKY ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<Category>,
    /// The exception or error class: `AssertionError`, `TypeError`, `panic`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_type: Option<String>,
    /// The failure message (first lines of the error), capped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The stack trace or traceback, capped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stack: Option<String>,
    /// Where the failure was raised, in the project's own code when the trace says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<Location>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdout: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stderr: Option<String>,
    /// A hash of the id, category and normalised message: the same failure in two runs has the
    /// same fingerprint. Feeds the entropy breaker.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
}

/// Counts over the tests the tool reported.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Totals {
    pub passed: u32,
    pub failed: u32,
    pub skipped: u32,
    #[serde(default)]
    pub timed_out: u32,
    /// Tests that failed and then passed on a retry (counted in `passed`).
    #[serde(default)]
    pub flaky: u32,
}

impl Totals {
    pub fn total(&self) -> u32 {
        self.passed + self.failed + self.skipped + self.timed_out
    }
}

/// How the results were read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ResultSource {
    /// From the tool's machine-readable report (jest/vitest/mocha JSON, JUnit XML, libtest JSON).
    Report,
    /// From the tool's plain-text output: the report was missing or unreadable (see
    /// `parse_error`), or the tool has none.
    Text,
    /// Nothing was recognised: only `output` and the exit code tell what happened.
    #[default]
    Raw,
}

/// Code coverage of the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Coverage {
    /// `c8`, `vitest`, `jest`, `coverage.py`, `cargo-llvm-cov`, `cargo-tarpaulin`.
    pub tool: String,
    /// Percent of lines covered, 0 to 100.
    pub lines_pct: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branches_pct: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub functions_pct: Option<f64>,
    /// The target file's lines as the tool counted them, when it reports lines per file
    /// (istanbul's `coverage-final.json`, `coverage json`): what the coverage of the lines a
    /// run changed is judged on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<LineHits>,
}

/// One file's coverable lines (1-based), those some test ran and those none did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct LineHits {
    pub covered: Vec<u32>,
    pub missed: Vec<u32>,
}

impl LineHits {
    /// The lines covered in either, coverable in either: two runs' hits as one.
    pub fn union(&self, other: &LineHits) -> LineHits {
        let covered: std::collections::BTreeSet<u32> =
            self.covered.iter().chain(&other.covered).copied().collect();
        let missed = self
            .missed
            .iter()
            .chain(&other.missed)
            .copied()
            .filter(|l| !covered.contains(l))
            .collect::<std::collections::BTreeSet<u32>>();
        LineHits {
            covered: covered.into_iter().collect(),
            missed: missed.into_iter().collect(),
        }
    }
}

/// The linter's findings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Lint {
    /// `eslint`, `ruff`, `clippy`, or the configured command.
    pub tool: String,
    pub command: String,
    pub errors: u32,
    pub warnings: u32,
    /// The first findings, one per line (`file:line:col: message`), capped.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<String>,
}

/// One success criterion, judged on this run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Criterion {
    /// `tests_pass`, `coverage_threshold`, `linter_errors`.
    pub name: String,
    pub met: bool,
    /// What was measured against what was asked: `coverage 72.5% < 80%`.
    pub detail: String,
}

/// The limits the command ran under.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Sandbox {
    /// `process` (a process group on this machine) or `docker`.
    pub kind: String,
    pub timeout_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_limit_mb: Option<u64>,
    /// The most memory (resident set, summed over the command's processes) seen, in MiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_memory_mb: Option<u64>,
}

/// One command of a run that ran several (one per language, `testing.language` unset).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Suite {
    pub language: Option<String>,
    pub framework: Option<String>,
    pub command: String,
    pub status: RunStatus,
    pub exit_code: Option<i32>,
    pub duration_ms: u64,
    pub source: ResultSource,
    pub totals: Totals,
}

/// One run of the test command(s): `test-results-iteration-<N>.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TestRun {
    pub schema_version: u32,
    pub command: String,
    /// `typescript`, `javascript`, `python`, `rust`, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
    /// `jest`, `vitest`, `mocha`, `node`, `pytest`, `unittest`, `cargo`, `nextest`, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub framework: Option<String>,
    pub status: RunStatus,
    pub exit_code: Option<i32>,
    pub duration_ms: u64,
    /// How the results were read; `raw` means only `output` is known.
    #[serde(default)]
    pub source: ResultSource,
    /// The report format read: `jest-json`, `vitest-json`, `mocha-json`, `junit-xml`,
    /// `libtest-json`, or the text parser's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// Why the tool's machine-readable report could not be used (so the text was read instead).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parse_error: Option<String>,
    pub totals: Totals,
    /// The category of the run's failure: the most common among its failing tests, or read from
    /// the output when no test was named (a syntax error at import, a missing module).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<Category>,
    /// Every test the tool reported. Failing tests first are not guaranteed; see
    /// [`TestRun::failures`].
    pub tests: Vec<TestCase>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coverage: Option<Coverage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lint: Option<Lint>,
    /// The success criteria judged on this run; empty before the Supervisor judges it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub criteria: Vec<Criterion>,
    /// Re-runs made for flaky tests (`testing.flaky_retries`).
    #[serde(default)]
    pub retries: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<Sandbox>,
    /// One entry per command when several ran (one per language); empty otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub suites: Vec<Suite>,
    /// stdout and stderr interleaved as they arrived, capped; see `output_truncated`.
    pub output: String,
    pub output_truncated: bool,
}

impl TestRun {
    /// An empty run of `command`: no tests, status `Error`, nothing read.
    pub fn new(command: impl Into<String>, status: RunStatus) -> Self {
        Self {
            schema_version: SCHEMA_VERSION,
            command: command.into(),
            language: None,
            framework: None,
            status,
            exit_code: None,
            duration_ms: 0,
            source: ResultSource::Raw,
            format: None,
            parse_error: None,
            totals: Totals::default(),
            category: None,
            tests: Vec::new(),
            coverage: None,
            lint: None,
            criteria: Vec::new(),
            retries: 0,
            sandbox: None,
            suites: Vec::new(),
            output: String::new(),
            output_truncated: false,
        }
    }

    /// The tests ran and passed (the criteria are judged separately).
    pub fn passed(&self) -> bool {
        self.status == RunStatus::Passed
    }

    /// Whether the tool's results were read (from its report or its text).
    pub fn parsed(&self) -> bool {
        self.source != ResultSource::Raw
    }

    /// Every success criterion judged is met (and at least the tests passed).
    pub fn criteria_met(&self) -> bool {
        self.passed() && self.criteria.iter().all(|c| c.met)
    }

    /// The criteria other than the tests passing that are not met, as one line for logs and
    /// the live view.
    pub fn unmet_criteria(&self) -> Option<String> {
        let unmet: Vec<String> = self
            .criteria
            .iter()
            .filter(|c| !c.met && c.name != "tests_pass")
            .map(|c| format!("{}: {}", c.name, c.detail))
            .collect();
        (!unmet.is_empty()).then(|| unmet.join("; "))
    }

    /// The failing and timed-out tests.
    pub fn failures(&self) -> impl Iterator<Item = &TestCase> {
        self.tests
            .iter()
            .filter(|t| matches!(t.status, CaseStatus::Fail | CaseStatus::Timeout))
    }

    pub fn failing_ids(&self) -> Vec<&str> {
        self.failures().map(|t| t.id.as_str()).collect()
    }

    /// The tests that failed and then passed on a re-run, in order.
    pub fn flaky_ids(&self) -> Vec<&str> {
        self.tests
            .iter()
            .filter(|t| t.category == Some(Category::Flaky))
            .map(|t| t.id.as_str())
            .collect()
    }

    /// A one-line summary for logs and the live view.
    pub fn summary(&self) -> String {
        let t = self.totals;
        let flaky = if t.flaky > 0 {
            format!(", {} flaky", t.flaky)
        } else {
            String::new()
        };
        let category = self.category.map(|c| format!(" [{c}]")).unwrap_or_default();
        match self.status {
            RunStatus::Passed if self.parsed() => format!("passed ({} tests{flaky})", t.passed),
            RunStatus::Passed => "passed".into(),
            RunStatus::Timeout => format!("timed out after {} ms", self.duration_ms),
            RunStatus::MemoryLimit => {
                let limit = self
                    .sandbox
                    .as_ref()
                    .and_then(|s| s.memory_limit_mb)
                    .map(|m| format!(" of {m} MB"))
                    .unwrap_or_default();
                format!("killed: over the memory limit{limit}")
            }
            RunStatus::Error => "could not run".into(),
            RunStatus::Failed if self.parsed() && t.failed + t.timed_out > 0 => {
                let timed_out = if t.timed_out > 0 {
                    format!(", {} timed out", t.timed_out)
                } else {
                    String::new()
                };
                format!(
                    "failed: {} failed{timed_out}, {} passed{flaky}{category}",
                    t.failed, t.passed
                )
            }
            RunStatus::Failed => format!(
                "failed (exit {}){category}",
                self.exit_code.map_or_else(|| "?".into(), |c| c.to_string())
            ),
        }
    }
}
