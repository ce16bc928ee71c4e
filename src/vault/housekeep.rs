//! [`housekeep`]: the vault's upkeep after a run, so that it neither grows without bound nor
//! slows down with many small data files.

use super::error::Result;
use super::store::LanceStore;

/// Compaction runs after a run once the table has this many data files (each write adds one).
/// Recall reads the rows' snapshot, not the files, so only a read through LanceDB (after
/// another process's write) pays for many small files.
const COMPACT_FRAGMENTS: usize = 32;

/// The vault is pruned back to `max_patterns` once it holds a tenth more (at least one more).
/// A prune rewrites the table, the costliest thing a run does with the vault (it maps 27 MiB
/// more of the executable, measured in issue 18): with this slack, a vault in steady use
/// prunes once in a hundred runs, not after each.
fn prune_above(max_patterns: usize) -> usize {
    max_patterns.saturating_add((max_patterns / 10).max(1) - 1)
}

/// What [`housekeep`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Housekeeping {
    pub pruned: usize,
    pub compacted: bool,
}

/// After a run: prune to `max_patterns` once the vault holds a tenth more (which merges the
/// files too), or compact once writes have left many small files; then remove old versions'
/// files.
pub async fn housekeep(store: &LanceStore, max_patterns: usize) -> Result<Housekeeping> {
    let pruned = if store.count().await? > prune_above(max_patterns) {
        store.rewrite(max_patterns).await?
    } else {
        0
    };
    let compacted = if pruned > 0 {
        store.remove_old_versions().await?;
        true
    } else if store.fragments().await? >= COMPACT_FRAGMENTS {
        store.compact().await?;
        true
    } else {
        false
    };
    Ok(Housekeeping { pruned, compacted })
}

#[cfg(test)]
mod tests {
    use super::prune_above;

    #[test]
    fn the_vault_is_pruned_once_it_holds_a_tenth_more() {
        assert_eq!(prune_above(1000), 1099);
        assert_eq!(prune_above(20), 21);
        // Small vaults are pruned as soon as they hold one more.
        assert_eq!(prune_above(3), 3);
        assert_eq!(prune_above(1), 1);
    }
}
