//! A session made ready to execute: a new one planned, or an interrupted one planned again from
//! its `run.json` and `state.json`; either way its target locked and its folder written.

use std::path::PathBuf;

use ralph_actors::schema::state::SessionState;
use serde::{Deserialize, Serialize};

use crate::cli::{ResumeArgs, RunArgs};
use crate::error::Result;
use crate::lock::{Holder, TargetLock};
use crate::process::groups::ProcessGroups;
use crate::run::execute::execute;
use crate::run::plan::{plan, Overrides, Plan};
use crate::session::SessionDir;

/// What a session was started with; `run.json`, read back by `resume`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct RunSpec {
    pub(crate) cwd: PathBuf,
    pub(crate) args: RunArgs,
    pub(crate) overrides: Overrides,
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
    pub(crate) fn execute(self, groups: ProcessGroups) -> Result<i32> {
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

/// Whether a session that ended with `status` can be resumed.
pub(crate) fn is_resumable(status: &str) -> bool {
    matches!(
        status,
        "running" | "interrupted" | "budget_exceeded" | "max_iterations" | "entropy_detected"
    )
}
