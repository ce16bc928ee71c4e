//! The commands a session goes through: `run` plans a new one, `resume` an interrupted one,
//! `status` reports on one.

use std::io::Write;
use std::path::PathBuf;

use ralph_actors::schema::report::Report;
use ralph_actors::schema::state::SessionState;

use crate::cli::{ResumeArgs, RunArgs, StatusArgs};
use crate::error::{Error, Result};
use crate::printers;
use crate::process::groups::ProcessGroups;
use crate::run::plan::Overrides;
use crate::run::prepare::{is_resumable, prepare_new, prepare_resume, RunSpec};
use crate::runner::detect;
use crate::session::{SessionDir, SessionError};

fn current_dir() -> Result<PathBuf> {
    std::env::current_dir().map_err(|e| Error::io("cannot read the current directory", e))
}

/// `ralph-loop [run] FILE ...`
pub fn run(args: RunArgs, overrides: Overrides) -> Result<i32> {
    let cwd = current_dir()?;
    let groups = ProcessGroups::new();
    prepare_new(args, cwd, overrides, &groups)?.execute(groups)
}

/// `ralph-loop resume [SESSION]`
pub fn resume(args: ResumeArgs) -> Result<i32> {
    let cwd = current_dir()?;
    let root = detect::project_root(&cwd);
    let resumable = |s: &SessionDir| {
        s.read_json::<SessionState>("state.json")
            .ok()
            .flatten()
            .is_some_and(|st| is_resumable(&st.status))
    };
    let session = match args.session.as_deref() {
        Some(id) => SessionDir::find(&root, Some(id), |_| true)?,
        None => SessionDir::find(&root, None, resumable)
            .map_err(|_| SessionError::NothingToResume(root.clone()))?,
    };
    let spec: RunSpec = session
        .read_json("run.json")?
        .ok_or_else(|| SessionError::NoRunSpec(session.id.clone()))?;
    // No state.json: the session stopped before its first checkpoint, so it starts over.
    let state: Option<SessionState> = session.read_json("state.json")?;
    if let Some(st) = state.as_ref().filter(|st| !is_resumable(&st.status)) {
        return Err(SessionError::NotResumable {
            id: session.id.clone(),
            status: st.status.clone(),
        }
        .into());
    }
    if let Some(st) = &state {
        check_limits(&session.id, st, &args)?;
    }
    let groups = ProcessGroups::new();
    prepare_resume(session, spec, state, &args, &groups)?.execute(groups)
}

/// A session that stopped at a limit resumes only past that limit.
fn check_limits(id: &str, st: &SessionState, args: &ResumeArgs) -> Result<()> {
    let same = |what: String, fix: String| -> Result<()> {
        Err(SessionError::SameLimit {
            id: id.to_string(),
            what,
            fix,
        }
        .into())
    };
    match st.status.as_str() {
        "max_iterations" if args.limits.max_iterations.is_none_or(|m| m <= st.iteration) => same(
            format!("max_iterations after {} iterations", st.iteration),
            format!("pass -m N with N above {}", st.iteration),
        ),
        _ => Ok(()),
    }
}

/// `ralph-loop status [SESSION]`: the agent's session first when there is one (running or
/// interrupted), then the report of the last session (or of SESSION).
pub fn status(args: StatusArgs) -> Result<i32> {
    let cwd = current_dir()?;
    let root = detect::project_root(&cwd);
    let agent = match args.session {
        None => crate::app::agent_status::load(&root)?,
        Some(_) => None,
    };
    let agent_loop = match args.session {
        None => crate::app::loop_status::load(&root).map_err(Error::Internal)?,
        Some(_) => None,
    };
    let session = match SessionDir::find(&root, args.session.as_deref(), |_| true) {
        Ok(session) => Some(session),
        // The agent has not started a session yet: its own status is the answer.
        Err(SessionError::NoSessions(_)) if agent.is_some() || agent_loop.is_some() => None,
        Err(e) => return Err(e.into()),
    };
    if let Some(agent_loop) = agent_loop {
        // The agent loop's state, then the last session's, if any.
        let mut out = std::io::stdout().lock();
        match agent_loop {
            Ok(view) if args.json => {
                let json = serde_json::to_string_pretty(&view)
                    .map_err(|e| Error::Internal(format!("cannot encode the status: {e}")))?;
                let _ = writeln!(out, "{json}");
                return Ok(0);
            }
            Ok(view) => {
                let _ = write!(out, "{}", view.human());
            }
            Err(line) => {
                let _ = writeln!(out, "{line}");
            }
        }
        if session.is_none() && agent.is_none() {
            return Ok(0);
        }
        let _ = writeln!(out);
    }
    let report = match &session {
        Some(s) => s.read_json::<Report>("report.json")?,
        None => None,
    };
    let mut out = std::io::stdout().lock();
    if args.json {
        let json = match agent {
            Some(agent) => serde_json::to_string_pretty(&agent.with_report(report)),
            None => match &report {
                Some(report) => {
                    let _ = printers::json::write_report(report, &mut out);
                    return Ok(0);
                }
                None => serde_json::to_string_pretty(&state_of(session.as_ref())?),
            },
        }
        .map_err(|e| Error::Internal(format!("cannot encode the status: {e}")))?;
        let _ = writeln!(out, "{json}");
        return Ok(0);
    }
    if let Some(agent) = &agent {
        let _ = write!(out, "{}", agent.human());
        if session.is_some() {
            let _ = writeln!(out);
        }
    }
    let Some(session) = session else {
        return Ok(0);
    };
    match report {
        Some(report) => {
            let _ = printers::summary::write_summary(&report, &mut out);
        }
        None => {
            let state: Option<SessionState> = session.read_json("state.json")?;
            match state {
                Some(st) => {
                    let _ = writeln!(
                        out,
                        "session {} is {} after {} iterations, ${:.4} spent (no report yet)",
                        session.id, st.status, st.iteration, st.ledger.spent
                    );
                }
                None => {
                    let _ = writeln!(
                        out,
                        "session {} has not finished its first step",
                        session.id
                    );
                }
            }
        }
    }
    Ok(0)
}

/// A session without a report, as JSON: its state's figures.
fn state_of(session: Option<&SessionDir>) -> Result<serde_json::Value> {
    let Some(session) = session else {
        return Ok(serde_json::Value::Null);
    };
    let state: Option<SessionState> = session.read_json("state.json")?;
    Ok(match state {
        Some(st) => serde_json::json!({
            "session_id": session.id,
            "status": st.status,
            "iterations": st.iteration,
            "cost_usd": st.ledger.spent,
        }),
        None => serde_json::json!({ "session_id": session.id, "status": "starting" }),
    })
}
