//! How a spec whose run ended lands, in queue order: committed when it is done, its work set
//! aside when it failed (the git side of both is [`crate::work::land`]), back to pending when it
//! was stopped from outside; its record, the view and the session told.

use super::work::Job;
use super::{Agent, Stop};
use crate::agent::AgentError;
use crate::error::Result;
use crate::inbox::{Record, Status};
use crate::spec::Spec;
use crate::views::state::Mark;
use crate::work::entry::{Ended, Progress, SKIPPED_IN_VIEW};
use crate::work::land::{Commit, Landing};
use crate::work::worktree;

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

    /// COMMIT of a finished spec ([`Landing::commit`]); the record marked done.
    fn done(&mut self, record: &Record, spec: &Spec, progress: &Progress) -> Result<()> {
        let landing = Landing::of(&self.repo, progress, &self.log);
        if let Commit::Failed(why) = landing.commit(record, spec, progress)? {
            return self.failed(record, progress, why);
        }
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

    /// A spec that did not get done: its work set aside ([`Landing::set_aside`]), its record
    /// failed with `why`, its cost settled.
    fn set_aside(&mut self, record: &Record, progress: &Progress, why: String) -> Result<()> {
        let landing = Landing::of(&self.repo, progress, &self.log);
        let error = landing.set_aside(record, progress, why, self.on_failure)?;
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
