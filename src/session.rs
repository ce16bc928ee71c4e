//! The session store: `.ralph/session-<uuid>/` with `iterations.log`,
//! `test-results-iteration-<N>.json`, `state.json`, `report.json`, the run's flags (`run.json`)
//! and a copy of the target as it was before the first iteration (`original/`).
//!
//! Every file but the append-only log is written atomically, so an interrupted run leaves each
//! file whole: the previous version or the new one.

use std::io::Write;
use std::path::{Path, PathBuf};

use ralph_actors::report::Report;
use ralph_actors::runner::TestRun;
use ralph_actors::supervisor::SessionState;
use ralph_actors::workspace::{IterationRecord, SessionStore};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::error::{Error, Result};
use crate::fsutil::write_atomic;

pub const RALPH_DIR: &str = ".ralph";
const PREFIX: &str = "session-";

#[derive(Debug, Clone)]
pub struct SessionDir {
    pub id: String,
    pub dir: PathBuf,
}

impl SessionDir {
    /// Creates `<root>/.ralph/session-<uuid>/`, and `.ralph/.gitignore` so sessions stay out of git.
    pub fn create(root: &Path) -> Result<Self> {
        let ralph = root.join(RALPH_DIR);
        std::fs::create_dir_all(&ralph)
            .map_err(|e| Error::io(format!("cannot create {}", ralph.display()), e))?;
        let ignore = ralph.join(".gitignore");
        if !ignore.exists() {
            let _ = std::fs::write(&ignore, "*\n");
        }
        let id = uuid::Uuid::new_v4().to_string();
        let dir = ralph.join(format!("{PREFIX}{id}"));
        std::fs::create_dir(&dir)
            .map_err(|e| Error::io(format!("cannot create {}", dir.display()), e))?;
        Ok(Self { id, dir })
    }

    /// A session by id (or unique id prefix), or the most recently changed one.
    pub fn find(
        root: &Path,
        id: Option<&str>,
        filter: impl Fn(&SessionDir) -> bool,
    ) -> Result<Self> {
        let ralph = root.join(RALPH_DIR);
        let entries = std::fs::read_dir(&ralph)
            .map_err(|_| Error::Usage(format!("no sessions under {}", ralph.display())))?;
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
            (Some(want), 0) => Err(Error::Usage(format!(
                "no session matching `{want}` under {}",
                ralph.display()
            ))),
            (Some(want), n) if n > 1 => Err(Error::Usage(format!(
                "`{want}` matches {n} sessions; give more of the id"
            ))),
            (None, 0) => Err(Error::Usage(format!(
                "no sessions under {}",
                ralph.display()
            ))),
            _ => Ok(found
                .pop()
                .map(|(_, s)| s)
                .ok_or_else(|| Error::Internal("empty session list".into()))?),
        }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    pub fn write_json<T: Serialize>(&self, name: &str, value: &T) -> Result<()> {
        let path = self.path(name);
        let bytes = serde_json::to_vec_pretty(value).map_err(|e| Error::Internal(e.to_string()))?;
        write_atomic(&path, &bytes)
            .map_err(|e| Error::io(format!("cannot write {}", path.display()), e))
    }

    pub fn read_json<T: DeserializeOwned>(&self, name: &str) -> Result<Option<T>> {
        let path = self.path(name);
        match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| Error::Usage(format!("{} is damaged: {e}", path.display()))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::io(format!("cannot read {}", path.display()), e)),
        }
    }

    /// Keeps the target as it was, so a user can always get back to it.
    pub fn save_original(&self, target: &Path) -> Result<()> {
        let dir = self.path("original");
        std::fs::create_dir_all(&dir)
            .map_err(|e| Error::io(format!("cannot create {}", dir.display()), e))?;
        let name = target
            .file_name()
            .map(|n| n.to_os_string())
            .unwrap_or_else(|| "target".into());
        std::fs::copy(target, dir.join(name))
            .map(|_| ())
            .map_err(|e| Error::io(format!("cannot back up {}", target.display()), e))
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

#[async_trait::async_trait]
impl SessionStore for SessionDir {
    async fn last_test_results(&self) -> Result<Option<TestRun>, String> {
        match self.last_results_index() {
            Some(n) => self
                .read_json(&format!("test-results-iteration-{n}.json"))
                .map_err(|e| e.to_string()),
            None => Ok(None),
        }
    }

    async fn save_test_results(&self, iteration: u32, run: &TestRun) -> Result<(), String> {
        self.write_json(&format!("test-results-iteration-{iteration}.json"), run)
            .map_err(|e| e.to_string())
    }

    async fn append_iteration(&self, record: &IterationRecord) -> Result<(), String> {
        let path = self.path("iterations.log");
        let mut line = serde_json::to_vec(record).map_err(|e| e.to_string())?;
        line.push(b'\n');
        // One write of a whole line with O_APPEND: a crash leaves whole lines, at most the last
        // one missing.
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
        f.write_all(&line)
            .and_then(|_| f.sync_data())
            .map_err(|e| format!("cannot write {}: {e}", path.display()))
    }

    async fn save_state(&self, state: &SessionState) -> Result<(), String> {
        self.write_json("state.json", state)
            .map_err(|e| e.to_string())
    }

    async fn save_report(&self, report: &Report) -> Result<(), String> {
        self.write_json("report.json", report)
            .map_err(|e| e.to_string())
    }
}
