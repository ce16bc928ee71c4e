//! The ports to the MemoryVault's storage and embedding model. The binary crate implements them
//! over LanceDB and over offline or provider embeddings; the ranking in [`crate::memory`] is
//! tested with mocks.

use ralph_guard::{Guard, GuardError};

use crate::schema::attempt::{FixAttempt, Scored};

/// Texts that have passed LocalGuard, the only input an [`Embedder`] takes (a remote embedding
/// model is a provider like any other); made only by [`GuardedTexts::seal`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuardedTexts {
    texts: Vec<String>,
}

impl GuardedTexts {
    /// `texts`, each passed through `guard`.
    pub fn seal(guard: &Guard, texts: Vec<String>) -> Result<Self, GuardError> {
        let texts = texts
            .iter()
            .map(|t| guard.seal(t).map(|m| m.text))
            .collect::<Result<_, _>>()?;
        Ok(Self { texts })
    }

    pub fn texts(&self) -> &[String] {
        &self.texts
    }

    pub fn into_texts(self) -> Vec<String> {
        self.texts
    }
}

/// Why the MemoryVault could not recall or record. A run never fails for memory: the
/// Supervisor goes on without it and the report says why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MemoryError {
    /// The embedding model failed (after its retries) or answered something unusable.
    #[error("{message}")]
    Embed { message: String, transient: bool },
    /// The vector store failed: I/O, a commit that kept conflicting, a schema it cannot read.
    #[error("{message}")]
    Store { message: String, transient: bool },
    /// The store could not be opened (it is opened beside the run's first steps, so this is
    /// known at its first use): a corrupt or unreadable database.
    #[error("{0}")]
    Unavailable(String),
    /// A store or embedder panicked inside the vault.
    #[error("the memory vault panicked: {0}")]
    Panicked(String),
    /// The vault's actor stopped before it answered.
    #[error("the memory vault stopped: {0}")]
    Stopped(String),
    /// The run was cancelled while the vault was working.
    #[error("cancelled")]
    Cancelled,
}

impl MemoryError {
    /// An embedder's failure that no retry will mend.
    pub fn embed(message: impl Into<String>) -> Self {
        MemoryError::Embed {
            message: message.into(),
            transient: false,
        }
    }

    /// A store's failure that no retry will mend.
    pub fn store(message: impl Into<String>) -> Self {
        MemoryError::Store {
            message: message.into(),
            transient: false,
        }
    }

    /// Whether asking again later may succeed (a rate limit, a server error, a commit conflict).
    pub fn is_transient(&self) -> bool {
        match self {
            MemoryError::Embed { transient, .. } | MemoryError::Store { transient, .. } => {
                *transient
            }
            MemoryError::Unavailable(_)
            | MemoryError::Panicked(_)
            | MemoryError::Stopped(_)
            | MemoryError::Cancelled => false,
        }
    }
}

/// Stores attempts with their vectors and finds the nearest. One store holds the vectors of
/// one embedding model only (see [`Embedder::id`]).
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait::async_trait]
pub trait VectorStore: Send + Sync {
    /// Appends attempts, each with its signature's vector.
    async fn insert(&self, rows: Vec<(FixAttempt, Vec<f32>)>) -> Result<(), MemoryError>;
    /// Up to `limit` attempts whose cosine similarity to `vector` is at least `min_similarity`,
    /// most similar first.
    async fn nearest(
        &self,
        vector: Vec<f32>,
        limit: usize,
        min_similarity: f32,
    ) -> Result<Vec<Scored>, MemoryError>;
}

/// Turns signatures into vectors.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait::async_trait]
pub trait Embedder: Send + Sync {
    /// Names the model and its dimension (`hashed-ngrams-v1/256`, `openai/text-embedding-3-small/1536`):
    /// vectors of different ids are never stored together.
    fn id(&self) -> String;
    /// The length of every vector it returns.
    fn dims(&self) -> usize;
    /// One vector per text, in order.
    async fn embed(&self, texts: GuardedTexts) -> Result<Vec<Vec<f32>>, MemoryError>;
}
