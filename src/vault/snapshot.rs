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

use serde::{Deserialize, Serialize};

use super::rowset::Rowset;

/// The file's first bytes: its format. A change of `FixAttempt` or of the layout below changes
/// the number, and older files are then read past.
const MAGIC: &[u8; 16] = b"ralph-recall-v2\n";

/// Every row of a table at `version`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct Mirror {
    pub version: u64,
    pub rows: Rowset,
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
        (mirror.version == version && mirror.rows.fits(dims)).then_some(mirror)
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
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use crate::vault::rowset::fixtures::attempt;

    /// A snapshot is trusted only for its own version and dimension; a torn, foreign, older or
    /// missing file is read past.
    #[test]
    fn a_snapshot_is_read_back_only_for_its_version_and_never_when_torn() {
        let dir = tempfile::tempdir().unwrap();
        let path = snapshot_path(&dir.path().to_string_lossy(), "attempts_x");
        assert!(Mirror::load(&path, 3, 2).is_none());
        let mirror = Mirror {
            version: 3,
            rows: Rowset::from_rows(2, vec![(attempt("a"), vec![3.0, 4.0])]),
        };
        mirror.save(&path);
        let back = Mirror::load(&path, 3, 2).unwrap();
        assert_eq!(back.rows, mirror.rows);
        let (a, v) = back.rows.iter().next().unwrap();
        assert_eq!((a, v), (&attempt("a"), &[0.6, 0.8][..]));
        assert!(Mirror::load(&path, 4, 2).is_none());
        assert!(Mirror::load(&path, 3, 3).is_none());

        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() - 5]).unwrap();
        assert!(Mirror::load(&path, 3, 2).is_none());
        std::fs::write(&path, b"something else entirely").unwrap();
        assert!(Mirror::load(&path, 3, 2).is_none());
        // The first format (a vector per row) is read past.
        let mut older = b"ralph-recall-v1\n".to_vec();
        older.extend_from_slice(&bytes[MAGIC.len()..]);
        std::fs::write(&path, older).unwrap();
        assert!(Mirror::load(&path, 3, 2).is_none());
    }
}
