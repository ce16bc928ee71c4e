//! `.ralph/regent-state.json`: the Regent's state, written atomically (a temporary file renamed
//! over it) after every change, so a reader, `ralph-loop status`, or a crash sees the last state
//! whole. A file that cannot be read (corrupt, or of another schema) is reported, kept beside
//! as `regent-state.json.bad` for a look, and replaced: never a crash.
//!
//! `ralph-loop breaker reset` while a loop runs cannot write the file under it: it leaves a
//! request (`.ralph/breaker-reset`) the loop takes before its next iteration.

use std::fs::File;
use std::path::{Path, PathBuf};

use chrono::Utc;
use nix::fcntl::{Flock, FlockArg};
use ralph_actors::schema::regent::{LoopStatus, RegentState, STATE_SCHEMA};
use ralph_actors::tracker::circuit::Breaker;
use ralph_actors::tracker::gate::ExitGate;

use crate::error::{Error, Result, UsageError};
use crate::fsutil::replace_unsynced;

pub const FILE: &str = "regent-state.json";
const RESET_REQUEST: &str = "breaker-reset";

/// Why the state file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// Read, but not a state this version knows.
    #[error("{} cannot be read ({why}); the next `ralph-loop loop` replaces it", path.display())]
    Unreadable { path: PathBuf, why: String },
}

/// The state file of the project whose `.ralph/` is `dir`.
#[derive(Debug, Clone)]
pub struct StateFile {
    dir: PathBuf,
}

/// What was found on disk.
#[derive(Debug)]
pub enum Loaded {
    Missing,
    Found(Box<RegentState>),
    /// Unreadable: why, and where the file was kept.
    Unreadable {
        why: String,
        kept: PathBuf,
    },
}

impl StateFile {
    pub fn new(ralph_dir: &Path) -> Self {
        Self {
            dir: ralph_dir.to_path_buf(),
        }
    }

    pub fn path(&self) -> PathBuf {
        self.dir.join(FILE)
    }

    /// Reads the file. An unreadable one is moved aside (see the module's docs).
    pub fn load(&self) -> Result<Loaded, StateError> {
        let path = self.path();
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Loaded::Missing),
            Err(source) => return Err(StateError::Read { path, source }),
        };
        let why = match read(&bytes) {
            Ok(state) => return Ok(Loaded::Found(Box::new(state))),
            Err(why) => why,
        };
        let kept = self.dir.join(format!("{FILE}.bad"));
        std::fs::rename(&path, &kept).map_err(|source| StateError::Write {
            path: kept.clone(),
            source,
        })?;
        Ok(Loaded::Unreadable { why, kept })
    }

    /// Reads the file without moving an unreadable one (`ralph-loop status`).
    pub fn peek(&self) -> Result<Option<Result<RegentState, String>>, StateError> {
        let path = self.path();
        match std::fs::read(&path) {
            Ok(bytes) => Ok(Some(read(&bytes))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(StateError::Read { path, source }),
        }
    }

    pub fn save(&self, state: &RegentState) -> Result<(), StateError> {
        let path = self.path();
        let write = || -> std::io::Result<()> {
            std::fs::create_dir_all(&self.dir)?;
            let mut bytes = serde_json::to_vec_pretty(state).map_err(std::io::Error::other)?;
            bytes.push(b'\n');
            replace_unsynced(&path, &bytes)
        };
        write().map_err(|source| StateError::Write {
            path: path.clone(),
            source,
        })
    }

    /// Asks the running loop to reset its breaker before its next iteration.
    pub fn request_reset(&self) -> Result<(), StateError> {
        let path = self.dir.join(RESET_REQUEST);
        std::fs::write(&path, b"").map_err(|source| StateError::Write { path, source })
    }

    /// A reset request is waiting (a loop cooling down wakes for it).
    pub fn reset_requested(&self) -> bool {
        self.dir.join(RESET_REQUEST).exists()
    }

    /// Takes a reset request left by `breaker reset`, if there is one.
    pub fn take_reset_request(&self) -> bool {
        std::fs::remove_file(self.dir.join(RESET_REQUEST)).is_ok()
    }
}

/// A state file's content, or why it cannot be used.
fn read(bytes: &[u8]) -> Result<RegentState, String> {
    let value: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|e| format!("not JSON ({e})"))?;
    match value.get("schema").and_then(serde_json::Value::as_u64) {
        Some(n) if n == u64::from(STATE_SCHEMA) => {}
        Some(n) => return Err(format!("schema {n}, this ralph-loop reads {STATE_SCHEMA}")),
        None => return Err("no schema version".into()),
    }
    serde_json::from_value(value).map_err(|e| format!("not a Regent state ({e})"))
}

/// A new loop's state. The breaker of the last loop carries over (it is reset by
/// `ralph-loop breaker reset`, not by starting again).
pub fn fresh(agent: &str, model: Option<&str>, breaker: Option<Breaker>) -> RegentState {
    let now = Utc::now();
    RegentState {
        schema: STATE_SCHEMA,
        ralph_pid: std::process::id(),
        status: LoopStatus::Running,
        reason: String::new(),
        agent: agent.to_string(),
        model: model.map(str::to_string),
        prompt_file: String::new(),
        tasks_file: None,
        iteration: 0,
        consecutive_errors: 0,
        last_output_at: None,
        last_commit: None,
        total_cost_usd: 0.0,
        cost_estimated: false,
        breaker: breaker.unwrap_or_else(|| Breaker::new(now.timestamp_millis())),
        gate: ExitGate::default(),
        last_tests: None,
        tasks: None,
        started_at: now,
        updated_at: now,
    }
}

/// The lock a running loop holds on its project (`.ralph/loop.lock`): one loop per project.
pub const LOCK: &str = "loop.lock";

/// One loop per project at a time: an exclusive lock on `.ralph/loop.lock` (the folder made
/// if need be), held while the returned value lives.
pub fn hold_lock(ralph_dir: &Path) -> Result<Flock<File>> {
    std::fs::create_dir_all(ralph_dir)
        .map_err(|e| Error::io(format!("cannot create {}", ralph_dir.display()), e))?;
    let path = ralph_dir.join(LOCK);
    let file = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| Error::io(format!("cannot open {}", path.display()), e))?;
    Flock::lock(file, FlockArg::LockExclusiveNonblock).map_err(|_| {
        UsageError::flag(
            "loop",
            format!(
                "another `ralph-loop loop` runs in this project ({} is locked); `ralph-loop status` shows it",
                path.display()
            ),
        )
        .into()
    })
}

/// Whether a loop runs in the project whose `.ralph/` is `ralph_dir`: its lock is held (a
/// loop killed with SIGKILL holds it no more).
pub fn loop_running(ralph_dir: &Path) -> bool {
    let Ok(file) = std::fs::File::open(ralph_dir.join(LOCK)) else {
        return false;
    };
    nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockSharedNonblock).is_err()
}

/// Whether the loop that wrote `state` (in `ralph_dir`) still runs.
pub fn is_running(state: &RegentState, ralph_dir: &Path) -> bool {
    state.status == LoopStatus::Running && loop_running(ralph_dir)
}

/// What a breaker reset did.
#[derive(Debug, Clone, PartialEq)]
pub enum BreakerReset {
    /// No loop has run here: there is no breaker.
    NoLoop,
    /// The loop running now (its pid) takes the request before its next iteration; the
    /// breaker's state until then.
    Requested { pid: u32, now: &'static str },
    /// Reset in the state file: what it was, and why.
    Done {
        was: &'static str,
        why: &'static str,
    },
}

impl std::fmt::Display for BreakerReset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BreakerReset::NoLoop => {
                write!(f, "no agent loop has run here: there is no breaker to reset")
            }
            BreakerReset::Requested { pid, now } => write!(
                f,
                "the loop running now (pid {pid}) resets its breaker ({now} now) before its next iteration"
            ),
            BreakerReset::Done { was, why } => {
                write!(f, "breaker reset: it was {was} ({why}), it is CLOSED")
            }
        }
    }
}

/// Closes the agent loop's breaker of the project whose `.ralph/` is `ralph_dir` and clears its
/// counters (`ralph-loop breaker reset`, the dashboard's button); a loop running now is asked
/// to, as it owns the file. `Err`: the state file cannot be read or written.
pub fn reset_breaker(ralph_dir: &Path) -> Result<BreakerReset, StateError> {
    let file = StateFile::new(ralph_dir);
    let state = match file.peek()? {
        None => return Ok(BreakerReset::NoLoop),
        Some(Err(why)) => {
            return Err(StateError::Unreadable {
                path: file.path(),
                why,
            })
        }
        Some(Ok(state)) => state,
    };
    if is_running(&state, ralph_dir) {
        file.request_reset()?;
        return Ok(BreakerReset::Requested {
            pid: state.ralph_pid,
            now: state.breaker.state.as_str(),
        });
    }
    let mut state = state;
    let was = state.breaker.state.as_str();
    let why = state.breaker.reason.as_str();
    state.breaker.reset(Utc::now().timestamp_millis());
    state.updated_at = Utc::now();
    file.save(&state)?;
    Ok(BreakerReset::Done { was, why })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saves_loads_and_sets_aside_a_corrupt_or_older_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = StateFile::new(dir.path());
        assert!(matches!(file.load().unwrap(), Loaded::Missing));
        let mut state = fresh("claude", Some("sonnet"), None);
        state.iteration = 4;
        state.total_cost_usd = 0.25;
        file.save(&state).unwrap();
        match file.load().unwrap() {
            Loaded::Found(read) => assert_eq!(*read, state),
            other => panic!("{other:?}"),
        }

        std::fs::write(file.path(), b"{\"schema\": 1, \"ralph_pid\": ").unwrap();
        match file.load().unwrap() {
            Loaded::Unreadable { why, kept } => {
                assert!(why.starts_with("not JSON"), "{why}");
                assert!(kept.ends_with("regent-state.json.bad"));
                assert!(!file.path().exists());
            }
            other => panic!("{other:?}"),
        }

        std::fs::write(file.path(), b"{\"schema\": 0, \"iteration\": 3}").unwrap();
        match file.load().unwrap() {
            Loaded::Unreadable { why, .. } => {
                assert_eq!(why, "schema 0, this ralph-loop reads 1")
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_reset_request_is_taken_once() {
        let dir = tempfile::tempdir().unwrap();
        let file = StateFile::new(dir.path());
        assert!(!file.take_reset_request());
        file.request_reset().unwrap();
        assert!(file.take_reset_request());
        assert!(!file.take_reset_request());
    }
}
