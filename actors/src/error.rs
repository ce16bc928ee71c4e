//! Errors of the orchestration core.

use crate::llm::LlmError;
use crate::roles::Role;

/// An error that ends a role's step. The Supervisor turns each into a typed outcome.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Llm(#[from] LlmError),
    #[error("budget exceeded: {0}")]
    Budget(String),
    #[error("{role} failed: {message}")]
    RoleFailed { role: Role, message: String },
    #[error("{role} panicked: {message}")]
    RolePanicked { role: Role, message: String },
    #[error("test runner: {0}")]
    Runner(String),
    #[error("workspace: {0}")]
    Workspace(String),
    #[error("cancelled")]
    Cancelled,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
