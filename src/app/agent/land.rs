//! How a spec whose run ended lands, in queue order: COMMIT of exactly its files when it is
//! done (brought from its worktree first, when it ran in one), its work set aside when it failed,
//! back to pending when it was stopped from outside. Each step can be cut short by `kill -9`
//! and is then finished, not repeated, by the next agent.

use std::path::Path;
use std::time::Duration;

use super::work::Job;
use super::{Agent, Stop};
use crate::agent::{human_duration, AgentError};
use crate::config::FailedWork;
use crate::error::Result;
use crate::git::Repo;
use crate::inbox::{Record, Status};
use crate::spec::Spec;
use crate::views::state::Mark;
use crate::work::changes::own_changes;
use crate::work::entry::{Ended, Progress, SKIPPED_IN_VIEW};
use crate::work::worktree::{self, Brought};

impl Agent {
    /// Lands a finished job; a stop when the agent must start no other.
    pub(super) fn land(&mut self, job: Job) -> Result<Option<Stop>> {
        let Job {
            record,
            spec,
            progress,
            ended,
            ..
        } = job;
        let progress = progress.unwrap_or_default();
        let stop = match ended {
            Some(Ended::Done) => {
                self.done(&record, &spec, &progress)?;
                None
            }
            Some(Ended::Failed(why)) => {
                self.failed(&record, &progress, why)?;
                None
            }
            Some(Ended::Skipped) => {
                self.skipped(&record, &progress)?;
                None
            }
            Some(Ended::OutOfMoney(why)) => {
                self.log.line(&format!("RUN: stopped by --max-cost: {why}"));
                self.back_to_pending(&record)?;
                return Ok(Some(Stop::MaxCost));
            }
            Some(Ended::Interrupted) | None => {
                self.back_to_pending(&record)?;
                return Ok(Some(Stop::Interrupted));
            }
        };
        // Done or set aside: its worktree has nothing more to give.
        if let Some(tree) = &progress.worktree {
            if let Err(e) = worktree::remove(&self.repo, tree, &self.links) {
                self.log.line(&format!(
                    "WARNING: cannot remove the worktree {}: {e}",
                    tree.path.display()
                ));
            }
        }
        Ok(stop)
    }

    /// The repository the job's work is in: its worktree, or the tree.
    fn repo_of(&self, progress: &Progress) -> Repo {
        match &progress.worktree {
            Some(tree) => self.repo_at(&tree.path),
            None => self.repo.clone(),
        }
    }

    /// COMMIT of a finished spec: exactly its files, one retry; the record marked done.
    fn done(&mut self, record: &Record, spec: &Spec, progress: &Progress) -> Result<()> {
        let before = progress.before.clone().unwrap_or_default();
        let files =
            own_changes(&self.repo_of(progress), &before, progress).map_err(AgentError::from)?;
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
        if earlier.is_none() {
            if let Some(tree) = &progress.worktree {
                if let Brought::Conflict(files) = worktree::bring(&self.repo, tree, &files)? {
                    let named: Vec<String> =
                        files.iter().map(|f| f.display().to_string()).collect();
                    let why = format!(
                        "{} changed in the tree while the spec ran in its worktree",
                        named.join(", ")
                    );
                    return self.failed(record, progress, why);
                }
            }
        }
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
                self.tell(record, Mark::Done, "committed", progress.cost_usd());
                let s = &mut self.session;
                s.specs_completed += 1;
                s.consecutive_failures = 0;
                s.settle(progress.cost_usd());
                Ok(s.save(&self.root)?)
            }
            Err(e) => self.failed(record, progress, format!("git commit failed: {e}")),
        }
    }

    /// A spec that failed: its changes stashed (or reset) and kept under a private ref, the
    /// record marked failed with the reason.
    pub(super) fn failed(
        &mut self,
        record: &Record,
        progress: &Progress,
        why: String,
    ) -> Result<()> {
        self.log
            .line(&format!("FAILED: {} {}: {why}", record.id, record.spec));
        self.tell(record, Mark::Failed, "failed", progress.cost_usd());
        self.set_aside(record, progress, why)?;
        self.failed_here += 1;
        let s = &mut self.session;
        s.specs_failed += 1;
        s.consecutive_failures += 1;
        Ok(s.save(&self.root)?)
    }

    /// A spec skipped in the view: its work set aside and its record failed, as for a failure
    /// (the session's count of failed specs includes it), but `--max-failures` and the exit
    /// code do not hear of it: the agent did as it was told.
    pub(super) fn skipped(&mut self, record: &Record, progress: &Progress) -> Result<()> {
        self.log.line(&format!(
            "SKIPPED: {} {}: {SKIPPED_IN_VIEW}",
            record.id, record.spec
        ));
        self.tell(record, Mark::Skipped, SKIPPED_IN_VIEW, progress.cost_usd());
        self.set_aside(record, progress, SKIPPED_IN_VIEW.to_string())?;
        self.session.specs_failed += 1;
        Ok(self.session.save(&self.root)?)
    }

    /// A spec that did not get done: its changes stashed (or reset) and kept under
    /// `refs/ralph/failed/<id>`, its record failed with `why`, its cost settled.
    fn set_aside(&mut self, record: &Record, progress: &Progress, why: String) -> Result<()> {
        let mut error = why;
        let reference = format!("refs/ralph/failed/{}", record.id);
        let repo = self.repo_of(progress);
        self.repo.wait_unlocked();
        if self.repo.has_ref(&reference) {
            // Stashed by an agent killed before it could mark the record.
            error.push_str(&format!(" (its changes are kept in {reference})"));
        } else if let Some(before) = &progress.before {
            let files = own_changes(&repo, before, progress).map_err(AgentError::from)?;
            if !files.is_empty() {
                let name = Path::new(&record.spec)
                    .file_stem()
                    .map(|s| s.to_string_lossy().to_string())
                    .unwrap_or_else(|| record.spec.clone());
                let message = format!("ralph: failed {name}");
                let keep = self.on_failure == FailedWork::Stash;
                match repo.stash(&files, &message, &reference, keep) {
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
                            "STASH: failed: {e}; the changes are left in {}",
                            repo.root.display()
                        ));
                        error.push_str(&format!(
                            " (its changes could not be stashed: {e}; they are left in {})",
                            repo.root.display()
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
        self.session.settle(progress.cost_usd());
        Ok(())
    }

    /// An interrupted spec goes back to the queue, its progress (and worktree) kept to resume.
    pub(super) fn back_to_pending(&mut self, record: &Record) -> Result<()> {
        let mut inbox = self.inbox.lock().map_err(AgentError::from)?;
        inbox
            .set_status(&record.id, Status::Pending, None)
            .map_err(AgentError::from)?;
        drop(inbox);
        self.log.line(&format!(
            "PAUSED: {} {} is pending again; `ralph-loop agent` resumes it",
            record.id, record.spec
        ));
        self.tell(record, Mark::Paused, "pending again", 0.0);
        Ok(self.session.save(&self.root)?)
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
