//! Why the agent cannot start or go on.

use std::path::PathBuf;

use crate::git::GitError;
use crate::inbox::InboxError;

/// Why the agent cannot start or go on.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error(
        "agent mode commits each finished spec: run it inside a git repository ({0} is not in one)"
    )]
    NotARepository(PathBuf),
    #[error("the repository at {0} has no commit yet: commit the project first, so each spec's work can be committed or stashed on top of it")]
    NoCommit(PathBuf),
    #[error(
        "tracked files have uncommitted changes ({0}): commit or stash them first, or pass \
         --allow-dirty (the agent commits and stashes only the files each spec changes)"
    )]
    Dirty(String),
    #[error(transparent)]
    Lock(#[from] AgentLockError),
    #[error(transparent)]
    Inbox(#[from] InboxError),
    #[error(transparent)]
    Git(#[from] GitError),
    #[error("{}: {message}", path.display())]
    Damaged { path: PathBuf, message: String },
    #[error("{context}: {source}")]
    Io {
        context: String,
        source: std::io::Error,
    },
    #[error("{flag} must be {what}, not {value}")]
    Flag {
        flag: &'static str,
        what: &'static str,
        value: String,
    },
}

impl AgentError {
    pub fn exit_code(&self) -> i32 {
        match self {
            AgentError::Git(_)
            | AgentError::Io { .. }
            | AgentError::Damaged { .. }
            | AgentError::Lock(AgentLockError::Io { .. }) => 1,
            AgentError::Inbox(e) => e.exit_code(),
            _ => 2,
        }
    }
}

impl AgentError {
    pub(crate) fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> AgentError {
        let context = context.into();
        move |source| AgentError::Io { context, source }
    }
}

/// Why the agent's lock could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum AgentLockError {
    #[error(
        "another agent is working through this inbox (pid {0}); stop it first, or let it finish"
    )]
    Held(String),
    #[error("cannot lock {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}
