//! The commands a session goes through: `run` plans a new one, `resume` an interrupted one,
//! `status` reports on one.

use std::io::Write;
use std::path::PathBuf;

use ralph_actors::schema::report::Report;
use ralph_actors::schema::state::SessionState;
use serde::{Deserialize, Serialize};

use crate::app::execute::execute;
use crate::app::plan::{plan, Overrides, Plan};
use crate::cli::{ResumeArgs, RunArgs, StatusArgs};
use crate::error::{Error, Result};
use crate::lock::{Holder, TargetLock};
use crate::printers;
use crate::process::groups::ProcessGroups;
use crate::runner::detect;
use crate::session::{SessionDir, SessionError};

/// What a session was started with; `run.json`, read back by `resume`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct RunSpec {
    pub(crate) cwd: PathBuf,
    pub(crate) args: RunArgs,
    pub(crate) overrides: Overrides,
}

fn current_dir() -> Result<PathBuf> {
    std::env::current_dir().map_err(|e| Error::io("cannot read the current directory", e))
}

/// Plans a run; when planning fails there is no session yet, so the notes gathered so far
/// (micro-agent's flags not honoured) are said on stderr before the error.
fn plan_or_say(
    args: &RunArgs,
    cwd: &std::path::Path,
    overrides: &Overrides,
    groups: &ProcessGroups,
) -> Result<Plan> {
    plan(args, cwd, overrides, groups).inspect_err(|_| {
        for note in &overrides.notes {
            eprintln!("note: {note}");
        }
    })
}

/// `ralph-loop [run] FILE ...`
pub fn run(args: RunArgs, overrides: Overrides) -> Result<i32> {
    let cwd = current_dir()?;
    let groups = ProcessGroups::new();
    prepare_new(args, cwd, overrides, &groups)?.execute(groups)
}

/// A session ready to execute: planned, its target locked (held while this lives), its folder
/// and first state written.
pub(crate) struct Prepared {
    pub(crate) plan: Plan,
    pub(crate) session: SessionDir,
    pub(crate) state: SessionState,
    pub(crate) lock: TargetLock,
}

impl Prepared {
    /// Runs the session to its end in an actix system of its own; the exit code.
    fn execute(self, groups: ProcessGroups) -> Result<i32> {
        let Prepared {
            plan,
            session,
            state,
            lock: _lock,
        } = self;
        execute(plan, session, state, groups)
    }
}

/// Plans a new session of `args` (paths relative to `cwd`) and creates its folder. `created`
/// hears the session's id as soon as its folder exists, before any work.
pub(crate) fn prepare_new(
    args: RunArgs,
    cwd: PathBuf,
    overrides: Overrides,
    groups: &ProcessGroups,
) -> Result<Prepared> {
    prepare_new_then(args, cwd, overrides, groups, |_| Ok(()))
}

pub(crate) fn prepare_new_then(
    args: RunArgs,
    cwd: PathBuf,
    overrides: Overrides,
    groups: &ProcessGroups,
    created: impl FnOnce(&SessionDir) -> Result<()>,
) -> Result<Prepared> {
    let mut plan = plan_or_say(&args, &cwd, &overrides, groups)?;
    let mut lock = lock_target(&mut plan)?;
    let session = SessionDir::create(&plan.root)?;
    created(&session)?;
    claim(&mut lock, &session, &plan)?;
    session.write_json(
        "run.json",
        &RunSpec {
            cwd,
            args,
            overrides,
        },
    )?;
    session.save_original(&plan.workspace.target)?;
    let state = new_state(&session, &plan);
    // Saved before any work, so a session killed in its first step (SIGQUIT, SIGKILL) is
    // found and resumed like any other. Without what was typed: the run masks it before it is
    // kept (resume takes it from run.json).
    session.write_json(
        "state.json",
        &SessionState {
            target: String::new(),
            test_command: String::new(),
            ..state.clone()
        },
    )?;
    Ok(Prepared {
        plan,
        session,
        state,
        lock,
    })
}

/// Takes the target's lock for the run (held until the process ends), or says which session
/// holds it. A lock left by a run that died is taken over, with a note.
fn lock_target(plan: &mut Plan) -> Result<TargetLock> {
    let lock = TargetLock::acquire(&plan.root, &plan.workspace.target)?;
    if let Some(dead) = &lock.taken_over {
        plan.notes.push(format!(
            "{} was locked by session {} (pid {}), which ended without releasing it; taken over",
            plan.workspace.display(&plan.workspace.target),
            dead.session,
            dead.pid
        ));
    }
    Ok(lock)
}

fn claim(lock: &mut TargetLock, session: &SessionDir, plan: &Plan) -> Result<()> {
    lock.claim(&Holder {
        session: session.id.clone(),
        pid: std::process::id(),
        target: plan.workspace.display(&plan.workspace.target),
        started_at: ralph_actors::schema::state::timestamp(),
    })?;
    Ok(())
}

fn new_state(session: &SessionDir, plan: &Plan) -> SessionState {
    SessionState::new(
        &session.id,
        &plan.workspace.display(&plan.workspace.target),
        &plan.test_command,
        plan.settings.entropy_threshold,
    )
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

/// Plans the next run of an interrupted `session` from its `run.json` and `state.json` (`None`:
/// it never reached its first step) with the limits and words of `args`.
pub(crate) fn prepare_resume(
    session: SessionDir,
    spec: RunSpec,
    state: Option<SessionState>,
    args: &ResumeArgs,
    groups: &ProcessGroups,
) -> Result<Prepared> {
    let mut run_args = spec.args;
    run_args.limits = args.limits.or(run_args.limits);
    if args.output.is_some() {
        run_args.output = args.output;
    }
    run_args.view = args.view;
    let mut overrides = spec.overrides;
    overrides.keys = overrides
        .key_envs
        .iter()
        .filter_map(|(p, var)| {
            let key = std::env::var(var).ok().filter(|v| !v.is_empty())?;
            Some((p.clone(), key))
        })
        .collect();
    let mut plan = plan_or_say(&run_args, &spec.cwd, &overrides, groups)?;
    let mut lock = lock_target(&mut plan)?;
    claim(&mut lock, &session, &plan)?;
    let mut state = state.unwrap_or_else(|| new_state(&session, &plan));
    // state.json holds them masked; the run masks them again from what was typed.
    state.target = plan.workspace.display(&plan.workspace.target);
    state.test_command = plan.test_command.clone();
    if state.status == "entropy_detected" {
        // The user chose to go on: the failures seen so far no longer count toward the breaker.
        state.breaker.seen.clear();
    }
    if let Some(guidance) = args.guidance.clone().filter(|g| !g.trim().is_empty()) {
        state.guidance = Some(guidance);
    }
    state.status = "running".into();
    Ok(Prepared {
        plan,
        session,
        state,
        lock,
    })
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

pub(crate) fn is_resumable(status: &str) -> bool {
    matches!(
        status,
        "running" | "interrupted" | "budget_exceeded" | "max_iterations" | "entropy_detected"
    )
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
