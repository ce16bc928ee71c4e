//! [`LanceStore`]: fix attempts and their vectors in one LanceDB table.
//!
//! One table per embedding model (`attempts_<model id>`), so vectors of different models or
//! dimensions never meet in a search. Every write is an append; LanceDB commits it optimistically
//! and, when another process committed first, a compatible append is rebased by LanceDB itself
//! and anything it still reports as a conflict is retried here with jittered backoff. Tables
//! are created under a lock file (`create.lock` in the database's directory), so that two
//! processes creating one table at once never both commit. Recall searches the rows in memory,
//! read from a snapshot beside the table when it is current ([`super::snapshot`]); a prune or
//! compaction rewrites the table from those rows under a lock that keeps appends out.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use arrow::array::{
    Array, ArrayRef, BooleanArray, FixedSizeListArray, Float32Array, Float64Array, Int64Array,
    ListArray, ListBuilder, RecordBatch, StringArray, StringBuilder, UInt64Array,
};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use futures::TryStreamExt;
use lancedb::database::CreateTableMode;
use lancedb::query::{ExecutableQuery, QueryBase, Select};
use lancedb::table::{AddDataMode, OptimizeAction};
use lancedb::Table;
use ralph_actors::ports::memory::{MemoryError, VectorStore};
use ralph_actors::schema::attempt::{FixAttempt, Scored};
use ralph_actors::schema::test_run::Category;

use super::contention::{committed, creation_lock, write_lock, Lock};
use super::error::{Result, VaultError};
use super::snapshot::{snapshot_path, unit, Mirror};

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
    /// The table's rows in memory, for recall. A LanceDB vector query plans and runs a
    /// DataFusion plan each time, 12 ms at the median over 10,000 rows (121 ms before
    /// compaction) against 2.5 ms for a plain scan of the same vectors; the vault is small
    /// (`memory.max_patterns`, 1,000 by default), so it is read once and kept.
    mirror: tokio::sync::Mutex<Option<Mirror>>,
    /// The rows' snapshot on disk (`<table>.recall`), read instead of the table when current.
    snapshot: PathBuf,
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

fn schema(dims: usize) -> Result<SchemaRef> {
    let dims = i32::try_from(dims).map_err(|_| VaultError::Schema(format!("{dims} dimensions")))?;
    let text = |name: &str| Field::new(name, DataType::Utf8, false);
    Ok(Arc::new(Schema::new(vec![
        text("id"),
        text("project_id"),
        text("signature"),
        Field::new("category", DataType::Utf8, true),
        Field::new(
            "test_ids",
            DataType::List(Arc::new(Field::new("item", DataType::Utf8, true))),
            false,
        ),
        text("hypothesis"),
        text("diff"),
        Field::new("success", DataType::Boolean, false),
        Field::new("timestamp_ms", DataType::Int64, false),
        Field::new("tokens", DataType::UInt64, false),
        Field::new("cost_usd", DataType::Float64, false),
        text("model"),
        text("language"),
        Field::new(
            "vector",
            DataType::FixedSizeList(Arc::new(Field::new("item", DataType::Float32, true)), dims),
            false,
        ),
    ])))
}

impl LanceStore {
    /// Opens (creating when absent) the table `<prefix>_<embedder>` of the database at `uri`.
    pub async fn open(uri: &str, prefix: &str, embedder_id: &str, dims: usize) -> Result<Self> {
        let schema = schema(dims)?;
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
            name,
            mirror: tokio::sync::Mutex::new(None),
        })
    }

    /// The database's location and the table's name.
    pub fn location(&self) -> (&str, &str) {
        (&self.uri, &self.name)
    }

    /// How many attempts the table holds.
    pub async fn count(&self) -> Result<usize> {
        Ok(self.table.count_rows(None).await?)
    }

    /// Every attempt, in no particular order (for `vault export`, `vault stats`, pruning).
    pub async fn all(&self) -> Result<Vec<FixAttempt>> {
        let batches: Vec<RecordBatch> = self
            .table
            .query()
            .select(Select::columns(&self.columns_without_vector()))
            .execute()
            .await?
            .try_collect()
            .await?;
        let mut out = Vec::new();
        for batch in &batches {
            out.extend(attempts(batch)?);
        }
        Ok(out)
    }

    /// Appends attempts with their vectors, retrying commit conflicts.
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
        let batch = self.batch(&rows)?;
        let mut mirror = self.mirror.lock().await;
        let _appending = write_lock(&self.uri, Lock::Shared).await?;
        let add = || async { self.table.add(batch.clone()).execute().await };
        committed(add).await?;
        // The rows in memory (or in the snapshot) stay whole only when this write is the one
        // commit since they were read; with another writer's commit in between, they are read
        // again at the next search.
        let version = self.table.version().await?;
        if let Some(mut m) = mirror.take().filter(|m| version == m.version + 1) {
            m.version = version;
            m.extend(rows);
            m.save(&self.snapshot);
            *mirror = Some(m);
        }
        Ok(())
    }

    /// The rows at the table's current version: those in memory, else the snapshot, else read
    /// through LanceDB (and the snapshot written).
    async fn current<'a>(&self, slot: &'a mut Option<Mirror>) -> Result<&'a Mirror> {
        let version = self.table.version().await?;
        let stale = slot.as_ref().is_none_or(|m| m.version != version);
        if stale {
            *slot = None;
        }
        if let Some(m) = slot {
            return Ok(m);
        }
        let mirror = match Mirror::load(&self.snapshot, version, self.dims) {
            Some(m) => m,
            // A new table: counting reads the manifest, reading would plan a query.
            None if self.count().await? == 0 => Mirror {
                version,
                dims: self.dims,
                rows: Vec::new(),
            },
            None => {
                let m = self.read_rows().await?;
                if m.version == version {
                    m.save(&self.snapshot);
                }
                m
            }
        };
        Ok(slot.insert(mirror))
    }

    /// Every attempt with its vector (scaled to length 1), read through LanceDB, and the
    /// table's version they are.
    async fn read_rows(&self) -> Result<Mirror> {
        let version = self.table.version().await?;
        let batches: Vec<RecordBatch> = self.table.query().execute().await?.try_collect().await?;
        let mut rows = Vec::new();
        for batch in &batches {
            let vectors = batch
                .column_by_name("vector")
                .and_then(|c| c.as_any().downcast_ref::<FixedSizeListArray>())
                .ok_or_else(|| VaultError::Schema("column vector is missing or mistyped".into()))?;
            let values = vectors
                .values()
                .as_any()
                .downcast_ref::<Float32Array>()
                .ok_or_else(|| VaultError::Schema("vector holds no 32-bit floats".into()))?;
            for (i, attempt) in attempts(batch)?.into_iter().enumerate() {
                let start = vectors.value_offset(i) as usize;
                let vector = values
                    .values()
                    .get(start..start + self.dims)
                    .ok_or_else(|| {
                        VaultError::Schema("a vector is shorter than the table's".into())
                    })?
                    .to_vec();
                rows.push((attempt, unit(vector)));
            }
        }
        // A write by another process between the two reads of the version would label these
        // rows wrongly: they are then labelled with no version, so nothing keeps them.
        let after = self.table.version().await?;
        Ok(Mirror {
            version: if after == version { version } else { u64::MAX },
            dims: self.dims,
            rows,
        })
    }

    /// Reads the rows recall searches (from the snapshot when it is current), so that the
    /// first search, after the baseline test run, finds them in memory: a run calls this
    /// beside that test run. A failure here is the search's to report.
    pub async fn warm(&self) {
        let mut slot = self.mirror.lock().await;
        let _ = self.current(&mut slot).await;
    }

    /// Up to `limit` attempts with cosine similarity ≥ `min_similarity`, most similar first.
    /// An exhaustive (flat) search over the rows in memory: exact, and at the vault's size
    /// (thousands of rows) faster than any index would pay back. The rows are read again when
    /// the table has changed since (another process wrote, or a prune or compaction ran),
    /// which another process's write makes visible within two seconds.
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
        let mut slot = self.mirror.lock().await;
        Ok(self
            .current(&mut slot)
            .await?
            .nearest(&query, limit, min_similarity))
    }

    /// Deletes the least useful attempts until at most `max` remain: failed attempts before
    /// successful ones, older before newer. Returns how many were deleted. The table is
    /// rewritten from the rows kept, which also merges its files into one.
    pub async fn prune(&self, max: usize) -> Result<usize> {
        // Counting reads the manifest only; reading every row is for when there is work.
        if self.count().await? <= max {
            return Ok(0);
        }
        self.rewrite(max).await
    }

    /// Merges small files (each write adds one) and removes versions older than a minute, so
    /// searches read a few files and the directory does not grow with every run.
    pub async fn compact(&self) -> Result<CompactStats> {
        let before = self.fragments().await?;
        if before > 1 {
            self.rewrite(usize::MAX).await?;
        }
        self.remove_old_versions().await?;
        Ok(CompactStats {
            fragments_before: before,
            fragments_after: self.fragments().await?,
        })
    }

    /// Replaces the table by its `max` most useful rows in one new version (one file), and
    /// returns how many rows were left out. Under the write lock held exclusively, at the
    /// table's latest version: no append can commit between the read and the rewrite. This
    /// is a write of rows already in memory; LanceDB's delete and compaction would each plan
    /// a DataFusion query (a SQL predicate, a scan).
    pub(super) async fn rewrite(&self, max: usize) -> Result<usize> {
        let mut slot = self.mirror.lock().await;
        let _alone = write_lock(&self.uri, Lock::Exclusive).await?;
        self.table.checkout_latest().await?;
        let mut rows = self.current(&mut slot).await?.rows.clone();
        // Most useful first; everything past `max` goes.
        rows.sort_by(|(a, _), (b, _)| {
            b.success
                .cmp(&a.success)
                .then(b.timestamp_ms.cmp(&a.timestamp_ms))
                .then(a.id.cmp(&b.id))
        });
        let doomed = rows.len().saturating_sub(max);
        rows.truncate(max);
        let batch = self.batch(&rows)?;
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
            dims: self.dims,
            rows,
        };
        mirror.save(&self.snapshot);
        *slot = Some(mirror);
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

    /// The number of data files: each write adds one until compaction merges them.
    pub async fn fragments(&self) -> Result<usize> {
        Ok(self.table.stats().await?.fragment_stats.num_fragments)
    }

    /// Bytes of data the table holds on disk.
    pub async fn bytes(&self) -> Result<usize> {
        Ok(self.table.stats().await?.total_bytes)
    }

    fn columns_without_vector(&self) -> Vec<String> {
        self.schema
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .filter(|n| n != "vector")
            .collect()
    }

    fn batch(&self, rows: &[(FixAttempt, Vec<f32>)]) -> Result<RecordBatch> {
        let text = |f: fn(&FixAttempt) -> &str| -> ArrayRef {
            Arc::new(StringArray::from_iter_values(
                rows.iter().map(|(a, _)| f(a)),
            ))
        };
        let mut tests = ListBuilder::new(StringBuilder::new());
        for (a, _) in rows {
            for id in &a.test_ids {
                tests.values().append_value(id);
            }
            tests.append(true);
        }
        let dims = i32::try_from(self.dims).map_err(|_| VaultError::Schema("dims".into()))?;
        let values =
            Float32Array::from_iter_values(rows.iter().flat_map(|(_, v)| v.iter().copied()));
        let vectors = FixedSizeListArray::try_new(
            Arc::new(Field::new("item", DataType::Float32, true)),
            dims,
            Arc::new(values),
            None,
        )?;
        let columns: Vec<ArrayRef> = vec![
            text(|a| &a.id),
            text(|a| &a.project_id),
            text(|a| &a.signature),
            Arc::new(StringArray::from_iter(
                rows.iter().map(|(a, _)| a.category.map(|c| c.as_str())),
            )),
            Arc::new(tests.finish()),
            text(|a| &a.hypothesis),
            text(|a| &a.diff),
            Arc::new(BooleanArray::from_iter(
                rows.iter().map(|(a, _)| Some(a.success)),
            )),
            Arc::new(Int64Array::from_iter_values(
                rows.iter().map(|(a, _)| a.timestamp_ms),
            )),
            Arc::new(UInt64Array::from_iter_values(
                rows.iter().map(|(a, _)| a.tokens),
            )),
            Arc::new(Float64Array::from_iter_values(
                rows.iter().map(|(a, _)| a.cost_usd),
            )),
            text(|a| &a.model),
            text(|a| &a.language),
            Arc::new(vectors),
        ];
        Ok(RecordBatch::try_new(self.schema.clone(), columns)?)
    }
}

/// Numbers of data files before and after a compaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompactStats {
    pub fragments_before: usize,
    pub fragments_after: usize,
}

/// The attempts of a batch read back (every column but the vector).
fn attempts(batch: &RecordBatch) -> Result<Vec<FixAttempt>> {
    fn column<'a, T: 'static>(batch: &'a RecordBatch, name: &str) -> Result<&'a T> {
        batch
            .column_by_name(name)
            .and_then(|c| c.as_any().downcast_ref::<T>())
            .ok_or_else(|| VaultError::Schema(format!("column {name} is missing or mistyped")))
    }
    let text = |name| column::<StringArray>(batch, name);
    let (id, project, signature, category) = (
        text("id")?,
        text("project_id")?,
        text("signature")?,
        text("category")?,
    );
    let (hypothesis, diff, model, language) = (
        text("hypothesis")?,
        text("diff")?,
        text("model")?,
        text("language")?,
    );
    let tests = column::<ListArray>(batch, "test_ids")?;
    let success = column::<BooleanArray>(batch, "success")?;
    let timestamp = column::<Int64Array>(batch, "timestamp_ms")?;
    let tokens = column::<UInt64Array>(batch, "tokens")?;
    let cost = column::<Float64Array>(batch, "cost_usd")?;
    let mut out = Vec::with_capacity(batch.num_rows());
    for i in 0..batch.num_rows() {
        let ids = tests.value(i);
        let ids = ids
            .as_any()
            .downcast_ref::<StringArray>()
            .ok_or_else(|| VaultError::Schema("test_ids is not a list of strings".into()))?;
        out.push(FixAttempt {
            id: id.value(i).to_string(),
            project_id: project.value(i).to_string(),
            signature: signature.value(i).to_string(),
            category: (!category.is_null(i))
                .then(|| Category::parse(category.value(i)))
                .flatten(),
            test_ids: ids.iter().flatten().map(str::to_string).collect(),
            hypothesis: hypothesis.value(i).to_string(),
            diff: diff.value(i).to_string(),
            success: success.value(i),
            timestamp_ms: timestamp.value(i),
            tokens: tokens.value(i),
            cost_usd: cost.value(i),
            model: model.value(i).to_string(),
            language: language.value(i).to_string(),
        });
    }
    Ok(out)
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

    async fn embedded(embedder: &HashedNgrams, a: FixAttempt) -> (FixAttempt, Vec<f32>) {
        let v = embedder
            .embed(sealed_texts(vec![a.signature.clone()]))
            .await
            .unwrap()
            .remove(0);
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
        let query = embedder
            .embed(sealed_texts(vec![rows[0].signature.clone()]))
            .await
            .unwrap()
            .remove(0);

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
        assert!(store.fragments().await.unwrap() >= 8);
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
        // The prune rewrote the table into one file.
        assert_eq!(store.fragments().await.unwrap(), 1);
        assert_eq!(store.prune(4).await.unwrap(), 0);
        for n in 8..11 {
            let a = attempt(&format!("a{n}"), &format!("sig {n}"), false);
            store.add(vec![embedded(&embedder, a).await]).await.unwrap();
        }
        let stats = store.compact().await.unwrap();
        assert_eq!((stats.fragments_before, stats.fragments_after), (4, 1));
        assert_eq!(store.count().await.unwrap(), 7);
    }

    /// Each write that is the table's next version, and each rewrite, leaves the snapshot at
    /// the table's version: a new handle (the next run) recalls from it without reading the
    /// table.
    #[tokio::test]
    async fn writes_and_rewrites_keep_the_snapshot_at_the_tables_version() {
        let dir = tempfile::tempdir().unwrap();
        let sig = "LOGIC test_total: AssertionError: expected 3 to equal 4";
        let (store, embedder) = store_with(dir.path(), &[attempt("a", sig, false)]).await;
        let current = |store: &LanceStore| {
            let version = futures::executor::block_on(store.table.version()).unwrap();
            Mirror::load(&store.snapshot, version, store.dims).map(|m| m.rows.len())
        };
        // The first write had nothing to extend: the snapshot is made at the first search.
        assert_eq!(current(&store), None);
        let query = embedder
            .embed(sealed_texts(vec![sig.into()]))
            .await
            .unwrap()
            .remove(0);
        store.search(&query, 5, 0.5).await.unwrap();
        assert_eq!(current(&store), Some(1));
        store
            .add(vec![(attempt("b", sig, true), query.clone())])
            .await
            .unwrap();
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
            dims: store.dims,
            rows: vec![(attempt("ghost", sig, true), query.clone())],
        };
        stale.save(&store.snapshot);
        let (fresh, _) = store_with(dir.path(), &[]).await;
        assert_eq!(ids(fresh.search(&query, 5, 0.5).await.unwrap()), ["b"]);
    }

    /// Recall reads the table once and keeps it: its own writes join the rows in memory, another
    /// process's writes and a prune are seen when the table's version moves.
    #[tokio::test]
    async fn recall_sees_its_own_writes_at_once_and_others_within_the_read_interval() {
        let dir = tempfile::tempdir().unwrap();
        let signature = "LOGIC test_total: AssertionError: expected 3 to equal 4";
        let (store, embedder) = store_with(dir.path(), &[attempt("first", signature, false)]).await;
        let query = embedder
            .embed(sealed_texts(vec![signature.into()]))
            .await
            .unwrap()
            .remove(0);
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

        // Another process's write (another handle on the same table): found once the table is
        // checked again, at most `READ_CONSISTENCY` later.
        let (other, _) = store_with(dir.path(), &[attempt("theirs", signature, true)]).await;
        tokio::time::sleep(READ_CONSISTENCY + Duration::from_millis(200)).await;
        assert_eq!(
            ids(store.search(&query, 10, 0.85).await.unwrap()),
            ["first", "mine", "theirs"]
        );

        // A prune by the other handle: the pruned row is not recalled any more.
        assert_eq!(other.prune(2).await.unwrap(), 1);
        tokio::time::sleep(READ_CONSISTENCY + Duration::from_millis(200)).await;
        assert_eq!(
            ids(store.search(&query, 10, 0.85).await.unwrap()),
            ["mine", "theirs"]
        );
    }
}
