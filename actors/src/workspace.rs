//! The project files an iteration reads and writes, and the session store under `.ralph/`.

use serde::{Deserialize, Serialize};

use crate::runner::TestRun;

/// A file of the project, with its path as the user gave it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceFile {
    pub path: String,
    pub content: String,
}

/// The project as an iteration sees it, read fresh from disk each time.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait::async_trait]
pub trait Workspace: Send + Sync {
    async fn target(&self) -> Result<SourceFile, String>;
    /// Replaces the target's content atomically: a reader sees the old or the new file, never part.
    async fn write_target(&self, content: String) -> Result<(), String>;
    async fn test_file(&self) -> Result<Option<SourceFile>, String>;
    /// The user's instructions: `-p FILE` or `<target>.prompt.md`.
    async fn prompt(&self) -> Result<Option<SourceFile>, String>;
    /// The project manifest (`package.json`, `pyproject.toml`, `Cargo.toml`, ...).
    async fn manifest(&self) -> Result<Option<SourceFile>, String>;
}

/// What one iteration did, one JSON object per line of `iterations.log`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IterationRecord {
    pub iteration: u32,
    pub started_at: String,
    pub duration_ms: u64,
    pub critic_rejections: u32,
    pub critic_approved: bool,
    pub tests: String,
    pub passed: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
    pub cost_usd: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
}

/// The session folder `.ralph/session-<uuid>/`: everything needed to report and resume.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait::async_trait]
pub trait SessionStore: Send + Sync {
    async fn last_test_results(&self) -> Result<Option<TestRun>, String>;
    async fn save_test_results(&self, iteration: u32, run: &TestRun) -> Result<(), String>;
    async fn append_iteration(&self, record: &IterationRecord) -> Result<(), String>;
    async fn save_state(&self, state: &crate::supervisor::SessionState) -> Result<(), String>;
    async fn save_report(&self, report: &crate::report::Report) -> Result<(), String>;
}
