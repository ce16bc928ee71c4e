//! What `ralph-loop status` says of agent mode: whether an agent runs or was interrupted, the
//! spec it is on, the inbox's counts and the session's totals.

use std::path::Path;

use ralph_actors::schema::report::Report;
use serde::Serialize;

use crate::agent::session::{AgentLock, AgentSession};
use crate::agent::{elapsed_since, human_duration};
use crate::error::Result;
use crate::inbox::{Inbox, Status};

/// The agent's part of the status.
#[derive(Debug, Serialize)]
pub(crate) struct AgentStatus {
    pub(crate) mode: &'static str,
    /// An agent process holds the project now; false: one was interrupted.
    pub(crate) running: bool,
    pub(crate) pid: Option<u32>,
    pub(crate) current_spec: Option<CurrentSpec>,
    pub(crate) inbox: Counts,
    pub(crate) session: AgentSession,
    pub(crate) elapsed_ms: u64,
    /// The last run session's report, when asked for with the status.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) last_report: Option<Report>,
}

#[derive(Debug, Serialize)]
pub(crate) struct CurrentSpec {
    pub(crate) id: String,
    pub(crate) spec: String,
    pub(crate) status: String,
}

#[derive(Debug, Default, Serialize)]
pub(crate) struct Counts {
    pub(crate) pending: usize,
    pub(crate) active: usize,
    pub(crate) done: usize,
    pub(crate) failed: usize,
}

/// The agent's status, when an agent session exists (running or interrupted).
pub(crate) fn load(root: &Path) -> Result<Option<AgentStatus>> {
    let Some(session) = AgentSession::load(root)? else {
        return Ok(None);
    };
    let inbox = Inbox::at(root).lock()?;
    let mut counts = Counts::default();
    for r in &inbox.records {
        match r.status {
            Status::Pending => counts.pending += 1,
            Status::Active => counts.active += 1,
            Status::Done => counts.done += 1,
            Status::Failed => counts.failed += 1,
        }
    }
    let current_spec = session.current_spec_id.as_deref().and_then(|id| {
        inbox
            .records
            .iter()
            .find(|r| r.id == id)
            .map(|r| CurrentSpec {
                id: r.id.clone(),
                spec: r.spec.clone(),
                status: r.status.as_str().to_string(),
            })
    });
    drop(inbox);
    let running = AgentLock::held(root);
    Ok(Some(AgentStatus {
        mode: "agent",
        running,
        pid: session.pid.filter(|_| running),
        current_spec,
        inbox: counts,
        elapsed_ms: elapsed_since(&session.started_at).as_millis() as u64,
        session,
        last_report: None,
    }))
}

impl AgentStatus {
    pub(crate) fn with_report(mut self, report: Option<Report>) -> Self {
        self.last_report = report;
        self
    }

    /// The seed's extended status lines.
    pub(crate) fn human(&self) -> String {
        let s = &self.session;
        let state = match (self.running, self.pid) {
            (true, Some(pid)) => format!("running, pid {pid}"),
            (true, None) => "running".to_string(),
            (false, _) => "interrupted; `ralph-loop agent` resumes it".to_string(),
        };
        let current = match &self.current_spec {
            Some(c) => format!("{} ({}, {})", c.spec, c.id, c.status),
            None => "none".to_string(),
        };
        let c = &self.inbox;
        let mut text = format!(
            "Mode: agent ({state})\nCurrent spec: {current}\nInbox: {} pending, {} active, {} done, {} failed\nSession: {} specs completed, {} failed, ${:.2} spent, {} elapsed\n",
            c.pending,
            c.active,
            c.done,
            c.failed,
            s.specs_completed,
            s.specs_failed,
            s.total_cost,
            human_duration(std::time::Duration::from_millis(self.elapsed_ms)),
        );
        if let Some(log) = &s.log {
            text.push_str(&format!("Log: {log}\n"));
        }
        text
    }
}
