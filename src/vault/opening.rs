//! [`Opening`]: a vault store opened in the background, so that a run does not wait for
//! LanceDB before its baseline test run starts.
//!
//! Opening a table (connecting, listing versions, reading the manifest) took 6 to 8 ms of the
//! time before the first test run (measured in issue 18), and the store is first needed only
//! after that test run, to recall. So the open is a task started with the run, and every use
//! of the store waits for it. A store that failed to open answers every call with
//! [`MemoryError::Unavailable`], which the Supervisor reports as a vault that could not be
//! opened: the run goes on without memory.

use std::sync::Arc;

use futures::future::{BoxFuture, FutureExt, Shared};
use ralph_actors::ports::memory::{MemoryError, VectorStore};
use ralph_actors::schema::attempt::{FixAttempt, Scored};

use super::error::Result;
use super::store::LanceStore;

/// The store once open, or why it could not be.
type Opened = std::result::Result<Arc<LanceStore>, String>;

/// A store being opened by a task of its own; cheap to clone.
#[derive(Clone)]
pub struct Opening {
    opened: Shared<BoxFuture<'static, Opened>>,
}

impl Opening {
    /// Starts `open` on the current Tokio runtime. It runs to its end whether or not anyone
    /// waits, so the store is ready when the run first needs it.
    pub fn start(
        open: impl std::future::Future<Output = Result<LanceStore>> + Send + 'static,
    ) -> Self {
        let task = tokio::spawn(open);
        let opened = async move {
            match task.await {
                Ok(Ok(store)) => Ok(Arc::new(store)),
                Ok(Err(e)) => Err(e.to_string()),
                Err(e) => Err(format!("opening the memory vault failed: {e}")),
            }
        };
        Opening {
            opened: opened.boxed().shared(),
        }
    }

    /// The store, once open.
    pub async fn store(&self) -> Opened {
        self.opened.clone().await
    }

    async fn ready(&self) -> std::result::Result<Arc<LanceStore>, MemoryError> {
        self.store().await.map_err(MemoryError::Unavailable)
    }
}

#[async_trait::async_trait]
impl VectorStore for Opening {
    async fn insert(
        &self,
        rows: Vec<(FixAttempt, Vec<f32>)>,
    ) -> std::result::Result<(), MemoryError> {
        self.ready().await?.insert(rows).await
    }

    async fn nearest(
        &self,
        vector: Vec<f32>,
        limit: usize,
        min_similarity: f32,
    ) -> std::result::Result<Vec<Scored>, MemoryError> {
        self.ready()
            .await?
            .nearest(vector, limit, min_similarity)
            .await
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use crate::vault::VaultError;

    #[tokio::test]
    async fn a_store_that_failed_to_open_is_unavailable_at_every_use() {
        let opening = Opening::start(async {
            Err(VaultError::Schema("the table has another layout".into()))
        });
        let err = opening.nearest(vec![0.0; 4], 3, 0.5).await.unwrap_err();
        assert_eq!(
            err,
            MemoryError::Unavailable("memory vault: the table has another layout".into())
        );
        assert!(opening.insert(Vec::new()).await.is_err());
        assert!(opening.store().await.is_err());
    }

    #[tokio::test]
    async fn the_open_runs_without_anyone_waiting_and_every_use_shares_it() {
        let dir = tempfile::tempdir().unwrap();
        let uri = dir.path().to_string_lossy().into_owned();
        let opening = Opening::start(async move {
            LanceStore::open(&uri, "attempts", "hashed-ngrams-v1/4", 4).await
        });
        let clone = opening.clone();
        let (a, b) = tokio::join!(opening.store(), clone.store());
        assert!(Arc::ptr_eq(&a.unwrap(), &b.unwrap()));
        assert!(opening
            .nearest(vec![1.0, 0.0, 0.0, 0.0], 3, 0.5)
            .await
            .unwrap()
            .is_empty());
    }
}
