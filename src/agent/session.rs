//! The agent's session: `.ralph/agent-session.json` (its totals and the spec it is on, kept
//! across restarts until the agent ends normally) and `.ralph/agent.lock`, held while an agent
//! runs so that a second one is refused and `status` can tell a running agent from an
//! interrupted one.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

use nix::fcntl::{Flock, FlockArg};
use serde::{Deserialize, Serialize};

use super::error::{AgentError, AgentLockError};
use crate::fsutil::write_atomic;
use crate::session::RALPH_DIR;

pub const FILE: &str = "agent-session.json";
const LOCK: &str = "agent.lock";

/// The seed's session file, and what a restart needs besides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentSession {
    pub started_at: String,
    pub specs_completed: u32,
    pub specs_failed: u32,
    /// Dollars spent by every spec of the session, planning included.
    pub total_cost: f64,
    pub current_spec_id: Option<String>,
    /// Every spec under way (or stopped and to be resumed first), in queue order: more than one
    /// with `--parallel`. The first is `current_spec_id`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub in_flight: Vec<String>,
    /// What the specs that ended (done or failed) cost; `total_cost` adds the one under way.
    #[serde(default)]
    pub settled_cost: f64,
    /// Failed specs since the last one done.
    #[serde(default)]
    pub consecutive_failures: u32,
    /// The process running it, while one is.
    #[serde(default)]
    pub pid: Option<u32>,
    /// This session's log, relative to the project root.
    #[serde(default)]
    pub log: Option<String>,
}

impl AgentSession {
    pub fn new() -> Self {
        Self {
            started_at: crate::inbox::now(),
            specs_completed: 0,
            specs_failed: 0,
            total_cost: 0.0,
            settled_cost: 0.0,
            current_spec_id: None,
            in_flight: Vec::new(),
            consecutive_failures: 0,
            pid: None,
            log: None,
        }
    }

    pub fn settled_cost(&self) -> f64 {
        self.settled_cost
    }

    /// A spec ended having cost `cost` in all.
    pub fn settle(&mut self, cost: f64) {
        self.settled_cost += cost;
        self.total_cost = self.settled_cost;
    }

    fn path(root: &Path) -> PathBuf {
        root.join(RALPH_DIR).join(FILE)
    }

    /// The session an earlier agent left, if any.
    pub fn load(root: &Path) -> Result<Option<AgentSession>, AgentError> {
        let path = Self::path(root);
        match std::fs::read(&path) {
            Ok(bytes) => {
                serde_json::from_slice(&bytes)
                    .map(Some)
                    .map_err(|e| AgentError::Damaged {
                        path,
                        message: e.to_string(),
                    })
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(AgentError::io(format!("cannot read {}", path.display()))(e)),
        }
    }

    pub fn save(&self, root: &Path) -> Result<(), AgentError> {
        let path = Self::path(root);
        let bytes = serde_json::to_vec_pretty(self).map_err(|e| AgentError::Damaged {
            path: path.clone(),
            message: e.to_string(),
        })?;
        write_atomic(&path, &bytes)
            .map_err(AgentError::io(format!("cannot write {}", path.display())))
    }

    /// Ends the session: its file goes (the seed's "deleted on normal exit").
    pub fn remove(root: &Path) -> Result<(), AgentError> {
        match std::fs::remove_file(Self::path(root)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(AgentError::io(format!(
                "cannot remove {}",
                Self::path(root).display()
            ))(e)),
            _ => Ok(()),
        }
    }
}

impl Default for AgentSession {
    fn default() -> Self {
        Self::new()
    }
}

/// The lock of the one agent running on a project; released when the process ends, however.
pub struct AgentLock {
    _file: Flock<File>,
}

impl AgentLock {
    pub fn acquire(root: &Path) -> Result<AgentLock, AgentLockError> {
        let dir = root.join(RALPH_DIR);
        let path = dir.join(LOCK);
        let io = |source| AgentLockError::Io {
            path: path.clone(),
            source,
        };
        crate::session::ralph_dir(root).map_err(io)?;
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io)?;
        let mut file = match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(locked) => locked,
            Err((mut file, nix::errno::Errno::EWOULDBLOCK)) => {
                let mut pid = String::new();
                let _ = file.read_to_string(&mut pid);
                return Err(AgentLockError::Held(pid.trim().to_string()));
            }
            Err((_, errno)) => return Err(io(errno.into())),
        };
        let _ = file.set_len(0);
        let _ = file.rewind();
        let _ = write!(file, "{}", std::process::id());
        Ok(AgentLock { _file: file })
    }

    /// Whether an agent holds the lock now.
    pub fn held(root: &Path) -> bool {
        let path = root.join(RALPH_DIR).join(LOCK);
        let Ok(file) = OpenOptions::new().read(true).write(true).open(path) else {
            return false;
        };
        matches!(
            Flock::lock(file, FlockArg::LockExclusiveNonblock),
            Err((_, nix::errno::Errno::EWOULDBLOCK))
        )
    }
}
