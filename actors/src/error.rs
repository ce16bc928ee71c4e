//! Errors of the orchestration core: what ends a role's step. The Supervisor turns each into the
//! run's outcome (`budget_exceeded` for the budget, `interrupted` for a cancel, `error` for the
//! rest), so none of them is lost.

use crate::ports::llm::LlmError;
use crate::ports::runner::RunnerError;
use crate::ports::store::StoreError;
use crate::ports::user::UserError;
use crate::ports::workspace::WorkspaceError;
use crate::prompt::templates::TemplateError;
use crate::role::Role;

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
    Runner(#[from] RunnerError),
    #[error("workspace: {0}")]
    Workspace(#[from] WorkspaceError),
    #[error("session store: {0}")]
    Store(#[from] StoreError),
    #[error(transparent)]
    User(#[from] UserError),
    /// A prompt template that compiled at start-up failed to render (a variable of the wrong
    /// shape in a user's override).
    #[error(transparent)]
    Template(#[from] TemplateError),
    /// LocalGuard refused a call (`block` mode) or a text it cannot put values back into.
    #[error("local guard: {0}")]
    Guard(#[from] ralph_guard::GuardError),
    /// A role's actor stopped before it answered.
    #[error("the {role} actor stopped: {message}")]
    Stopped { role: Role, message: String },
    #[error("cancelled")]
    Cancelled,
}

impl Error {
    /// Whether the same step may succeed if tried again: only a port's passing trouble.
    pub fn is_transient(&self) -> bool {
        match self {
            Error::Llm(e) => e.is_transient(),
            Error::Runner(e) => e.is_transient(),
            Error::Workspace(e) => e.is_transient(),
            Error::Store(e) => e.is_transient(),
            Error::User(e) => e.is_transient(),
            Error::Budget(_)
            | Error::RoleFailed { .. }
            | Error::RolePanicked { .. }
            | Error::Template(_)
            | Error::Guard(_)
            | Error::Stopped { .. }
            | Error::Cancelled => false,
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
