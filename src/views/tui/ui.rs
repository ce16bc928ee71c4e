//! The view's own state (the open overlay, scroll positions, the last message) and what each
//! key does to it: [`Ui::key`] turns a key into an [`Action`] for the loop to carry out.

use std::path::PathBuf;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ralph_actors::ports::user::{BreakerChoice, Stuck};

use crate::views::board::Board;
use crate::views::state::Mark;
use crate::views::tui::picker::{Cursor, Row, Step};

/// What a confirmation is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Confirm {
    Abort,
    Quit,
    /// Skip the task at this index of the list.
    Skip(usize),
}

/// The overlay on top of the main view.
#[derive(Debug, Clone, PartialEq)]
pub enum Modal {
    None,
    Help,
    Log {
        scroll: usize,
    },
    Diff {
        lines: Vec<String>,
        scroll: usize,
    },
    Confirm(Confirm),
    /// The breaker asks before it stops the run.
    Breaker {
        stuck: Stuck,
        raised: u32,
    },
    /// Typing the guidance that goes with "go on".
    Guidance {
        stuck: Stuck,
        input: String,
    },
    /// The model picker.
    Models(Cursor),
}

/// What the loop does for a key.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    None,
    TogglePause,
    Abort,
    /// A second Ctrl+C: kill the tests and exit now.
    Kill,
    Quit,
    OpenDiff,
    OpenEditor,
    Export,
    Answer(BreakerChoice),
    /// Put the picker's row `row` on `model`.
    Pick {
        row: usize,
        model: String,
    },
    /// Skip the task of this key.
    Skip(String),
}

#[derive(Debug, Clone)]
pub struct Ui {
    pub modal: Modal,
    pub message: Option<String>,
    /// Lines the thought stream is scrolled back by (0: it follows the newest).
    pub thought_back: usize,
    /// Whether the run has been asked to stop.
    pub aborting: bool,
    pub finished: bool,
    /// Where stderr went while the view was up.
    pub stderr_log: Option<PathBuf>,
    /// What stopping this run does, as the view says it.
    pub stop_means: &'static str,
    /// Who may change model, and to what (the picker's rows; empty: no picker).
    pub models: Vec<Row>,
    /// A batch's or agent's task list, as the run reports it.
    pub board: Option<Board>,
    /// The task chosen with Tab (`None`: the one running, followed).
    pub selected: Option<usize>,
    /// The task shown: the one chosen, else the one running.
    pub focus: Option<usize>,
}

/// What stopping a fix run does.
pub const STOP_STEP: &str = "the step under way ends and the session is saved (resumable)";

const PAGE: usize = 10;

impl Ui {
    /// The run has ended: the view shows its end. Whether it stays open for a person to read
    /// it (`false` when `nobody` can).
    pub fn ended(&mut self, nobody: bool) -> bool {
        self.finished = true;
        self.aborting = false;
        if !nobody {
            self.message = Some("the run has ended: q to quit".into());
        }
        !nobody
    }

    /// The models of the picker's `row`, listed later (or why they could not be).
    pub fn listed(&mut self, row: usize, listed: Result<Vec<String>, String>) {
        if let Some(row) = self.models.get_mut(row) {
            match listed {
                Ok(choices) => {
                    row.choices = choices;
                    row.note = None;
                }
                Err(why) => row.note = Some(why),
            }
        }
    }

    pub fn new(stderr_log: Option<PathBuf>) -> Self {
        Self {
            modal: Modal::None,
            message: None,
            thought_back: 0,
            aborting: false,
            finished: false,
            stderr_log,
            stop_means: STOP_STEP,
            models: Vec::new(),
            board: None,
            selected: None,
            focus: None,
        }
    }

    /// The breaker asks: its question goes on top of everything else.
    pub fn ask(&mut self, stuck: Stuck) {
        let raised = stuck.threshold.saturating_mul(2).max(stuck.threshold + 1);
        self.modal = Modal::Breaker { stuck, raised };
    }

    pub fn key(&mut self, key: KeyEvent) -> Action {
        if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
            return self.ctrl_c();
        }
        match std::mem::replace(&mut self.modal, Modal::None) {
            Modal::None => self.main_key(key.code),
            Modal::Help => Action::None,
            Modal::Log { scroll } => match scrolled(key.code, scroll) {
                Some(scroll) => {
                    self.modal = Modal::Log { scroll };
                    Action::None
                }
                None => match key.code {
                    KeyCode::Char('e') => {
                        self.modal = Modal::Log { scroll };
                        Action::OpenEditor
                    }
                    KeyCode::Char('x') => {
                        self.modal = Modal::Log { scroll };
                        Action::Export
                    }
                    KeyCode::Esc | KeyCode::Char('q') | KeyCode::Char('l') => Action::None,
                    _ => {
                        self.modal = Modal::Log { scroll };
                        Action::None
                    }
                },
            },
            Modal::Diff { lines, scroll } => match scrolled(key.code, scroll) {
                Some(scroll) => {
                    self.modal = Modal::Diff { lines, scroll };
                    Action::None
                }
                None => match key.code {
                    KeyCode::Esc | KeyCode::Char('q') | KeyCode::Char('r') => Action::None,
                    _ => {
                        self.modal = Modal::Diff { lines, scroll };
                        Action::None
                    }
                },
            },
            Modal::Confirm(what) => match key.code {
                KeyCode::Char('y') | KeyCode::Char('Y') => match what {
                    Confirm::Abort => self.abort(),
                    Confirm::Quit => Action::Quit,
                    Confirm::Skip(i) => match self.task_key(i) {
                        Some(key) => Action::Skip(key),
                        None => Action::None,
                    },
                },
                KeyCode::Char('n') | KeyCode::Char('N') | KeyCode::Esc => Action::None,
                _ => {
                    self.modal = Modal::Confirm(what);
                    Action::None
                }
            },
            Modal::Breaker { stuck, raised } => match key.code {
                KeyCode::Char('s') => Action::Answer(BreakerChoice::Stop),
                KeyCode::Char('c') => Action::Answer(BreakerChoice::Continue { guidance: None }),
                KeyCode::Char('r') => Action::Answer(BreakerChoice::RaiseThreshold(raised)),
                KeyCode::Char('g') => {
                    self.modal = Modal::Guidance {
                        stuck,
                        input: String::new(),
                    };
                    Action::None
                }
                _ => {
                    self.modal = Modal::Breaker { stuck, raised };
                    Action::None
                }
            },
            Modal::Models(at) => match at.key(key.code, &self.models) {
                Step::Stay(at) => {
                    self.modal = Modal::Models(at);
                    Action::None
                }
                Step::Close => Action::None,
                Step::Pick { row, model } => Action::Pick { row, model },
            },
            Modal::Guidance { stuck, mut input } => match key.code {
                KeyCode::Enter => {
                    let guidance = Some(input.trim().to_string()).filter(|g| !g.is_empty());
                    Action::Answer(BreakerChoice::Continue { guidance })
                }
                KeyCode::Esc => {
                    self.ask(stuck);
                    Action::None
                }
                KeyCode::Backspace => {
                    input.pop();
                    self.modal = Modal::Guidance { stuck, input };
                    Action::None
                }
                KeyCode::Char(c) => {
                    input.push(c);
                    self.modal = Modal::Guidance { stuck, input };
                    Action::None
                }
                _ => {
                    self.modal = Modal::Guidance { stuck, input };
                    Action::None
                }
            },
        }
    }

    /// Keeps an overlay's scroll within its text (`most`: its rows beyond the first screen),
    /// so that a key always moves what is seen.
    pub fn clamp_scroll(&mut self, most: usize) {
        if let Modal::Log { scroll } | Modal::Diff { scroll, .. } = &mut self.modal {
            *scroll = (*scroll).min(most);
        }
    }

    /// Text pasted while typing guidance joins it; elsewhere it is ignored.
    pub fn paste(&mut self, text: &str) {
        if let Modal::Guidance { input, .. } = &mut self.modal {
            input.push_str(&crate::views::state::clean(text));
        }
    }

    fn main_key(&mut self, code: KeyCode) -> Action {
        match code {
            KeyCode::Char('p') if !self.finished => Action::TogglePause,
            KeyCode::Char('a') if !self.finished && !self.aborting => {
                self.modal = Modal::Confirm(Confirm::Abort);
                Action::None
            }
            KeyCode::Char('q') if self.finished => Action::Quit,
            KeyCode::Char('q') => {
                self.modal = Modal::Confirm(Confirm::Quit);
                Action::None
            }
            KeyCode::Char('l') => {
                self.modal = Modal::Log { scroll: usize::MAX };
                Action::None
            }
            KeyCode::Char('h') | KeyCode::Char('?') => {
                self.modal = Modal::Help;
                Action::None
            }
            KeyCode::Char('r') => Action::OpenDiff,
            KeyCode::Tab | KeyCode::BackTab => {
                self.choose_task(code == KeyCode::Tab);
                Action::None
            }
            KeyCode::Char('f') if self.board.is_some() => {
                self.selected = None;
                self.message = Some("following the task that runs".into());
                Action::None
            }
            KeyCode::Char('s') if !self.finished => {
                self.ask_skip();
                Action::None
            }
            KeyCode::Char('m') if self.models.is_empty() => {
                self.message = Some("this run has no models to switch".into());
                Action::None
            }
            KeyCode::Char('m') => {
                self.modal = Modal::Models(Cursor {
                    row: 0,
                    choice: None,
                });
                Action::None
            }
            KeyCode::Char('x') => Action::Export,
            KeyCode::PageUp => {
                self.thought_back += PAGE;
                Action::None
            }
            KeyCode::PageDown => {
                self.thought_back = self.thought_back.saturating_sub(PAGE);
                Action::None
            }
            KeyCode::Up => {
                self.thought_back += 1;
                Action::None
            }
            KeyCode::Down => {
                self.thought_back = self.thought_back.saturating_sub(1);
                Action::None
            }
            KeyCode::End => {
                self.thought_back = 0;
                Action::None
            }
            _ => Action::None,
        }
    }

    /// The next (or previous) task in the list, from the one in focus.
    fn choose_task(&mut self, next: bool) {
        let Some(n) = self
            .board
            .as_ref()
            .map(|b| b.tasks.len())
            .filter(|n| *n > 0)
        else {
            return;
        };
        self.selected = Some(match (self.focus, next) {
            (None, _) => 0,
            (Some(at), true) => (at + 1) % n,
            (Some(at), false) => (at + n - 1) % n,
        });
    }

    /// Asks before skipping the task in focus; says why not when it cannot be.
    fn ask_skip(&mut self) {
        let Some(board) = &self.board else {
            self.message = Some("this run has no tasks to skip".into());
            return;
        };
        let Some(task) = self.focus.and_then(|i| board.tasks.get(i).map(|t| (i, t))) else {
            self.message = Some("no task to skip: Tab chooses one".into());
            return;
        };
        match task.1.mark {
            Mark::Running | Mark::Pending | Mark::Paused => {
                self.modal = Modal::Confirm(Confirm::Skip(task.0));
            }
            Mark::Done | Mark::Failed | Mark::Skipped => {
                self.message = Some(format!("{} has ended already", task.1.name));
            }
        }
    }

    /// The key of the task at index `i` of the list.
    pub fn task_key(&self, i: usize) -> Option<String> {
        self.board.as_ref()?.tasks.get(i).map(|t| t.key.clone())
    }

    /// The name of the task at index `i` of the list.
    pub fn task_name(&self, i: usize) -> &str {
        self.board
            .as_ref()
            .and_then(|b| b.tasks.get(i))
            .map_or("", |t| t.name.as_str())
    }

    fn ctrl_c(&mut self) -> Action {
        if self.finished {
            return Action::Quit;
        }
        if self.aborting {
            return Action::Kill;
        }
        // An open question is answered "stop" by the abort itself; the view closes once the
        // session is saved, as a program left with Ctrl+C does.
        self.modal = Modal::None;
        self.abort();
        Action::Quit
    }

    fn abort(&mut self) -> Action {
        self.aborting = true;
        self.message = Some(format!(
            "aborting: {} (Ctrl+C again to quit at once)",
            self.stop_means
        ));
        Action::Abort
    }
}

/// The new scroll position for a scrolling key, `None` for any other key.
fn scrolled(code: KeyCode, scroll: usize) -> Option<usize> {
    Some(match code {
        KeyCode::Char('j') | KeyCode::Down => scroll.saturating_add(1),
        KeyCode::Char('k') | KeyCode::Up => scroll.saturating_sub(1),
        KeyCode::PageDown | KeyCode::Char(' ') => scroll.saturating_add(PAGE),
        KeyCode::PageUp => scroll.saturating_sub(PAGE),
        KeyCode::Char('g') | KeyCode::Home => 0,
        KeyCode::Char('G') | KeyCode::End => usize::MAX,
        _ => return None,
    })
}
