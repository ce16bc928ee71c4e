//! Agent mode: `ralph-loop agent` works through the inbox, one spec at a time, FETCH → PLAN →
//! RUN → COMMIT, until the inbox is empty or a limit is reached.
//!
//! - FETCH takes the first pending record (or the spec an interrupted agent was on) and marks it
//!   active; PLAN takes the spec's targets from its front matter or asks the Librarian's model
//!   ([`crate::spec::planner`]); RUN fixes each target with a session of the normal loop
//!   ([`crate::app::entry`]); COMMIT commits exactly the files the spec changed.
//! - A failed spec's changes are stashed (or reset, `agent.on_failure`) and always kept under
//!   `refs/ralph/failed/<id>`; the record is marked failed with the reason and the next spec
//!   starts.
//! - `changes` finds the files a spec changed, `dry_run` is `--dry-run`; the session file, the
//!   lock and the log are [`crate::agent`]'s.
//!
//! Ctrl+C lets the iteration under way finish, puts the spec back to pending and exits 130; the
//! next `agent` resumes its session from its last checkpoint. A second Ctrl+C kills at once.

mod changes;
mod dry_run;

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicI32;
use std::sync::Arc;
use std::time::Duration;

use ralph_actors::policy::budget::Budget;
use tokio_util::sync::CancellationToken;

use crate::agent::log::AgentLog;
use crate::agent::session::{AgentLock, AgentSession};
use crate::agent::{elapsed_since, human_duration, AgentError};
use crate::app::entry::{agent_dir, Ended, Entry, Progress, Shared};
use crate::app::plan::Overrides;
use crate::cli::{AgentArgs, OutputFormat, RunArgs};
use crate::config::FailedWork;
use crate::error::{Error, Result};
use crate::git::Repo;
use crate::inbox::{Inbox, Record, Status};
use crate::printers;
use crate::process::groups::ProcessGroups;
use crate::spec::Spec;
use changes::{check_clean, hex, own_changes};

/// Why the agent stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    Empty,
    MaxSpecs,
    MaxCost,
    MaxFailures,
    Interrupted,
}

/// `ralph-loop agent`
pub fn run(args: AgentArgs) -> Result<i32> {
    check_flags(&args)?;
    let cwd =
        std::env::current_dir().map_err(|e| Error::io("cannot read the current directory", e))?;
    let repo = Repo::at(&cwd).ok_or_else(|| AgentError::NotARepository(cwd.clone()))?;
    let root = repo.root.clone();
    let (config, _) = crate::config::load_discovered(args.config.as_deref(), &cwd)?;
    if args.dry_run {
        return dry_run::dry_run(&root, &args);
    }
    let _lock = AgentLock::acquire(&root).map_err(AgentError::from)?;
    let repo = Repo {
        pid_file: Some(root.join(crate::session::RALPH_DIR).join("agent.git")),
        ..repo
    };
    // A killed agent's git may still be committing or stashing: it finishes before we look.
    repo.wait_for_orphan();
    if !repo.has_commit() {
        return Err(AgentError::NoCommit(root).into());
    }
    let resumed = AgentSession::load(&root)?;
    let mut session = resumed.clone().unwrap_or_default();
    if !args.allow_dirty {
        check_clean(&repo, &root, session.current_spec_id.as_deref())?;
    }
    let log = AgentLog::create(&root, true)?;
    session.pid = Some(std::process::id());
    session.log = Some(relative(&log.path, &root));
    session.save(&root)?;
    match &resumed {
        Some(s) => log.line(&format!(
            "Agent resumed (session of {}: {} specs done, {} failed, ${:.2})",
            s.started_at, s.specs_completed, s.specs_failed, s.total_cost
        )),
        None => log.line("Agent started"),
    }
    let mut agent = Agent {
        inbox: Inbox::at(&root),
        root,
        repo,
        log,
        session,
        on_failure: config.agent.on_failure,
        max_failures: args.max_failures.unwrap_or(config.agent.max_failures),
        base: RunArgs {
            config: args.config.clone(),
            output: Some(OutputFormat::Human),
            ..RunArgs::default()
        },
        args,
        failed_here: 0,
    };
    let groups = ProcessGroups::new();
    let shared = Shared {
        cancel: CancellationToken::new(),
        drain: CancellationToken::new(),
        stop_signal: Arc::new(AtomicI32::new(0)),
        budget: agent
            .args
            .max_cost
            .map(|cap| Budget::new(cap, agent.session.total_cost)),
        groups,
        printers: Box::new({
            let log = agent.log.clone();
            move || vec![printers::for_format(OutputFormat::Human), log.run_printer()]
        }),
    };
    let system = actix::System::new();
    let stop = system.block_on(async {
        let signals = tokio::spawn(crate::app::execute::on_signals(
            shared.cancel.clone(),
            Some(shared.drain.clone()),
            shared.stop_signal.clone(),
            shared.groups.clone(),
        ));
        let stop = agent.work(&shared).await;
        signals.abort();
        stop
    })?;
    agent.end(stop)
}

fn check_flags(args: &AgentArgs) -> Result<(), AgentError> {
    let flag = |flag, what, value: String| Err(AgentError::Flag { flag, what, value });
    if let Some(c) = args.max_cost.filter(|c| !(c.is_finite() && *c > 0.0)) {
        return flag("--max-cost", "a positive number of dollars", c.to_string());
    }
    if args.max_specs == Some(0) {
        return flag("--max-specs", "at least 1", "0".into());
    }
    if args.max_failures == Some(0) {
        return flag("--max-failures", "at least 1", "0".into());
    }
    Ok(())
}

fn relative(path: &Path, root: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .display()
        .to_string()
}

struct Agent {
    root: PathBuf,
    repo: Repo,
    inbox: Inbox,
    log: AgentLog,
    session: AgentSession,
    on_failure: FailedWork,
    max_failures: u32,
    base: RunArgs,
    args: AgentArgs,
    /// Specs failed by this process: its exit code.
    failed_here: u32,
}

impl Agent {
    /// Works through the inbox until it is empty, a limit is reached or the user stops it.
    async fn work(&mut self, shared: &Shared) -> Result<Stop> {
        loop {
            if shared.cancel.is_cancelled() || shared.drain.is_cancelled() {
                return Ok(Stop::Interrupted);
            }
            if let Some(stop) = self.limit(shared) {
                return Ok(stop);
            }
            let Some(record) = self.fetch()? else {
                return Ok(Stop::Empty);
            };
            match self.one(&record, shared).await? {
                Some(stop) => return Ok(stop),
                None => continue,
            }
        }
    }

    /// The limit reached, if one is.
    fn limit(&self, shared: &Shared) -> Option<Stop> {
        let s = &self.session;
        if self.args.max_specs.is_some_and(|n| s.specs_completed >= n) {
            return Some(Stop::MaxSpecs);
        }
        if shared.budget.as_ref().is_some_and(|b| b.spent() >= b.cap()) {
            return Some(Stop::MaxCost);
        }
        if s.consecutive_failures >= self.max_failures {
            return Some(Stop::MaxFailures);
        }
        None
    }

    /// FETCH: the spec an interrupted agent was on, else the first pending one; marked active.
    fn fetch(&mut self) -> Result<Option<Record>> {
        let mut inbox = self.inbox.lock().map_err(AgentError::from)?;
        if let Some(torn) = inbox.torn.take() {
            self.log.line(&format!("WARNING: {torn}"));
        }
        let current = self.session.current_spec_id.clone();
        let resumed = current.as_deref().and_then(|id| {
            inbox
                .records
                .iter()
                .find(|r| r.id == id && matches!(r.status, Status::Active | Status::Pending))
        });
        // With the agent's lock held, an active record other than ours is an agent's that died
        // (killed before it saved its session): it is resumed before anything new.
        let orphan = || inbox.records.iter().find(|r| r.status == Status::Active);
        let pending = || inbox.records.iter().find(|r| r.status == Status::Pending);
        let record = match resumed.or_else(orphan).or_else(pending) {
            Some(r) => r.clone(),
            None => return Ok(None),
        };
        if record.status != Status::Active {
            inbox
                .set_status(&record.id, Status::Active, None)
                .map_err(AgentError::from)?;
        }
        drop(inbox);
        let again =
            current.as_deref() == Some(record.id.as_str()) || record.status == Status::Active;
        self.session.current_spec_id = Some(record.id.clone());
        self.session.save(&self.root)?;
        self.log.line(&format!(
            "FETCH: {} {}{}",
            record.id,
            record.spec,
            if again { " (resumed)" } else { "" }
        ));
        Ok(Some(record))
    }

    /// PLAN, RUN and COMMIT of one spec; a stop when the agent must stop after it.
    async fn one(&mut self, record: &Record, shared: &Shared) -> Result<Option<Stop>> {
        let dir = agent_dir(&self.root, &record.id);
        let spec = match Spec::load(&self.root.join(&record.spec)) {
            Ok(spec) => spec,
            Err(e) => {
                self.failed(record, &Progress::default(), e.to_string())?;
                return Ok(None);
            }
        };
        let mut progress = Progress::load(&dir)?;
        if progress.started_at.is_none() {
            progress.started_at = Some(crate::inbox::now());
        }
        if progress.before.is_none() {
            let before = self.repo.snapshot().map_err(AgentError::from)?;
            progress.before = Some(
                before
                    .iter()
                    .map(|(p, h)| (p.clone(), h.as_ref().map(hex)))
                    .collect(),
            );
            progress.save(&dir)?;
        }
        let overrides = Overrides::default();
        let entry = Entry {
            spec: &spec,
            root: &self.root,
            dir: dir.clone(),
            base: &self.base,
            overrides: &overrides,
        };
        if progress.plan.is_none() {
            match entry.plan(shared.budget.clone()).await {
                Ok(plan) => {
                    progress.plan = Some(plan);
                    progress.save(&dir)?;
                }
                Err(why) => {
                    self.failed(record, &progress, format!("planning failed: {why}"))?;
                    return Ok(None);
                }
            }
        }
        if let Some(plan) = &progress.plan {
            let files: Vec<String> = plan
                .targets
                .iter()
                .map(|t| t.file.display().to_string())
                .collect();
            self.log.line(&format!(
                "PLAN: {} target{} ({}): {}",
                files.len(),
                if files.len() == 1 { "" } else { "s" },
                if plan.source == "spec" {
                    "from the spec"
                } else {
                    "planned by the Librarian"
                },
                files.join(", ")
            ));
        }
        let ended = entry.run(&mut progress, shared).await?;
        self.session.total_cost = self.session_cost(&progress);
        match ended {
            Ended::Done => {
                self.done(record, &spec, &progress)?;
                Ok(None)
            }
            Ended::Failed(why) => {
                self.failed(record, &progress, why)?;
                Ok(None)
            }
            Ended::Interrupted => {
                self.back_to_pending(record)?;
                Ok(Some(Stop::Interrupted))
            }
            Ended::OutOfMoney(why) => {
                self.log.line(&format!("RUN: stopped by --max-cost: {why}"));
                self.back_to_pending(record)?;
                Ok(Some(Stop::MaxCost))
            }
        }
    }

    /// The session's spending: the finished specs', and the spec under way's so far.
    fn session_cost(&self, progress: &Progress) -> f64 {
        self.session.settled_cost() + progress.cost_usd()
    }

    /// COMMIT of a finished spec: exactly its files, one retry; the record marked done.
    fn done(&mut self, record: &Record, spec: &Spec, progress: &Progress) -> Result<()> {
        let before = progress.before.clone().unwrap_or_default();
        let files = own_changes(&self.repo, &before, progress).map_err(AgentError::from)?;
        let subject = format!("ralph: complete {}", spec.name);
        let body = commit_body(record, progress);
        // An agent killed between its commit and the inbox's update committed already.
        let since = progress
            .started_at
            .clone()
            .unwrap_or_else(crate::inbox::now);
        let earlier = self
            .repo
            .find_commit(&format!("Inbox: {}", record.id), &since)
            .map_err(AgentError::from)?;
        let committed = match earlier {
            Some(sha) => {
                self.log.line(&format!(
                    "COMMIT: {sha} was made for this spec by an agent that was stopped"
                ));
                Ok(sha)
            }
            None => self.repo.commit(&files, &subject, &body).or_else(|first| {
                self.log
                    .line(&format!("COMMIT: failed ({first}); trying once more"));
                self.repo.commit(&files, &subject, &body)
            }),
        };
        match committed {
            Ok(sha) => {
                self.log.line(&format!(
                    "COMMIT: {sha} \"{subject}\" ({} files)",
                    files.len()
                ));
                let mut inbox = self.inbox.lock().map_err(AgentError::from)?;
                inbox
                    .set_status(&record.id, Status::Done, None)
                    .map_err(AgentError::from)?;
                drop(inbox);
                let s = &mut self.session;
                s.specs_completed += 1;
                s.consecutive_failures = 0;
                s.settle(progress.cost_usd());
                s.current_spec_id = None;
                Ok(s.save(&self.root)?)
            }
            Err(e) => self.failed(record, progress, format!("git commit failed: {e}")),
        }
    }

    /// A spec that failed: its changes stashed (or reset) and kept under a private ref, the
    /// record marked failed with the reason.
    fn failed(&mut self, record: &Record, progress: &Progress, why: String) -> Result<()> {
        self.log
            .line(&format!("FAILED: {} {}: {why}", record.id, record.spec));
        let mut error = why;
        let reference = format!("refs/ralph/failed/{}", record.id);
        self.repo.wait_unlocked();
        if self.repo.has_ref(&reference) {
            // Stashed by an agent killed before it could mark the record.
            error.push_str(&format!(" (its changes are kept in {reference})"));
        } else if let Some(before) = &progress.before {
            let files = own_changes(&self.repo, before, progress).map_err(AgentError::from)?;
            if !files.is_empty() {
                let name = Path::new(&record.spec)
                    .file_stem()
                    .map(|s| s.to_string_lossy().to_string())
                    .unwrap_or_else(|| record.spec.clone());
                let message = format!("ralph: failed {name}");
                let keep = self.on_failure == FailedWork::Stash;
                match self.repo.stash(&files, &message, &reference, keep) {
                    Ok(sha) => {
                        let kept = if keep {
                            format!("stash \"{message}\" and {reference}")
                        } else {
                            format!("{reference} (files reset)")
                        };
                        self.log.line(&format!(
                            "STASH: {} files in {kept} ({})",
                            files.len(),
                            &sha[..sha.len().min(7)]
                        ));
                        error.push_str(&format!(" (its changes are kept in {kept})"));
                    }
                    Err(e) => {
                        self.log.line(&format!(
                            "STASH: failed: {e}; the changes are left in the tree"
                        ));
                        error.push_str(&format!(
                            " (its changes could not be stashed: {e}; they are left in the tree)"
                        ));
                    }
                }
            }
        }
        let mut inbox = self.inbox.lock().map_err(AgentError::from)?;
        inbox
            .set_status(&record.id, Status::Failed, Some(error))
            .map_err(AgentError::from)?;
        drop(inbox);
        self.failed_here += 1;
        let s = &mut self.session;
        s.specs_failed += 1;
        s.consecutive_failures += 1;
        s.settle(progress.cost_usd());
        s.current_spec_id = None;
        Ok(s.save(&self.root)?)
    }

    /// An interrupted spec goes back to the queue; the session remembers it to resume it.
    fn back_to_pending(&mut self, record: &Record) -> Result<()> {
        let mut inbox = self.inbox.lock().map_err(AgentError::from)?;
        inbox
            .set_status(&record.id, Status::Pending, None)
            .map_err(AgentError::from)?;
        drop(inbox);
        self.log.line(&format!(
            "PAUSED: {} {} is pending again; `ralph-loop agent` resumes it",
            record.id, record.spec
        ));
        Ok(self.session.save(&self.root)?)
    }

    /// Says why the agent stopped and what the session came to; the session file goes unless
    /// the agent was interrupted. The exit code.
    fn end(self, stop: Stop) -> Result<i32> {
        let s = &self.session;
        let why = match stop {
            Stop::Empty => "Inbox empty. Agent stopping.".to_string(),
            Stop::MaxSpecs => format!("--max-specs reached ({} specs completed). Agent stopping.", s.specs_completed),
            Stop::MaxCost => format!("--max-cost reached (${:.4} spent). Agent stopping.", s.total_cost),
            Stop::MaxFailures => format!("{} consecutive failed specs (--max-failures). Agent stopping.", s.consecutive_failures),
            Stop::Interrupted => "Interrupted: the spec under way is pending again; run `ralph-loop agent` to resume it.".to_string(),
        };
        self.log.line(&why);
        self.log.line(&format!(
            "Session summary: {} specs completed, {} failed, ${:.2}, {}",
            s.specs_completed,
            s.specs_failed,
            s.total_cost,
            human_duration(elapsed_since(&s.started_at))
        ));
        if stop == Stop::Interrupted {
            let mut s = s.clone();
            s.pid = None;
            s.save(&self.root)?;
            return Ok(130);
        }
        AgentSession::remove(&self.root)?;
        Ok(if self.failed_here > 0 || stop == Stop::MaxFailures {
            1
        } else {
            0
        })
    }
}

/// The commit's body: where the spec is, what it fixed, what it took.
fn commit_body(record: &Record, progress: &Progress) -> String {
    let targets: Vec<String> = progress
        .plan
        .iter()
        .flat_map(|p| p.targets.iter().map(|t| t.file.display().to_string()))
        .collect();
    format!(
        "Spec: {}\nTargets: {}\nIterations: {}\nDuration: {}\nCost: ${:.2}\nInbox: {}",
        record.spec,
        targets.join(", "),
        progress.iterations(),
        human_duration(Duration::from_millis(progress.duration_ms())),
        progress.cost_usd(),
        record.id
    )
}
