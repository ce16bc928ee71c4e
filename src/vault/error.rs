//! [`VaultError`]: what can go wrong opening, reading or writing the vault, and its form as the
//! core's memory port sees it ([`VaultError::into_port`]).
//!
//! Its own module, below everything else in the vault, so that the store, the opening and the
//! housekeeping all depend on it and it on none of them.

use std::path::PathBuf;

use ralph_actors::ports::memory::MemoryError;

use super::embed::EmbedError;

#[derive(Debug, thiserror::Error)]
pub enum VaultError {
    #[error("cannot open the memory vault at {uri}: {source}")]
    Open {
        uri: String,
        #[source]
        source: lancedb::Error,
    },
    #[error("memory vault: {0}")]
    Lance(#[from] lancedb::Error),
    #[error("memory vault data: {0}")]
    Arrow(#[from] arrow::error::ArrowError),
    #[error("memory vault: {0}")]
    Schema(String),
    #[error(transparent)]
    Embed(#[from] EmbedError),
    #[error("embedding: {0}")]
    Embedding(#[from] MemoryError),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// LocalGuard could not seal what was to be stored or embedded.
    #[error("local guard: {0}")]
    Guard(String),
    #[error("{path}:{line}: not an exported attempt: {source}")]
    Import {
        path: PathBuf,
        line: usize,
        #[source]
        source: serde_json::Error,
    },
}

impl VaultError {
    /// This error as the core's memory port sees it: a store failure, and whether it may pass.
    pub fn into_port(self) -> MemoryError {
        match self {
            VaultError::Embedding(e) => e,
            other => {
                let transient = match &other {
                    VaultError::Lance(e) | VaultError::Open { source: e, .. } => {
                        crate::http::retry::Attempted::is_transient(e)
                    }
                    VaultError::Io { source, .. } => {
                        ralph_actors::ports::workspace::is_transient_io(source)
                    }
                    _ => false,
                };
                MemoryError::Store {
                    message: other.to_string(),
                    transient,
                }
            }
        }
    }
}

pub type Result<T, E = VaultError> = std::result::Result<T, E>;
