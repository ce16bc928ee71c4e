//! A finished spec's work in git: COMMIT of exactly its files (brought from its worktree first,
//! when it ran in one), or its work set aside under `refs/ralph/failed/<id>` (stashed, or reset
//! by `agent.on_failure`). Each step can be cut short by `kill -9` and is then finished, not
//! repeated, by the next agent: a commit or a ref it made is found and kept.

use std::path::Path;
use std::time::Duration;

use crate::agent::log::AgentLog;
use crate::agent::{human_duration, AgentError};
use crate::config::FailedWork;
use crate::error::Result;
use crate::git::Repo;
use crate::inbox::Record;
use crate::spec::Spec;
use crate::work::changes::own_changes;
use crate::work::entry::Progress;
use crate::work::worktree::{self, Brought};

/// Where a spec's work lands: the project's repository, from the one it ran in.
pub(crate) struct Landing<'a> {
    main: &'a Repo,
    /// Its worktree, or the project's tree.
    work: Repo,
    log: &'a AgentLog,
}

/// What came of a finished spec's commit.
pub(crate) enum Commit {
    /// Made (or found, made by an agent stopped since), and said in the log.
    Made,
    /// Not made, and why: the spec fails.
    Failed(String),
}

impl<'a> Landing<'a> {
    /// The landing of the work `progress` describes, into `main`.
    pub(crate) fn of(main: &'a Repo, progress: &Progress, log: &'a AgentLog) -> Self {
        let work = match &progress.worktree {
            Some(tree) => Repo::new(tree.path.clone()).with_pid_file(main.pid_file.clone()),
            None => main.clone(),
        };
        Landing { main, work, log }
    }

    /// COMMIT of a finished spec: exactly its files, one retry.
    pub(crate) fn commit(
        &self,
        record: &Record,
        spec: &Spec,
        progress: &Progress,
    ) -> Result<Commit> {
        let before = progress.before.clone().unwrap_or_default();
        let files = own_changes(&self.work, &before, progress).map_err(AgentError::from)?;
        let subject = format!("ralph: complete {}", spec.name);
        let body = commit_body(record, progress);
        // An agent killed between its commit and the inbox's update committed already.
        let since = progress
            .started_at
            .clone()
            .unwrap_or_else(crate::inbox::now);
        let earlier = self
            .main
            .find_commit(&format!("Inbox: {}", record.id), &since)
            .map_err(AgentError::from)?;
        if let Some(sha) = earlier {
            self.log.line(&format!(
                "COMMIT: {sha} was made for this spec by an agent that was stopped"
            ));
            return Ok(Commit::Made);
        }
        if let Some(tree) = &progress.worktree {
            if let Brought::Conflict(files) = worktree::bring(self.main, tree, &files)? {
                let named: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
                return Ok(Commit::Failed(format!(
                    "{} changed in the tree while the spec ran in its worktree",
                    named.join(", ")
                )));
            }
        }
        let committed = self.main.commit(&files, &subject, &body).or_else(|first| {
            self.log
                .line(&format!("COMMIT: failed ({first}); trying once more"));
            self.main.commit(&files, &subject, &body)
        });
        Ok(match committed {
            Ok(sha) => {
                self.log.line(&format!(
                    "COMMIT: {sha} \"{subject}\" ({} files)",
                    files.len()
                ));
                Commit::Made
            }
            Err(e) => Commit::Failed(format!("git commit failed: {e}")),
        })
    }

    /// A spec that did not get done: its changes stashed (or reset, `on_failure`) and kept
    /// under `refs/ralph/failed/<id>`. The record's error: `why` and where its changes are.
    pub(crate) fn set_aside(
        &self,
        record: &Record,
        progress: &Progress,
        why: String,
        on_failure: FailedWork,
    ) -> Result<String> {
        let mut error = why;
        let reference = format!("refs/ralph/failed/{}", record.id);
        self.main.wait_unlocked();
        if self.main.has_ref(&reference) {
            // Stashed by an agent killed before it could mark the record.
            error.push_str(&format!(" (its changes are kept in {reference})"));
            return Ok(error);
        }
        let Some(before) = &progress.before else {
            return Ok(error);
        };
        let files = own_changes(&self.work, before, progress).map_err(AgentError::from)?;
        if files.is_empty() {
            return Ok(error);
        }
        let name = Path::new(&record.spec)
            .file_stem()
            .map(|s| s.to_string_lossy().to_string())
            .unwrap_or_else(|| record.spec.clone());
        let message = format!("ralph: failed {name}");
        let keep = on_failure == FailedWork::Stash;
        let repo = &self.work;
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
        Ok(error)
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
