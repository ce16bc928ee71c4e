//! [`FileIoError`]: a file that could not be read or written, the part the ports' own errors
//! ([`StoreError`](super::store::StoreError), [`WorkspaceError`](super::workspace::WorkspaceError))
//! share; [`FromFileIo`], their constructors for it; and [`is_transient_io`], which of those may
//! pass.

use std::sync::Arc;

/// A file that could not be read or written, with its path as the port names it.
#[derive(Debug, Clone, thiserror::Error)]
pub enum FileIoError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        #[source]
        source: Arc<std::io::Error>,
    },
    #[error("cannot write {path}: {source}")]
    Write {
        path: String,
        #[source]
        source: Arc<std::io::Error>,
    },
}

impl FileIoError {
    pub fn read(path: impl Into<String>, source: std::io::Error) -> Self {
        FileIoError::Read {
            path: path.into(),
            source: Arc::new(source),
        }
    }

    pub fn write(path: impl Into<String>, source: std::io::Error) -> Self {
        FileIoError::Write {
            path: path.into(),
            source: Arc::new(source),
        }
    }

    /// Whether trying again may succeed (see [`is_transient_io`]).
    pub fn is_transient(&self) -> bool {
        match self {
            FileIoError::Read { source, .. } | FileIoError::Write { source, .. } => {
                is_transient_io(source)
            }
        }
    }
}

/// A port's error that a [`FileIoError`] can be: `read` and `write` make one of it.
pub trait FromFileIo: From<FileIoError> {
    /// `path` could not be read.
    fn read(path: impl Into<String>, source: std::io::Error) -> Self {
        FileIoError::read(path, source).into()
    }

    /// `path` could not be written.
    fn write(path: impl Into<String>, source: std::io::Error) -> Self {
        FileIoError::write(path, source).into()
    }
}

/// The I/O errors that say "not now" rather than "no".
pub fn is_transient_io(e: &std::io::Error) -> bool {
    use std::io::ErrorKind as K;
    matches!(
        e.kind(),
        K::Interrupted | K::WouldBlock | K::TimedOut | K::ResourceBusy
    )
}
