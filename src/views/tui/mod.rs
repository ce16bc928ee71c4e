//! `--ui tui`: the run in a full-screen terminal view (ratatui on crossterm).
//!
//! - [`ui`]: the view's own state and what each key does; [`draw`]: one frame, pure, with
//!   [`lists`] (the task list, the model picker's overlay);
//!   [`term`]: the terminal's raw mode, alternate screen and stderr, and their restoration;
//!   [`cast`]: a session's frames as an asciicast recording; [`picker`]: the model picker;
//!   `files`: the run's log in the editor, the git diff, an export of the view's buffers.
//! - The run reaches the view through [`channels`]: a [`Feed`] (a printer of the session's
//!   event bus) and an [`Asker`] (the breaker's questions, as the core's `User` port). The
//!   view reaches the run through [`Handles`]: its pause, its stop, its process groups.
//!
//! The view draws when something changed (an event, a key, a resize) and once a second for the
//! clock; nothing else wakes it, so an idle view costs nothing measurable.

pub(crate) mod cast;
pub(crate) mod draw;
mod files;
pub(crate) mod lists;
pub(crate) mod picker;
pub(crate) mod term;
pub mod ui;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use crossterm::event::{Event as TermEvent, EventStream, KeyEventKind};
use futures::StreamExt;
use ralph_actors::events::event::Envelope;
use ralph_actors::ports::user::{BreakerChoice, Stuck, User, UserError};
use ratatui::backend::CrosstermBackend;
use ratatui::Terminal;
use tokio::sync::{mpsc, oneshot, watch};
use tokio_util::sync::CancellationToken;

use crate::printers::Printer;
use crate::process::groups::ProcessGroups;
use crate::views::board::{Board, TaskNews, Tasks};
use crate::views::state::ViewState;
use crate::views::tui::term::Screen;
use crate::views::tui::ui::{Action, Modal, Ui};
use files::{export, git_diff, join, open_editor};

/// Whether this terminal can hold the TUI: stdin and stdout both a terminal (keys in, frames
/// out: one without the other is a pipe someone reads or writes, ralph-orchestrator PR #94),
/// a `TERM` that can draw, and room enough.
pub fn usable() -> Result<(), String> {
    use std::io::IsTerminal;
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        return Err("stdin and stdout are not both a terminal".into());
    }
    if std::env::var("TERM").is_ok_and(|t| t == "dumb") {
        return Err("TERM is dumb".into());
    }
    match crossterm::terminal::size() {
        Ok((w, h)) if w >= draw::MIN_WIDTH && h >= draw::MIN_HEIGHT => Ok(()),
        Ok((w, h)) => Err(format!(
            "the terminal is {w}x{h}, smaller than {}x{}",
            draw::MIN_WIDTH,
            draw::MIN_HEIGHT
        )),
        Err(e) => Err(format!("cannot read the terminal's size: {e}")),
    }
}

/// A session's events, each tagged with the task it belongs to.
type Tagged = (String, Arc<Envelope>);

/// The run's events, as a printer of its bus; [`Feed::tagged`] makes one for each task of a
/// batch or agent, so that the view keeps each task's sessions apart.
#[derive(Clone)]
pub struct Feed {
    tx: mpsc::UnboundedSender<Tagged>,
    task: String,
}

impl Feed {
    /// A feed of the sessions of task `key` (see [`crate::views::board`]).
    pub fn tagged(&self, key: &str) -> Feed {
        Feed {
            tx: self.tx.clone(),
            task: key.to_string(),
        }
    }
}

impl Printer for Feed {
    fn print(&mut self, event: &Envelope) -> std::io::Result<()> {
        // A view that has gone (quit) does not stop the run.
        let _ = self.tx.send((self.task.clone(), Arc::new(event.clone())));
        Ok(())
    }
}

type Question = (Stuck, oneshot::Sender<BreakerChoice>);

/// The person at the view, as the core's `User` port: the breaker's question is asked there.
pub struct Asker(mpsc::UnboundedSender<Question>);

#[async_trait::async_trait]
impl User for Asker {
    async fn on_entropy(&self, stuck: &Stuck) -> Result<BreakerChoice, UserError> {
        let (tx, rx) = oneshot::channel();
        self.0
            .send((stuck.clone(), tx))
            .map_err(|_| UserError("the terminal view has closed".into()))?;
        rx.await
            .map_err(|_| UserError("the terminal view closed before answering".into()))
    }
}

/// The view's ends of the channels.
pub struct Inbox {
    feed: mpsc::UnboundedReceiver<Tagged>,
    questions: mpsc::UnboundedReceiver<Question>,
    tasks: Option<mpsc::UnboundedReceiver<TaskNews>>,
}

impl Inbox {
    /// How a batch or agent reports its tasks to the view: the view shows their list.
    pub fn board(&mut self) -> Tasks {
        let (tasks, rx) = Tasks::new();
        self.tasks = Some(rx);
        tasks
    }
}

/// A feed, an asker and the inbox they reach.
pub fn channels() -> (Feed, Asker, Inbox) {
    let (tx, feed) = mpsc::unbounded_channel();
    let (ask_tx, questions) = mpsc::unbounded_channel();
    let inbox = Inbox {
        feed,
        questions,
        tasks: None,
    };
    let feed = Feed {
        tx,
        task: String::new(),
    };
    (feed, Asker(ask_tx), inbox)
}

/// What the view may do to the run.
pub struct Handles {
    /// Holds the run before its next step while `true`; `None` for a run that cannot pause.
    pub pause: Option<watch::Sender<bool>>,
    /// Ends the step under way; the session is saved (as Ctrl+C).
    pub cancel: CancellationToken,
    /// Set to a signal's number when a signal stopped the run: then nobody is at the view to
    /// read the end, and it closes by itself.
    pub stop_signal: Arc<AtomicI32>,
    /// Killed at once on a second Ctrl+C.
    pub groups: ProcessGroups,
    /// What `cancel` does, as the view tells it ([`ui::STOP_STEP`] for a fix run).
    pub stop_means: &'static str,
    /// Who may change model, and how (`m`); `None`: no picker.
    pub picker: Option<picker::Picker>,
    /// Skips the task of this key (`s`), a batch's or agent's; `None`: no tasks to skip.
    pub skip: Option<Skip>,
}

/// Skips a task, given its key.
pub type Skip = Box<dyn Fn(&str)>;

/// Where the run keeps its files, for the diff, the log and exports.
pub struct Place {
    /// The session's (or loop's) folder.
    pub dir: PathBuf,
    /// The target as it is now, and as it was (fix runs).
    pub target: Option<PathBuf>,
    pub original: Option<PathBuf>,
    /// A replay (`ralph-loop replay`): the clock is the events', not the wall's.
    pub replayed: bool,
}

/// Runs the view until the run has finished and the user quits (or a signal ended the run).
/// The terminal is restored on every way out, an error or panic included.
pub async fn run(mut inbox: Inbox, mut handles: Handles, place: Place) -> std::io::Result<()> {
    // A replay keeps the run's own stderr.log as it was.
    let stderr_log = place.dir.join(if place.replayed {
        "replay-stderr.log"
    } else {
        "stderr.log"
    });
    let mut screen = Screen::enter(Some(&stderr_log))?;
    let mut terminal = Terminal::new(CrosstermBackend::new(std::io::stdout()))?;
    terminal.clear()?;
    // Each task's sessions apart (one, keyed "", for a single run or a loop).
    let mut views = Views::default();
    let mut news = inbox.tasks.take();
    let (mut ui, mut later) = handles.ui(&screen, news.is_some());
    let mut keys = Some(EventStream::new());
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut answer: Option<oneshot::Sender<BreakerChoice>> = None;
    let mut feed_open = true;
    let mut quit_when_saved = false;
    loop {
        let mut most = 0;
        ui.focus = ui.board.as_ref().and_then(|b| ui.selected.or(b.running()));
        let view = views.focused(&ui);
        let now = match view.last {
            Some(last) if place.replayed => last,
            _ => Utc::now(),
        };
        terminal.draw(|f| most = draw::frame(f, view, &ui, now))?;
        ui.clamp_scroll(most);
        let action = tokio::select! {
            event = inbox.feed.recv(), if feed_open => {
                match event {
                    Some((task, e)) => views.apply_queued(task, &e, &mut inbox.feed),
                    None => {
                        feed_open = false;
                        // Nobody can read the end (quit asked, a signal, no keys): close.
                        let signalled = handles.stop_signal.load(Ordering::SeqCst) != 0;
                        if !ui.ended(quit_when_saved || signalled || keys.is_none()) {
                            break;
                        }
                    }
                }
                Action::None
            }
            question = inbox.questions.recv() => {
                if let Some((stuck, reply)) = question {
                    ui.ask(stuck);
                    answer = Some(reply);
                }
                Action::None
            }
            key = next_key(&mut keys) => match key {
                Some(Ok(TermEvent::Key(k))) if k.kind != KeyEventKind::Release => ui.key(k),
                Some(Ok(TermEvent::Paste(text))) => {
                    ui.paste(&text);
                    Action::None
                }
                Some(Ok(_)) => Action::None,
                // No more keys (the terminal is gone): the view can only show the end.
                Some(Err(_)) | None => {
                    keys = None;
                    if !feed_open {
                        break;
                    }
                    Action::None
                }
            },
            told = next_news(&mut news) => {
                match told {
                    Some(told) => {
                        if let Some(board) = ui.board.as_mut() {
                            board.apply(told);
                        }
                    }
                    None => news = None,
                }
                Action::None
            }
            (row, listed) = later_choices(&mut later) => {
                ui.listed(row, listed);
                later = None;
                Action::None
            }
            _ = tick.tick() => Action::None,
        };
        let after = handles.act(action, &mut ui, &mut answer, &place, &mut views);
        match after {
            After::Go => {}
            After::Close => break,
            After::Kill => {
                handles.groups.kill_all();
                drop(terminal);
                drop(screen);
                std::process::exit(130);
            }
            After::QuitWhenSaved => quit_when_saved = true,
            After::Editor => {
                // The editor owns the terminal and its keys until it exits (the key stream
                // is dropped so that it reads none of them); the run goes on.
                drop(keys.take());
                let log = place.dir.join("run.log");
                let written = std::fs::write(&log, join(&views.focused(&ui).log));
                let said = screen.suspended_async(open_editor(log)).await?;
                ui.message = Some(match written {
                    Err(e) => format!("cannot write the log: {e}"),
                    Ok(()) => said,
                });
                terminal.clear()?;
                keys = Some(EventStream::new());
            }
        }
    }
    drop(terminal);
    drop(screen);
    Ok(())
}

/// What the view's loop does after an action.
enum After {
    Go,
    /// The view closes.
    Close,
    /// A second Ctrl+C: every process group killed, the process gone.
    Kill,
    /// Close once the run has saved its session and ended its feed.
    QuitWhenSaved,
    /// The log opened in the user's editor.
    Editor,
}

impl Handles {
    /// The view's state as the run starts: its task list when it has tasks, what its stop key
    /// does, the picker's rows; and the models a picker's row lists later, if any.
    fn ui(&mut self, screen: &Screen, tasks: bool) -> (Ui, Option<picker::Later>) {
        let mut ui = Ui::new(screen.stderr_log().map(Path::to_path_buf));
        if tasks {
            ui.board = Some(Board::default());
        }
        ui.stop_means = self.stop_means;
        let mut later = None;
        if let Some(picker) = self.picker.as_mut() {
            ui.models = picker.rows.clone();
            later = picker.later.take();
        }
        (ui, later)
    }

    /// Does what `action` asks of the run (pause, stop, skip, a model, the breaker's answer)
    /// or of the view (the diff, an export); what the view's loop does next.
    fn act(
        &mut self,
        action: Action,
        ui: &mut Ui,
        answer: &mut Option<oneshot::Sender<BreakerChoice>>,
        place: &Place,
        views: &mut Views,
    ) -> After {
        match action {
            Action::None => {}
            Action::TogglePause => match &self.pause {
                Some(pause) => {
                    let now = !*pause.borrow();
                    pause.send_replace(now);
                    ui.message = Some(if now {
                        "pausing after the step under way (p to resume)".into()
                    } else {
                        "resuming".into()
                    });
                }
                None => ui.message = Some("this run cannot pause".into()),
            },
            Action::Abort => {
                if let Some(reply) = answer.take() {
                    let _ = reply.send(BreakerChoice::Stop);
                }
                self.cancel.cancel();
            }
            Action::Kill => return After::Kill,
            Action::Quit if ui.finished => return After::Close,
            Action::Quit => {
                ui.message = Some("quitting: the session is being saved".into());
                if let Some(reply) = answer.take() {
                    let _ = reply.send(BreakerChoice::Stop);
                }
                self.cancel.cancel();
                return After::QuitWhenSaved;
            }
            Action::Answer(choice) => {
                if let Some(reply) = answer.take() {
                    let _ = reply.send(choice);
                }
            }
            Action::OpenDiff => {
                ui.modal = Modal::Diff {
                    lines: diff_lines(place),
                    scroll: 0,
                }
            }
            Action::Export => ui.message = Some(export(&place.dir, views.focused(ui))),
            Action::Skip(key) => match &self.skip {
                Some(skip) => {
                    skip(&key);
                    let name = ui
                        .board
                        .as_ref()
                        .and_then(|b| b.tasks.iter().find(|t| t.key == key));
                    let name = name.map_or(key.as_str(), |t| t.name.as_str());
                    ui.message = Some(format!(
                        "skipping {name}: a run under way ends its step and is saved; the next task starts"
                    ));
                }
                None => ui.message = Some("this run has no tasks to skip".into()),
            },
            Action::Pick { row, model } => {
                let Some(picker) = self.picker.as_mut() else {
                    return After::Go;
                };
                ui.message = Some(match (picker.choose)(row, &model) {
                    Ok(said) => {
                        if let Some(r) = ui.models.get_mut(row) {
                            r.now = model;
                        }
                        said
                    }
                    Err(why) => why,
                });
            }
            Action::OpenEditor => return After::Editor,
        }
        After::Go
    }
}

/// Waits for a view spawned beside its run and says on stderr if it failed or stopped (the
/// terminal is restored by then).
pub async fn ended(view: actix_rt::task::JoinHandle<std::io::Result<()>>) {
    match view.await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => eprintln!("warning: the terminal view failed: {e}"),
        Err(e) => eprintln!("warning: the terminal view stopped: {e}"),
    }
}

async fn next_key(keys: &mut Option<EventStream>) -> Option<Result<TermEvent, std::io::Error>> {
    match keys {
        Some(keys) => keys.next().await,
        None => std::future::pending().await,
    }
}

/// Each task's view, and which one is shown.
#[derive(Default)]
struct Views {
    by_task: Vec<(String, ViewState)>,
    /// Shown for a task that has no session yet.
    empty: ViewState,
}

impl Views {
    /// `event` of `task` and everything already queued after it, to be drawn in one frame.
    fn apply_queued(
        &mut self,
        task: String,
        event: &Envelope,
        feed: &mut mpsc::UnboundedReceiver<Tagged>,
    ) {
        self.apply(task, event);
        while let Ok((task, e)) = feed.try_recv() {
            self.apply(task, &e);
        }
    }

    fn apply(&mut self, task: String, event: &Envelope) {
        match self.by_task.iter_mut().find(|(t, _)| *t == task) {
            Some((_, view)) => view.apply(event),
            None => {
                let mut view = ViewState::new();
                view.apply(event);
                self.by_task.push((task, view));
            }
        }
    }

    /// The view of the task in focus; with no task in focus (a single run, or a batch between
    /// its tasks), the one that began last.
    fn focused(&mut self, ui: &Ui) -> &ViewState {
        let task = ui
            .board
            .as_ref()
            .zip(ui.focus)
            .and_then(|(b, i)| b.tasks.get(i));
        let found = match task {
            Some(task) => self.by_task.iter().position(|(t, _)| *t == task.key),
            None => self.by_task.len().checked_sub(1),
        };
        if let Some(i) = found {
            return &self.by_task[i].1;
        }
        // A task with no session yet: its name, and nothing else.
        self.empty = ViewState::new();
        if let Some(task) = task {
            self.empty.title = task.name.clone();
        }
        &self.empty
    }
}

async fn next_news(news: &mut Option<mpsc::UnboundedReceiver<TaskNews>>) -> Option<TaskNews> {
    match news {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

/// The choices that come later, when they come (never, when none are awaited).
async fn later_choices(later: &mut Option<picker::Later>) -> (usize, Result<Vec<String>, String>) {
    match later {
        Some((row, rx)) => {
            let listed = rx
                .await
                .unwrap_or_else(|_| Err("the models could not be listed".into()));
            (*row, listed)
        }
        None => std::future::pending().await,
    }
}

/// The change to the target so far, as a unified diff.
fn diff_lines(place: &Place) -> Vec<String> {
    let (Some(target), Some(original)) = (&place.target, &place.original) else {
        return git_diff(&place.dir);
    };
    let before = std::fs::read_to_string(original).unwrap_or_default();
    let after = match std::fs::read_to_string(target) {
        Ok(text) => text,
        Err(e) => return vec![format!("cannot read {}: {e}", target.display())],
    };
    if before == after {
        return vec!["no change to the target yet".into()];
    }
    let name = target.display().to_string();
    similar::TextDiff::from_lines(&before, &after)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{name}"), &format!("b/{name}"))
        .to_string()
        .lines()
        .map(crate::views::state::clean)
        .collect()
}

#[cfg(test)]
mod tests;
