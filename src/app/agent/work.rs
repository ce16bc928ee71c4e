//! The agent's loop: specs fetched in queue order and run up to `--parallel` at once, never two
//! on one file; each lands (committed, or set aside) in queue order, whichever finishes first.
//!
//! One at a time a spec runs in the tree itself. Several at once, each runs in a git worktree
//! of its own ([`crate::work::worktree`]), so no spec's tests see another's half-done files; a spec
//! whose files another spec under way holds waits for it to land, then starts on what it left.

use std::collections::VecDeque;
use std::future::Future;
use std::path::{Path, PathBuf};

use futures::stream::{FuturesUnordered, StreamExt};

use super::{Agent, Stop};
use crate::agent::AgentError;
use crate::cli::RunArgs;
use crate::error::{Error, Result};
use crate::git::Repo;
use crate::hooks::protocol::{Budget as HookBudget, Task};
use crate::hooks::tasks::Before;
use crate::inbox::Record;
use crate::run::plan::Overrides;
use crate::spec::Spec;
use crate::views::state::Mark;
use crate::work::changes::hex;
use crate::work::entry::{agent_dir, Ended, Entry, Progress, Shared};
use crate::work::worktree;

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

/// The specs the agent holds between their fetch and their landing.
#[derive(Default)]
struct Queue {
    /// Under way or ended, in queue order: each lands when those before it have.
    jobs: VecDeque<Job>,
    /// Planned, and waiting for a file a spec under way holds.
    held: Option<Job>,
    stopped: Option<Stop>,
    /// Specs stopped from outside and pending again: a restart resumes them first.
    paused: Vec<String>,
    /// The inbox was said to be watched since the last spec began.
    idle: bool,
}

/// What the agent does next with the queue's free place.
enum Next {
    Run(Box<Job>),
    /// The spec fetched was skipped or failed: fetch another.
    Again,
    /// Nothing can start now.
    Wait,
}

/// The run of a job's spec, from `root`, to its end: the job's id, progress and how it ended.
fn run_job<'a>(
    job: &Job,
    root: PathBuf,
    mut progress: Progress,
    base: &'a RunArgs,
    overrides: &'a Overrides,
    shared: &'a Shared,
) -> impl Future<Output = (String, Progress, Result<Ended>)> + 'a {
    let (id, spec, dir, name) = (
        job.record.id.clone(),
        job.spec.clone(),
        job.dir.clone(),
        job.record.spec.clone(),
    );
    async move {
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
    }
}

impl Agent {
    /// Works through the inbox until it is empty (and, with `--watch`, the user stops it), a
    /// limit is reached or the user stops it.
    pub(super) async fn work(&mut self, shared: &Shared) -> Result<Stop> {
        let (base, overrides) = (self.base.clone(), self.overrides.clone());
        let parallel = self.args.parallel.max(1);
        let mut watch = match self.args.watch {
            true => Some(crate::work::watch::Watch::inbox(&self.root)?),
            false => None,
        };
        let mut q = Queue::default();
        let mut running = FuturesUnordered::new();
        loop {
            self.land_ended(&mut q, shared).await?;
            let mut limit = None;
            while q.stopped.is_none() && q.jobs.len() < parallel {
                if shared.stops.cancel.is_cancelled() || shared.stops.drain.is_cancelled() {
                    q.stopped = Some(Stop::Interrupted);
                    break;
                }
                limit = self.limit(shared, q.jobs.len() + usize::from(q.held.is_some()));
                if limit.is_some() {
                    break;
                }
                let mut job = match self.next(&mut q, shared).await? {
                    Next::Run(job) => *job,
                    Next::Again => continue,
                    Next::Wait => break,
                };
                let mut progress = job.progress.take().unwrap_or_default();
                let root = self.start(&job, &mut progress)?;
                self.tell(&job.record, Mark::Running, "", progress.cost_usd());
                running.push(run_job(&job, root, progress, &base, &overrides, shared));
                q.jobs.push_back(job);
                q.idle = false;
                self.under_way(&q)?;
            }
            if q.jobs.is_empty() {
                match self
                    .nothing_under_way(&mut q, limit, watch.as_mut(), shared)
                    .await?
                {
                    Some(stop) => return Ok(stop),
                    None => continue,
                }
            }
            let Some((id, progress, ended)) = running.next().await else {
                return Err(Error::Internal("a spec under way has no run".into()));
            };
            let ended = ended?;
            if let Some(job) = q.jobs.iter_mut().find(|j| j.record.id == id) {
                job.progress = Some(progress);
                job.ended = Some(ended);
            }
            let finished: f64 = q
                .jobs
                .iter()
                .filter_map(|j| j.progress.as_ref())
                .map(Progress::cost_usd)
                .sum();
            self.session.total_cost = self.session.settled_cost() + finished;
        }
    }

    /// Lands the specs at the head of the queue whose runs have ended, in queue order, each
    /// after its `post_task` hooks.
    async fn land_ended(&mut self, q: &mut Queue, shared: &Shared) -> Result<()> {
        while q.jobs.front().is_some_and(|j| j.ended.is_some()) {
            let Some(job) = q.jobs.pop_front() else { break };
            if self.after_task(&job, shared).await {
                q.stopped.get_or_insert(Stop::Hook);
            }
            let id = job.record.id.clone();
            if let Some(stop) = self.land(job)? {
                q.paused.push(id);
                q.stopped.get_or_insert(stop);
            }
            self.under_way(q)?;
        }
        Ok(())
    }

    /// The spec to start next: the one held for a file, else the next in the inbox, planned,
    /// its `pre_task` hooks asked.
    async fn next(&mut self, q: &mut Queue, shared: &Shared) -> Result<Next> {
        let job = match q.held.take() {
            Some(job) => job,
            None => {
                let busy: Vec<&str> = q.jobs.iter().map(|j| j.record.id.as_str()).collect();
                let Some(record) = self.fetch(&busy)? else {
                    return Ok(Next::Wait);
                };
                if shared.skips.skipped(&record.id) {
                    let progress = Progress::load(&agent_dir(&self.root, &record.id))?;
                    self.skipped(&record, &progress)?;
                    return Ok(Next::Again);
                }
                match self.prepare(record, shared).await? {
                    Some(job) => job,
                    None => return Ok(Next::Again),
                }
            }
        };
        if q.jobs
            .iter()
            .any(|j| j.files.iter().any(|f| job.files.contains(f)))
        {
            q.held = Some(job);
            self.under_way(q)?;
            return Ok(Next::Wait);
        }
        match self.before_task(&job, shared).await {
            Before::Run => Ok(Next::Run(Box::new(job))),
            Before::Skip(why) => {
                let progress = job.progress.clone().unwrap_or_default();
                self.failed(&job.record, &progress, why)?;
                Ok(Next::Again)
            }
            Before::Stop(why) => {
                self.log.line(&format!(
                    "HOOK: {} {}: {why}",
                    job.record.id, job.record.spec
                ));
                self.back_to_pending(&job.record)?;
                q.stopped = Some(Stop::Hook);
                Ok(Next::Wait)
            }
        }
    }

    /// No spec is under way: why the agent stops, or `None` when `--watch` saw a new spec come.
    async fn nothing_under_way(
        &mut self,
        q: &mut Queue,
        limit: Option<Stop>,
        watch: Option<&mut crate::work::watch::Watch>,
        shared: &Shared,
    ) -> Result<Option<Stop>> {
        if let Some(job) = q.held.take() {
            self.back_to_pending(&job.record)?;
            q.paused.push(job.record.id);
            self.under_way(q)?;
        }
        let stop = q.stopped.or(limit).unwrap_or(Stop::Empty);
        let (Stop::Empty, Some(watch)) = (stop, watch) else {
            return Ok(Some(stop));
        };
        if !q.idle {
            self.log.line(
                "Inbox empty: watching it for new specs (`ralph-loop inbox add`; Ctrl+C stops)",
            );
            q.idle = true;
        }
        Ok((!watch.changed(shared).await).then_some(Stop::Unwatched))
    }

    /// The session names the specs under way or paused, in queue order (the first is its
    /// `current_spec_id`).
    fn under_way(&mut self, q: &Queue) -> Result<()> {
        let ids: Vec<String> = q
            .paused
            .iter()
            .cloned()
            .chain(q.jobs.iter().chain(&q.held).map(|j| j.record.id.clone()))
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
