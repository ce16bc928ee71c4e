//! The test-runner trait and the unified test-result schema (version 1).
//!
//! The schema is documented in `docs/test-runners.md`; later runners fill more of it (per-test
//! durations, coverage) without breaking readers of version 1.

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// The command exited 0.
    Passed,
    /// The command exited non-zero.
    Failed,
    /// The command ran past its timeout and its process group was killed.
    Timeout,
    /// The command could not be started.
    Error,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CaseStatus {
    Pass,
    Fail,
    Skip,
    Timeout,
}

/// One test the output named.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestCase {
    /// A stable id: `file::name` where the tool gives both.
    pub id: String,
    pub status: CaseStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Totals {
    pub passed: u32,
    pub failed: u32,
    pub skipped: u32,
}

/// One run of the test command.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestRun {
    pub schema_version: u32,
    pub command: String,
    pub status: RunStatus,
    pub exit_code: Option<i32>,
    pub duration_ms: u64,
    /// The runner recognised the tool's output and filled `totals` and `tests`.
    pub parsed: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub framework: Option<String>,
    pub totals: Totals,
    /// The failing tests (and others the output named).
    pub tests: Vec<TestCase>,
    /// stdout and stderr interleaved as they arrived, capped; see `output_truncated`.
    pub output: String,
    pub output_truncated: bool,
}

impl TestRun {
    pub fn passed(&self) -> bool {
        self.status == RunStatus::Passed
    }

    pub fn failing_ids(&self) -> Vec<&str> {
        self.tests
            .iter()
            .filter(|t| matches!(t.status, CaseStatus::Fail | CaseStatus::Timeout))
            .map(|t| t.id.as_str())
            .collect()
    }

    /// A one-line summary for logs and the live view.
    pub fn summary(&self) -> String {
        let t = self.totals;
        match self.status {
            RunStatus::Passed if self.parsed => format!("passed ({} tests)", t.passed),
            RunStatus::Passed => "passed".into(),
            RunStatus::Timeout => format!("timed out after {} ms", self.duration_ms),
            RunStatus::Error => "could not run".into(),
            RunStatus::Failed if self.parsed => {
                format!("failed: {} failed, {} passed", t.failed, t.passed)
            }
            RunStatus::Failed => format!("failed (exit {})", self.exit_code.unwrap_or(-1)),
        }
    }
}

/// Runs the project's tests. The run ends early, killing the whole process group, when `cancel`
/// fires; the result then has status `Error` and says so.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait::async_trait]
pub trait TestRunner: Send + Sync {
    async fn run(&self, cancel: CancellationToken) -> Result<TestRun, String>;
    /// The command line, for reports.
    fn command(&self) -> String;
}
