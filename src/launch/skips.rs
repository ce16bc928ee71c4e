//! [`Skips`]: the tasks of a batch or agent a person skipped in the view (`s`). Each task's
//! runs stop on its own token, a child of the whole run's: Ctrl+C stops every task, a skip
//! only its own.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;

/// Each task's stop, by the task's key (its folder's name: `entry-3`, `q-a1b2`).
#[derive(Debug, Clone)]
pub(crate) struct Skips {
    all: CancellationToken,
    tasks: Arc<Mutex<BTreeMap<String, CancellationToken>>>,
}

impl Skips {
    /// The skips of a run that `all` stops as a whole.
    pub(crate) fn under(all: &CancellationToken) -> Self {
        Self {
            all: all.clone(),
            tasks: Arc::default(),
        }
    }

    /// What stops task `key`'s runs: the whole run's stop, or its skip.
    pub(crate) fn token(&self, key: &str) -> CancellationToken {
        let mut tasks = self.tasks.lock().unwrap_or_else(|e| e.into_inner());
        tasks
            .entry(key.to_string())
            .or_insert_with(|| self.all.child_token())
            .clone()
    }

    /// Skips task `key`: its run under way ends its step; one not started never starts.
    pub(crate) fn skip(&self, key: &str) {
        self.token(key).cancel();
    }

    /// Whether task `key` was skipped (and not merely stopped with the rest).
    pub(crate) fn skipped(&self, key: &str) -> bool {
        !self.all.is_cancelled() && self.token(key).is_cancelled()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_skip_stops_its_task_alone_and_a_stop_stops_every_task_without_skipping() {
        let all = CancellationToken::new();
        let skips = Skips::under(&all);
        let first = skips.token("entry-1");
        skips.skip("entry-2");
        assert!(skips.skipped("entry-2"));
        assert!(!first.is_cancelled() && !skips.skipped("entry-1"));
        all.cancel();
        assert!(first.is_cancelled());
        assert!(!skips.skipped("entry-1") && !skips.skipped("entry-2"));
    }
}
