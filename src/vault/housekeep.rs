//! [`housekeep`]: the vault's upkeep after a run, so that it neither grows without bound nor
//! slows down with many small data files.

use super::error::Result;
use super::store::LanceStore;

/// Compaction runs after a run once the table has this many data files (each write adds one).
const COMPACT_FRAGMENTS: usize = 16;

/// What [`housekeep`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Housekeeping {
    pub pruned: usize,
    pub compacted: bool,
}

/// After a run: prune to `max_patterns`, and compact once writes have left many small files.
pub async fn housekeep(store: &LanceStore, max_patterns: usize) -> Result<Housekeeping> {
    let pruned = store.prune(max_patterns).await?;
    let compacted = pruned > 0 || store.fragments().await? >= COMPACT_FRAGMENTS;
    if compacted {
        store.compact().await?;
    }
    Ok(Housekeeping { pruned, compacted })
}
