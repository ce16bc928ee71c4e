//! Writing one LanceDB database from several processes at once: which errors mean another
//! writer won a commit (worth another try), the retries, the lock under which tables are
//! created, and the one under which the table and its log are written.

use std::time::Duration;

use crate::http::retry::{retry, Attempted, RetryPolicy};

use super::error::{Result, VaultError};

/// Commit retries on a conflict with another writer, on top of LanceDB's own rebasing.
const COMMIT_RETRIES: u32 = 12;

/// Whether an error is another writer winning a commit: worth another try. Lance's commit
/// errors (`CommitConflict`, `RetryableCommitConflict`, `TooMuchWriteContention`,
/// `DatasetAlreadyExists` for a table created at the same moment) reach us wrapped in
/// `lancedb::Error::Lance`; their messages are what is stable across the two crates.
fn is_conflict(e: &lancedb::Error) -> bool {
    if matches!(e, lancedb::Error::TableAlreadyExists { .. }) {
        return true;
    }
    let text = e.to_string().to_lowercase();
    [
        "commit conflict",
        "concurrent writers",
        // An append that met a concurrent overwrite (a table created by a version without the
        // creation lock) is retried on the table as it now is.
        "incompatible with concurrent transaction",
        "version conflict",
        "already exists",
    ]
    .iter()
    .any(|w| text.contains(w))
}

impl Attempted for lancedb::Error {
    fn is_transient(&self) -> bool {
        is_conflict(self)
    }

    fn describe(&self) -> String {
        self.to_string()
    }
}

/// Another writer is on the same table for a few milliseconds: short delays, many tries.
const COMMIT_POLICY: RetryPolicy = RetryPolicy {
    max_retries: COMMIT_RETRIES,
    base_delay: Duration::from_millis(5),
    max_delay: Duration::from_millis(500),
    max_server_delay: Duration::ZERO,
};

/// Runs a commit (or an open) again while another writer wins the race.
pub(super) async fn committed<T, F, Fut>(op: F) -> std::result::Result<T, lancedb::Error>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = std::result::Result<T, lancedb::Error>>,
{
    let attempts = std::sync::atomic::AtomicU32::new(0);
    retry(&COMMIT_POLICY, "memory vault", None, &attempts, op).await
}

/// Holds `<uri>/create.lock` exclusively until dropped (the kernel releases it if the process
/// dies): the tables of the database at `uri` are created by one process at a time.
pub(super) async fn creation_lock(uri: &str) -> Result<std::fs::File> {
    file_lock(uri, "create.lock").await
}

/// Holds `<uri>/write.lock` exclusively until dropped: an append to a table's log, the log's
/// flush into the table and a rewrite (prune, compaction) run one at a time. A rewrite
/// replaces the table with the rows it read, so a row recorded between its read and its
/// commit would be lost; a flush removes the log it wrote, so an append in between would be.
/// An append to the log takes a millisecond, so holding the lock alone costs nothing.
pub(super) async fn write_lock(uri: &str) -> Result<std::fs::File> {
    file_lock(uri, "write.lock").await
}

async fn file_lock(uri: &str, name: &str) -> Result<std::fs::File> {
    let path = std::path::Path::new(uri).join(name);
    let locked = path.clone();
    let lock = move || {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&locked)?;
        file.lock()?;
        Ok(file)
    };
    let io = |source| VaultError::Io {
        path: path.clone(),
        source,
    };
    tokio::task::spawn_blocking(lock)
        .await
        .map_err(|e| io(std::io::Error::other(e)))?
        .map_err(io)
}
