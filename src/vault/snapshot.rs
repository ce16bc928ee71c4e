//! [`Mirror`]: the rows of a vault table in memory for recall, and their snapshot on disk.
//!
//! Recall is an exhaustive search over every row, so it needs every row. Reading them through
//! LanceDB runs a DataFusion plan, and the first plan of a process builds DataFusion's session:
//! 15 ms, and 46 MiB of the executable's code mapped in (measured in issue 18; the whole run
//! otherwise maps 24). So the rows are also kept in a file beside the table,
//! `<table>.recall`, labelled with the table version they are: a run whose table is still at that
//! version reads the file, and each write of this process that is the table's next version
//! rewrites it. Any other version (another process's write, a prune) means one read through
//! LanceDB, after which the file is written anew. The file is a cache: a missing, truncated,
//! foreign or older-format one is read past, never trusted, never an error.

use std::io::Write;
use std::path::{Path, PathBuf};

use ralph_actors::schema::attempt::{FixAttempt, Scored};
use serde::{Deserialize, Serialize};

use super::pending::Row;

/// The file's first bytes: its format. A change of `FixAttempt` or of the layout below changes
/// the number, and older files are then read past.
const MAGIC: &[u8; 16] = b"ralph-recall-v1\n";

/// Every row of a table at `version`, each vector scaled to length 1 so that cosine similarity
/// is a dot product.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct Mirror {
    pub version: u64,
    pub dims: usize,
    pub rows: Vec<Row>,
}

/// Where the snapshot of table `name` of the database at `uri` lives.
pub(super) fn snapshot_path(uri: &str, name: &str) -> PathBuf {
    Path::new(uri).join(format!("{name}.recall"))
}

impl Mirror {
    /// The snapshot at `path` if it is the table at `version` with vectors of `dims`.
    pub fn load(path: &Path, version: u64, dims: usize) -> Option<Mirror> {
        let bytes = std::fs::read(path).ok()?;
        let body = bytes.strip_prefix(MAGIC.as_slice())?;
        let mirror: Mirror = postcard::from_bytes(body).ok()?;
        let whole = mirror.rows.iter().all(|(_, v)| v.len() == dims);
        (mirror.version == version && mirror.dims == dims && whole).then_some(mirror)
    }

    /// Writes the snapshot, replacing the file in one rename. Best effort: a snapshot that
    /// cannot be written costs the next process one read through LanceDB, nothing else. Not
    /// synced to disk: after a crash a torn file fails [`Mirror::load`] and is read past.
    pub fn save(&self, path: &Path) {
        let write = || -> std::io::Result<()> {
            let body = postcard::to_stdvec(self).map_err(std::io::Error::other)?;
            let dir = path.parent().unwrap_or(Path::new("."));
            let mut tmp = tempfile::Builder::new()
                .prefix(".recall-")
                .tempfile_in(dir)?;
            tmp.write_all(MAGIC)?;
            tmp.write_all(&body)?;
            tmp.persist(path).map_err(|e| e.error)?;
            Ok(())
        };
        if let Err(e) = write() {
            tracing::debug!("cannot write the recall snapshot {}: {e}", path.display());
        }
    }

    /// Appends rows (vectors as given; they are scaled here).
    pub fn extend(&mut self, rows: Vec<(FixAttempt, Vec<f32>)>) {
        self.rows
            .extend(rows.into_iter().map(|(a, v)| (a, unit(v))));
    }
}

/// Up to `limit` of the rows of `parts` (the table's, the log's) with cosine similarity ≥
/// `min_similarity` to `query` (scaled to length 1), most similar first.
pub(super) fn nearest(
    parts: &[&[Row]],
    query: &[f32],
    limit: usize,
    min_similarity: f32,
) -> Vec<Scored> {
    let mut hits: Vec<(f32, &FixAttempt)> = Vec::new();
    for rows in parts {
        for (a, v) in rows.iter() {
            let similarity = dot(query, v);
            if similarity >= min_similarity {
                hits.push((similarity, a));
            }
        }
    }
    if hits.len() > limit && limit > 0 {
        hits.select_nth_unstable_by(limit - 1, |a, b| b.0.total_cmp(&a.0));
    }
    hits.truncate(limit);
    hits.sort_by(|a, b| b.0.total_cmp(&a.0));
    hits.into_iter()
        .map(|(similarity, a)| Scored {
            attempt: a.clone(),
            similarity,
        })
        .collect()
}

/// `v` scaled to length 1; a zero vector stays zero (it is similar to nothing).
pub(super) fn unit(mut v: Vec<f32>) -> Vec<f32> {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
    v
}

/// The dot product in eight independent lanes: a plain sum is one chain of dependent additions
/// that the compiler may not reorder, so it cannot use SIMD; eight partial sums can.
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0.0_f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in ca.zip(cb) {
        for i in 0..8 {
            lanes[i] += x[i] * y[i];
        }
    }
    lanes.iter().sum::<f32>() + tail
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use ralph_actors::schema::test_run::Category;

    fn attempt(id: &str) -> FixAttempt {
        FixAttempt {
            id: id.into(),
            project_id: "p".into(),
            signature: "s".into(),
            category: Some(Category::Logic),
            test_ids: vec!["t::a".into()],
            hypothesis: "h".into(),
            diff: "d".into(),
            success: true,
            timestamp_ms: 7,
            tokens: 3,
            cost_usd: 0.5,
            model: "m".into(),
            language: "python".into(),
        }
    }

    #[test]
    fn dot_is_the_plain_sum_of_products_at_any_length() {
        for n in [0, 1, 7, 8, 9, 256, 257] {
            let a: Vec<f32> = (0..n).map(|i| (i as f32 * 0.37).sin()).collect();
            let b: Vec<f32> = (0..n).map(|i| (i as f32 * 0.11).cos()).collect();
            let plain: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
            assert!((dot(&a, &b) - plain).abs() < 1e-4, "{n}");
        }
        assert_eq!(unit(vec![3.0, 4.0]), [0.6, 0.8]);
        assert_eq!(unit(vec![0.0, 0.0]), [0.0, 0.0]);
    }

    /// A snapshot is trusted only for its own version and dimension; a torn, foreign or
    /// missing file is read past.
    #[test]
    fn a_snapshot_is_read_back_only_for_its_version_and_never_when_torn() {
        let dir = tempfile::tempdir().unwrap();
        let path = snapshot_path(&dir.path().to_string_lossy(), "attempts_x");
        assert!(Mirror::load(&path, 3, 2).is_none());
        let mut mirror = Mirror {
            version: 3,
            dims: 2,
            rows: Vec::new(),
        };
        mirror.extend(vec![(attempt("a"), vec![3.0, 4.0])]);
        mirror.save(&path);
        let back = Mirror::load(&path, 3, 2).unwrap();
        assert_eq!(back.rows, [(attempt("a"), vec![0.6, 0.8])]);
        assert!(Mirror::load(&path, 4, 2).is_none());
        assert!(Mirror::load(&path, 3, 3).is_none());

        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() - 5]).unwrap();
        assert!(Mirror::load(&path, 3, 2).is_none());
        std::fs::write(&path, b"something else entirely").unwrap();
        assert!(Mirror::load(&path, 3, 2).is_none());
    }

    #[test]
    fn nearest_keeps_the_threshold_and_the_order() {
        let mut mirror = Mirror {
            version: 1,
            dims: 2,
            rows: Vec::new(),
        };
        mirror.extend(vec![
            (attempt("x"), vec![1.0, 0.0]),
            (attempt("xy"), vec![1.0, 1.0]),
            (attempt("y"), vec![0.0, 1.0]),
        ]);
        let ids = |found: Vec<Scored>| -> Vec<String> {
            found.into_iter().map(|s| s.attempt.id).collect()
        };
        assert_eq!(
            ids(nearest(&[&mirror.rows], &[1.0, 0.0], 5, 0.5)),
            ["x", "xy"]
        );
        assert_eq!(ids(nearest(&[&mirror.rows], &[1.0, 0.0], 1, 0.0)), ["x"]);
    }
}
