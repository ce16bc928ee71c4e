//! Errors at the edge of a run, each with the exit code of the brief.

use ralph_actors::llm::LlmError;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    /// A usage error: a bad flag, a missing file, nothing to run.
    #[error("{0}")]
    Usage(String),
    #[error("{context}: {source}")]
    Io {
        context: String,
        source: std::io::Error,
    },
    #[error(transparent)]
    Llm(#[from] LlmError),
    #[error("{0}")]
    Internal(String),
}

impl Error {
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            context: context.into(),
            source,
        }
    }

    /// 2 for usage and configuration errors, 1 for everything else.
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Config(_) | Error::Usage(_) => 2,
            Error::Llm(LlmError::Config { .. }) => 2,
            _ => 1,
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
