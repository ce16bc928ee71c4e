//! `.ralph/plugin-errors.log`: every hook failure, with its time, hook, stage and what it said,
//! appended (a failing hook never stops the log's other lines, nor the run).

use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use super::exec::Failed;
use crate::config::hooks::Stage;

/// The log's name under `.ralph/`.
pub const FILE_NAME: &str = "plugin-errors.log";

/// The error log of a project's hooks.
#[derive(Clone)]
pub struct ErrorLog {
    path: PathBuf,
    /// One writer at a time: lines from hooks running at once do not mix.
    lock: Arc<Mutex<()>>,
}

impl ErrorLog {
    /// The log under `ralph_dir` (created on the first failure).
    pub fn new(ralph_dir: PathBuf) -> Self {
        Self {
            path: ralph_dir.join(FILE_NAME),
            lock: Arc::default(),
        }
    }

    /// Appends one failure; a log that cannot be written is said on stderr through tracing.
    pub fn write(&self, hook: &str, stage: Stage, failed: &Failed) {
        let _held = self.lock.lock();
        let mut entry = format!(
            "[{}] {hook} at {}: {failed}\n",
            chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            stage.as_str()
        );
        let stderr = match failed {
            Failed::Exit { stderr, .. } | Failed::Signal { stderr, .. } => stderr.trim(),
            _ => "",
        };
        for line in stderr.lines().take(40) {
            entry.push_str("    ");
            entry.push_str(line);
            entry.push('\n');
        }
        let written = self
            .path
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| {
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&self.path)
            })
            .and_then(|mut f| f.write_all(entry.as_bytes()));
        if let Err(e) = written {
            tracing::warn!("cannot write {}: {e}", self.path.display());
        }
    }
}
