//! The agent's loop: specs fetched in queue order and run up to `--parallel` at once, never two
//! on one file; each lands (committed, or set aside) in queue order, whichever finishes first.
//!
//! One at a time a spec runs in the tree itself. Several at once, each runs in a git worktree
//! of its own ([`super::worktree`]), so no spec's tests see another's half-done files; a spec
//! whose files another spec under way holds waits for it to land, then starts on what it left.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};

use futures::stream::{FuturesUnordered, StreamExt};

use super::changes::hex;
use super::{worktree, Agent, Stop};
use crate::agent::AgentError;
use crate::app::entry::{agent_dir, Ended, Entry, Progress, Shared};
use crate::error::{Error, Result};
use crate::git::Repo;
use crate::hooks::protocol::{Budget as HookBudget, Task};
use crate::hooks::tasks::Before;
use crate::inbox::Record;
use crate::spec::Spec;
use crate::views::state::Mark;

/// A spec the agent has taken on, from its plan until it lands.
pub(super) struct Job {
    pub(super) record: Record,
    pub(super) spec: Spec,
    pub(super) dir: PathBuf,
    /// The files its plan names: no other spec runs on them until it lands.
    files: Vec<PathBuf>,
    /// `None` while its run is under way.
    pub(super) progress: Option<Progress>,
    /// How its run ended, once it has.
    pub(super) ended: Option<Ended>,
}

impl Agent {
    /// Works through the inbox until it is empty (and, with `--watch`, the user stops it), a
    /// limit is reached or the user stops it.
    pub(super) async fn work(&mut self, shared: &Shared) -> Result<Stop> {
        let base = self.base.clone();
        let overrides = self.overrides.clone();
        let parallel = self.args.parallel.max(1);
        let mut watch = match self.args.watch {
            true => Some(super::watch::Watch::inbox(&self.root)?),
            false => None,
        };
        let mut jobs: VecDeque<Job> = VecDeque::new();
        // Planned, and waiting for a file a spec under way holds.
        let mut held: Option<Job> = None;
        let mut running = FuturesUnordered::new();
        let mut stopped: Option<Stop> = None;
        // Specs stopped from outside and pending again: a restart resumes them first.
        let mut paused: Vec<String> = Vec::new();
        // The inbox was said to be watched since the last spec began.
        let mut idle = false;
        loop {
            while jobs.front().is_some_and(|j| j.ended.is_some()) {
                let Some(job) = jobs.pop_front() else { break };
                if self.after_task(&job, shared).await {
                    stopped.get_or_insert(Stop::Hook);
                }
                let id = job.record.id.clone();
                if let Some(stop) = self.land(job)? {
                    paused.push(id);
                    stopped.get_or_insert(stop);
                }
                self.under_way(&paused, &jobs, held.as_ref())?;
            }
            let mut limit = None;
            while stopped.is_none() && jobs.len() < parallel {
                if shared.stops.cancel.is_cancelled() || shared.stops.drain.is_cancelled() {
                    stopped = Some(Stop::Interrupted);
                    break;
                }
                limit = self.limit(shared, jobs.len() + usize::from(held.is_some()));
                if limit.is_some() {
                    break;
                }
                let job = match held.take() {
                    Some(job) => job,
                    None => {
                        let busy: Vec<&str> = jobs.iter().map(|j| j.record.id.as_str()).collect();
                        let Some(record) = self.fetch(&busy)? else {
                            break;
                        };
                        if shared.skips.skipped(&record.id) {
                            let progress = Progress::load(&agent_dir(&self.root, &record.id))?;
                            self.skipped(&record, &progress)?;
                            continue;
                        }
                        match self.prepare(record, shared).await? {
                            Some(job) => job,
                            None => continue,
                        }
                    }
                };
                if jobs
                    .iter()
                    .any(|j| j.files.iter().any(|f| job.files.contains(f)))
                {
                    held = Some(job);
                    self.under_way(&paused, &jobs, held.as_ref())?;
                    break;
                }
                match self.before_task(&job, shared).await {
                    Before::Run => {}
                    Before::Skip(why) => {
                        let progress = job.progress.clone().unwrap_or_default();
                        self.failed(&job.record, &progress, why)?;
                        continue;
                    }
                    Before::Stop(why) => {
                        self.log.line(&format!(
                            "HOOK: {} {}: {why}",
                            job.record.id, job.record.spec
                        ));
                        self.back_to_pending(&job.record)?;
                        stopped = Some(Stop::Hook);
                        break;
                    }
                }
                let mut job = job;
                let mut progress = job.progress.take().unwrap_or_default();
                let root = self.start(&job, &mut progress)?;
                self.tell(&job.record, Mark::Running, "", progress.cost_usd());
                let id = job.record.id.clone();
                let spec = job.spec.clone();
                let dir = job.dir.clone();
                let name = job.record.spec.clone();
                let (base, overrides) = (&base, &overrides);
                running.push(async move {
                    let entry = Entry {
                        spec: &spec,
                        root: &root,
                        dir,
                        base,
                        overrides,
                        name: &name,
                    };
                    let ended = entry.run(&mut progress, shared).await;
                    (id, progress, ended)
                });
                jobs.push_back(job);
                idle = false;
                self.under_way(&paused, &jobs, held.as_ref())?;
            }
            if jobs.is_empty() {
                if let Some(job) = held.take() {
                    self.back_to_pending(&job.record)?;
                    paused.push(job.record.id);
                    self.under_way(&paused, &jobs, None)?;
                }
                let stop = stopped.or(limit).unwrap_or(Stop::Empty);
                if let (Stop::Empty, Some(watch)) = (stop, watch.as_mut()) {
                    if !idle {
                        self.log.line("Inbox empty: watching it for new specs (`ralph-loop inbox add`; Ctrl+C stops)");
                        idle = true;
                    }
                    if watch.changed(shared).await {
                        continue;
                    }
                    return Ok(Stop::Unwatched);
                }
                return Ok(stop);
            }
            let Some((id, progress, ended)) = running.next().await else {
                return Err(Error::Internal("a spec under way has no run".into()));
            };
            let ended = ended?;
            if let Some(job) = jobs.iter_mut().find(|j| j.record.id == id) {
                job.progress = Some(progress);
                job.ended = Some(ended);
            }
            let finished: f64 = jobs
                .iter()
                .filter_map(|j| j.progress.as_ref())
                .map(Progress::cost_usd)
                .sum();
            self.session.total_cost = self.session.settled_cost() + finished;
        }
    }

    /// The session names the specs under way or paused, in queue order (the first is its
    /// `current_spec_id`).
    fn under_way(
        &mut self,
        paused: &[String],
        jobs: &VecDeque<Job>,
        held: Option<&Job>,
    ) -> Result<()> {
        let ids: Vec<String> = paused
            .iter()
            .cloned()
            .chain(jobs.iter().chain(held).map(|j| j.record.id.clone()))
            .collect();
        self.session.current_spec_id = ids.first().cloned();
        self.session.in_flight = ids;
        Ok(self.session.save(&self.root)?)
    }

    /// PLAN of a fetched spec; `None` when it failed there (and is marked so).
    async fn prepare(&mut self, record: Record, shared: &Shared) -> Result<Option<Job>> {
        let dir = agent_dir(&self.root, &record.id);
        let spec = match Spec::load(&self.root.join(&record.spec)) {
            Ok(spec) => spec,
            Err(e) => {
                self.failed(&record, &Progress::default(), e.to_string())?;
                return Ok(None);
            }
        };
        let mut progress = Progress::load(&dir)?;
        if progress.started_at.is_none() {
            progress.started_at = Some(crate::inbox::now());
            progress.save(&dir)?;
        }
        if progress.plan.is_none() {
            let entry = Entry {
                spec: &spec,
                root: &self.root,
                dir: dir.clone(),
                base: &self.base,
                overrides: &self.overrides,
                name: &record.spec,
            };
            match entry.plan(shared.budget.clone()).await {
                Ok(plan) => {
                    progress.plan = Some(plan);
                    progress.save(&dir)?;
                }
                Err(why) => {
                    self.failed(&record, &progress, format!("planning failed: {why}"))?;
                    return Ok(None);
                }
            }
        }
        let plan = progress.plan.as_ref();
        let files: Vec<PathBuf> = plan
            .iter()
            .flat_map(|p| p.targets.iter().map(|t| t.file.clone()))
            .collect();
        if let Some(plan) = plan {
            let shown: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
            self.log.line(&format!(
                "PLAN: {} target{} ({}): {}",
                files.len(),
                if files.len() == 1 { "" } else { "s" },
                if plan.source == "spec" {
                    "from the spec"
                } else {
                    "planned by the Librarian"
                },
                shown.join(", ")
            ));
        }
        Ok(Some(Job {
            record,
            spec,
            dir,
            files,
            progress: Some(progress),
            ended: None,
        }))
    }

    /// Where `job` runs (its worktree, made now when it needs one, or the tree), with what the
    /// tree held there before its first change; its progress saved. The root of its runs.
    fn start(&mut self, job: &Job, progress: &mut Progress) -> Result<PathBuf> {
        // A spec begun in the tree goes on there, one begun in a worktree goes on in it.
        let apart =
            progress.worktree.is_some() || (self.args.parallel > 1 && progress.before.is_none());
        let root = if apart {
            let tree = worktree::open(
                &self.repo,
                &self.worktrees,
                &job.record.id,
                progress,
                &self.links,
            )?;
            progress.save(&job.dir)?;
            tree.path
        } else {
            self.root.clone()
        };
        if progress.before.is_none() {
            let before = self.repo_at(&root).snapshot().map_err(AgentError::from)?;
            progress.before = Some(
                before
                    .iter()
                    .map(|(p, h)| (p.clone(), h.as_ref().map(hex)))
                    .collect(),
            );
        }
        progress.save(&job.dir)?;
        Ok(root)
    }

    /// `job` as a task for its hooks (`ended`: how it ended, for `post_task`).
    fn task(job: &Job, ended: Option<&Ended>) -> Task {
        let progress = job.progress.clone().unwrap_or_default();
        Task {
            id: job.record.id.clone(),
            name: job.record.spec.clone(),
            kind: "spec".into(),
            description: job.spec.description(),
            targets: job.files.iter().map(|f| f.display().to_string()).collect(),
            status: ended.map(|e| e.status(&progress)),
            reason: ended.map(Ended::reason).filter(|r| !r.is_empty()),
            iterations: progress.iterations(),
            cost_usd: progress.cost_usd(),
        }
    }

    fn hook_budget(&self, shared: &Shared) -> HookBudget {
        HookBudget {
            spent_usd: shared
                .budget
                .as_ref()
                .map_or(self.session.total_cost, |b| b.spent()),
            max_cost_usd: self.args.max_cost.unwrap_or(0.0),
        }
    }

    /// The `pre_task` hooks of a spec about to start; their warnings go to the log.
    async fn before_task(&self, job: &Job, shared: &Shared) -> Before {
        if self.tasks.is_empty() {
            return Before::Run;
        }
        let (before, warnings) = self
            .tasks
            .before(&Self::task(job, None), &self.hook_budget(shared))
            .await;
        for w in warnings {
            self.log.line(&format!("HOOK: {w}"));
        }
        before
    }

    /// The `post_task` hooks of a spec that ended; whether one stops the agent.
    async fn after_task(&self, job: &Job, shared: &Shared) -> bool {
        let Some(ended) = job.ended.as_ref().filter(|_| !self.tasks.is_empty()) else {
            return false;
        };
        // Stopped from outside, it is not over: it resumes later.
        if matches!(ended, Ended::Interrupted | Ended::OutOfMoney(_)) {
            return false;
        }
        let after = self
            .tasks
            .after(&Self::task(job, Some(ended)), &self.hook_budget(shared))
            .await;
        for w in &after.warnings {
            self.log.line(&format!("HOOK: {w}"));
        }
        if let Some(why) = &after.stop {
            self.log.line(&format!("HOOK: {why}"));
        }
        after.stop.is_some()
    }

    /// The repository's work tree at `root`: the tree, or a spec's worktree.
    pub(super) fn repo_at(&self, root: &Path) -> Repo {
        Repo::new(root.to_path_buf()).with_pid_file(self.repo.pid_file.clone())
    }
}
