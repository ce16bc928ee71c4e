//! One spec's run, as the agent (and a batch) runs it: its targets planned (named by its front
//! matter, or by the Librarian's model), then each fixed by a session of the normal loop, in
//! order, inside the caller's actix system.
//!
//! Its progress is saved in its folder (`progress.json`) at every change: the plan, and for each
//! target the session fixing it (recorded as soon as the session's folder exists) and how it
//! ended. A spec stopped at any point, even by `kill -9`, goes on from there: a finished target
//! is not run again, an interrupted one resumes its session from its last checkpoint.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ralph_actors::policy::budget::Budget;
use ralph_actors::role::Role;
use ralph_actors::schema::report::{Report, Status};
use ralph_actors::schema::state::SessionState;
use serde::{Deserialize, Serialize};
use tokio::sync::watch;

use crate::cli::{LimitArgs, ResumeArgs, RunArgs, ViewArgs};
use crate::error::{Error, Result};
use crate::fsutil::write_atomic;
use crate::hooks::tasks::TaskHooks;
use crate::launch::skips::Skips;
use crate::launch::stops::Stops;
use crate::printers::Printer;
use crate::run::execute::{execute_in, Control};
use crate::run::plan::{assistant_for, Overrides};
use crate::run::prepare::{is_resumable, prepare_new_then, prepare_resume, Prepared, RunSpec};
use crate::session::{SessionDir, SessionError};
use crate::spec::planner::{self, Plan};
use crate::spec::Spec;

const PROGRESS: &str = "progress.json";

/// The folder of inbox record `id`'s work: `.ralph/agent/<id>/`.
pub(crate) fn agent_dir(root: &Path, id: &str) -> PathBuf {
    root.join(crate::session::RALPH_DIR).join("agent").join(id)
}

/// What every entry of one agent (or batch) shares: how it is stopped, the money, the test
/// processes, and how its runs are shown.
pub(crate) struct Shared {
    /// How the batch or agent is stopped: `cancel` ends the step under way (SIGTERM, a second
    /// signal), `drain` the run under way between two iterations (the agent's Ctrl+C).
    pub(crate) stops: Stops,
    /// The total every run draws on, when there is one (`--max-cost`).
    pub(crate) budget: Option<Arc<Budget>>,
    /// The printers of each run, given the name of its entry's folder (`q-a1b2`, `entry-3`).
    pub(crate) printers: Printers,
    /// Each entry's stop, by the name of its folder: a skip in the view stops that entry alone.
    pub(crate) skips: Skips,
    /// The view's pause: every run holds before its next step while it is `true`.
    pub(crate) pause: Option<watch::Receiver<bool>>,
}

/// The printers of each run, given the name of its entry's folder.
pub(crate) type Printers = Box<dyn Fn(&str) -> Vec<Box<dyn Printer>>>;

/// How far a spec got: `progress.json` in its folder.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct Progress {
    /// When the spec's work began (RFC 3339).
    #[serde(default)]
    pub(crate) started_at: Option<String>,
    pub(crate) plan: Option<Plan>,
    pub(crate) targets: Vec<TargetProgress>,
    /// What the dirty files of the tree held before the spec's first change (sha-256, hex;
    /// null for a deleted file): the spec's own changes are the files that differ from it.
    #[serde(default)]
    pub(crate) before: Option<BTreeMap<PathBuf, Option<String>>>,
    /// The spec's own git worktree, when it runs in one (`agent --parallel`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) worktree: Option<Worktree>,
}

/// A git worktree of the project's repository where one spec runs, apart from the others.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Worktree {
    pub(crate) path: PathBuf,
    /// The commit it was made on: what the spec's files held when it began.
    pub(crate) base: String,
}

/// One target's session and how it ended.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct TargetProgress {
    pub(crate) file: PathBuf,
    pub(crate) session: Option<String>,
    /// The session's status when it ended; `None` while it runs.
    pub(crate) status: Option<String>,
    /// Stopped from outside (Ctrl+C, the shared budget), not by its own limits: resumed next.
    #[serde(default)]
    pub(crate) paused: bool,
    pub(crate) iterations: u32,
    pub(crate) cost_usd: f64,
    pub(crate) duration_ms: u64,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub(crate) reason: String,
    /// Files the session wrote besides the target: Chaos's tests kept in the project.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) kept: Vec<PathBuf>,
}

impl Progress {
    pub(crate) fn load(dir: &Path) -> Result<Progress> {
        let path = dir.join(PROGRESS);
        match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
                SessionError::Damaged {
                    path: path.clone(),
                    message: e.to_string(),
                }
                .into()
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Progress::default()),
            Err(e) => Err(Error::io(format!("cannot read {}", path.display()), e)),
        }
    }

    pub(crate) fn save(&self, dir: &Path) -> Result<()> {
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::io(format!("cannot create {}", dir.display()), e))?;
        let path = dir.join(PROGRESS);
        let bytes = serde_json::to_vec_pretty(self)
            .map_err(|e| Error::Internal(format!("cannot encode {}: {e}", path.display())))?;
        write_atomic(&path, &bytes)
            .map_err(|e| Error::io(format!("cannot write {}", path.display()), e))
    }

    /// Dollars spent on the spec so far: planning and every target's session.
    pub(crate) fn cost_usd(&self) -> f64 {
        self.plan.as_ref().map_or(0.0, |p| p.cost_usd)
            + self.targets.iter().map(|t| t.cost_usd).sum::<f64>()
    }

    pub(crate) fn iterations(&self) -> u32 {
        self.targets.iter().map(|t| t.iterations).sum()
    }

    /// Every file the spec's sessions may have written, relative to the root: the plan's
    /// targets and Chaos's kept tests.
    pub(crate) fn written(&self) -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = self
            .plan
            .iter()
            .flat_map(|p| p.targets.iter().map(|t| t.file.clone()))
            .chain(self.targets.iter().flat_map(|t| t.kept.iter().cloned()))
            .collect();
        files.sort();
        files.dedup();
        files
    }

    pub(crate) fn duration_ms(&self) -> u64 {
        self.targets.iter().map(|t| t.duration_ms).sum()
    }
}

/// What a target's session came to, from its report.
fn record(t: &mut TargetProgress, report: &Report, paused: bool) {
    t.status = Some(report.status.as_str().to_string());
    t.paused = paused;
    t.iterations = report.iterations;
    t.cost_usd = report.cost_usd;
    t.duration_ms = report.duration_ms;
    t.reason = report.reason.clone();
    t.kept = report
        .adversarial
        .as_ref()
        .map(|a| a.kept_tests.iter().map(PathBuf::from).collect())
        .unwrap_or_default();
}

/// The `pre_task` and `post_task` hooks of the project at `root`, checked and trusted (every
/// hook is: one new or changed stops the batch or agent before anything runs), for the batch
/// or agent session `id` (`whole` says which, as a hook that stops it names it); and the
/// isolation's note to say once, if any.
pub(crate) fn task_hooks(
    config: &crate::config::Config,
    config_path: Option<&Path>,
    root: &Path,
    stops: &Stops,
    id: &str,
    whole: &'static str,
) -> Result<(TaskHooks, Option<String>)> {
    let hooks = project_hooks(config, config_path, root, stops, (id, whole), false)?;
    Ok((hooks.tasks, hooks.note))
}

/// The hooks of `ralph-loop loop` (session `id`): those around the list's tasks and those of
/// the loop's stages, checked and trusted as [`task_hooks`] are.
pub(crate) fn loop_hooks(
    config: &crate::config::Config,
    config_path: Option<&Path>,
    root: &Path,
    stops: &Stops,
    id: &str,
) -> Result<ProjectHooks> {
    project_hooks(config, config_path, root, stops, (id, "the loop"), true)
}

/// A project's hooks, ready to run.
pub(crate) struct ProjectHooks {
    pub tasks: TaskHooks,
    /// Of the loop's stages (`stages` asked for them): told no target, as the agent of a loop
    /// changes the files itself.
    pub stages: Vec<std::sync::Arc<dyn ralph_actors::machine::hooks::Hook>>,
    /// The isolation's note to say once, if any.
    pub note: Option<String>,
}

fn project_hooks(
    config: &crate::config::Config,
    config_path: Option<&Path>,
    root: &Path,
    stops: &Stops,
    (id, whole): (&str, &'static str),
    stages: bool,
) -> Result<ProjectHooks> {
    let declared = crate::hooks::load(config, config_path, root)?;
    crate::hooks::trust::enforce(&declared, root).map_err(crate::hooks::HooksError::from)?;
    let any = declared
        .iter()
        .any(|d| stages || d.stages.iter().any(|s| s.of_task()));
    let isolation = crate::hooks::isolation(config.sandbox.hooks, any)?;
    let place = || crate::hooks::Place {
        root: root.to_path_buf(),
        groups: stops.groups.clone(),
        cancel: stops.cancel.clone(),
        sandbox: isolation.sandbox.clone(),
    };
    let stage_hooks = match stages {
        true => crate::hooks::into_hooks(declared.clone(), place(), String::new())?,
        false => Vec::new(),
    };
    let tasks = crate::hooks::task_hooks(declared, place(), id.to_string())?.of(whole);
    Ok(ProjectHooks {
        tasks,
        stages: stage_hooks,
        note: isolation.note,
    })
}

/// How a spec's run ended.
/// Why a spec has no plan.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Unplanned {
    #[error("the spec names no targets and has no task to plan them from")]
    NothingToPlan,
    /// The spec file cannot be read (a dry run reads it again).
    #[error(transparent)]
    Spec(#[from] crate::spec::SpecError),
    /// No Librarian to plan with (its model, key or config).
    #[error(transparent)]
    NoModel(#[from] Error),
    #[error(transparent)]
    Planner(#[from] planner::PlanError),
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Ended {
    /// Every target's tests pass.
    Done,
    /// It cannot be done as it stands: the reason.
    Failed(String),
    /// Stopped from outside (Ctrl+C, SIGTERM): goes back to the queue and resumes.
    Interrupted,
    /// The shared budget ran out: goes back to the queue and resumes with more money.
    OutOfMoney(String),
    /// Skipped in the view: its session (if one began) is saved, resumable by hand.
    Skipped,
}

/// Why a skipped entry did not run to its end, as its report says it.
pub(crate) const SKIPPED_IN_VIEW: &str = "skipped in the view";

/// The status of an entry skipped in the view (`s`): as for a hook's skip, a batch did as it
/// was told, so it does not fail the batch.
pub const SKIPPED_BY_USER: &str = "skipped_by_user";

impl Ended {
    /// As a report says it: `success`, or the status of the run where it stopped.
    pub(crate) fn status(&self, p: &Progress) -> String {
        match self {
            Ended::Done => "success".into(),
            Ended::Interrupted => "interrupted".into(),
            Ended::Skipped => SKIPPED_BY_USER.into(),
            Ended::OutOfMoney(_) => "budget_exceeded".into(),
            Ended::Failed(_) => p
                .targets
                .iter()
                .filter_map(|t| t.status.as_deref())
                .find(|s| *s != "success")
                .unwrap_or("error")
                .to_string(),
        }
    }

    /// Why it did not succeed (empty when it did).
    pub(crate) fn reason(&self) -> String {
        match self {
            Ended::Done => String::new(),
            Ended::Interrupted => "interrupted".into(),
            Ended::Skipped => SKIPPED_IN_VIEW.into(),
            Ended::OutOfMoney(why) | Ended::Failed(why) => why.clone(),
        }
    }
}

/// A spec to run: `dir` is its folder, `base` the flags every run of the agent or batch takes
/// (config, output) under the spec's own settings, `overrides` what it shares beyond flags (the
/// recording).
pub(crate) struct Entry<'a> {
    pub(crate) spec: &'a Spec,
    pub(crate) root: &'a Path,
    pub(crate) dir: PathBuf,
    pub(crate) base: &'a RunArgs,
    pub(crate) overrides: &'a Overrides,
    /// What its runs are called on a shared recording: the spec as the batch or inbox names it.
    pub(crate) name: &'a str,
}

impl Entry<'_> {
    /// The flags every run of a batch or an agent takes under its spec's own: the config
    /// file, human output (to the entry's printers), and `--quick`.
    pub(crate) fn base_args(config: Option<PathBuf>, quick: bool) -> RunArgs {
        RunArgs {
            config,
            output: Some(crate::cli::OutputFormat::Human),
            quick,
            ..RunArgs::default()
        }
    }

    /// The flags of `target`'s run: the spec's, the agent's for what the spec leaves unset.
    fn run_args(&self, target: &crate::spec::Target) -> RunArgs {
        let mut args = self.spec.run_args(target);
        let base = self.base;
        args.config = args.config.or_else(|| base.config.clone());
        args.output = base.output;
        // `--quick` of the batch or agent, where the spec sets no profile of its own.
        args.quick = base.quick;
        args
    }

    /// The overrides of the spec's runs: the shared ones, its runs named on the tape.
    fn overrides(&self) -> Overrides {
        Overrides {
            run: Some(self.name.to_owned()),
            ..self.overrides.clone()
        }
    }

    /// The name of the entry's folder: the inbox record's id, the batch's `entry-N`.
    fn label(&self) -> String {
        self.dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    }

    /// The spec's plan: already made, its front matter's targets, or the Librarian's.
    pub(crate) async fn plan(&self, shared: Option<Arc<Budget>>) -> Result<Plan, Unplanned> {
        let front = &self.spec.front;
        if !front.targets.is_empty() {
            return Ok(Plan {
                targets: front.targets.clone(),
                source: "spec".into(),
                reason: String::new(),
                cost_usd: 0.0,
                model: None,
            });
        }
        if self.spec.body.trim().is_empty() {
            return Err(Unplanned::NothingToPlan);
        }
        let args = RunArgs {
            file: None,
            ..self.run_args(&crate::spec::Target {
                file: PathBuf::new(),
                test_file: None,
            })
        };
        let model = assistant_for(Role::Librarian, &args, self.root, &self.overrides(), shared)?;
        Ok(planner::plan(
            &model.caller,
            &model.spec,
            &model.guard,
            self.root,
            &self.spec.body,
        )
        .await?)
    }

    /// Runs the planned spec's targets in turn from where its progress says, until one does
    /// not succeed; `progress` is saved in the entry's folder at every change.
    pub(crate) async fn run(&self, progress: &mut Progress, shared: &Shared) -> Result<Ended> {
        // Both callers plan first: a batch every entry, the agent each spec it fetches.
        let Some(plan) = progress.plan.clone() else {
            return Err(Error::Internal(
                "a spec was run before it was planned".into(),
            ));
        };
        for (i, target) in plan.targets.iter().enumerate() {
            if progress.targets.len() <= i {
                progress.targets.push(TargetProgress {
                    file: target.file.clone(),
                    ..TargetProgress::default()
                });
            }
            if progress.targets[i].status.is_none() {
                // Killed after its session ended and before the progress said so.
                if let Some(report) = self.finished(progress.targets[i].session.as_deref())? {
                    record(&mut progress.targets[i], &report, false);
                    progress.save(&self.dir)?;
                }
            }
            let done = &progress.targets[i];
            match done.status.as_deref() {
                Some("success") => continue,
                Some(status) if !done.paused => {
                    return Ok(Ended::Failed(format!(
                        "{}: {status}: {}",
                        target.file.display(),
                        done.reason
                    )))
                }
                _ => {}
            }
            if shared.skips.skipped(&self.label()) {
                return Ok(Ended::Skipped);
            }
            if shared.stops.cancel.is_cancelled() || shared.stops.drain.is_cancelled() {
                return Ok(Ended::Interrupted);
            }
            let args = self.run_args(target);
            let prepared = match self.prepare(args, progress, i, shared) {
                Ok(prepared) => prepared,
                // The run could not start (a missing file, no tests found): the spec as
                // written cannot be done.
                Err(e) if e.exit_code() == 2 => {
                    let reason = e.to_string();
                    let t = &mut progress.targets[i];
                    t.status = Some("error".into());
                    t.reason = reason.clone();
                    progress.save(&self.dir)?;
                    return Ok(Ended::Failed(format!(
                        "{}: {reason}",
                        target.file.display()
                    )));
                }
                Err(e) => return Err(e),
            };
            let own_cap = prepared.plan.settings.max_cost_usd;
            let report_dir = prepared.plan.report_dir.clone();
            let Prepared {
                plan,
                session,
                state,
                lock: _lock,
            } = prepared;
            let control = Control {
                cancel: shared.skips.token(&self.label()),
                drain: shared.stops.drain.clone(),
                stop_signal: shared.stops.signal.clone(),
                shared: shared.budget.clone(),
                printers: (shared.printers)(&self.label()),
                headless: true,
                asker: None,
                pause: shared.pause.clone(),
                models: Default::default(),
            };
            let report =
                execute_in(plan, session, state, shared.stops.groups.clone(), control).await;
            let _ = std::fs::remove_dir_all(&report_dir);
            let report = report?;
            let ended = match shared.skips.skipped(&self.label()) {
                true => Some(Ended::Skipped),
                false => self.ended(&report, own_cap, shared),
            };
            let paused = matches!(
                ended,
                Some(Ended::Interrupted | Ended::OutOfMoney(_) | Ended::Skipped)
            );
            record(&mut progress.targets[i], &report, paused);
            progress.save(&self.dir)?;
            if let Some(ended) = ended {
                return Ok(ended);
            }
        }
        Ok(Ended::Done)
    }

    /// The report of session `id` when it has ended for good (not resumable).
    fn finished(&self, id: Option<&str>) -> Result<Option<Report>> {
        let Some(session) = id.and_then(|id| SessionDir::open(self.root, id)) else {
            return Ok(None);
        };
        let state: Option<SessionState> = session.read_json("state.json")?;
        if state.is_none_or(|st| is_resumable(&st.status)) {
            return Ok(None);
        }
        Ok(session.read_json("report.json")?)
    }

    /// How the run of one target ends the spec, if it does.
    fn ended(&self, report: &Report, own_cap: f64, shared: &Shared) -> Option<Ended> {
        match report.status {
            Status::Success => None,
            Status::Interrupted => Some(Ended::Interrupted),
            Status::BudgetExceeded
                if shared
                    .budget
                    .as_ref()
                    .is_some_and(|b| b.cap() - b.spent() < own_cap - report.cost_usd) =>
            {
                Some(Ended::OutOfMoney(report.reason.clone()))
            }
            status => Some(Ended::Failed(format!(
                "{}: {status}: {}",
                report.target, report.reason
            ))),
        }
    }

    /// The session of target `i`: the one its progress names, resumed, or a new one (named in
    /// the progress before any work).
    fn prepare(
        &self,
        args: RunArgs,
        progress: &mut Progress,
        i: usize,
        shared: &Shared,
    ) -> Result<Prepared> {
        if let Some(id) = progress.targets[i].session.clone() {
            if let Some(session) = SessionDir::open(self.root, &id) {
                let state: Option<SessionState> = session.read_json("state.json")?;
                let resumable = state.as_ref().is_none_or(|st| is_resumable(&st.status));
                // No run.json: the agent was killed between naming the session in the progress
                // and the session's first save, before any work; it starts afresh below.
                let spec: Option<RunSpec> = if resumable {
                    session.read_json("run.json")?
                } else {
                    None
                };
                if let Some(mut spec) = spec {
                    // What is never saved: the recording this process shares.
                    let own = self.overrides();
                    spec.overrides.tape = own.tape;
                    spec.overrides.run = own.run;
                    let resume = ResumeArgs {
                        session: None,
                        limits: LimitArgs::default(),
                        guidance: None,
                        output: self.base.output,
                        view: ViewArgs::default(),
                    };
                    return prepare_resume(session, spec, state, &resume, &shared.stops.groups);
                }
            }
        }
        let dir = self.dir.clone();
        prepare_new_then(
            args,
            self.root.to_path_buf(),
            self.overrides(),
            &shared.stops.groups,
            |session| {
                progress.targets[i].session = Some(session.id.clone());
                progress.targets[i].status = None;
                progress.targets[i].paused = false;
                progress.save(&dir)
            },
        )
    }
}
