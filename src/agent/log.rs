//! The agent's log: `.ralph/logs/agent-<timestamp>.log`, one line per step in the seed's format
//! (`[2025-01-20T10:00:00Z] FETCH: q-a1b2 feature-x.md`), each also said on stderr. A run's own
//! events reach it through [`RunLog`], a printer of the run's event stream.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use ralph_actors::events::event::{Envelope, Event};

use super::error::AgentError;
use crate::printers::Printer;
use crate::session::RALPH_DIR;

/// The log of one agent process.
#[derive(Clone)]
pub struct AgentLog {
    pub path: PathBuf,
    file: Arc<Mutex<File>>,
    /// Say each line on stderr too.
    echo: bool,
}

impl AgentLog {
    /// A new log under `root/.ralph/logs/`.
    pub fn create(root: &Path, echo: bool) -> Result<AgentLog, AgentError> {
        let dir = root.join(RALPH_DIR).join("logs");
        std::fs::create_dir_all(&dir)
            .map_err(AgentError::io(format!("cannot create {}", dir.display())))?;
        let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%S%.3fZ");
        let path = dir.join(format!("agent-{stamp}.log"));
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(AgentError::io(format!("cannot create {}", path.display())))?;
        Ok(AgentLog {
            path,
            file: Arc::new(Mutex::new(file)),
            echo,
        })
    }

    /// Writes `[now] message`. A log that cannot be written is said once on stderr, never an
    /// error of the agent: the inbox and the sessions are the record.
    pub fn line(&self, message: &str) {
        let line = format!("[{}] {message}\n", crate::inbox::now());
        let mut file = self.file.lock().unwrap_or_else(|e| e.into_inner());
        if let Err(e) = file.write_all(line.as_bytes()) {
            eprintln!("warning: cannot write {}: {e}", self.path.display());
        }
        if self.echo {
            eprintln!("agent: {message}");
        }
    }

    /// A printer that logs a run's iterations and its end. With a `label` (the spec's id, when
    /// several run at once) each line names it and is said on stderr too: no run has the
    /// terminal to itself then.
    pub fn run_printer(&self, label: Option<&str>) -> Box<dyn Printer> {
        Box::new(RunLog {
            log: AgentLog {
                echo: label.is_some(),
                ..self.clone()
            },
            step: match label {
                Some(label) => format!("RUN {label}"),
                None => "RUN".to_string(),
            },
        })
    }
}

/// A run's events, as the agent's log tells them.
pub struct RunLog {
    log: AgentLog,
    /// `RUN`, or `RUN q-a1b2` when several specs run at once.
    step: String,
}

impl Printer for RunLog {
    fn print(&mut self, envelope: &Envelope) -> std::io::Result<()> {
        match &envelope.event {
            Event::SessionStarted {
                target,
                resumed_from_iteration,
                session_id,
                ..
            } => {
                let resumed = if *resumed_from_iteration > 0 {
                    format!(", resumed after iteration {resumed_from_iteration}")
                } else {
                    String::new()
                };
                self.log.line(&format!(
                    "{}: {target} (session {session_id}{resumed})",
                    self.step
                ));
            }
            Event::IterationStarted { iteration, .. } => {
                self.log
                    .line(&format!("{}: starting iteration {iteration}", self.step));
            }
            Event::SessionFinished { report } => self.log.line(&format!(
                "{}: {} after {} iterations, ${:.4}: {}",
                self.step, report.status, report.iterations, report.cost_usd, report.reason
            )),
            _ => {}
        }
        Ok(())
    }
}
