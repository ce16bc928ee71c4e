//! What a live view shows, folded from the event stream: [`ViewState`], the one fold of the
//! events into a view. The terminal UI draws it; the web dashboard gets it as JSON (the server
//! folds the session's log and sends the state after each batch of events) and only renders it;
//! a replay folds the same events from the log, so every view shows one thing. Adding an event
//! means one arm in `fold` and its renderings.
//!
//! `fold` holds [`ViewState::apply`]; `text` cleans what came from outside.
//!
//! Text that came from outside (a model's reply, an agent's output, a test's message) is
//! [`clean`]ed as it is folded in: an escape sequence or control character in a model's output
//! must never reach the terminal (ralph-orchestrator #164).

mod fold;
mod text;

use std::collections::{BTreeMap, VecDeque};

use chrono::{DateTime, Utc};
use ralph_actors::events::event::Envelope;
use ralph_actors::schema::report::{Status, TestsSnapshot};
use ralph_actors::tracker::circuit::State as BreakerState;

use serde::Serialize;

use crate::printers::human::Human;
use crate::printers::Printer;

pub use text::{clean, clean_keep_lines};
use text::{ended, push};

/// The most paragraphs of the thought stream the dashboard is sent.
pub const KEEP_PARAGRAPHS: usize = 200;

/// How an iteration (or a task) stands, with the seed's marks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mark {
    Done,
    Running,
    Pending,
    Skipped,
    Paused,
    Failed,
}

impl Mark {
    pub fn symbol(self) -> &'static str {
        match self {
            Mark::Done => "✓",
            Mark::Running => "→",
            Mark::Pending => "○",
            Mark::Skipped => "⊘",
            Mark::Paused => "⏸",
            Mark::Failed => "✗",
        }
    }
}

/// One line of the list: an iteration of a fix or of an agent loop.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Item {
    pub iteration: u32,
    pub mark: Mark,
    /// What it came to, in a few words.
    pub summary: String,
    pub cost_usd: f64,
}

/// How the run ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finished {
    pub status: String,
    pub success: bool,
    pub reason: String,
    pub exit_code: i32,
    /// The promise the run kept, each check's status without its details (`promise (full):
    /// tests met · …`); none for an agent loop's or a report without one.
    pub promise: Option<String>,
    /// The same with each check's details (`coverage met (100% of 6 changed line(s) …)`): what
    /// the dashboard, which has the room, shows.
    pub promise_detail: Option<String>,
}

/// One row of the dashboard's timeline: an iteration (0: the tests before the first) and the
/// phases it went through.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    pub n: u32,
    /// Each phase and when it began.
    pub phases: Vec<(String, DateTime<Utc>)>,
    pub tests: Option<TestsSnapshot>,
    pub cost_usd: f64,
    /// The time of the iteration's last event before the run ended.
    pub last: Option<DateTime<Utc>>,
}

/// A paragraph of the thought stream: one speaker's text until another speaks.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Paragraph {
    /// Counts up through the run: a renderer redraws a paragraph only when its text grew.
    pub id: u64,
    pub from: String,
    pub text: String,
}

/// What the MemoryVault recalled at the start of an iteration.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Recall {
    pub iteration: u32,
    pub attempts: u32,
    pub worked: u32,
    pub best_similarity: f32,
}

/// A test Chaos wrote that the Critic kept: open until a fix passes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub test: String,
    pub open: bool,
}

/// Everything the views show of one session or agent loop. Serialised, it is the dashboard's
/// model (the thought stream's lines and the log stay with the terminal).
#[derive(Debug, Clone, Default, Serialize)]
pub struct ViewState {
    pub session: String,
    /// The last event folded in (0: none yet).
    pub seq: u64,
    /// The target file, or the agent loop's prompt file.
    pub title: String,
    /// `(role, model)`, or `("agent", name)` and its model for an agent loop.
    pub models: Vec<(String, String)>,
    pub test_command: String,
    pub max_cost_usd: f64,
    pub cost_usd: f64,
    pub cost_by_role: BTreeMap<String, f64>,
    pub cost_by_model: BTreeMap<String, f64>,
    pub max_iterations: u32,
    pub iteration: u32,
    pub phase: Option<String>,
    pub started: Option<DateTime<Utc>>,
    /// The time of the last event: a finished session's clock stops there.
    pub last: Option<DateTime<Utc>>,
    pub finished: Option<Finished>,
    pub paused: bool,
    pub items: Vec<Item>,
    /// The dashboard's timeline, the baseline first.
    pub timeline: Vec<Row>,
    /// The role (or agent) whose text the thought stream shows last.
    pub thought_from: Option<String>,
    /// The thought stream, whole lines; the last may still be growing.
    #[serde(skip)]
    pub thought: VecDeque<String>,
    /// Whether the thought stream's last line has ended.
    #[serde(skip)]
    thought_ended: bool,
    /// The thought stream by speaker, the last [`KEEP_PARAGRAPHS`].
    pub paragraphs: VecDeque<Paragraph>,
    /// An agent loop's, not a fix run's.
    pub is_loop: bool,
    pub tests: Option<TestsSnapshot>,
    pub breaker: Option<(BreakerState, String)>,
    pub recalls: Vec<Recall>,
    pub recorded: u32,
    /// Chaos's kept tests, open or fixed, in the order they were found.
    pub chaos: Vec<Finding>,
    /// The last mutation score (percent) and the mutants surviving.
    pub mutation: Option<(f64, u32)>,
    /// The share of its context window the last prompt used.
    pub context_used: Option<f64>,
    pub warnings: Vec<String>,
    /// The run as the line printer tells it: what the log viewer shows.
    #[serde(skip)]
    pub log: VecDeque<String>,
    #[serde(skip)]
    lines: Human<Vec<u8>>,
}

impl ViewState {
    pub fn new() -> Self {
        Self {
            lines: Human::new(Vec::new()),
            ..Self::default()
        }
    }

    /// Another session of the same task begins (a spec's next target): what is shown starts
    /// again, the thought stream and the log go on.
    fn next_session(&mut self) {
        let old = std::mem::take(self);
        *self = Self {
            thought: old.thought,
            thought_ended: old.thought_ended,
            paragraphs: old.paragraphs,
            log: old.log,
            lines: old.lines,
            ..Self::default()
        };
    }

    /// Shows `who` on `model` (added after the others when it was not shown).
    fn set_model(&mut self, who: &str, model: &str) {
        match self.models.iter_mut().find(|(w, _)| w == who) {
            Some((_, m)) => model.clone_into(m),
            None => self.models.push((who.to_string(), model.to_string())),
        }
    }

    /// Iteration `n`'s row of the timeline, added when it has none.
    fn row(&mut self, n: u32) -> &mut Row {
        let at = match self.timeline.iter().rposition(|r| r.n == n) {
            Some(at) => at,
            None => {
                self.timeline.push(Row {
                    n,
                    phases: Vec::new(),
                    tests: None,
                    cost_usd: 0.0,
                    last: None,
                });
                self.timeline.len() - 1
            }
        };
        &mut self.timeline[at]
    }

    /// Chaos's findings still open.
    pub fn chaos_open(&self) -> impl Iterator<Item = &str> {
        self.chaos
            .iter()
            .filter(|f| f.open)
            .map(|f| f.test.as_str())
    }

    fn begin(&mut self, iteration: u32) {
        self.iteration = iteration;
        if self.items.last().map(|i| i.iteration) == Some(iteration) {
            return;
        }
        self.items.push(Item {
            iteration,
            mark: if self.paused {
                Mark::Paused
            } else {
                Mark::Running
            },
            summary: String::new(),
            cost_usd: 0.0,
        });
    }

    fn add_cost(&mut self, cost: f64) {
        if let Some(item) = self.items.last_mut() {
            item.cost_usd += cost;
        }
    }

    /// The iteration under way came to `mark`: the first verdict stands.
    fn settle(&mut self, mark: Mark, summary: String) {
        if let Some(item) = self.items.last_mut() {
            if matches!(item.mark, Mark::Running | Mark::Paused) {
                item.mark = mark;
                item.summary = summary;
            }
        }
    }

    fn set_running_mark(&mut self, mark: Mark) {
        if let Some(item) = self.items.last_mut() {
            if matches!(item.mark, Mark::Running | Mark::Paused) {
                item.mark = mark;
            }
        }
    }

    fn finish(&mut self, status: Status, name: &str, reason: &str, exit_code: i32) {
        let success = status == Status::Success;
        // An iteration still open when the run ended: its end is the run's.
        let last = if success { Mark::Done } else { Mark::Skipped };
        self.settle(last, name.replace('_', " "));
        self.paused = false;
        self.phase = None;
        self.finished = Some(Finished {
            status: name.to_string(),
            success,
            reason: clean(reason),
            exit_code,
            promise: None,
            promise_detail: None,
        });
    }

    /// Text from a role or an agent joins the thought stream.
    fn think(&mut self, from: &str, text: &str) {
        let text = clean_keep_lines(text);
        if self.thought_from.as_deref() != Some(from) {
            self.thought_from = Some(from.to_string());
            push(&mut self.thought, format!("── {from} ──"));
            let id = self.paragraphs.back().map_or(1, |p| p.id + 1);
            if self.paragraphs.len() == KEEP_PARAGRAPHS {
                self.paragraphs.pop_front();
            }
            self.paragraphs.push_back(Paragraph {
                id,
                from: from.to_string(),
                text: String::new(),
            });
        }
        if let Some(paragraph) = self.paragraphs.back_mut() {
            paragraph.text.push_str(&text);
        }
        let mut pieces = text.split('\n');
        if let Some(first) = pieces.next() {
            // The first piece continues the last line unless that is a heading or ended.
            match self.thought.back_mut() {
                Some(last) if !last.starts_with("── ") && !self.thought_ended => {
                    last.push_str(first)
                }
                _ => push(&mut self.thought, first.to_string()),
            }
        }
        for piece in pieces {
            push(&mut self.thought, piece.to_string());
        }
        self.thought_ended = text.ends_with('\n');
        if self.thought_ended {
            // The empty piece after the last newline is the next line's start.
            if self.thought.back().is_some_and(String::is_empty) {
                self.thought.pop_back();
            }
        }
    }

    fn log_lines(&mut self, envelope: &Envelope) {
        let _ = self.lines.print(envelope);
        let out = self.lines.take_output();
        if out.is_empty() {
            return;
        }
        for line in String::from_utf8_lossy(&out).lines() {
            push(&mut self.log, clean(line));
        }
    }

    /// Whether the run is over.
    pub fn is_finished(&self) -> bool {
        self.finished.is_some()
    }

    /// Seconds from the first event to the last (or to `now` while running).
    pub fn elapsed_secs(&self, now: DateTime<Utc>) -> i64 {
        let Some(started) = self.started else {
            return 0;
        };
        let end = if self.is_finished() {
            self.last.unwrap_or(now)
        } else {
            now
        };
        (end - started).num_seconds().max(0)
    }
}
