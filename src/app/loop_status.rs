//! What `ralph-loop status` says of the agent loop, from `.ralph/regent-state.json`.

use std::fmt::Write;
use std::path::Path;

use chrono::Utc;
use ralph_actors::schema::regent::RegentState;
use serde::Serialize;

use crate::regent::state::{is_running, StateFile};

/// The loop's part of the status.
#[derive(Debug, Serialize)]
pub(crate) struct LoopStatusView {
    /// A loop process runs now (false: it ended, or it was killed).
    pub(crate) running: bool,
    #[serde(flatten)]
    pub(crate) state: RegentState,
}

/// The loop's status, when a loop has run here; an unreadable file is said as a line.
pub(crate) fn load(root: &Path) -> Result<Option<Result<LoopStatusView, String>>, String> {
    let ralph_dir = root.join(crate::session::RALPH_DIR);
    let file = StateFile::new(&ralph_dir);
    Ok(match file.peek().map_err(|e| e.to_string())? {
        None => None,
        Some(Err(why)) => Some(Err(format!(
            "agent loop: {} cannot be read ({why}); the next `ralph-loop loop` replaces it",
            file.path().display()
        ))),
        Some(Ok(state)) => Some(Ok(LoopStatusView {
            running: is_running(&state, &ralph_dir),
            state,
        })),
    })
}

impl LoopStatusView {
    pub(crate) fn human(&self) -> String {
        let s = &self.state;
        let mut out = String::new();
        let status = if self.running {
            format!("running (pid {})", s.ralph_pid)
        } else if s.status.as_str() == "running" {
            format!(
                "killed (pid {} is gone; run it again to go on)",
                s.ralph_pid
            )
        } else {
            format!("{}: {}", s.status.as_str(), s.reason)
        };
        let _ = writeln!(out, "agent loop: {status}");
        let model = s
            .model
            .as_deref()
            .map(|m| format!(" ({m})"))
            .unwrap_or_default();
        let _ = write!(out, "  agent {}{model}, prompt {}", s.agent, s.prompt_file);
        if let Some(tasks) = &s.tasks_file {
            let _ = write!(out, ", tasks {tasks}");
            if let Some(c) = s.tasks {
                let _ = write!(out, " ({} of {} done)", c.done, c.total);
            }
        }
        let estimated = if s.cost_estimated {
            " (estimated in part)"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "\n  iteration {}, ${:.4} spent{estimated}, {} agent failures in a row",
            s.iteration, s.total_cost_usd, s.consecutive_errors
        );
        if let Some(at) = s.last_output_at {
            let ago = (Utc::now() - at).num_seconds().max(0);
            let _ = write!(out, "  last output {ago}s ago");
        } else {
            let _ = write!(out, "  no output yet");
        }
        match &s.last_commit {
            Some(c) => {
                let _ = writeln!(out, ", last commit {c}");
            }
            None => out.push('\n'),
        }
        let _ = writeln!(
            out,
            "  breaker {} ({}); exit gate: {} completion indicators",
            s.breaker.state.as_str(),
            s.breaker.reason.as_str(),
            s.gate.completion_indicators
        );
        if let Some(t) = &s.last_tests {
            let _ = writeln!(out, "  tests: {}", t.summary);
        }
        out
    }
}
