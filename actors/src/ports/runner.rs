//! The port to the tests: runs the project's test command(s) into one [`TestRun`].

use tokio_util::sync::CancellationToken;

use crate::schema::test_run::TestRun;

/// Why the tests could not be run at all. A test command that fails, hangs or floods memory is
/// not an error: it is a [`TestRun`] with that status.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RunnerError {
    /// The runner could not be set up (a coverage or lint tool asked for is missing): every run
    /// would fail the same way.
    #[error("{0}")]
    Setup(String),
    /// The runner itself failed (a report directory could not be made, a join failed).
    #[error("{0}")]
    Internal(String),
    /// A file to write holds a placeholder LocalGuard cannot put back: nothing was written.
    #[error("not written: {0}")]
    Unrestorable(String),
}

impl RunnerError {
    /// Whether running again may succeed; neither kind goes away by itself.
    pub fn is_transient(&self) -> bool {
        false
    }
}

/// Runs the project's tests. The run ends early, killing the whole process group, when `cancel`
/// fires; the result then has status `Error` and says so.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait::async_trait]
pub trait TestRunner: Send + Sync {
    async fn run(&self, cancel: CancellationToken) -> Result<TestRun, RunnerError>;
    /// The command line, for reports.
    fn command(&self) -> String;
}
