//! The port to the project's files: what an iteration reads, and the one file it writes.

use serde::{Deserialize, Serialize};

pub use crate::ports::file_io::is_transient_io;
use crate::ports::file_io::{FileIoError, FromFileIo};
use crate::schema::context::ContextPack;

/// A file of the project, with its path as the user gave it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceFile {
    pub path: String,
    pub content: String,
}

/// Why the project's files could not be read or written.
#[derive(Debug, Clone, thiserror::Error)]
pub enum WorkspaceError {
    #[error(transparent)]
    Io(#[from] FileIoError),
    /// The import graph could not be built (the project root is gone, unreadable).
    #[error("{0}")]
    Graph(String),
    /// The blocking task that did the work failed.
    #[error("{0}")]
    Internal(String),
    /// A text to write holds a placeholder LocalGuard cannot put back: nothing was written.
    #[error("not written: {0}")]
    Unrestorable(String),
}

impl FromFileIo for WorkspaceError {}

impl WorkspaceError {
    /// Whether trying again may succeed: the system was interrupted or out of a resource for
    /// a moment. A missing file or a denied permission stays so.
    pub fn is_transient(&self) -> bool {
        match self {
            WorkspaceError::Io(e) => e.is_transient(),
            WorkspaceError::Graph(_)
            | WorkspaceError::Internal(_)
            | WorkspaceError::Unrestorable(_) => false,
        }
    }
}

/// The project as an iteration sees it, read fresh from disk each time.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait::async_trait]
pub trait Workspace: Send + Sync {
    async fn target(&self) -> Result<SourceFile, WorkspaceError>;
    /// Replaces the target's content atomically: a reader sees the old or the new file, never part.
    async fn write_target(&self, content: String) -> Result<(), WorkspaceError>;
    async fn test_file(&self) -> Result<Option<SourceFile>, WorkspaceError>;
    /// The user's instructions: `-p FILE` or `<target>.prompt.md`.
    async fn prompt(&self) -> Result<Option<SourceFile>, WorkspaceError>;
    /// The project manifest (`package.json`, `pyproject.toml`, `Cargo.toml`, ...).
    async fn manifest(&self) -> Result<Option<SourceFile>, WorkspaceError>;
    /// The project files nearest the target in its import graph, packed so that they, the
    /// target and its test file take at most `budget_tokens` tokens as `model` counts them.
    /// The target and its test file have their own places in a prompt and are not repeated.
    async fn related(&self, model: &str, budget_tokens: u32)
        -> Result<ContextPack, WorkspaceError>;
}
