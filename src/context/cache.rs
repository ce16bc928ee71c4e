//! The graph's cache, `<root>/.ralph/graph-cache.bin`.
//!
//! Per file: a file whose size and modification time match its entry is taken as unchanged
//! without being read. When either differs, the file is read and hashed (xxh3): an equal hash
//! keeps the entry (a `touch`, a checkout of the same content), a different one re-parses the
//! file.
//!
//! Whole graph: the resolved edges are kept under a key hashing every input of resolution (each
//! source file's path and content hash, the effective tsconfig mappings, the crate roots). A
//! build whose key matches takes the edges as they are; any difference (a file added, removed or
//! edited, a tsconfig changed) resolves everything again, since one new file can change what many
//! specifiers name.
//!
//! The format is postcard (compact binary): loading it is most of a warm build after the walk,
//! and JSON took three times as long.
//!
//! A cache that is missing, unreadable, corrupt, or written by another version is ignored and
//! rebuilt; the cache is an optimisation and never an error.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::imports::Language;

/// Bumped whenever extraction or the entry format changes, so old caches are not trusted.
const FORMAT: u32 = 2;

/// A modification time this close to when the cache was saved may hide a later write within the
/// same timestamp tick (coarse file systems have 1–2 s granularity), so such a file is hashed.
const RACY_WINDOW_NS: u64 = 2_000_000_000;

/// Where the cache of the graph rooted at `root` lives.
pub fn cache_path(root: &Path) -> PathBuf {
    root.join(".ralph").join("graph-cache.bin")
}

/// What the build learned about one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// Size in bytes when last seen.
    pub size: u64,
    /// Modification time in nanoseconds since the Unix epoch when last seen.
    pub mtime_ns: u64,
    /// xxh3 of the content.
    pub hash: u64,
    /// Line count (for the over-long file warning).
    pub lines: usize,
    /// Whether the file is in the graph, and its imports.
    pub kind: EntryKind,
}

/// A parsed source file, or one left out of the graph (binary, generated).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum EntryKind {
    /// In the graph, with its import specifiers (see [`super::imports`] for their forms).
    Source {
        /// The file's language.
        language: Language,
        /// Its import specifiers.
        imports: Vec<String>,
    },
    /// Left out of the graph, with the reason.
    Skipped {
        /// Why, for the docs and debugging (`binary`, `generated`).
        reason: String,
    },
}

/// The cache as stored.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct CacheFile {
    format: u32,
    /// The ralph-loop version: a new release may extract differently without bumping `FORMAT`.
    version: String,
    saved_at_ns: u64,
    /// Entries by root-relative path (`/`-separated on every platform the graph runs on).
    pub entries: HashMap<String, Entry>,
    /// The graph resolved from these entries, when the build got that far.
    pub resolved: Option<Resolved>,
}

/// A resolved graph: its source files in path order and its edges as indices into them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resolved {
    /// The fingerprint of everything resolution read (see the module docs).
    pub key: u64,
    /// Root-relative paths of the graph's files, sorted.
    pub nodes: Vec<String>,
    /// `(importer, imported)` pairs, indices into `nodes`, in the order they were found.
    pub edges: Vec<(u32, u32)>,
}

impl CacheFile {
    /// A cache holding `entries`, stamped now.
    pub fn new(entries: HashMap<String, Entry>, resolved: Option<Resolved>) -> CacheFile {
        CacheFile {
            format: FORMAT,
            version: env!("CARGO_PKG_VERSION").to_string(),
            saved_at_ns: now_ns(),
            entries,
            resolved,
        }
    }

    /// The entry for `path` if its size and time say the file is unchanged; `None` when the
    /// file must at least be hashed.
    pub fn fresh(&self, path: &str, size: u64, mtime_ns: u64) -> Option<&Entry> {
        let entry = self.entries.get(path)?;
        let racy = mtime_ns.saturating_add(RACY_WINDOW_NS) >= self.saved_at_ns;
        (entry.size == size && entry.mtime_ns == mtime_ns && !racy).then_some(entry)
    }

    /// Loads the cache at `path`; `None` when it is absent, unreadable, corrupt or from another
    /// format or version.
    pub fn load(path: &Path) -> Option<CacheFile> {
        let bytes = std::fs::read(path).ok()?;
        let cache: CacheFile = postcard::from_bytes(&bytes).ok()?;
        (cache.format == FORMAT && cache.version == env!("CARGO_PKG_VERSION")).then_some(cache)
    }

    /// Saves atomically (temporary file in the same directory, then rename), so a concurrent
    /// run never reads a half-written cache. Unlike `fsutil::write_atomic` there is no fsync:
    /// it cost most of a cold build in the benchmark, and the worst a power loss can leave is an
    /// empty or truncated cache, which the next build ignores and rebuilds.
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        let dir = path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)?;
        let bytes = postcard::to_allocvec(self).map_err(std::io::Error::other)?;
        let mut tmp = tempfile::Builder::new()
            .prefix(".graph-cache-")
            .tempfile_in(dir)?;
        tmp.write_all(&bytes)?;
        tmp.persist(path).map_err(|e| e.error)?;
        Ok(())
    }
}

/// A file's modification time in nanoseconds since the epoch (0 when the platform has none:
/// the file is then always hashed, as 0 is inside the racy window of any save).
pub fn mtime_ns(meta: &std::fs::Metadata) -> u64 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry() -> Entry {
        Entry {
            size: 10,
            mtime_ns: 1_000,
            hash: 7,
            lines: 1,
            kind: EntryKind::Source {
                language: Language::Python,
                imports: vec!["os".into()],
            },
        }
    }

    #[test]
    fn round_trip_and_freshness() {
        let dir = tempfile::tempdir().unwrap();
        let path = cache_path(dir.path());
        let resolved = Resolved {
            key: 42,
            nodes: vec!["a.py".into(), "b.py".into()],
            edges: vec![(0, 1)],
        };
        let cache = CacheFile::new(
            HashMap::from([("a.py".to_string(), entry())]),
            Some(resolved.clone()),
        );
        cache.save(&path).unwrap();
        let loaded = CacheFile::load(&path).unwrap();
        assert_eq!(loaded.entries["a.py"], entry());
        assert_eq!(loaded.resolved, Some(resolved));
        assert!(loaded.fresh("a.py", 10, 1_000).is_some());
        assert!(loaded.fresh("a.py", 11, 1_000).is_none());
        assert!(loaded.fresh("a.py", 10, 1_001).is_none());
        assert!(loaded.fresh("b.py", 10, 1_000).is_none());
        // Modified just before the save: the time cannot be trusted.
        assert!(loaded.fresh("a.py", 10, loaded.saved_at_ns).is_none());
    }

    #[test]
    fn corrupt_or_foreign_caches_are_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let path = cache_path(dir.path());
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, b"{ not postcard").unwrap();
        assert!(CacheFile::load(&path).is_none());
        // Cut short, as a crash mid-write on a file system without rename atomicity leaves it.
        let whole = CacheFile::new(HashMap::from([("a.py".to_string(), entry())]), None);
        whole.save(&path).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
        assert!(CacheFile::load(&path).is_none());
        let mut old = CacheFile::new(HashMap::new(), None);
        old.format = FORMAT + 1;
        old.save(&path).unwrap();
        assert!(CacheFile::load(&path).is_none());
        assert!(CacheFile::load(&dir.path().join("missing.bin")).is_none());
    }
}
