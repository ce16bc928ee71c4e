//! [`Pending`]: the attempts recorded since the table was last written, in a log beside it.
//!
//! An append through LanceDB maps its write path (a transaction, a data file, a manifest): a
//! run's peak was 64 MiB with it and 41 without (measured in issue 18), and each append left one
//! more data file. So a run appends its attempts to
//! `<table>.pending` instead: length-prefixed, checksummed records after a format line. The log
//! is written into the table in one LanceDB append once it holds a tenth of
//! `memory.max_patterns` ([`super::housekeep`]), and by every prune or compaction; recall
//! searches the table's rows and the log's.
//!
//! Appends, flushes and rewrites hold `write.lock`; a reader holds nothing. It reads whole
//! records only, and reads the file again when its identity, length or time has changed
//! ([`Stamp`]). A record torn by a crash lies past the last whole one: readers stop before it
//! and the next append cuts it off. A crash between a flush's commit and the log's removal
//! leaves rows in both the table and the log: the store tells them apart by id, so none is
//! recalled or counted twice, and the next flush skips them. As LanceDB's own writes, the log
//! is not synced to disk at each append.

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::rowset::{Row, Rowset};

/// The file's first bytes: its format. A change of `FixAttempt` or of the record layout
/// changes the number; a log of another format is set aside at the next append, not lost.
const MAGIC: &[u8; 16] = b"ralph-pending-1\n";

/// Bytes before each record: its length and its checksum, both little-endian `u32`.
const HEADER: usize = 8;

/// Where the log of table `name` of the database at `uri` lives.
pub(super) fn pending_path(uri: &str, name: &str) -> PathBuf {
    Path::new(uri).join(format!("{name}.pending"))
}

/// What identifies one state of the file: a reader whose stamp still matches has read it all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Stamp {
    dev: u64,
    ino: u64,
    len: u64,
    modified: (i64, i64),
}

impl Stamp {
    /// The file's length in this state.
    pub fn bytes(&self) -> u64 {
        self.len
    }

    fn of(meta: &std::fs::Metadata) -> Stamp {
        use std::os::unix::fs::MetadataExt;
        Stamp {
            dev: meta.dev(),
            ino: meta.ino(),
            len: meta.len(),
            modified: (meta.mtime(), meta.mtime_nsec()),
        }
    }
}

/// The file's stamp now; `None` when there is no log.
pub(super) fn stamp(path: &Path) -> Option<Stamp> {
    std::fs::metadata(path).ok().map(|m| Stamp::of(&m))
}

/// The log as read, with the stamp of the state it was read in.
#[derive(Debug)]
pub(super) struct Pending {
    pub stamp: Option<Stamp>,
    pub rows: Rowset,
    /// The file's length: a long log is flushed even with few rows.
    pub bytes: u64,
}

impl Pending {
    /// No log.
    pub fn empty(dims: usize) -> Pending {
        Pending {
            stamp: None,
            rows: Rowset::new(dims),
            bytes: 0,
        }
    }

    /// Reads the log at `path`; none is an empty log. Rows with vectors of another length than
    /// `dims` are left out, and so is a file of another format (it is set aside at the next
    /// append).
    pub fn read(path: &Path, dims: usize) -> std::io::Result<Pending> {
        // The stamp is taken first: a write that lands during the read changes it, so the
        // next reader reads again.
        let stamp = stamp(path);
        let bytes = match std::fs::read(path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Pending::empty(dims)),
            Err(e) => return Err(e),
        };
        let rows = match parse(&bytes, dims) {
            Some((rows, _)) => rows,
            None => {
                tracing::debug!("{} is not a log of this version; read past", path.display());
                Rowset::new(dims)
            }
        };
        Ok(Pending {
            stamp,
            rows,
            bytes: bytes.len() as u64,
        })
    }

    /// Whether the file is still in the state this was read from.
    pub fn is_current(&self, path: &Path) -> bool {
        self.stamp == stamp(path)
    }
}

/// The rows of the whole records of a log, and the length they end at; `None` when `bytes` is
/// not a log of this format. A file shorter than the format line that begins it is a log torn
/// before its first record.
fn parse(bytes: &[u8], dims: usize) -> Option<(Rowset, usize)> {
    if bytes.len() < MAGIC.len() {
        return MAGIC.starts_with(bytes).then(|| (Rowset::new(dims), 0));
    }
    let mut rest = bytes.strip_prefix(MAGIC.as_slice())?;
    let mut rows = Rowset::new(dims);
    let mut end = MAGIC.len();
    while let Some((len, sum)) = rest.get(..HEADER).map(|h| {
        let word = |i: usize| u32::from_le_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]);
        (word(0) as usize, word(4))
    }) {
        let Some(record) = rest.get(HEADER..HEADER + len) else {
            break;
        };
        if checksum(record) != sum {
            break;
        }
        let Ok((attempt, vector)) = postcard::from_bytes::<Row>(record) else {
            break;
        };
        // A vector of another length (another embedder's) is not this table's: left out.
        rows.push(attempt, &vector);
        end += HEADER + len;
        rest = &rest[HEADER + len..];
    }
    Some((rows, end))
}

fn checksum(record: &[u8]) -> u32 {
    xxhash_rust::xxh3::xxh3_64(record) as u32
}

/// Appends `rows` (vectors already scaled) to the log at `path`, creating it; the caller holds
/// `write.lock`. A torn last record is cut off first, and a file of another format is renamed
/// to `<table>.pending.unreadable` (with a warning) and a new log begun. Returns the file's
/// stamps before and after, so that a reader of the state before can add `rows` to what it
/// holds instead of reading the file again.
pub(super) fn append(
    path: &Path,
    dims: usize,
    rows: &[Row],
) -> std::io::Result<(Option<Stamp>, Option<Stamp>)> {
    let before = stamp(path);
    let open = || {
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
    };
    let mut file = open()?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    let end = match parse(&bytes, dims) {
        Some((_, end)) => end,
        None => {
            let aside = path.with_extension("pending.unreadable");
            tracing::warn!(
                "{} is not a log this version can read; it was moved to {} and a new one begun",
                path.display(),
                aside.display()
            );
            drop(file);
            std::fs::rename(path, &aside)?;
            file = open()?;
            0
        }
    };
    let mut out = Vec::new();
    if end == 0 {
        out.extend_from_slice(MAGIC);
    }
    for row in rows {
        let record = postcard::to_stdvec(row).map_err(std::io::Error::other)?;
        let len = u32::try_from(record.len()).map_err(std::io::Error::other)?;
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&checksum(&record).to_le_bytes());
        out.extend_from_slice(&record);
    }
    file.set_len(end as u64)?;
    file.seek(SeekFrom::Start(end as u64))?;
    file.write_all(&out)?;
    Ok((before, Some(Stamp::of(&file.metadata()?))))
}

/// Removes the log (its rows are in the table now); the caller holds `write.lock`.
pub(super) fn clear(path: &Path) -> std::io::Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use crate::vault::rowset::fixtures::attempt;

    fn row(id: &str) -> Row {
        (attempt(id), vec![0.6, 0.8])
    }

    fn ids(p: &Pending) -> Vec<&str> {
        p.rows.attempts().iter().map(|a| a.id.as_str()).collect()
    }

    #[test]
    fn appends_are_read_back_and_a_reader_knows_when_to_read_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = pending_path(&dir.path().to_string_lossy(), "attempts_x");
        let none = Pending::read(&path, 2).unwrap();
        assert!(none.rows.is_empty() && none.stamp.is_none());
        assert!(none.is_current(&path));

        let (before, after) = append(&path, 2, &[row("a"), row("b")]).unwrap();
        assert_eq!(before, None);
        assert!(!none.is_current(&path));
        let read = Pending::read(&path, 2).unwrap();
        assert_eq!(read.stamp, after);
        assert_eq!(ids(&read), ["a", "b"]);
        let (a, v) = read.rows.iter().next().unwrap();
        assert_eq!((a.clone(), v.to_vec()), row("a"), "every field comes back");

        let (before, _) = append(&path, 2, &[row("c")]).unwrap();
        assert_eq!(before, read.stamp);
        assert!(!read.is_current(&path));
        assert_eq!(ids(&Pending::read(&path, 2).unwrap()), ["a", "b", "c"]);
        // Vectors of another length (another embedder's) are not this table's.
        assert!(Pending::read(&path, 3).unwrap().rows.is_empty());

        clear(&path).unwrap();
        clear(&path).unwrap();
        assert!(Pending::read(&path, 2).unwrap().rows.is_empty());
    }

    /// A record torn by a crash is not read, and the next append cuts it off so the records
    /// after it are read; a torn format line is a log with no records.
    #[test]
    fn a_torn_record_is_read_past_and_cut_off_by_the_next_append() {
        let dir = tempfile::tempdir().unwrap();
        let path = pending_path(&dir.path().to_string_lossy(), "attempts_x");
        append(&path, 2, &[row("a"), row("b")]).unwrap();
        let whole = std::fs::read(&path).unwrap();
        std::fs::write(&path, &whole[..whole.len() - 3]).unwrap();
        assert_eq!(ids(&Pending::read(&path, 2).unwrap()), ["a"]);
        append(&path, 2, &[row("c")]).unwrap();
        assert_eq!(ids(&Pending::read(&path, 2).unwrap()), ["a", "c"]);

        // A flipped byte inside a record fails its checksum.
        let mut bytes = std::fs::read(&path).unwrap();
        let last = bytes.len() - 2;
        bytes[last] ^= 0xff;
        std::fs::write(&path, &bytes).unwrap();
        assert_eq!(ids(&Pending::read(&path, 2).unwrap()), ["a"]);

        std::fs::write(&path, &MAGIC[..5]).unwrap();
        assert!(Pending::read(&path, 2).unwrap().rows.is_empty());
        append(&path, 2, &[row("d")]).unwrap();
        assert_eq!(ids(&Pending::read(&path, 2).unwrap()), ["d"]);
    }

    /// A log of another format is never read as rows and never lost: the next append moves it
    /// aside.
    #[test]
    fn a_log_of_another_format_is_set_aside_not_lost() {
        let dir = tempfile::tempdir().unwrap();
        let path = pending_path(&dir.path().to_string_lossy(), "attempts_x");
        std::fs::write(&path, b"ralph-pending-0\nolder records").unwrap();
        assert!(Pending::read(&path, 2).unwrap().rows.is_empty());
        append(&path, 2, &[row("a")]).unwrap();
        assert_eq!(ids(&Pending::read(&path, 2).unwrap()), ["a"]);
        let aside = dir.path().join("attempts_x.pending.unreadable");
        assert_eq!(
            std::fs::read(aside).unwrap(),
            b"ralph-pending-0\nolder records"
        );
    }
}
