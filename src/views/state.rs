//! What a live view shows, folded from the event stream: [`ViewState`]. The terminal UI draws
//! it; a replay folds the same events from the session's log, so both show one thing.
//!
//! Text that came from outside (a model's reply, an agent's output, a test's message) is
//! [`clean`]ed as it is folded in: an escape sequence or control character in a model's output
//! must never reach the terminal (ralph-orchestrator #164).

use std::collections::{BTreeMap, VecDeque};

use chrono::{DateTime, Utc};
use ralph_actors::events::event::{Envelope, Event};
use ralph_actors::schema::agent::AgentEvent;
use ralph_actors::schema::report::{Status, TestsSnapshot};
use ralph_actors::tracker::circuit::State as BreakerState;

use crate::printers::human::Human;
use crate::printers::Printer;

/// The most lines of the thought stream and of the log a view keeps.
pub const KEEP_LINES: usize = 2000;

/// How an iteration (or a task) stands, with the seed's marks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    pub iteration: u32,
    pub mark: Mark,
    /// What it came to, in a few words.
    pub summary: String,
    pub cost_usd: f64,
}

/// How the run ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Finished {
    pub status: String,
    pub success: bool,
    pub reason: String,
    pub exit_code: i32,
    /// The promise the run kept, each check's status without its details (`promise (full):
    /// tests met · …`); none for an agent loop's or a report without one.
    pub promise: Option<String>,
}

/// Everything the views show of one session or agent loop.
#[derive(Debug, Clone, Default)]
pub struct ViewState {
    pub session: String,
    /// The target file, or the agent loop's prompt file.
    pub title: String,
    /// `(role, model)`, or `("agent", name)` and its model for an agent loop.
    pub models: Vec<(String, String)>,
    pub test_command: String,
    pub max_cost_usd: f64,
    pub cost_usd: f64,
    pub cost_by_role: BTreeMap<String, f64>,
    pub max_iterations: u32,
    pub iteration: u32,
    pub phase: Option<String>,
    pub started: Option<DateTime<Utc>>,
    /// The time of the last event: a finished session's clock stops there.
    pub last: Option<DateTime<Utc>>,
    pub finished: Option<Finished>,
    pub paused: bool,
    pub items: Vec<Item>,
    /// The role (or agent) whose text the thought stream shows last.
    pub thought_from: Option<String>,
    /// The thought stream, whole lines; the last may still be growing.
    pub thought: VecDeque<String>,
    /// Whether the thought stream's last line has ended.
    thought_ended: bool,
    /// An agent loop's, not a fix run's.
    pub is_loop: bool,
    pub tests: Option<TestsSnapshot>,
    pub breaker: Option<(BreakerState, String)>,
    /// The last recall: attempts found, how many worked, the best similarity.
    pub recall: Option<(u32, u32, f32)>,
    pub recorded: u32,
    pub chaos_open: Vec<String>,
    /// The last mutation score (percent) and the mutants surviving.
    pub mutation: Option<(f64, u32)>,
    /// The share of its context window the last prompt used.
    pub context_used: Option<f64>,
    pub warnings: u32,
    /// The run as the line printer tells it: what the log viewer shows.
    pub log: VecDeque<String>,
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

    /// Folds one more event in.
    pub fn apply(&mut self, envelope: &Envelope) {
        if !self.session.is_empty()
            && envelope.session != self.session
            && matches!(envelope.event, Event::SessionStarted { .. })
        {
            self.next_session();
        }
        self.started.get_or_insert(envelope.time);
        self.last = Some(envelope.time);
        if self.session.is_empty() {
            self.session = envelope.session.clone();
        }
        self.log_lines(envelope);
        match &envelope.event {
            Event::SessionStarted {
                target,
                test_command,
                models,
                max_cost_usd,
                max_iterations,
                resumed_from_iteration,
                spent_usd,
                ..
            } => {
                self.title = target.clone();
                self.test_command = test_command.clone();
                self.models = models
                    .iter()
                    .map(|(r, m)| (r.to_string(), m.clone()))
                    .collect();
                self.max_cost_usd = *max_cost_usd;
                self.max_iterations = *max_iterations;
                self.iteration = *resumed_from_iteration;
                self.cost_usd = *spent_usd;
            }
            Event::LoopStarted {
                agent,
                model,
                prompt_file,
                max_iterations,
                max_cost_usd,
                ..
            } => {
                self.is_loop = true;
                self.title = prompt_file.clone();
                self.models = vec![("agent".into(), agent.clone())];
                if let Some(model) = model {
                    self.models.push(("model".into(), model.clone()));
                }
                self.max_cost_usd = *max_cost_usd;
                self.max_iterations = *max_iterations;
            }
            Event::IterationStarted {
                iteration,
                max_iterations,
            } => {
                self.begin(*iteration);
                self.max_iterations = *max_iterations;
            }
            Event::AgentStarted {
                iteration, model, ..
            } => {
                self.begin(*iteration);
                if let Some(model) = model {
                    self.set_model("model", model);
                }
            }
            Event::PhaseChanged { phase, .. } => self.phase = Some(phase.as_str().to_string()),
            Event::LlmCallFinished {
                role,
                model,
                cost_usd,
                total_cost_usd,
                context_used,
                ..
            } => {
                // The model that answered: a fallback, or one chosen in the picker.
                self.set_model(&role.to_string(), model);
                self.cost_usd = *total_cost_usd;
                *self.cost_by_role.entry(role.to_string()).or_insert(0.0) += cost_usd;
                self.context_used = context_used.or(self.context_used);
                self.add_cost(*cost_usd);
            }
            Event::AgentEnded {
                cost_usd,
                total_cost_usd,
                ending,
                ..
            } => {
                self.cost_usd = *total_cost_usd;
                *self.cost_by_role.entry("agent".into()).or_insert(0.0) += cost_usd;
                self.add_cost(*cost_usd);
                if ending != "exited" && ending != "stopped_after_result" {
                    self.settle(Mark::Failed, ending.replace('_', " "));
                }
            }
            Event::Thought { role, text, .. } => self.think(&role.to_string(), text),
            Event::AgentOutput { event, .. } => match event {
                // Each of an agent's messages is a paragraph of its own.
                AgentEvent::Text { text } => self.think("agent", &ended(text)),
                AgentEvent::Tool { name, detail } => {
                    self.think("agent", &format!("[{name}] {detail}\n"))
                }
                AgentEvent::Error { message } => {
                    self.think("agent", &format!("error: {message}\n"))
                }
                AgentEvent::Result { text, .. } => self.think("agent", &ended(text)),
                AgentEvent::Session { .. } | AgentEvent::Usage { .. } => {}
            },
            Event::CriticVerdict {
                approved, reasons, ..
            } if !approved => {
                let first = reasons.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
                self.settle(Mark::Failed, format!("rejected: {}", clean(first.trim())));
            }
            Event::TestIntegrity { .. } => self.settle(Mark::Failed, "tests edited".into()),
            Event::TestsFinished { iteration, tests } => {
                let mut tests = tests.clone();
                tests.first_failure = tests.first_failure.as_deref().map(clean);
                tests.summary = clean(&tests.summary);
                // An agent loop's iteration is judged by its progress, its tests only one
                // part of that.
                if *iteration > 0 && !self.is_loop {
                    let (mark, summary) = if tests.criteria_met {
                        (Mark::Done, tests.summary.clone())
                    } else {
                        (Mark::Failed, tests.summary.clone())
                    };
                    self.settle(mark, summary);
                }
                self.tests = Some(tests);
            }
            Event::ProgressMeasured {
                files_changed,
                progress,
                newly_passing,
                ..
            } => {
                let mark = if *progress { Mark::Done } else { Mark::Failed };
                let summary =
                    format!("{files_changed} files changed, {newly_passing} tests newly passing");
                self.settle(mark, summary);
            }
            Event::BreakerChanged { to, reason, .. } => {
                self.breaker = Some((*to, reason.as_str().to_string()));
            }
            Event::MemoryRecalled {
                attempts,
                worked,
                best_similarity,
                ..
            } => self.recall = Some((*attempts, *worked, *best_similarity)),
            Event::MemoryRecorded { .. } => self.recorded += 1,
            Event::ChaosJudged { kept, .. } => {
                self.chaos_open.extend(kept.iter().map(|k| clean(k)));
                if let Some(item) = self.items.last_mut().filter(|_| !kept.is_empty()) {
                    // The unit tests passed, but Chaos broke the fix: not done yet.
                    item.mark = Mark::Failed;
                    item.summary = format!("Chaos found {} failing", kept.len());
                }
            }
            Event::ChaosRecheck { open, .. } => {
                self.chaos_open = open.iter().map(|k| clean(k)).collect();
            }
            Event::ChaosMutation {
                score, surviving, ..
            } => self.mutation = Some((*score, *surviving)),
            Event::Warning { .. } => self.warnings += 1,
            Event::Paused { .. } => {
                self.paused = true;
                self.set_running_mark(Mark::Paused);
            }
            Event::Resumed { .. } => {
                self.paused = false;
                self.set_running_mark(Mark::Running);
            }
            Event::SessionFinished { report } => {
                self.cost_usd = report.cost_usd;
                self.finish(
                    report.status,
                    report.status.as_str(),
                    &report.reason,
                    report.exit_code,
                );
                let promise = &report.promise;
                if let (Some(done), false) = (&mut self.finished, promise.checks.is_empty()) {
                    done.promise = Some(promise.brief());
                }
            }
            Event::LoopFinished { report } => {
                self.cost_usd = report.total_cost_usd;
                let success = report.exit_code == 0;
                let status = if success {
                    Status::Success
                } else {
                    Status::Error
                };
                self.finish(
                    status,
                    report.status.as_str(),
                    &report.reason,
                    report.exit_code,
                );
            }
            _ => {}
        }
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
        });
    }

    /// Text from a role or an agent joins the thought stream.
    fn think(&mut self, from: &str, text: &str) {
        if self.thought_from.as_deref() != Some(from) {
            self.thought_from = Some(from.to_string());
            push(&mut self.thought, format!("── {from} ──"));
        }
        let text = clean_keep_lines(text);
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

/// `text` ending with a newline.
fn ended(text: &str) -> String {
    if text.ends_with('\n') {
        text.to_string()
    } else {
        format!("{text}\n")
    }
}

fn push(lines: &mut VecDeque<String>, line: String) {
    if lines.len() == KEEP_LINES {
        lines.pop_front();
    }
    lines.push_back(line);
}

/// `text` safe to draw: escape sequences removed, tabs as spaces, every other control
/// character (newlines too) as a space.
pub fn clean(text: &str) -> String {
    clean_keep_lines(text).replace('\n', " ")
}

/// As [`clean`], keeping the newlines.
pub fn clean_keep_lines(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => skip_escape(&mut chars),
            '\n' => out.push('\n'),
            '\t' => out.push_str("    "),
            '\r' => {}
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// Skips the rest of an escape sequence: CSI (`ESC [ … final`), OSC (`ESC ] … BEL or ST`), or
/// a two-character one.
fn skip_escape(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    match chars.next() {
        Some('[') => {
            for c in chars.by_ref() {
                if ('@'..='~').contains(&c) {
                    break;
                }
            }
        }
        Some(']') | Some('P') | Some('_') | Some('^') => {
            while let Some(c) = chars.next() {
                if c == '\u{7}' {
                    break;
                }
                if c == '\u{1b}' && chars.peek() == Some(&'\\') {
                    chars.next();
                    break;
                }
            }
        }
        _ => {}
    }
}
