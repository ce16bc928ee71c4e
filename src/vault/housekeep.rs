//! [`housekeep`]: the vault's upkeep after a run, so that it neither grows without bound nor
//! slows down with many small data files.

use super::error::Result;
use super::store::LanceStore;

/// Compaction runs after a flush once the table has this many data files (each flush adds
/// one). Recall reads the rows' snapshot, not the files, so only a read through LanceDB (after
/// another process's flush) pays for many small files.
const COMPACT_FRAGMENTS: usize = 32;

/// A log this long is written into the table whatever its number of rows (diffs can be long).
const FLUSH_BYTES: u64 = 4 << 20;

/// A tenth of `max_patterns`, at least one: the vault is pruned once it holds this many more
/// than `max_patterns`, and the log is written into the table once it holds this many rows.
/// A write through LanceDB is the costliest thing a run does with the vault (a run's peak rises
/// from 41 to 64 MiB, measured in issue 18): with this slack a vault in steady use
/// writes to LanceDB once in a hundred attempts, not after each.
fn slack(max_patterns: usize) -> usize {
    (max_patterns / 10).max(1)
}

/// The most attempts the vault holds before it is pruned back to `max_patterns`.
fn prune_above(max_patterns: usize) -> usize {
    max_patterns.saturating_add(slack(max_patterns) - 1)
}

/// What [`housekeep`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Housekeeping {
    /// Attempts deleted by a prune.
    pub pruned: usize,
    /// Attempts written from the log into the table.
    pub flushed: usize,
    /// Whether the table was rewritten into one file.
    pub compacted: bool,
}

/// After a run: prune to `max_patterns` once the vault holds a tenth more (which writes the
/// log into the table and merges its files too); else write the log into the table once it
/// holds a tenth of `max_patterns` (or 4 MiB), and compact when flushes have left many files.
/// A run that records a few attempts into a vault with room does none of these.
pub async fn housekeep(store: &LanceStore, max_patterns: usize) -> Result<Housekeeping> {
    if store.count().await? > prune_above(max_patterns) {
        let pruned = store.rewrite(max_patterns).await?;
        store.remove_old_versions().await?;
        return Ok(Housekeeping {
            pruned,
            flushed: 0,
            compacted: true,
        });
    }
    let (rows, bytes) = store.backlog().await?;
    if rows < slack(max_patterns) && bytes < FLUSH_BYTES {
        return Ok(Housekeeping::default());
    }
    let flushed = store.flush().await?;
    let compacted = store.fragments().await? >= COMPACT_FRAGMENTS;
    if compacted {
        store.compact().await?;
    }
    Ok(Housekeeping {
        pruned: 0,
        flushed,
        compacted,
    })
}

#[cfg(test)]
mod tests {
    use super::{prune_above, slack};

    #[test]
    fn the_vault_is_pruned_once_it_holds_a_tenth_more() {
        assert_eq!(prune_above(1000), 1099);
        assert_eq!(prune_above(20), 21);
        // Small vaults are pruned as soon as they hold one more.
        assert_eq!(prune_above(3), 3);
        assert_eq!(prune_above(1), 1);
        assert_eq!((slack(1000), slack(20), slack(3)), (100, 2, 1));
    }
}
