//! The MemoryVault actor: recalls fix attempts for a failure and records new ones.
//!
//! It owns the embedder and the stores ([`crate::ports::memory`]): this project's vault and,
//! when sharing is on, the shared store. A failure of the shared store never hides the project's
//! own memory: it is reported beside what was recalled. A panic inside a store or an embedder
//! becomes an error answer, as the role actors' do, so the Supervisor can go on without memory.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use actix::{Actor, Context, Handler, Message, ResponseFuture};
use futures::FutureExt;

use crate::memory::anonymise::{anonymise, anonymised_signature};
use crate::memory::rank::rank;
use crate::memory::signature::Failure;
use crate::ports::memory::{Embedder, GuardedTexts, MemoryError, VectorStore};
use crate::roles::caller::panic_message;
use crate::roles::local_guard::{LocalGuard, SealRecord, SealTexts};
use crate::schema::attempt::{FixAttempt, Origin, RecalledFix};

/// Candidates fetched from each store before ranking: ranking by success rate needs the other
/// attempts at the same signature, not only the five nearest.
const CANDIDATES: usize = 50;

/// How the vault recalls.
#[derive(Debug, Clone, PartialEq)]
pub struct VaultSettings {
    /// Cosine similarity an attempt's signature needs to be recalled (0.85 by default).
    pub min_similarity: f32,
    /// At most this many attempts are shown to the Artisan (5 by default).
    pub max_recall: usize,
}

impl Default for VaultSettings {
    fn default() -> Self {
        VaultSettings {
            min_similarity: 0.85,
            max_recall: 5,
        }
    }
}

/// Supervisor → MemoryVault: the attempts most worth showing for this failure.
#[derive(Message)]
#[rtype(result = "Result<Recalled, MemoryError>")]
pub struct Recall {
    pub failure: Failure,
}

/// What a recall found, and what went wrong on the way without stopping it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Recalled {
    pub fixes: Vec<RecalledFix>,
    pub warnings: Vec<String>,
}

/// Supervisor → MemoryVault: keep this attempt (and share it, anonymised, when sharing is on
/// and it worked).
#[derive(Message)]
#[rtype(result = "Result<Vec<String>, MemoryError>")]
pub struct Remember {
    pub attempt: FixAttempt,
}

pub struct MemoryVault {
    embedder: Arc<dyn Embedder>,
    store: Arc<dyn VectorStore>,
    shared: Option<Arc<dyn VectorStore>>,
    settings: VaultSettings,
    /// What the embedder is given and what is shared passes LocalGuard first.
    guard: actix::Addr<LocalGuard>,
}

impl MemoryVault {
    pub fn new(
        embedder: Arc<dyn Embedder>,
        store: Arc<dyn VectorStore>,
        shared: Option<Arc<dyn VectorStore>>,
        settings: VaultSettings,
        guard: actix::Addr<LocalGuard>,
    ) -> Self {
        MemoryVault {
            embedder,
            store,
            shared,
            settings,
            guard,
        }
    }
}

/// `texts` as LocalGuard seals them for the embedder.
async fn sealed(
    guard: &actix::Addr<LocalGuard>,
    texts: Vec<String>,
) -> Result<GuardedTexts, MemoryError> {
    match guard.send(SealTexts(texts)).await {
        Ok(Ok(texts)) => Ok(texts),
        Ok(Err(e)) => Err(MemoryError::embed(format!("local guard: {e}"))),
        Err(e) => Err(MemoryError::Stopped(format!(
            "LocalGuard did not answer: {e}"
        ))),
    }
}

impl Actor for MemoryVault {
    type Context = Context<Self>;
}

async fn caught<T>(
    fut: impl std::future::Future<Output = Result<T, MemoryError>>,
) -> Result<T, MemoryError> {
    match AssertUnwindSafe(fut).catch_unwind().await {
        Ok(result) => result,
        Err(panic) => Err(MemoryError::Panicked(panic_message(&*panic))),
    }
}

impl Handler<Recall> for MemoryVault {
    type Result = ResponseFuture<Result<Recalled, MemoryError>>;

    fn handle(&mut self, msg: Recall, _: &mut Context<Self>) -> Self::Result {
        let (embedder, store, shared) = (
            self.embedder.clone(),
            self.store.clone(),
            self.shared.clone(),
        );
        let settings = self.settings.clone();
        let guard = self.guard.clone();
        Box::pin(caught(async move {
            let mut texts = vec![msg.failure.signature.clone()];
            if shared.is_some() {
                texts.push(anonymised_signature(&msg.failure.signature));
            }
            let texts = sealed(&guard, texts).await?;
            let mut vectors = embedder.embed(texts).await?.into_iter();
            let vector = vectors
                .next()
                .ok_or_else(|| MemoryError::embed("the embedder returned no vector"))?;
            let mut candidates: Vec<_> = store
                .nearest(vector, CANDIDATES, settings.min_similarity)
                .await?
                .into_iter()
                .map(|s| (s, Origin::Project))
                .collect();
            let mut warnings = Vec::new();
            if let (Some(shared), Some(public)) = (shared, vectors.next()) {
                match shared
                    .nearest(public, CANDIDATES, settings.min_similarity)
                    .await
                {
                    Ok(found) => candidates.extend(found.into_iter().map(|s| (s, Origin::Shared))),
                    Err(e) => warnings.push(format!("the shared memory is unavailable: {e}")),
                }
            }
            Ok(Recalled {
                fixes: rank(candidates, settings.max_recall),
                warnings,
            })
        }))
    }
}

impl Handler<Remember> for MemoryVault {
    type Result = ResponseFuture<Result<Vec<String>, MemoryError>>;

    fn handle(&mut self, msg: Remember, _: &mut Context<Self>) -> Self::Result {
        let (embedder, store, shared) = (
            self.embedder.clone(),
            self.store.clone(),
            self.shared.clone(),
        );
        let guard = self.guard.clone();
        Box::pin(caught(async move {
            let attempt = msg.attempt;
            // Only what worked is shared: a failed attempt teaches others little and would
            // carry more of the project's code out. What is shared leaves the machine: sealed.
            let public = match shared.as_ref().filter(|_| attempt.success) {
                Some(_) => match guard.send(SealRecord(anonymise(&attempt))).await {
                    Ok(Ok(record)) => Some(record),
                    Ok(Err(e)) => return Err(MemoryError::store(format!("local guard: {e}"))),
                    Err(e) => {
                        return Err(MemoryError::Stopped(format!(
                            "LocalGuard did not answer: {e}"
                        )))
                    }
                },
                None => None,
            };
            let mut texts = vec![attempt.signature.clone()];
            if let Some(public) = &public {
                texts.push(public.signature.clone());
            }
            let texts = sealed(&guard, texts).await?;
            let mut vectors = embedder.embed(texts).await?.into_iter();
            let vector = vectors
                .next()
                .ok_or_else(|| MemoryError::embed("the embedder returned no vector"))?;
            store.insert(vec![(attempt, vector)]).await?;
            let mut warnings = Vec::new();
            if let (Some(shared), Some(public), Some(vector)) = (shared, public, vectors.next()) {
                if let Err(e) = shared.insert(vec![(public, vector)]).await {
                    warnings.push(format!("sharing the fix failed: {e}"));
                }
            }
            Ok(warnings)
        }))
    }
}
