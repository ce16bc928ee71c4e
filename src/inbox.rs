//! The inbox: `.ralph/inbox.jsonl`, the queue of specs agent mode works through, one JSON record
//! per line in the order they were added.
//!
//! Several processes may use it at once (`inbox add` beside a running agent): every reading or
//! change holds an exclusive `flock(2)` on `.ralph/inbox.lock` (not on the inbox itself, which a
//! change replaces). An addition is one `write(2)` of whole lines at the end; a status change
//! rewrites the file atomically (a new file renamed over it). A crash in the middle of an
//! addition can only leave a torn last line: it is moved to `.ralph/inbox.torn.jsonl`, and said,
//! never silently dropped. Any other line that is not a record stops with its line number.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use nix::fcntl::{Flock, FlockArg};
use serde::{Deserialize, Serialize};

use crate::fsutil::write_atomic;
use crate::session::RALPH_DIR;

pub const FILE: &str = "inbox.jsonl";
const LOCK: &str = "inbox.lock";
/// Where torn lines are kept.
pub const TORN: &str = "inbox.torn.jsonl";

/// A spec's place in the queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Pending,
    Active,
    Done,
    Failed,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::Active => "active",
            Status::Done => "done",
            Status::Failed => "failed",
        }
    }
}

/// One line of the inbox, in the seed's format.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// Always `inbox`.
    pub t: String,
    /// `q-` and four of `[a-z0-9]`.
    pub id: String,
    /// The spec file, relative to the project root.
    pub spec: String,
    pub added_at: String,
    pub status: Status,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// What went wrong with the inbox.
#[derive(Debug, thiserror::Error)]
pub enum InboxError {
    #[error(
        "{}:{line}: not an inbox record ({message}); fix or remove that line, then try again",
        path.display()
    )]
    Corrupt {
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error("no inbox record matches `{0}` (give an id such as q-a1b2, or a spec's path)")]
    NoMatch(String),
    #[error("{id} ({spec}) is active: stop the agent working on it first")]
    Active { id: String, spec: String },
    #[error("{context}: {source}")]
    Io {
        context: String,
        source: std::io::Error,
    },
}

impl InboxError {
    /// 2 for what the user must fix (a corrupt line, a bad id), 1 when the disk failed.
    pub fn exit_code(&self) -> i32 {
        match self {
            InboxError::Io { .. } => 1,
            _ => 2,
        }
    }
}

type Result<T, E = InboxError> = std::result::Result<T, E>;

fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> InboxError {
    let context = context.into();
    move |source| InboxError::Io { context, source }
}

/// The inbox of the project at `root`.
#[derive(Debug, Clone)]
pub struct Inbox {
    pub path: PathBuf,
    dir: PathBuf,
}

/// The inbox, locked and read: change `records` and [`Locked::save`] them, or drop it.
pub struct Locked {
    inbox: Inbox,
    pub records: Vec<Record>,
    /// A torn last line found and moved aside while reading: said to the user.
    pub torn: Option<String>,
    _lock: Flock<File>,
}

impl Inbox {
    pub fn at(root: &Path) -> Inbox {
        let dir = root.join(RALPH_DIR);
        Inbox {
            path: dir.join(FILE),
            dir,
        }
    }

    /// Locks and reads the inbox (empty when there is none yet).
    pub fn lock(&self) -> Result<Locked> {
        let root = self.dir.parent().unwrap_or(&self.dir);
        crate::session::ralph_dir(root)
            .map_err(io(format!("cannot create {}", self.dir.display())))?;
        let lock_path = self.dir.join(LOCK);
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(io(format!("cannot open {}", lock_path.display())))?;
        let lock = Flock::lock(file, FlockArg::LockExclusive).map_err(|(_, e)| InboxError::Io {
            context: format!("cannot lock {}", lock_path.display()),
            source: e.into(),
        })?;
        let (records, torn) = self.read_repairing()?;
        Ok(Locked {
            inbox: self.clone(),
            records,
            torn,
            _lock: lock,
        })
    }

    /// The records, a torn last line moved aside (with the lock held).
    fn read_repairing(&self) -> Result<(Vec<Record>, Option<String>)> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((Vec::new(), None)),
            Err(e) => return Err(io(format!("cannot read {}", self.path.display()))(e)),
        };
        let mut records = Vec::new();
        let mut offset = 0;
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        for (i, line) in lines.iter().enumerate() {
            let complete = line.ends_with('\n');
            let body = line.trim();
            if !body.is_empty() {
                match serde_json::from_str::<Record>(body) {
                    Ok(record) => records.push(record),
                    // The last line, never finished: an append cut short.
                    Err(_) if !complete && i + 1 == lines.len() => {
                        let torn = self.set_aside(line, offset)?;
                        return Ok((records, Some(torn)));
                    }
                    Err(e) => {
                        return Err(InboxError::Corrupt {
                            path: self.path.clone(),
                            line: i + 1,
                            message: e.to_string(),
                        })
                    }
                }
            }
            offset += line.len();
        }
        Ok((records, None))
    }

    /// Appends a torn line to [`TORN`] and cuts it from the inbox; the message to say.
    fn set_aside(&self, line: &str, offset: usize) -> Result<String> {
        let kept = self.dir.join(TORN);
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&kept)
            .map_err(io(format!("cannot open {}", kept.display())))?;
        file.write_all(format!("{line}\n").as_bytes())
            .and_then(|_| file.sync_all())
            .map_err(io(format!("cannot write {}", kept.display())))?;
        let inbox = OpenOptions::new()
            .write(true)
            .open(&self.path)
            .map_err(io(format!("cannot open {}", self.path.display())))?;
        inbox
            .set_len(offset as u64)
            .map_err(io(format!("cannot repair {}", self.path.display())))?;
        Ok(format!(
            "{}: its last line was cut short (a crash while adding to it) and is not a record; \
             it is kept in {} ({} bytes): add that spec again if it is missing",
            self.path.display(),
            kept.display(),
            line.len()
        ))
    }
}

impl Locked {
    /// Adds a pending record for each spec (relative to the root), with fresh ids, at the end.
    pub fn add(&mut self, specs: &[String]) -> Result<Vec<Record>> {
        let now = now();
        let mut added = Vec::new();
        for spec in specs {
            let id = loop {
                let id = new_id();
                if !self.records.iter().chain(&added).any(|r| r.id == id) {
                    break id;
                }
            };
            added.push(Record {
                t: "inbox".into(),
                id,
                spec: spec.clone(),
                added_at: now.clone(),
                status: Status::Pending,
                started_at: None,
                completed_at: None,
                error: None,
            });
        }
        let mut text = String::new();
        for record in &added {
            text.push_str(&line_of(record));
        }
        let path = &self.inbox.path;
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(io(format!("cannot open {}", path.display())))?;
        // A last line without its newline (written by hand) keeps its own line.
        let needs_newline = std::fs::read(path)
            .ok()
            .is_some_and(|b| b.last().is_some_and(|c| *c != b'\n'));
        if needs_newline {
            text.insert(0, '\n');
        }
        file.write_all(text.as_bytes())
            .and_then(|_| file.sync_data())
            .map_err(io(format!("cannot write {}", path.display())))?;
        self.records.extend(added.iter().cloned());
        Ok(added)
    }

    /// Writes `records` as they are now, atomically.
    pub fn save(&self) -> Result<()> {
        let text: String = self.records.iter().map(line_of).collect();
        write_atomic(&self.inbox.path, text.as_bytes())
            .map_err(io(format!("cannot write {}", self.inbox.path.display())))
    }

    /// The records `what` names: an id, or every record of a spec path.
    pub fn matching(&self, what: &str, root: &Path, cwd: &Path) -> Vec<usize> {
        let by_id: Vec<usize> = (0..self.records.len())
            .filter(|&i| self.records[i].id == what)
            .collect();
        if !by_id.is_empty() {
            return by_id;
        }
        let spec = relative_spec(Path::new(what), root, cwd);
        (0..self.records.len())
            .filter(|&i| self.records[i].spec == spec || self.records[i].spec == what)
            .collect()
    }

    /// The record an agent works on next, of those not `busy` (under way here): `current`, the
    /// spec an interrupted agent was on, while it is active or pending; else an active record,
    /// an agent's that died (with the agent's lock held, an active record not under way here
    /// was killed before its agent saved its session); else the first pending one.
    pub fn next(&self, busy: &[&str], current: Option<&str>) -> Option<&Record> {
        let mut free = self
            .records
            .iter()
            .filter(|r| !busy.contains(&r.id.as_str()));
        let resumed = current.and_then(|id| {
            free.clone()
                .find(|r| r.id == id && matches!(r.status, Status::Active | Status::Pending))
        });
        resumed
            .or_else(|| free.clone().find(|r| r.status == Status::Active))
            .or_else(|| free.find(|r| r.status == Status::Pending))
    }

    /// Sets record `id`'s status, with its timestamps and error.
    pub fn set_status(&mut self, id: &str, status: Status, error: Option<String>) -> Result<()> {
        let record = self
            .records
            .iter_mut()
            .find(|r| r.id == id)
            .ok_or_else(|| InboxError::NoMatch(id.to_string()))?;
        record.status = status;
        match status {
            Status::Active => {
                record.started_at = Some(now());
                record.completed_at = None;
                record.error = None;
            }
            Status::Pending => {
                record.started_at = None;
                record.completed_at = None;
                record.error = None;
            }
            Status::Done | Status::Failed => {
                record.completed_at = Some(now());
                record.error = error;
            }
        }
        self.save()
    }
}

fn line_of(record: &Record) -> String {
    let mut line = serde_json::to_string(record).unwrap_or_default();
    line.push('\n');
    line
}

/// `q-` and four characters of `[a-z0-9]`.
fn new_id() -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let bytes = uuid::Uuid::new_v4().into_bytes();
    let mut id = String::from("q-");
    for b in &bytes[..4] {
        id.push(ALPHABET[*b as usize % ALPHABET.len()] as char);
    }
    id
}

pub fn now() -> String {
    Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// `path` (relative to `cwd`) as the inbox names a spec: relative to the project root.
pub fn relative_spec(path: &Path, root: &Path, cwd: &Path) -> String {
    let full = std::path::absolute(cwd.join(path)).unwrap_or_else(|_| cwd.join(path));
    let full = full.canonicalize().unwrap_or(full);
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    full.strip_prefix(&root)
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| full.display().to_string())
}

/// "3h ago", "12m ago", "just now": how long before `now` the timestamp `at` was.
pub fn ago(at: &str, now: DateTime<Utc>) -> String {
    let Ok(then) = DateTime::parse_from_rfc3339(at) else {
        return at.to_string();
    };
    let secs = (now - then.with_timezone(&Utc)).num_seconds().max(0);
    match secs {
        0..=9 => "just now".into(),
        10..=59 => format!("{secs}s ago"),
        60..=3599 => format!("{}m ago", secs / 60),
        3600..=86_399 => format!("{}h ago", secs / 3600),
        _ => format!("{}d ago", secs / 86_400),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn ids_are_q_and_four_of_a_z_0_9() {
        for _ in 0..200 {
            let id = new_id();
            assert_eq!(id.len(), 6, "{id}");
            assert!(id.starts_with("q-"));
            assert!(id[2..]
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()));
        }
    }

    #[test]
    fn the_next_record_is_the_one_resumed_then_an_orphan_then_the_first_pending() {
        let dir = tempfile::tempdir().unwrap();
        let inbox = Inbox::at(dir.path());
        let mut locked = inbox.lock().unwrap();
        let added = locked
            .add(&["a.md".into(), "b.md".into(), "c.md".into()])
            .unwrap();
        let id = |i: usize| added[i].id.clone();
        let next = |l: &Locked, busy: &[&str], current: Option<&str>| {
            l.next(busy, current).map(|r| r.id.clone())
        };
        assert_eq!(next(&locked, &[], None), Some(id(0)));
        assert_eq!(next(&locked, &[], Some(&id(2))), Some(id(2)));
        locked.set_status(&id(1), Status::Active, None).unwrap();
        assert_eq!(next(&locked, &[], None), Some(id(1)), "an orphan first");
        assert_eq!(
            next(&locked, &[&id(1)], None),
            Some(id(0)),
            "not one under way"
        );
        locked.set_status(&id(2), Status::Done, None).unwrap();
        assert_eq!(
            next(&locked, &[], Some(&id(2))),
            Some(id(1)),
            "not one done"
        );
        let all = [id(0).as_str(), id(1).as_str()].map(str::to_string);
        let busy: Vec<&str> = all.iter().map(String::as_str).collect();
        assert_eq!(next(&locked, &busy, None), None);
    }

    #[test]
    fn relative_times() {
        let now = DateTime::parse_from_rfc3339("2025-01-20T12:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        assert_eq!(ago("2025-01-20T10:00:00Z", now), "2h ago");
        assert_eq!(ago("2025-01-20T11:50:00Z", now), "10m ago");
        assert_eq!(ago("2025-01-20T11:59:58Z", now), "just now");
        assert_eq!(ago("2025-01-17T12:00:00Z", now), "3d ago");
    }

    #[test]
    fn records_keep_the_seed_s_format() {
        let line = r#"{"t": "inbox", "id": "q-a1b2", "spec": "feature-x.md", "added_at": "2025-01-20T10:30:00Z", "status": "pending"}"#;
        let record: Record = serde_json::from_str(line).unwrap();
        assert_eq!(record.status, Status::Pending);
        assert_eq!(
            serde_json::to_string(&record).unwrap(),
            r#"{"t":"inbox","id":"q-a1b2","spec":"feature-x.md","added_at":"2025-01-20T10:30:00Z","status":"pending"}"#
        );
    }

    #[test]
    fn a_torn_last_line_is_set_aside_and_a_corrupt_one_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let inbox = Inbox::at(dir.path());
        let good = r#"{"t":"inbox","id":"q-aaaa","spec":"a.md","added_at":"2025-01-20T10:30:00Z","status":"pending"}"#;
        std::fs::create_dir_all(dir.path().join(".ralph")).unwrap();
        std::fs::write(
            &inbox.path,
            format!("{good}\n{{\"t\":\"inbox\",\"id\":\"q-bb"),
        )
        .unwrap();
        let locked = inbox.lock().unwrap();
        assert_eq!(locked.records.len(), 1);
        assert!(locked.torn.as_deref().unwrap().contains("inbox.torn.jsonl"));
        drop(locked);
        assert_eq!(
            std::fs::read_to_string(&inbox.path).unwrap(),
            format!("{good}\n")
        );
        let kept = std::fs::read_to_string(dir.path().join(".ralph").join(TORN)).unwrap();
        assert_eq!(kept, "{\"t\":\"inbox\",\"id\":\"q-bb\n");

        std::fs::write(&inbox.path, format!("{good}\nnot json\n{good}\n")).unwrap();
        let err = inbox.lock().err().unwrap().to_string();
        assert!(err.contains("inbox.jsonl:2: not an inbox record"), "{err}");
    }
}
