//! [`LanceStore`]: fix attempts and their vectors in one LanceDB table.
//!
//! One table per embedding model (`attempts_<model id>`), so vectors of different models or
//! dimensions never meet in a search. Every write is an append; LanceDB commits it optimistically
//! and, when another process committed first, a compatible append is rebased by LanceDB itself
//! and anything it still reports as a conflict is retried here with jittered backoff. Tables
//! are created under a lock file (`create.lock` in the database's directory), so that two
//! processes creating one table at once never both commit. A run's attempts are appended to a
//! log beside the table ([`super::pending`]), which is written into the table in one append
//! once it holds a tenth of `memory.max_patterns`. Recall searches the table's rows and the
//! log's in memory, the table's read from a snapshot beside it when that is current
//! ([`super::snapshot`]); a prune or compaction rewrites the table from those rows. Appends to
//! the log, its flush into the table and rewrites hold `write.lock`, one at a time.

use std::path::PathBuf;
use std::time::Duration;

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use futures::TryStreamExt;
use lancedb::database::CreateTableMode;
use lancedb::query::ExecutableQuery;
use lancedb::table::{AddDataMode, OptimizeAction};
use lancedb::Table;
use ralph_actors::ports::memory::{MemoryError, VectorStore};
use ralph_actors::schema::attempt::{FixAttempt, Scored};

use super::columns;
use super::contention::{committed, creation_lock, write_lock};
use super::error::{Result, VaultError};
use super::pending::{self, pending_path, Pending};
use super::rowset::{nearest, unit, Row, Rowset};
use super::snapshot::{snapshot_path, Mirror};

/// How stale a read may be: another process's attempt is seen within this time. Recall is a
/// hint, and checking for new versions on every read would cost each query a directory listing.
const READ_CONSISTENCY: Duration = Duration::from_secs(2);

/// Where the vault's rows live, and which model made their vectors.
pub struct LanceStore {
    table: Table,
    schema: SchemaRef,
    dims: usize,
    uri: String,
    name: String,
    /// The table's rows and the log's in memory, for recall. A LanceDB vector query plans and
    /// runs a DataFusion plan each time, 12 ms at the median over 10,000 rows (121 ms before
    /// compaction) against 2.5 ms for a plain scan of the same vectors; the vault is small
    /// (`memory.max_patterns`, 1,000 by default), so it is read once and kept.
    rows: tokio::sync::Mutex<Rows>,
    /// The table rows' snapshot on disk (`<table>.recall`), read instead of the table when
    /// current.
    snapshot: PathBuf,
    /// The log of attempts not yet in the table (`<table>.pending`).
    pending: PathBuf,
}

/// What a store holds in memory: the table's rows at some version and the log as last read.
#[derive(Default)]
struct Rows {
    table: Option<Mirror>,
    pending: Option<Pending>,
}

/// Leaves out of the log as read the rows `table` already holds: a flush that crashed before
/// removing the log left its rows in both. Done once per read of the log, not per search.
fn drop_flushed(table: &Mirror, pending: &mut Pending) {
    if pending.rows.is_empty() {
        return;
    }
    let flushed: std::collections::HashSet<&str> = table
        .rows
        .attempts()
        .iter()
        .map(|a| a.id.as_str())
        .collect();
    pending.rows.retain(|a| !flushed.contains(a.id.as_str()));
}

/// The table of vectors made by the embedder `embedder_id`: `attempts_` and the id with every
/// character LanceDB does not allow in a name replaced.
pub fn table_name(prefix: &str, embedder_id: &str) -> String {
    let slug: String = embedder_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect();
    format!("{prefix}_{slug}")
}

impl LanceStore {
    /// Opens (creating when absent) the table `<prefix>_<embedder>` of the database at `uri`.
    pub async fn open(uri: &str, prefix: &str, embedder_id: &str, dims: usize) -> Result<Self> {
        let schema = columns::schema(dims)?;
        let name = table_name(prefix, embedder_id);
        let connect = || async {
            lancedb::connect(uri)
                .read_consistency_interval(READ_CONSISTENCY)
                .execute()
                .await
        };
        let open = || async { connect().await?.open_table(&name).execute().await };
        let failed = |source| VaultError::Open {
            uri: uri.to_string(),
            source,
        };
        let table = match committed(open).await {
            Err(lancedb::Error::TableNotFound { .. }) => {
                // A create that loses a race with another process's create can be committed
                // by Lance as an overwrite of the new table, dropping what the winner has
                // written since: processes create one at a time, under a lock file in the
                // database's directory, and whoever comes second opens what the first made.
                let _creating = creation_lock(uri).await?;
                let create = || async {
                    let db = connect().await?;
                    match db.open_table(&name).execute().await {
                        Err(lancedb::Error::TableNotFound { .. }) => {
                            db.create_empty_table(&name, schema.clone())
                                .mode(CreateTableMode::exist_ok(|r| r))
                                .execute()
                                .await
                        }
                        found => found,
                    }
                };
                committed(create).await.map_err(failed)?
            }
            opened => opened.map_err(failed)?,
        };
        let found = table.schema().await.map_err(VaultError::Lance)?;
        if found.fields() != schema.fields() {
            return Err(VaultError::Schema(format!(
                "table {name} in {uri} has another layout; it was written by another version"
            )));
        }
        Ok(LanceStore {
            table,
            schema,
            dims,
            uri: uri.to_string(),
            snapshot: snapshot_path(uri, &name),
            pending: pending_path(uri, &name),
            name,
            rows: tokio::sync::Mutex::new(Rows::default()),
        })
    }

    /// The database's location and the table's name.
    pub fn location(&self) -> (&str, &str) {
        (&self.uri, &self.name)
    }

    /// How many attempts the vault holds: the table's and the log's.
    pub async fn count(&self) -> Result<usize> {
        let mut state = self.rows.lock().await;
        let (table, pending) = self.current(&mut state).await?;
        Ok(table.rows.len() + pending.rows.len())
    }

    /// How many rows the table holds (its manifest says; nothing is read).
    async fn table_rows(&self) -> Result<usize> {
        Ok(self.table.count_rows(None).await?)
    }

    /// Every attempt, the table's then the log's (for `vault export`, `vault stats`).
    pub async fn all(&self) -> Result<Vec<FixAttempt>> {
        let mut state = self.rows.lock().await;
        let (table, pending) = self.current(&mut state).await?;
        Ok(table
            .rows
            .attempts()
            .iter()
            .chain(pending.rows.attempts())
            .cloned()
            .collect())
    }

    /// Records attempts with their vectors: appended to the log, not yet to the table.
    pub async fn add(&self, rows: Vec<(FixAttempt, Vec<f32>)>) -> Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        for (_, vector) in &rows {
            if vector.len() != self.dims {
                return Err(VaultError::Schema(format!(
                    "a vector of {} dimensions for a table of {}",
                    vector.len(),
                    self.dims
                )));
            }
        }
        let rows: Vec<Row> = rows.into_iter().map(|(a, v)| (a, unit(v))).collect();
        let mut state = self.rows.lock().await;
        let _alone = write_lock(&self.uri).await?;
        let (before, after) =
            pending::append(&self.pending, self.dims, &rows).map_err(|e| self.io(e))?;
        // The log in memory stays whole when this append is the only change since it was read.
        match state.pending.as_mut() {
            Some(p) if p.stamp == before => {
                p.rows.extend(rows);
                p.stamp = after;
                p.bytes = after.map_or(0, |s| s.bytes());
            }
            _ => state.pending = None,
        }
        Ok(())
    }

    /// Writes the log's rows into the table in one append and removes the log. Returns how
    /// many rows were written.
    pub async fn flush(&self) -> Result<usize> {
        let mut state = self.rows.lock().await;
        let _alone = write_lock(&self.uri).await?;
        self.table.checkout_latest().await?;
        // Under the lock the log is read as it is now, not as it was.
        state.pending = None;
        let (table, pending) = self.current(&mut state).await?;
        let fresh = pending.rows.clone();
        let from = table.version;
        if !fresh.is_empty() {
            let batch = columns::batch(&self.schema, &fresh)?;
            let add = || async { self.table.add(batch.clone()).execute().await };
            committed(add).await?;
        }
        let written = fresh.len();
        // The rows in memory (and in the snapshot) stay whole when this append is the one
        // commit since they were read; otherwise they are read again at the next search.
        let version = self.table.version().await?;
        match state.table.take() {
            Some(mut m) if from == m.version && version == from + 1 => {
                m.version = version;
                m.rows.append(&fresh);
                m.save(&self.snapshot);
                state.table = Some(m);
            }
            Some(m) if version == from => state.table = Some(m),
            _ => {}
        }
        pending::clear(&self.pending).map_err(|e| self.io(e))?;
        state.pending = Some(Pending::empty(self.dims));
        Ok(written)
    }

    /// The log's size: rows not yet in the table, and bytes.
    pub async fn backlog(&self) -> Result<(usize, u64)> {
        let mut state = self.rows.lock().await;
        let (_, pending) = self.current(&mut state).await?;
        Ok((pending.rows.len(), pending.bytes))
    }

    fn io(&self, source: std::io::Error) -> VaultError {
        VaultError::Io {
            path: self.pending.clone(),
            source,
        }
    }

    /// The table's rows at its current version (those in memory, else the snapshot, else read
    /// through LanceDB, and the snapshot written) and the log as it is now.
    async fn current<'a>(&self, state: &'a mut Rows) -> Result<(&'a Mirror, &'a Pending)> {
        let Rows { table, pending } = state;
        let version = self.table.version().await?;
        let table = match table.take().filter(|m| m.version == version) {
            Some(m) => table.insert(m),
            None => {
                // The log is told apart from the new rows at its next read.
                *pending = None;
                table.insert(self.load_table(version).await?)
            }
        };
        let pending = match pending.take().filter(|p| p.is_current(&self.pending)) {
            Some(p) => pending.insert(p),
            None => {
                let mut p = Pending::read(&self.pending, self.dims).map_err(|e| self.io(e))?;
                drop_flushed(table, &mut p);
                pending.insert(p)
            }
        };
        Ok((table, pending))
    }

    /// The table's rows at `version`: the snapshot, else read through LanceDB.
    async fn load_table(&self, version: u64) -> Result<Mirror> {
        if let Some(m) = Mirror::load(&self.snapshot, version, self.dims) {
            return Ok(m);
        }
        // A new table: counting reads the manifest, reading would plan a query.
        if self.table_rows().await? == 0 {
            return Ok(Mirror {
                version,
                rows: Rowset::new(self.dims),
            });
        }
        let m = self.read_rows().await?;
        if m.version == version {
            m.save(&self.snapshot);
        }
        Ok(m)
    }

    /// Every attempt with its vector (scaled to length 1), read through LanceDB, and the
    /// table's version they are.
    async fn read_rows(&self) -> Result<Mirror> {
        let version = self.table.version().await?;
        let batches: Vec<RecordBatch> = self.table.query().execute().await?.try_collect().await?;
        let total = batches.iter().map(RecordBatch::num_rows).sum();
        let mut rows = Rowset::with_capacity(self.dims, total);
        for batch in &batches {
            columns::read_into(&mut rows, batch)?;
        }
        // A write by another process between the two reads of the version would label these
        // rows wrongly: they are then labelled with no version, so nothing keeps them.
        let after = self.table.version().await?;
        Ok(Mirror {
            version: if after == version { version } else { u64::MAX },
            rows,
        })
    }

    /// Reads the rows recall searches (the table's from the snapshot when it is current, and
    /// the log), so that the first search, after the baseline test run, finds them in memory:
    /// a run calls this beside that test run. A failure here is the search's to report.
    pub async fn warm(&self) {
        let mut state = self.rows.lock().await;
        let _ = self.current(&mut state).await;
    }

    /// Up to `limit` attempts with cosine similarity ≥ `min_similarity`, most similar first.
    /// An exhaustive (flat) search over the rows in memory: exact, and at the vault's size
    /// (thousands of rows) faster than any index would pay back. The log is read again when
    /// it has changed (another process recorded an attempt), the table's rows when the table
    /// has (a flush, prune or compaction), which is seen within two seconds.
    pub async fn search(
        &self,
        vector: &[f32],
        limit: usize,
        min_similarity: f32,
    ) -> Result<Vec<Scored>> {
        if vector.len() != self.dims {
            return Err(VaultError::Schema(format!(
                "a query of {} dimensions for a table of {}",
                vector.len(),
                self.dims
            )));
        }
        let query = unit(vector.to_vec());
        let mut state = self.rows.lock().await;
        let (table, pending) = self.current(&mut state).await?;
        Ok(nearest(
            &[&table.rows, &pending.rows],
            &query,
            limit,
            min_similarity,
        ))
    }

    /// Deletes the least useful attempts until at most `max` remain: failed attempts before
    /// successful ones, older before newer. Returns how many were deleted. The table is
    /// rewritten from the rows kept, which also merges its files into one.
    pub async fn prune(&self, max: usize) -> Result<usize> {
        if self.count().await? <= max {
            return Ok(0);
        }
        self.rewrite(max).await
    }

    /// Merges the table's files (each flush adds one) and the log into one file, and removes
    /// versions older than a minute, so that a read through LanceDB reads one file and the
    /// directory does not grow with every flush.
    pub async fn compact(&self) -> Result<CompactStats> {
        let before = self.fragments().await?;
        if before > 1 || self.backlog().await?.0 > 0 {
            self.rewrite(usize::MAX).await?;
        }
        self.remove_old_versions().await?;
        Ok(CompactStats {
            fragments_before: before,
            fragments_after: self.fragments().await?,
        })
    }

    /// Replaces the table by its `max` most useful rows in one new version (one file), and
    /// returns how many rows were left out; the log's rows are among those ranked, and the
    /// log is removed. Under the write lock, at the table's latest version: nothing is
    /// recorded between the read and the rewrite. This is a write of rows already in memory;
    /// LanceDB's delete and compaction would each plan a DataFusion query (a SQL predicate, a
    /// scan).
    pub(super) async fn rewrite(&self, max: usize) -> Result<usize> {
        let mut state = self.rows.lock().await;
        let _alone = write_lock(&self.uri).await?;
        self.table.checkout_latest().await?;
        state.pending = None;
        let (table, pending) = self.current(&mut state).await?;
        let mut order: Vec<(&FixAttempt, &[f32])> =
            table.rows.iter().chain(pending.rows.iter()).collect();
        // Most useful first; everything past `max` goes.
        order.sort_by(|(a, _), (b, _)| {
            b.success
                .cmp(&a.success)
                .then(b.timestamp_ms.cmp(&a.timestamp_ms))
                .then(a.id.cmp(&b.id))
        });
        let doomed = order.len().saturating_sub(max);
        order.truncate(max);
        let mut rows = Rowset::with_capacity(self.dims, order.len());
        for (attempt, vector) in order {
            rows.push(attempt.clone(), vector);
        }
        let batch = columns::batch(&self.schema, &rows)?;
        let overwrite = || async {
            self.table
                .add(batch.clone())
                .mode(AddDataMode::Overwrite)
                .execute()
                .await
        };
        committed(overwrite).await?;
        let mirror = Mirror {
            version: self.table.version().await?,
            rows,
        };
        mirror.save(&self.snapshot);
        state.table = Some(mirror);
        pending::clear(&self.pending).map_err(|e| self.io(e))?;
        state.pending = Some(Pending::empty(self.dims));
        Ok(doomed)
    }

    /// Deletes the files of versions older than a minute (a reader may still be on one).
    pub async fn remove_old_versions(&self) -> Result<()> {
        let prune = || async {
            self.table
                .optimize(OptimizeAction::Prune {
                    older_than: Some(chrono::Duration::minutes(1)),
                    delete_unverified: None,
                    error_if_tagged_old_versions: None,
                })
                .await
        };
        committed(prune).await?;
        Ok(())
    }

    /// The number of data files: each flush adds one until compaction merges them.
    pub async fn fragments(&self) -> Result<usize> {
        Ok(self.table.stats().await?.fragment_stats.num_fragments)
    }

    /// Bytes of data the table holds on disk.
    pub async fn bytes(&self) -> Result<usize> {
        Ok(self.table.stats().await?.total_bytes)
    }
}

/// Numbers of data files before and after a compaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompactStats {
    pub fragments_before: usize,
    pub fragments_after: usize,
}

#[async_trait::async_trait]
impl VectorStore for LanceStore {
    async fn insert(
        &self,
        rows: Vec<(FixAttempt, Vec<f32>)>,
    ) -> std::result::Result<(), MemoryError> {
        self.add(rows).await.map_err(VaultError::into_port)
    }

    async fn nearest(
        &self,
        vector: Vec<f32>,
        limit: usize,
        min_similarity: f32,
    ) -> std::result::Result<Vec<Scored>, MemoryError> {
        self.search(&vector, limit, min_similarity)
            .await
            .map_err(VaultError::into_port)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use crate::vault::embed::sealed_texts;
    use crate::vault::embed::HashedNgrams;
    use ralph_actors::ports::memory::Embedder;
    use ralph_actors::schema::test_run::Category;

    fn attempt(id: &str, signature: &str, success: bool) -> FixAttempt {
        FixAttempt {
            id: id.into(),
            project_id: "p".into(),
            signature: signature.into(),
            category: Some(Category::Logic),
            test_ids: vec!["t::a".into(), "t::b".into()],
            hypothesis: "h".into(),
            diff: "d".into(),
            success,
            timestamp_ms: 7,
            tokens: 3,
            cost_usd: 0.5,
            model: "m".into(),
            language: "python".into(),
        }
    }

    /// The vector `embedder` makes of `text`.
    async fn vector_of(embedder: &HashedNgrams, text: &str) -> Vec<f32> {
        embedder
            .embed(sealed_texts(vec![text.to_string()]))
            .await
            .unwrap()
            .remove(0)
    }

    async fn embedded(embedder: &HashedNgrams, a: FixAttempt) -> (FixAttempt, Vec<f32>) {
        let v = vector_of(embedder, &a.signature).await;
        (a, v)
    }

    async fn store_with(dir: &std::path::Path, rows: &[FixAttempt]) -> (LanceStore, HashedNgrams) {
        let embedder = HashedNgrams::default();
        let store = LanceStore::open(
            &dir.to_string_lossy(),
            "attempts",
            &embedder.id(),
            embedder.dims(),
        )
        .await
        .unwrap();
        let vectors = embedder
            .embed(sealed_texts(
                rows.iter().map(|a| a.signature.clone()).collect(),
            ))
            .await
            .unwrap();
        store
            .add(rows.iter().cloned().zip(vectors).collect())
            .await
            .unwrap();
        (store, embedder)
    }

    #[tokio::test]
    async fn recall_honours_the_threshold_and_round_trips_every_field() {
        let dir = tempfile::tempdir().unwrap();
        let rows = [
            attempt(
                "same",
                "LOGIC test_median_even: AssertionError: expected 3 to equal 2.5",
                true,
            ),
            attempt(
                "near",
                "LOGIC test_median_odd: AssertionError: expected 3 to equal 2.5",
                false,
            ),
            attempt(
                "far",
                "ENVIRONMENT test_import: ModuleNotFoundError: No module named numpy",
                true,
            ),
        ];
        let (store, embedder) = store_with(dir.path(), &rows).await;
        let query = vector_of(&embedder, &rows[0].signature).await;

        let found = store.search(&query, 10, 0.85).await.unwrap();
        let ids: Vec<&str> = found.iter().map(|s| s.attempt.id.as_str()).collect();
        assert_eq!(ids, ["same", "near"], "{found:?}");
        assert!((found[0].similarity - 1.0).abs() < 1e-5);
        assert!(found[1].similarity >= 0.85 && found[1].similarity < 1.0);
        assert_eq!(found[0].attempt, rows[0], "every field comes back");

        // A stricter threshold leaves the near one out; a limit of 1 keeps the nearest.
        let strict = store
            .search(&query, 10, found[1].similarity + 0.001)
            .await
            .unwrap();
        assert_eq!(strict.len(), 1);
        assert_eq!(store.search(&query, 1, 0.0).await.unwrap().len(), 1);
        assert_eq!(store.count().await.unwrap(), 3);
    }

    #[tokio::test]
    async fn each_embedder_has_its_own_table_and_a_wrong_length_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let (store, _) = store_with(dir.path(), &[attempt("a", "x", true)]).await;
        let other = HashedNgrams::new(64).unwrap();
        let small = LanceStore::open(&dir.path().to_string_lossy(), "attempts", &other.id(), 64)
            .await
            .unwrap();
        assert_ne!(store.location().1, small.location().1);
        assert_eq!(small.count().await.unwrap(), 0);
        let err = store
            .add(vec![(attempt("b", "y", true), vec![0.0; 64])])
            .await;
        assert!(matches!(err, Err(VaultError::Schema(_))), "{err:?}");
        assert!(store.search(&[0.0; 64], 5, 0.5).await.is_err());
        assert_eq!(
            table_name("attempts", "openai/text-embedding-3-small/1536"),
            "attempts_openai_text_embedding_3_small_1536"
        );
    }

    #[tokio::test]
    async fn pruning_keeps_the_most_useful_and_rewrites_like_compaction_into_one_file() {
        let dir = tempfile::tempdir().unwrap();
        let (store, embedder) = store_with(dir.path(), &[]).await;
        for n in 0..8 {
            let mut a = attempt(&format!("a{n}"), &format!("sig {n}"), n % 3 == 0);
            a.timestamp_ms = n;
            store.add(vec![embedded(&embedder, a).await]).await.unwrap();
        }
        // Recorded in the log; the table has no file yet.
        assert_eq!(store.fragments().await.unwrap(), 0);
        assert_eq!(store.backlog().await.unwrap().0, 8);
        // Successful a0, a3, a6, then the newest failed: a7.
        assert_eq!(store.prune(4).await.unwrap(), 4);
        let mut kept: Vec<String> = store
            .all()
            .await
            .unwrap()
            .into_iter()
            .map(|a| a.id)
            .collect();
        kept.sort();
        assert_eq!(kept, ["a0", "a3", "a6", "a7"]);
        // The prune rewrote the table into one file, the log's rows with it.
        assert_eq!(store.fragments().await.unwrap(), 1);
        assert_eq!(store.backlog().await.unwrap(), (0, 0));
        assert_eq!(store.prune(4).await.unwrap(), 0);
        for n in 8..11 {
            let a = attempt(&format!("a{n}"), &format!("sig {n}"), false);
            store.add(vec![embedded(&embedder, a).await]).await.unwrap();
        }
        // Compaction merges the log into the table too.
        let stats = store.compact().await.unwrap();
        assert_eq!((stats.fragments_before, stats.fragments_after), (1, 1));
        assert_eq!(store.count().await.unwrap(), 7);
        assert_eq!(store.backlog().await.unwrap(), (0, 0));
    }

    /// Recording leaves the table alone; each flush that is the table's next version, and each
    /// rewrite, leaves the snapshot at the table's version: a new handle (the next run) recalls
    /// from it without reading the table.
    #[tokio::test]
    async fn writes_and_rewrites_keep_the_snapshot_at_the_tables_version() {
        let dir = tempfile::tempdir().unwrap();
        let sig = "LOGIC test_total: AssertionError: expected 3 to equal 4";
        let (store, embedder) = store_with(dir.path(), &[attempt("a", sig, false)]).await;
        let current = |store: &LanceStore| {
            let version = futures::executor::block_on(store.table.version()).unwrap();
            Mirror::load(&store.snapshot, version, store.dims).map(|m| m.rows.len())
        };
        // In the log: the table is still empty, and so there is no snapshot.
        assert_eq!(current(&store), None);
        let query = vector_of(&embedder, sig).await;
        assert_eq!(store.search(&query, 5, 0.5).await.unwrap().len(), 1);
        store
            .add(vec![(attempt("b", sig, true), query.clone())])
            .await
            .unwrap();
        assert_eq!(store.flush().await.unwrap(), 2);
        assert_eq!(current(&store), Some(2));
        assert_eq!(store.prune(1).await.unwrap(), 1);
        assert_eq!(current(&store), Some(1));

        // A new handle recalls from the snapshot; a snapshot of another version is read past.
        let (again, _) = store_with(dir.path(), &[]).await;
        let ids = |found: Vec<Scored>| -> Vec<String> {
            found.into_iter().map(|s| s.attempt.id).collect()
        };
        assert_eq!(ids(again.search(&query, 5, 0.5).await.unwrap()), ["b"]);
        let stale = Mirror {
            version: 1,
            rows: Rowset::from_rows(
                store.dims,
                vec![(attempt("ghost", sig, true), query.clone())],
            ),
        };
        stale.save(&store.snapshot);
        let (fresh, _) = store_with(dir.path(), &[]).await;
        assert_eq!(ids(fresh.search(&query, 5, 0.5).await.unwrap()), ["b"]);
    }

    /// Recall reads the table once and keeps it: attempts recorded by this handle or another
    /// (another process) are seen at the next search, a prune when the table's version moves.
    #[tokio::test]
    async fn recall_sees_every_recorded_attempt_at_once_and_a_prune_within_the_read_interval() {
        let dir = tempfile::tempdir().unwrap();
        let signature = "LOGIC test_total: AssertionError: expected 3 to equal 4";
        let (store, embedder) = store_with(dir.path(), &[attempt("first", signature, false)]).await;
        let query = vector_of(&embedder, signature).await;
        let ids = |found: Vec<Scored>| {
            let mut ids: Vec<String> = found.into_iter().map(|s| s.attempt.id).collect();
            ids.sort();
            ids
        };
        assert_eq!(
            ids(store.search(&query, 10, 0.85).await.unwrap()),
            ["first"]
        );

        // Its own write: found by the next search, with no wait.
        store
            .add(vec![(attempt("mine", signature, true), query.clone())])
            .await
            .unwrap();
        assert_eq!(
            ids(store.search(&query, 10, 0.85).await.unwrap()),
            ["first", "mine"]
        );

        // Another process's attempt (another handle on the same table): in the log, found by the
        // next search too.
        let (other, _) = store_with(dir.path(), &[attempt("theirs", signature, true)]).await;
        assert_eq!(
            ids(store.search(&query, 10, 0.85).await.unwrap()),
            ["first", "mine", "theirs"]
        );

        // A prune by the other handle: the pruned row is not recalled any more once the table
        // is checked again, at most `READ_CONSISTENCY` later.
        assert_eq!(other.prune(2).await.unwrap(), 1);
        tokio::time::sleep(READ_CONSISTENCY + Duration::from_millis(200)).await;
        assert_eq!(
            ids(store.search(&query, 10, 0.85).await.unwrap()),
            ["mine", "theirs"]
        );
    }

    /// A flush writes the log into the table in one append and removes it; a flush that
    /// crashed before removing the log leaves rows in both, which are neither recalled nor
    /// counted twice and are not written again.
    #[tokio::test]
    async fn a_flush_writes_the_log_once_even_after_a_crash_that_left_it() {
        let dir = tempfile::tempdir().unwrap();
        let sig = "LOGIC test_total: AssertionError: expected 3 to equal 4";
        let rows = [attempt("a", sig, false), attempt("b", sig, true)];
        let (store, embedder) = store_with(dir.path(), &rows).await;
        let log = std::fs::read(&store.pending).unwrap();
        let version = store.table.version().await.unwrap();
        assert_eq!(store.flush().await.unwrap(), 2);
        assert_eq!(store.table.version().await.unwrap(), version + 1);
        assert_eq!(store.fragments().await.unwrap(), 1);
        assert!(!store.pending.exists());

        // The crash: the log is back after the commit.
        std::fs::write(&store.pending, &log).unwrap();
        let (again, _) = store_with(dir.path(), &[]).await;
        let query = vector_of(&embedder, sig).await;
        assert_eq!(again.search(&query, 10, 0.5).await.unwrap().len(), 2);
        assert_eq!(again.count().await.unwrap(), 2);
        assert_eq!(again.all().await.unwrap().len(), 2);
        assert_eq!(again.backlog().await.unwrap().0, 0);
        assert_eq!(again.flush().await.unwrap(), 0);
        assert_eq!(again.table.version().await.unwrap(), version + 1);
        assert!(!again.pending.exists());
    }
}
