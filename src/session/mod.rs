//! The session store: `.ralph/session-<uuid>/` with `iterations.log`,
//! `test-results-iteration-<N>.json`, `state.json`, `report.json`, the run's flags (`run.json`),
//! a copy of the target as it was before the first iteration (`original/`), and every state of
//! the target the run may go back to (`checkpoints/iteration-<N>`, 0 the original).
//!
//! Every file but the append-only log is written atomically, so an interrupted run leaves each
//! file whole: the previous version or the new one. A run writes through [`WriteBehind`] (in
//! `behind`), which does the writes in order on a thread of its own.

use std::io::Write;
use std::path::{Path, PathBuf};

use ralph_actors::ports::file_io::FromFileIo;
use ralph_actors::ports::store::{SessionStore, StoreError};
use ralph_actors::schema::report::Report;
use ralph_actors::schema::state::IterationRecord;
use ralph_actors::schema::state::SessionState;
use ralph_actors::schema::test_run::TestRun;
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::fsutil::write_atomic;

mod behind;

pub use behind::WriteBehind;

pub const RALPH_DIR: &str = ".ralph";

/// Creates `<root>/.ralph/` (if needed) with a `.gitignore` that keeps all of it out of git;
/// returns its path.
pub fn ralph_dir(root: &Path) -> std::io::Result<PathBuf> {
    let ralph = root.join(RALPH_DIR);
    std::fs::create_dir_all(&ralph)?;
    let ignore = ralph.join(".gitignore");
    if !ignore.exists() {
        let _ = std::fs::write(&ignore, "*\n");
    }
    Ok(ralph)
}

/// What went wrong with a session folder.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("no sessions under {}", .0.display())]
    NoSessions(PathBuf),
    #[error("no session matching `{want}` under {}", dir.display())]
    NoMatch { want: String, dir: PathBuf },
    #[error("`{want}` matches {count} sessions; give more of the id")]
    Ambiguous { want: String, count: usize },
    #[error("no session under {} stopped short of success to resume", .0.display())]
    NothingToResume(PathBuf),
    #[error("session {0} has no run.json; it cannot be resumed")]
    NoRunSpec(String),
    #[error(
        "session {id} ended with `{status}`; only a session that stopped short of success \
         (interrupted, budget_exceeded, max_iterations, entropy_detected) can be resumed"
    )]
    NotResumable { id: String, status: String },
    /// Resuming would stop again at once: the limit it stopped at is still the limit.
    #[error("session {id} stopped at {what}; {fix}")]
    SameLimit {
        id: String,
        what: String,
        fix: String,
    },
    #[error("{} is damaged: {message}", path.display())]
    Damaged { path: PathBuf, message: String },
    #[error("{context}: {source}")]
    Io {
        context: String,
        source: std::io::Error,
    },
}

impl SessionError {
    fn io(context: String, source: std::io::Error) -> Self {
        SessionError::Io { context, source }
    }

    /// 1 when the disk failed, 2 when the user named a session that cannot be used.
    pub fn exit_code(&self) -> i32 {
        match self {
            SessionError::Io { .. } => 1,
            _ => 2,
        }
    }
}

type Result<T, E = SessionError> = std::result::Result<T, E>;
const PREFIX: &str = "session-";

#[derive(Debug, Clone)]
pub struct SessionDir {
    pub id: String,
    pub dir: PathBuf,
}

impl SessionDir {
    /// Creates `<root>/.ralph/session-<uuid>/`, and `.ralph/.gitignore` so sessions stay out of git.
    pub fn create(root: &Path) -> Result<Self> {
        let ralph = ralph_dir(root).map_err(|e| {
            SessionError::io(
                format!("cannot create {}", root.join(RALPH_DIR).display()),
                e,
            )
        })?;
        let id = uuid::Uuid::new_v4().to_string();
        let dir = ralph.join(format!("{PREFIX}{id}"));
        std::fs::create_dir(&dir)
            .map_err(|e| SessionError::io(format!("cannot create {}", dir.display()), e))?;
        Ok(Self { id, dir })
    }

    /// The session `id` under `root`, when its folder exists.
    pub fn open(root: &Path, id: &str) -> Option<Self> {
        let dir = root.join(RALPH_DIR).join(format!("{PREFIX}{id}"));
        dir.is_dir().then(|| Self {
            id: id.to_string(),
            dir,
        })
    }

    /// A session by id (or unique id prefix), or the most recently changed one.
    pub fn find(
        root: &Path,
        id: Option<&str>,
        filter: impl Fn(&SessionDir) -> bool,
    ) -> Result<Self> {
        let ralph = root.join(RALPH_DIR);
        let entries =
            std::fs::read_dir(&ralph).map_err(|_| SessionError::NoSessions(ralph.clone()))?;
        let mut found: Vec<(std::time::SystemTime, SessionDir)> = entries
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().to_string();
                let sid = name.strip_prefix(PREFIX)?.to_string();
                let modified = std::fs::metadata(e.path().join("state.json"))
                    .or_else(|_| e.metadata())
                    .and_then(|m| m.modified())
                    .ok()?;
                Some((
                    modified,
                    SessionDir {
                        id: sid,
                        dir: e.path(),
                    },
                ))
            })
            .filter(|(_, s)| id.is_none_or(|want| s.id.starts_with(want)))
            .filter(|(_, s)| filter(s))
            .collect();
        found.sort_by_key(|(t, _)| *t);
        match (id, found.len()) {
            (Some(want), 0) => Err(SessionError::NoMatch {
                want: want.to_string(),
                dir: ralph,
            }),
            (Some(want), count) if count > 1 => Err(SessionError::Ambiguous {
                want: want.to_string(),
                count,
            }),
            _ => found
                .pop()
                .map(|(_, s)| s)
                .ok_or(SessionError::NoSessions(ralph)),
        }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    pub fn write_json<T: Serialize>(&self, name: &str, value: &T) -> Result<()> {
        let path = self.path(name);
        let bytes = serde_json::to_vec_pretty(value).map_err(|e| SessionError::Damaged {
            path: path.clone(),
            message: e.to_string(),
        })?;
        write_atomic(&path, &bytes)
            .map_err(|e| SessionError::io(format!("cannot write {}", path.display()), e))
    }

    pub fn read_json<T: DeserializeOwned>(&self, name: &str) -> Result<Option<T>> {
        let path = self.path(name);
        match std::fs::read(&path) {
            Ok(bytes) => {
                serde_json::from_slice(&bytes)
                    .map(Some)
                    .map_err(|e| SessionError::Damaged {
                        path: path.clone(),
                        message: e.to_string(),
                    })
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(SessionError::io(
                format!("cannot read {}", path.display()),
                e,
            )),
        }
    }

    /// Keeps the target as it was, so a user can always get back to it. It is the one file of
    /// the session that holds the target's values as they are (LocalGuard masks everything else
    /// the session keeps): the user's own file, byte for byte, readable by its owner only.
    pub fn save_original(&self, target: &Path) -> Result<()> {
        let dir = self.path("original");
        std::fs::create_dir_all(&dir)
            .map_err(|e| SessionError::io(format!("cannot create {}", dir.display()), e))?;
        let name = target
            .file_name()
            .map(|n| n.to_os_string())
            .unwrap_or_else(|| "target".into());
        let copy = dir.join(name);
        std::fs::copy(target, &copy)
            .and_then(|_| {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o600))
            })
            .map_err(|e| SessionError::io(format!("cannot back up {}", target.display()), e))
    }

    /// Where the content written at an iteration is kept (0: the original).
    fn checkpoint_path(&self, iteration: u32) -> PathBuf {
        self.path("checkpoints")
            .join(format!("iteration-{iteration}"))
    }

    /// The highest N of the `test-results-iteration-<N>.json` files.
    fn last_results_index(&self) -> Option<u32> {
        std::fs::read_dir(&self.dir)
            .ok()?
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().to_string();
                name.strip_prefix("test-results-iteration-")?
                    .strip_suffix(".json")?
                    .parse()
                    .ok()
            })
            .max()
    }
}

/// A session file's error for the store port: what could not be read or written, and why.
fn store_error(e: SessionError, path: &Path, writing: bool) -> StoreError {
    let path = path.display().to_string();
    match e {
        SessionError::Io { source, .. } if writing => StoreError::write(path, source),
        SessionError::Io { source, .. } => StoreError::read(path, source),
        SessionError::Damaged { message, .. } => StoreError::Damaged { path, message },
        other => StoreError::Damaged {
            path,
            message: other.to_string(),
        },
    }
}

/// [`SessionDir::write_json`] and [`SessionDir::read_json`] with the port's errors, which name
/// the file and whether it was being written or read.
impl SessionDir {
    fn store_json<T: Serialize>(&self, name: &str, value: &T) -> Result<(), StoreError> {
        self.write_json(name, value)
            .map_err(|e| store_error(e, &self.path(name), true))
    }

    fn load_json<T: DeserializeOwned>(&self, name: &str) -> Result<Option<T>, StoreError> {
        self.read_json(name)
            .map_err(|e| store_error(e, &self.path(name), false))
    }
}

#[async_trait::async_trait]
impl SessionStore for SessionDir {
    async fn last_test_results(&self) -> Result<Option<TestRun>, StoreError> {
        match self.last_results_index() {
            Some(n) => {
                let name = format!("test-results-iteration-{n}.json");
                self.load_json(&name)
            }
            None => Ok(None),
        }
    }

    async fn save_test_results(&self, iteration: u32, run: &TestRun) -> Result<(), StoreError> {
        let name = format!("test-results-iteration-{iteration}.json");
        self.store_json(&name, run)
    }

    async fn save_adversarial_results(
        &self,
        iteration: u32,
        round: u32,
        run: &TestRun,
    ) -> Result<(), StoreError> {
        let name = format!("test-results-chaos-iteration-{iteration}-round-{round}.json");
        self.store_json(&name, run)
    }

    async fn save_mutation_report(
        &self,
        document: &serde_json::Value,
    ) -> Result<String, StoreError> {
        let name = "mutation-report.json";
        self.store_json(name, document)?;
        Ok(format!("{RALPH_DIR}/{PREFIX}{}/{name}", self.id))
    }

    async fn append_iteration(&self, record: &IterationRecord) -> Result<(), StoreError> {
        let path = self.path("iterations.log");
        let mut line = serde_json::to_vec(record).map_err(|e| StoreError::Damaged {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        line.push(b'\n');
        // One write of a whole line with O_APPEND: a crash leaves whole lines, at most the last
        // one missing.
        let write = || -> std::io::Result<()> {
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)?;
            f.write_all(&line)?;
            f.sync_data()
        };
        write().map_err(|e| StoreError::write(path.display().to_string(), e))
    }

    async fn save_state(&self, state: &SessionState) -> Result<(), StoreError> {
        self.store_json("state.json", state)
    }

    async fn save_report(&self, report: &Report) -> Result<(), StoreError> {
        self.store_json("report.json", report)
    }

    async fn test_results(&self, iteration: u32) -> Result<Option<TestRun>, StoreError> {
        let name = format!("test-results-iteration-{iteration}.json");
        self.load_json(&name)
    }

    async fn save_checkpoint(&self, iteration: u32, content: &str) -> Result<(), StoreError> {
        let path = self.checkpoint_path(iteration);
        let write = || -> std::io::Result<()> {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir)?;
            }
            write_atomic(&path, content.as_bytes())
        };
        write().map_err(|e| StoreError::write(path.display().to_string(), e))
    }

    async fn load_checkpoint(&self, iteration: u32) -> Result<Option<String>, StoreError> {
        let path = self.checkpoint_path(iteration);
        match std::fs::read_to_string(&path) {
            Ok(text) => Ok(Some(text)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(StoreError::read(path.display().to_string(), e)),
        }
    }
}
