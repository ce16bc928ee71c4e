//! The port to the session folder `.ralph/session-<uuid>/`: everything needed to report and
//! resume. The disk is for recovery: within a run, values travel in memory, and the store is
//! read only when a session resumes.

use crate::ports::file_io::{FileIoError, FromFileIo};
use crate::schema::report::Report;
use crate::schema::state::{IterationRecord, SessionState};
use crate::schema::test_run::TestRun;

/// Why the session folder could not be read or written.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StoreError {
    #[error(transparent)]
    Io(#[from] FileIoError),
    /// A file is there but is not what ralph-loop wrote (truncated by hand, another version).
    #[error("{path} is damaged: {message}")]
    Damaged { path: String, message: String },
}

impl FromFileIo for StoreError {}

impl StoreError {
    /// Whether trying again may succeed (an interrupted or busy write); a full disk, a denied
    /// permission or a damaged file stay so.
    pub fn is_transient(&self) -> bool {
        match self {
            StoreError::Io(e) => e.is_transient(),
            StoreError::Damaged { .. } => false,
        }
    }
}

/// The session folder.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait::async_trait]
pub trait SessionStore: Send + Sync {
    /// The newest `test-results-iteration-<N>.json`: read once, when a session resumes.
    async fn last_test_results(&self) -> Result<Option<TestRun>, StoreError>;
    async fn save_test_results(&self, iteration: u32, run: &TestRun) -> Result<(), StoreError>;
    /// A run of Chaos's round `round` file during iteration `iteration`
    /// (`test-results-chaos-iteration-<N>-round-<R>.json`).
    async fn save_adversarial_results(
        &self,
        iteration: u32,
        round: u32,
        run: &TestRun,
    ) -> Result<(), StoreError>;
    /// The last mutation run's mutants in the mutation-testing-report-schema
    /// (`mutation-report.json`); returns the file's path relative to the project root.
    async fn save_mutation_report(
        &self,
        document: &serde_json::Value,
    ) -> Result<String, StoreError>;
    async fn append_iteration(&self, record: &IterationRecord) -> Result<(), StoreError>;
    async fn save_state(&self, state: &SessionState) -> Result<(), StoreError>;
    async fn save_report(&self, report: &Report) -> Result<(), StoreError>;
    /// `test-results-iteration-<N>.json`, if it was saved: read when a session resumes on a
    /// state other than its last.
    async fn test_results(&self, iteration: u32) -> Result<Option<TestRun>, StoreError>;
    /// Keeps the content written at iteration `iteration` (0: the original), so that the run
    /// can go back to it.
    async fn save_checkpoint(&self, iteration: u32, content: &str) -> Result<(), StoreError>;
    async fn load_checkpoint(&self, iteration: u32) -> Result<Option<String>, StoreError>;
}
