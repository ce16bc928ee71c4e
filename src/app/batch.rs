//! `ralph-loop batch`: many targets or specs, one after another or `--parallel N` at once,
//! within one `--total-budget`.
//!
//! Each entry (a spec, or a file as a spec of one target) is planned first, in order; then the
//! entries run in this process's actix system, up to N at once, never two that touch the same
//! file. Every run draws on the total budget as well as its own, so no entry can overdraw it,
//! even in parallel; an entry that had not started when the total was spent is `skipped`. Each
//! entry's targets are sessions of the normal loop with their own reports; the batch writes
//! `.ralph/batch-<id>/batch-report.json` ([`report`]) and exits with its worst entry's code.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Instant;

use futures::stream::{FuturesUnordered, StreamExt};
use ralph_actors::policy::budget::Budget;

use crate::cli::{BatchArgs, BatchOutput, OutputFormat, RunArgs};
use crate::error::{Error, Result, UsageError};
use crate::hooks::protocol::{Budget as HookBudget, Task};
use crate::hooks::tasks::{Before, TaskHooks};
use crate::launch::skips::Skips;
use crate::launch::view::{Show, StopKey, View};
use crate::launch::{Launch, Rule};
use crate::printers;
use crate::process::groups::ProcessGroups;
use crate::run::plan::{self, Overrides};
use crate::runner::detect;
use crate::session::RALPH_DIR;
use crate::views::board::Tasks;
use crate::views::state::Mark;
use crate::work::entry::{Ended, Entry, Progress, Shared};
use crate::work::items::{items, Item};
use crate::work::report::{self, BatchReport, EntryReport};

/// `ralph-loop batch [SPEC|FILE]...`
pub fn run(args: BatchArgs) -> Result<i32> {
    check_flags(&args)?;
    let cwd =
        std::env::current_dir().map_err(|e| Error::io("cannot read the current directory", e))?;
    let root = detect::project_root(&cwd);
    let (config, config_path) = crate::config::load_discovered(args.config.as_deref(), &cwd)?;
    let id = uuid::Uuid::new_v4().to_string();
    let launch = Launch::new(Rule::EndStep, ProcessGroups::new());
    let stops = launch.stops().clone();
    let (tasks, note) = crate::work::entry::task_hooks(
        &config,
        config_path.as_deref(),
        &root,
        &stops,
        &id,
        "the batch",
    )?;
    let items = items(&args, &config, &cwd, &root)?;
    let overrides = plan::shared_tape(&args.tape)?;
    let dir = root.join(RALPH_DIR).join(format!("batch-{id}"));
    std::fs::create_dir_all(&dir)
        .map_err(|e| Error::io(format!("cannot create {}", dir.display()), e))?;
    let output = args.output.unwrap_or(BatchOutput::Human);
    let (mut view, why_not_tui) = View::choose(args.view.ui, output == BatchOutput::Human);
    // Under the TUI the task list says what the lines would.
    let human = output == BatchOutput::Human && !view.is_tui();
    // The note on the TUI goes to stderr even beside JSON: it answers the flag given.
    let human_notes = note.iter().filter(|_| output == BatchOutput::Human);
    for note in human_notes.chain(&why_not_tui) {
        eprintln!("batch: {note}");
    }
    let board = view.board();
    if let (Some(board), Some(cap)) = (&board, args.total_budget) {
        board.cap(cap);
    }
    let skips = Skips::under(&stops.cancel);
    let mut show = Show::new(&root, dir.clone(), StopKey::Step, STOP_MEANS);
    show.bind = args.view.ui_bind;
    show.skips = Some(skips.clone());
    let shared = Shared {
        stops,
        skips,
        pause: None,
        budget: args.total_budget.map(|cap| Budget::new(cap, 0.0)),
        printers: printers_of(view.tagged(), human && args.parallel == 1),
    };
    let started = (Instant::now(), crate::inbox::now());
    let batch = Batch {
        items,
        root,
        dir: dir.clone(),
        base: Entry::base_args(args.config.clone(), args.quick),
        overrides,
        shared,
        parallel: args.parallel,
        human,
        tasks,
        total_budget: args.total_budget,
        board,
    };
    let ran = launch.shown(view, show).run(|pause| async {
        let mut batch = batch;
        batch.shared.pause = Some(pause);
        batch.run().await
    })?;
    BatchReport::closed(id, &args, ran, started).publish(&dir, &cwd, output)
}

/// The printers of each entry's runs, given its key: the TUI's feed (`tagged`); else the lines
/// when `live` (one entry at a time, shown to a person); else none.
fn printers_of(
    tagged: Option<impl Fn(&str) -> Box<dyn printers::Printer> + 'static>,
    live: bool,
) -> crate::work::entry::Printers {
    Box::new(move |key| match &tagged {
        Some(feed) => vec![feed(key)],
        None if live => vec![printers::for_format(OutputFormat::Human)],
        None => Vec::new(),
    })
}

/// What the view's stop key does to a batch.
const STOP_MEANS: &str = "every entry under way ends its step, its session saved; no other starts";

fn check_flags(args: &BatchArgs) -> Result<()> {
    if args.parallel == 0 {
        return Err(UsageError::flag("--parallel", "--parallel must be at least 1").into());
    }
    if let Some(b) = args.total_budget {
        UsageError::positive("--total-budget", b, "dollars")?;
    }
    Ok(())
}

/// A batch under way.
struct Batch {
    items: Vec<Item>,
    root: PathBuf,
    dir: PathBuf,
    /// The flags every entry's runs take under the entry's own settings.
    base: RunArgs,
    overrides: Overrides,
    shared: Shared,
    parallel: usize,
    human: bool,
    /// The `pre_task` and `post_task` hooks.
    tasks: TaskHooks,
    total_budget: Option<f64>,
    /// The TUI's task list, when it shows one.
    board: Option<Tasks>,
}

/// Where each entry stands while the batch runs, by its index.
struct Standing {
    progress: Vec<Progress>,
    ended: Vec<Option<Ended>>,
    /// Planned, not started yet, in order.
    waiting: Vec<usize>,
    /// The files of the entries running now.
    busy: BTreeSet<PathBuf>,
    /// Not started: the total budget was spent, or the batch was stopped.
    skipped: Vec<bool>,
    hooked: Vec<Hooked>,
    /// A task hook stopped the batch, and why: no other entry starts.
    halted: Option<String>,
}

impl Standing {
    fn n(&self) -> usize {
        self.progress.len()
    }
}

/// What an entry's task hooks said, for its report.
#[derive(Default, Clone)]
struct Hooked {
    /// Skipped by a `pre_task` hook, and why.
    skipped: Option<String>,
    warnings: Vec<String>,
}

impl Batch {
    fn entry(&self, i: usize) -> Entry<'_> {
        Entry {
            spec: &self.items[i].spec,
            root: &self.root,
            dir: self.dir.join(Self::key(i)),
            base: &self.base,
            overrides: &self.overrides,
            name: &self.items[i].name,
        }
    }

    /// Entry `i` as a task for its hooks (`ended`: how it ended, for `post_task`).
    fn task(&self, i: usize, p: &Progress, ended: Option<&Ended>) -> Task {
        Task {
            id: (i + 1).to_string(),
            name: self.items[i].name.clone(),
            kind: self.items[i].kind.to_string(),
            description: self.items[i].spec.description(),
            targets: targets(p).iter().map(|t| t.display().to_string()).collect(),
            status: ended.map(|e| e.status(p)),
            reason: ended.map(Ended::reason).filter(|r| !r.is_empty()),
            iterations: p.iterations(),
            cost_usd: p.cost_usd(),
        }
    }

    /// The batch's budget so far, for the task hooks.
    fn budget(&self) -> HookBudget {
        HookBudget {
            spent_usd: self.shared.budget.as_ref().map_or(0.0, |b| b.spent()),
            max_cost_usd: self.total_budget.unwrap_or(0.0),
        }
    }

    /// Entry `i`'s folder's name: its key in the view.
    fn key(i: usize) -> String {
        format!("entry-{}", i + 1)
    }

    /// Shows entry `i` in the view's task list as standing at `mark`.
    fn tell(&self, i: usize, mark: Mark, detail: &str, cost: f64) {
        if let Some(board) = &self.board {
            board.task(&Self::key(i), &self.items[i].name, mark, detail, cost);
        }
    }

    fn say(&self, message: String) {
        if self.human {
            eprintln!("batch: {message}");
        }
    }

    /// Plans every entry, then runs them, up to `parallel` at once, never two on one file; their
    /// reports, and why a task hook stopped the batch.
    async fn run(&self) -> Result<(Vec<EntryReport>, Option<String>)> {
        let mut at = self.plan_all().await;
        let mut running = FuturesUnordered::new();
        loop {
            while running.len() < self.parallel && !self.stopped() && at.halted.is_none() {
                let Some(i) = self.next_to_start(&mut at).await else {
                    break;
                };
                at.busy.extend(targets(&at.progress[i]));
                self.tell(i, Mark::Running, "", at.progress[i].cost_usd());
                self.say(format!(
                    "[{}/{}] {}: started",
                    i + 1,
                    at.n(),
                    self.items[i].name
                ));
                let mut mine = std::mem::take(&mut at.progress[i]);
                let entry = self.entry(i);
                running.push(async move {
                    let outcome = entry.run(&mut mine, &self.shared).await;
                    (i, mine, outcome)
                });
            }
            let Some((i, mine, outcome)) = running.next().await else {
                break;
            };
            for t in targets(&mine) {
                at.busy.remove(&t);
            }
            at.progress[i] = mine;
            self.ended(&mut at, i, outcome?).await;
        }
        Ok(self.close(at))
    }

    /// Every entry planned, in order: those that cannot be are failed now.
    async fn plan_all(&self) -> Standing {
        let n = self.items.len();
        let mut at = Standing {
            progress: vec![Progress::default(); n],
            ended: vec![None; n],
            waiting: Vec::new(),
            busy: BTreeSet::new(),
            skipped: vec![false; n],
            hooked: vec![Hooked::default(); n],
            halted: None,
        };
        for i in 0..n {
            match self.entry(i).plan(self.shared.budget.clone()).await {
                Ok(plan) => {
                    at.progress[i].plan = Some(plan);
                    self.tell(i, Mark::Pending, "", at.progress[i].cost_usd());
                    at.waiting.push(i);
                }
                Err(why) => {
                    self.tell(i, Mark::Failed, "planning failed", 0.0);
                    at.ended[i] = Some(Ended::Failed(format!("planning failed: {why}")));
                }
            }
        }
        at
    }

    /// The first waiting entry whose files no running entry touches and that is to run: those
    /// skipped on the way (by the view, the total budget or a `pre_task` hook) are marked so.
    /// `None` when no entry can start now.
    async fn next_to_start(&self, at: &mut Standing) -> Option<usize> {
        while !self.stopped() {
            let free = at.waiting.iter().position(|&i| {
                targets(&at.progress[i])
                    .iter()
                    .all(|t| !at.busy.contains(t))
            })?;
            let i = at.waiting.remove(free);
            if self.shared.skips.skipped(&Self::key(i)) {
                self.tell(i, Mark::Skipped, "skipped", 0.0);
                at.ended[i] = Some(Ended::Skipped);
                continue;
            }
            if self.spent() {
                self.tell(i, Mark::Skipped, "the total budget was spent", 0.0);
                at.skipped[i] = true;
                continue;
            }
            if self.tasks.is_empty() {
                return Some(i);
            }
            let task = self.task(i, &at.progress[i], None);
            let (before, warnings) = self.tasks.before(&task, &self.budget()).await;
            at.hooked[i].warnings.extend(warnings);
            let (why, stop) = match before {
                Before::Run => return Some(i),
                Before::Skip(why) => (why, false),
                Before::Stop(why) => (why, true),
            };
            self.tell(i, Mark::Skipped, &why, 0.0);
            self.say(format!(
                "[{}/{}] {}: {why}",
                i + 1,
                at.n(),
                self.items[i].name
            ));
            at.hooked[i].skipped = Some(why.clone());
            if stop {
                at.halted = Some(why);
                return None;
            }
        }
        None
    }

    /// Entry `i` ended as `outcome`: shown, and told to the `post_task` hooks.
    async fn ended(&self, at: &mut Standing, i: usize, outcome: Ended) {
        let mark = match &outcome {
            Ended::Done => Mark::Done,
            Ended::Skipped => Mark::Skipped,
            Ended::Interrupted | Ended::OutOfMoney(_) => Mark::Paused,
            Ended::Failed(_) => Mark::Failed,
        };
        let status = outcome.status(&at.progress[i]);
        self.tell(
            i,
            mark,
            &status.replace('_', " "),
            at.progress[i].cost_usd(),
        );
        self.say(format!(
            "[{}/{}] {}: {status}",
            i + 1,
            at.n(),
            self.items[i].name
        ));
        if !self.tasks.is_empty() {
            let task = self.task(i, &at.progress[i], Some(&outcome));
            let after = self.tasks.after(&task, &self.budget()).await;
            at.hooked[i].warnings.extend(after.warnings);
            if let Some(why) = after.stop {
                self.say(why.clone());
                at.halted.get_or_insert(why);
            }
        }
        at.ended[i] = Some(outcome);
    }

    /// Every entry's report, those never started marked so; and why a hook stopped the batch.
    fn close(&self, mut at: Standing) -> (Vec<EntryReport>, Option<String>) {
        for &i in &at.waiting {
            self.tell(i, Mark::Skipped, "not started", 0.0);
            match &at.halted {
                Some(why) if at.hooked[i].skipped.is_none() => {
                    at.hooked[i].skipped = Some(format!("not started: {why}"))
                }
                _ => at.skipped[i] = true,
            }
        }
        let reports = (0..at.n())
            .map(|i| {
                let mut report =
                    self.report(i, &at.progress[i], at.ended[i].as_ref(), at.skipped[i]);
                let Hooked { skipped, warnings } = std::mem::take(&mut at.hooked[i]);
                if let Some(why) = skipped {
                    report.status = report::SKIPPED_BY_HOOK.to_string();
                    report.reason = why;
                }
                report.hooks = warnings;
                report
            })
            .collect();
        (reports, at.halted)
    }

    /// The user stopped the batch.
    fn stopped(&self) -> bool {
        self.shared.stops.cancel.is_cancelled() || self.shared.stops.drain.is_cancelled()
    }

    /// The total budget is spent.
    fn spent(&self) -> bool {
        self.shared
            .budget
            .as_ref()
            .is_some_and(|b| b.spent() >= b.cap())
    }

    fn report(&self, i: usize, p: &Progress, ended: Option<&Ended>, skipped: bool) -> EntryReport {
        let item = &self.items[i];
        let (status, reason) = match (ended, skipped) {
            (Some(e), _) => (e.status(p), e.reason()),
            (None, true) if self.stopped() => (
                "interrupted".to_string(),
                "the batch was stopped before it started".to_string(),
            ),
            (None, _) => (
                "skipped".to_string(),
                "the total budget was spent before it started".to_string(),
            ),
        };
        EntryReport {
            name: item.name.clone(),
            kind: item.kind.to_string(),
            targets: targets(p).iter().map(|t| t.display().to_string()).collect(),
            status,
            iterations: p.iterations(),
            cost_usd: p.cost_usd(),
            duration_ms: p.duration_ms(),
            sessions: p.targets.iter().filter_map(|t| t.session.clone()).collect(),
            reason,
            hooks: Vec::new(),
        }
    }
}

/// The files an entry's plan touches.
fn targets(p: &Progress) -> Vec<PathBuf> {
    p.plan
        .iter()
        .flat_map(|plan| plan.targets.iter().map(|t| t.file.clone()))
        .collect()
}
