//! Agent mode: `ralph-loop agent` works through the inbox, FETCH → PLAN → RUN → COMMIT, until
//! the inbox is empty or a limit is reached (with `--watch`, it then waits for more).
//!
//! - FETCH takes the first pending record (or the specs an interrupted agent was on) and marks
//!   it active; PLAN takes the spec's targets from its front matter or asks the Librarian's
//!   model ([`crate::spec::planner`]); RUN fixes each target with a session of the normal loop
//!   ([`crate::work::entry`]); COMMIT commits exactly the files the spec changed.
//! - A failed spec's changes are stashed (or reset, `agent.on_failure`) and always kept under
//!   `refs/ralph/failed/<id>`; the record is marked failed with the reason and the next spec
//!   starts.
//! - `work` is the loop: with `--parallel N`, up to N specs at once, each in its own git
//!   worktree (`worktree`), landing in queue order (`land`). `changes` finds the files a spec
//!   changed, `watch` waits for the inbox to change, `dry_run` is `--dry-run`; the session file,
//!   the lock and the log are [`crate::agent`]'s.
//!
//! Ctrl+C lets the iteration under way finish, puts the spec back to pending and exits 130; the
//! next `agent` resumes its session from its last checkpoint. A second Ctrl+C kills at once.

mod dry_run;
mod land;

mod work;

use std::path::{Path, PathBuf};

use ralph_actors::policy::budget::Budget;

use crate::agent::log::AgentLog;
use crate::agent::session::{AgentLock, AgentSession};
use crate::agent::{elapsed_since, human_duration, AgentError};
use crate::cli::{AgentArgs, OutputFormat, RunArgs};
use crate::config::FailedWork;
use crate::error::{Error, Result};
use crate::git::Repo;
use crate::hooks::tasks::TaskHooks;
use crate::inbox::{Inbox, Record, Status};
use crate::launch::skips::Skips;
use crate::launch::view::{Show, StopKey, View};
use crate::launch::{Launch, Rule};
use crate::printers;
use crate::process::groups::ProcessGroups;
use crate::run::plan::{shared_tape, Overrides};
use crate::views::board::Tasks;
use crate::views::state::Mark;
use crate::work::changes::check_clean;
use crate::work::entry::{agent_dir, Entry, Progress, Shared};
use crate::work::worktree;

/// Why the agent stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    Empty,
    MaxSpecs,
    MaxCost,
    MaxFailures,
    Interrupted,
    /// `--watch` ended by the user while nothing ran.
    Unwatched,
    /// A `pre_task` or `post_task` hook's `abort_loop` (said in the log).
    Hook,
}

/// `ralph-loop agent`
pub fn run(args: AgentArgs) -> Result<i32> {
    check_flags(&args)?;
    let cwd =
        std::env::current_dir().map_err(|e| Error::io("cannot read the current directory", e))?;
    let repo = Repo::at(&cwd).ok_or_else(|| AgentError::NotARepository(cwd.clone()))?;
    let root = repo.root.clone();
    let (config, config_path) = crate::config::load_discovered(args.config.as_deref(), &cwd)?;
    if args.dry_run {
        return dry_run::dry_run(&root, &args);
    }
    let _lock = AgentLock::acquire(&root).map_err(AgentError::from)?;
    let (repo, resumed) = ready(repo, &root, args.allow_dirty)?;
    let (worktrees, links) = worktree::swept(&repo, &root, &config);
    // Opened before anything is written: a bad recording path changes nothing.
    let overrides = shared_tape(&args.tape)?;
    let (mut view, why_not_tui) = View::choose(args.view.ui, true);
    let log = AgentLog::create(&root, true)?;
    let session = begin(&root, &log, resumed, why_not_tui)?;
    let launch = Launch::new(Rule::DrainOnInterrupt, ProcessGroups::new());
    let stops = launch.stops().clone();
    let (tasks, note) = crate::work::entry::task_hooks(
        &config,
        config_path.as_deref(),
        &root,
        &stops,
        "agent",
        "the agent",
    )?;
    if let Some(note) = &note {
        log.line(note);
    }
    let printers = printers_of(&log, view.tagged(), args.parallel);
    let mut agent = Agent {
        inbox: Inbox::at(&root),
        root,
        repo,
        log,
        session,
        on_failure: config.agent.on_failure,
        max_failures: args.max_failures.unwrap_or(config.agent.max_failures),
        // A worktree may lack an untracked config: every run reads the one found here.
        base: Entry::base_args(args.config.clone().or(config_path), args.quick),
        overrides,
        worktrees,
        links,
        args,
        failed_here: 0,
        tasks,
        board: view.board(),
    };
    if let (Some(board), Some(cap)) = (&agent.board, agent.args.max_cost) {
        board.cap(cap);
    }
    agent.list_pending();
    let shared = Shared {
        skips: Skips::under(&stops.cancel),
        pause: None,
        stops,
        budget: agent
            .args
            .max_cost
            .map(|cap| Budget::new(cap, agent.session.total_cost)),
        printers,
    };
    let dir = agent.root.join(crate::session::RALPH_DIR).join("agent");
    let mut show = Show::new(&agent.root, dir, StopKey::Iteration, STOP_MEANS);
    show.bind = agent.args.view.ui_bind;
    show.skips = Some(shared.skips.clone());
    let stop = launch.shown(view, show).run(|pause| async {
        let mut shared = shared;
        shared.pause = Some(pause);
        let stop = agent.work(&shared).await;
        // The view's feeds go with the runs' printers and the list: then it shows the end.
        agent.board = None;
        stop
    })?;
    agent.end(stop)
}

/// The repository ready for the agent (its git's pid file in `.ralph/`, a killed agent's git
/// finished, a first commit made, the tree clean but for the specs under way unless
/// `allow_dirty`), and the session an interrupted agent left, if any.
fn ready(repo: Repo, root: &Path, allow_dirty: bool) -> Result<(Repo, Option<AgentSession>)> {
    let repo = repo.with_pid_file(Some(root.join(crate::session::RALPH_DIR).join("agent.git")));
    // A killed agent's git may still be committing or stashing: it finishes before we look.
    repo.wait_for_orphan();
    if !repo.has_commit() {
        return Err(AgentError::NoCommit(root.to_path_buf()).into());
    }
    let resumed = AgentSession::load(root)?;
    if !allow_dirty {
        let session = resumed.clone().unwrap_or_default();
        let ours = match (&session.in_flight, &session.current_spec_id) {
            (all, _) if !all.is_empty() => all.clone(),
            (_, current) => current.iter().cloned().collect(),
        };
        check_clean(&repo, root, &ours)?;
    }
    Ok((repo, resumed))
}

/// The agent's session, begun or `resumed`, saved with this process's pid and log; the log
/// says which, after `note` (why the TUI is not shown) if any.
fn begin(
    root: &Path,
    log: &AgentLog,
    resumed: Option<AgentSession>,
    note: Option<String>,
) -> Result<AgentSession> {
    if let Some(note) = note {
        log.line(&note);
    }
    let mut session = resumed.clone().unwrap_or_default();
    session.pid = Some(std::process::id());
    session.log = Some(relative(&log.path, root));
    session.save(root)?;
    match &resumed {
        Some(s) => log.line(&format!(
            "Agent resumed (session of {}: {} specs done, {} failed, ${:.2})",
            s.started_at, s.specs_completed, s.specs_failed, s.total_cost
        )),
        None => log.line("Agent started"),
    }
    Ok(session)
}

/// What the view's stop key does to the agent.
const STOP_MEANS: &str =
    "the iteration under way finishes, its spec goes back to pending; then the agent stops";

/// The printers of each spec's runs, given its record's id: the TUI's feed (`tagged`) and the
/// log; else the lines and the log with one spec at a time; else the log alone, each line
/// named, as runs side by side share the terminal.
fn printers_of(
    log: &AgentLog,
    tagged: Option<impl Fn(&str) -> Box<dyn printers::Printer> + 'static>,
    parallel: usize,
) -> crate::work::entry::Printers {
    let log = log.clone();
    Box::new(move |label: &str| {
        if let Some(feed) = &tagged {
            vec![feed(label), log.run_printer(Some(label))]
        } else if parallel == 1 {
            vec![
                printers::for_format(OutputFormat::Human),
                log.run_printer(None),
            ]
        } else {
            vec![log.run_printer(Some(label))]
        }
    })
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
    if args.parallel == 0 {
        return flag("--parallel", "at least 1", "0".into());
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
    overrides: Overrides,
    /// Where `--parallel` makes the specs' worktrees, and what they link.
    worktrees: PathBuf,
    links: Vec<String>,
    args: AgentArgs,
    /// Specs failed by this process: its exit code.
    failed_here: u32,
    /// The `pre_task` and `post_task` hooks.
    tasks: TaskHooks,
    /// The TUI's task list, when it shows one: the inbox's specs.
    board: Option<Tasks>,
}

impl Agent {
    /// Shows `record` in the view's task list as standing at `mark`.
    fn tell(&self, record: &Record, mark: Mark, detail: &str, cost: f64) {
        if let Some(board) = &self.board {
            board.task(&record.id, &record.spec, mark, detail, cost);
        }
    }

    /// Lists the inbox's specs to do in the view, in queue order.
    fn list_pending(&self) {
        if self.board.is_none() {
            return;
        }
        let Ok(inbox) = self.inbox.lock() else {
            return;
        };
        for r in &inbox.records {
            if matches!(r.status, Status::Pending | Status::Active) {
                self.tell(r, Mark::Pending, "", 0.0);
            }
        }
    }

    /// The limit reached, if one is, with `in_flight` specs under way: no other may start.
    fn limit(&self, shared: &Shared, in_flight: usize) -> Option<Stop> {
        let s = &self.session;
        if self
            .args
            .max_specs
            .is_some_and(|n| s.specs_completed as usize + in_flight >= n as usize)
        {
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

    /// FETCH: a spec an interrupted agent was on, else the first pending one; marked active.
    /// `busy` are the specs this agent has under way.
    fn fetch(&mut self, busy: &[&str]) -> Result<Option<Record>> {
        let mut inbox = self.inbox.lock().map_err(AgentError::from)?;
        if let Some(torn) = inbox.torn.take() {
            self.log.line(&format!("WARNING: {torn}"));
        }
        let current = self.session.current_spec_id.clone();
        let Some(record) = inbox.next(busy, current.as_deref()).cloned() else {
            return Ok(None);
        };
        if record.status != Status::Active {
            inbox
                .set_status(&record.id, Status::Active, None)
                .map_err(AgentError::from)?;
        }
        drop(inbox);
        let again = current.as_deref() == Some(record.id.as_str())
            || record.status == Status::Active
            || Progress::load(&agent_dir(&self.root, &record.id))
                .is_ok_and(|p| !p.targets.is_empty());
        self.log.line(&format!(
            "FETCH: {} {}{}",
            record.id,
            record.spec,
            if again { " (resumed)" } else { "" }
        ));
        Ok(Some(record))
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
            Stop::Interrupted => "Interrupted: the specs under way are pending again; run `ralph-loop agent` to resume them.".to_string(),
            Stop::Unwatched => "Stopped watching the inbox. Agent stopping.".to_string(),
            Stop::Hook => "Stopped by a task hook (abort_loop). Agent stopping.".to_string(),
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
        // Its commits ran with git's automatic maintenance off (see `git::Repo::maintain`).
        if s.specs_completed > 0 {
            if let Err(e) = self.repo.maintain() {
                self.log
                    .line(&format!("git maintenance after the session's commits: {e}"));
            }
        }
        AgentSession::remove(&self.root)?;
        Ok(
            if self.failed_here > 0 || matches!(stop, Stop::MaxFailures | Stop::Hook) {
                1
            } else {
                0
            },
        )
    }
}
