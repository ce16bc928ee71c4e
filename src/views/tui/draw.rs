//! One frame of the TUI from the run's [`ViewState`] and the view's own [`Ui`] state: header,
//! progress, the iterations beside the thought stream, tests and the run's other signs, the
//! keys; and over them the open overlay. Pure: the same state and time draw the same frame,
//! which the snapshot tests hold.

use chrono::{DateTime, Utc};
use ralph_actors::tracker::circuit::State as BreakerState;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span, Text};
use ratatui::widgets::{Block, Borders, Clear, Gauge, Paragraph, Wrap};
use ratatui::Frame;

use crate::views::state::{Mark, ViewState};
use crate::views::tui::lists;
use crate::views::tui::ui::{Confirm, Modal, Ui};

/// The smallest terminal the TUI draws in; a smaller one gets the line printer at start, and a
/// note while it is resized below this.
pub const MIN_WIDTH: u16 = 60;
pub const MIN_HEIGHT: u16 = 16;

/// Draws the frame; returns how far the open overlay can scroll (its rows beyond the first
/// screen), for the view to keep its scroll within.
pub fn frame(f: &mut Frame, view: &ViewState, ui: &Ui, now: DateTime<Utc>) -> usize {
    let area = f.area();
    if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
        let text = format!(
            "terminal too small ({}x{}): enlarge it to {MIN_WIDTH}x{MIN_HEIGHT}",
            area.width, area.height
        );
        f.render_widget(Paragraph::new(text).wrap(Wrap { trim: true }), area);
        return 0;
    }
    let [header, progress, middle, signs, footer] = Layout::vertical([
        Constraint::Length(3),
        Constraint::Length(1),
        Constraint::Min(6),
        Constraint::Length(4),
        Constraint::Length(1),
    ])
    .areas(area);
    draw_header(f, header, view, now);
    draw_progress(f, progress, view);
    let [list, thought] =
        Layout::horizontal([Constraint::Percentage(40), Constraint::Percentage(60)]).areas(middle);
    match &ui.board {
        Some(board) => {
            // The tasks above, the focused task's iterations below; each keeps some room.
            let rows = (board.tasks.len() as u16 + 2).clamp(3, list.height / 2 + 1);
            let [tasks, items] =
                Layout::vertical([Constraint::Length(rows), Constraint::Min(3)]).areas(list);
            lists::tasks(f, tasks, board, ui.focus);
            draw_items(f, items, view);
        }
        None => draw_items(f, list, view),
    }
    draw_thought(f, thought, view, ui);
    draw_signs(f, signs, view);
    draw_footer(f, footer, view, ui);
    draw_modal(f, area, view, ui)
}

fn draw_header(f: &mut Frame, area: Rect, view: &ViewState, now: DateTime<Utc>) {
    let secs = view.elapsed_secs(now);
    let clock = format!("{:02}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60);
    let models: Vec<String> = view
        .models
        .iter()
        .map(|(role, model)| format!("{role} {model}"))
        .collect();
    let near = view.max_cost_usd > 0.0 && view.cost_usd >= 0.8 * view.max_cost_usd;
    let cost_style = if near {
        Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD)
    } else {
        Style::new()
    };
    let title = Line::from(vec![
        Span::styled(" RALPH LOOP ", Style::new().add_modifier(Modifier::BOLD)),
        Span::raw(format!("│ {} ", file_name(&view.title))),
    ]);
    let money = Line::from(vec![
        Span::raw(" "),
        Span::styled(
            format!("${:.4} of ${:.2}", view.cost_usd, view.max_cost_usd),
            cost_style,
        ),
        Span::raw(format!(" │ {clock} ")),
    ])
    .right_aligned();
    let block = Block::new()
        .borders(Borders::ALL)
        .title(title)
        .title_top(money);
    f.render_widget(Paragraph::new(models.join(" · ")).block(block), area);
}

fn draw_progress(f: &mut Frame, area: Rect, view: &ViewState) {
    let ratio = if view.max_iterations == 0 {
        0.0
    } else {
        (f64::from(view.iteration) / f64::from(view.max_iterations)).min(1.0)
    };
    let mut label = format!("iteration {} of {}", view.iteration, view.max_iterations);
    if let Some(phase) = &view.phase {
        label.push_str(&format!(" · {phase}"));
    }
    if let Some(used) = view.context_used {
        label.push_str(&format!(" · context {:.0}%", used * 100.0));
    }
    if view.paused {
        label.push_str(" · PAUSED");
    }
    if let Some(done) = &view.finished {
        label = format!("finished: {} · {}", done.status, done.reason);
    }
    let colour = match &view.finished {
        Some(done) if done.success => Color::Green,
        Some(_) => Color::Red,
        None if view.paused => Color::Yellow,
        None => Color::Cyan,
    };
    let gauge = Gauge::default()
        .gauge_style(Style::new().fg(colour))
        .ratio(if view.is_finished() { 1.0 } else { ratio })
        .label(label);
    f.render_widget(gauge, area);
}

fn draw_items(f: &mut Frame, area: Rect, view: &ViewState) {
    let block = Block::new().borders(Borders::ALL).title(" Iterations ");
    let height = area.height.saturating_sub(2) as usize;
    let mut lines: Vec<Line> = view
        .items
        .iter()
        .map(|item| {
            let colour = lists::mark_colour(item.mark);
            let cost = if item.cost_usd > 0.0 {
                format!(" ${:.4}", item.cost_usd)
            } else {
                String::new()
            };
            Line::from(vec![
                Span::styled(format!("{} ", item.mark.symbol()), Style::new().fg(colour)),
                Span::raw(format!("#{}{cost} {}", item.iteration, item.summary)),
            ])
        })
        .collect();
    if view.items.is_empty() {
        let what = if view.is_finished() {
            "no iteration ran"
        } else {
            "running the tests as they are…"
        };
        lines.push(Line::styled(what, Style::new().fg(Color::DarkGray)));
    } else if !view.is_finished() && view.iteration < view.max_iterations {
        let left = view.max_iterations - view.iteration;
        lines.push(Line::styled(
            format!("{} up to {left} more", Mark::Pending.symbol()),
            Style::new().fg(Color::DarkGray),
        ));
    }
    // The newest stay in view.
    let skip = lines.len().saturating_sub(height);
    let shown: Vec<Line> = lines.into_iter().skip(skip).collect();
    f.render_widget(Paragraph::new(shown).block(block), area);
}

fn draw_thought(f: &mut Frame, area: Rect, view: &ViewState, ui: &Ui) {
    let from = view
        .thought_from
        .as_deref()
        .unwrap_or("waiting for a model");
    let follow = if ui.thought_back > 0 {
        format!(" (scrolled back {}: End to follow) ", ui.thought_back)
    } else {
        String::new()
    };
    let block = Block::new()
        .borders(Borders::ALL)
        .title(format!(" Thought stream · {from} {follow}"));
    let inner = block.inner(area);
    let height = inner.height as usize;
    let width = inner.width.max(1) as usize;
    // Wrapped by hand so that the newest line is the last row, whatever wraps above it.
    let mut rows: Vec<String> = Vec::new();
    let end = view.thought.len().saturating_sub(ui.thought_back);
    for line in view.thought.iter().take(end).rev() {
        let wrapped = wrap(line, width);
        for row in wrapped.into_iter().rev() {
            rows.push(row);
        }
        if rows.len() >= height {
            break;
        }
    }
    rows.truncate(height);
    rows.reverse();
    let lines: Vec<Line> = rows
        .into_iter()
        .map(|r| {
            if r.starts_with("── ") {
                Line::styled(r, Style::new().fg(Color::DarkGray))
            } else {
                Line::raw(r)
            }
        })
        .collect();
    f.render_widget(Paragraph::new(lines).block(block), area);
}

fn draw_signs(f: &mut Frame, area: Rect, view: &ViewState) {
    let block = Block::new().borders(Borders::TOP);
    let mut lines = Vec::new();
    let tests = match &view.tests {
        None => Line::raw("tests: not run yet"),
        Some(t) => {
            let colour = if t.criteria_met {
                Color::Green
            } else {
                Color::Red
            };
            // A command whose output names no test (`test -f done.txt`) says only how it
            // ended.
            let counts = if t.passed + t.failed == 0 {
                t.summary.clone()
            } else {
                format!("{} passed, {} failed", t.passed, t.failed)
            };
            let mut spans = vec![
                Span::raw("tests: "),
                Span::styled(counts, Style::new().fg(colour)),
            ];
            if let Some(first) = &t.first_failure {
                spans.push(Span::raw(format!(" · first failure: {first}")));
            } else if !t.criteria_met {
                spans.push(Span::raw(format!(" · {}", t.summary)));
            }
            Line::from(spans)
        }
    };
    lines.push(tests);
    let mut signs = Vec::new();
    if let Some((state, reason)) = &view.breaker {
        let colour = match state {
            BreakerState::Closed => Color::Green,
            BreakerState::HalfOpen => Color::Yellow,
            BreakerState::Open => Color::Red,
        };
        signs.push(Span::raw("breaker "));
        signs.push(Span::styled(
            state.as_str(),
            Style::new().fg(colour).add_modifier(Modifier::BOLD),
        ));
        signs.push(Span::raw(format!(" ({reason})  ")));
    }
    if let Some(recall) = view.recalls.last() {
        signs.push(Span::raw(format!(
            "memory: {} recalled, {} worked, best {:.2}  ",
            recall.attempts, recall.worked, recall.best_similarity
        )));
    }
    let open = view.chaos_open().count();
    if open > 0 {
        signs.push(Span::styled(
            format!("chaos: {open} open  "),
            Style::new().fg(Color::Magenta),
        ));
    }
    if let Some((score, surviving)) = view.mutation {
        signs.push(Span::raw(format!(
            "mutation {score:.0}% ({surviving} surviving)  "
        )));
    }
    if !view.warnings.is_empty() {
        signs.push(Span::styled(
            format!("{} warnings (l)", view.warnings.len()),
            Style::new().fg(Color::Yellow),
        ));
    }
    lines.push(Line::from(signs));
    if let Some(promise) = view.finished.as_ref().and_then(|d| d.promise.as_deref()) {
        lines.push(Line::raw(promise.to_string()));
    }
    if let Some(first) = view.chaos_open().next() {
        lines.push(Line::raw(format!("chaos finding: {first}")));
    }
    f.render_widget(
        Paragraph::new(lines).block(block).wrap(Wrap { trim: true }),
        area,
    );
}

fn draw_footer(f: &mut Frame, area: Rect, view: &ViewState, ui: &Ui) {
    let keys = if view.is_finished() {
        "[l]ogs [r]eview [x] export [h]elp [q]uit"
    } else if view.paused {
        "[p] resume [a]bort [l]ogs [r]eview [x] export [h]elp [q]uit"
    } else {
        "[p]ause [a]bort [l]ogs [r]eview [x] export [h]elp [q]uit"
    };
    let models = if ui.models.is_empty() || view.is_finished() {
        ""
    } else {
        "[m]odels "
    };
    let tasks = match &ui.board {
        Some(_) if !ui.finished => "[Tab] task [s]kip [f]ollow ",
        _ => "",
    };
    // The message first: on a narrow terminal the keys (also in the help) are what is cut.
    let mut spans = Vec::new();
    if let Some(message) = &ui.message {
        spans.push(Span::styled(
            message.as_str(),
            Style::new().fg(Color::Yellow),
        ));
        spans.push(Span::raw("  "));
    }
    spans.push(Span::styled(
        format!("{tasks}{models}{keys}"),
        Style::new().fg(Color::DarkGray),
    ));
    f.render_widget(Paragraph::new(Line::from(spans)), area);
}

fn draw_modal(f: &mut Frame, area: Rect, view: &ViewState, ui: &Ui) -> usize {
    // Questions are small; what is read (help, the log, the diff) takes most of the screen.
    let popup = match ui.modal {
        Modal::Confirm(_) | Modal::Breaker { .. } | Modal::Guidance { .. } => {
            centered(area, 70, 40)
        }
        _ => centered(area, 80, 70),
    };
    let width = popup.width.saturating_sub(2).max(1) as usize;
    let (title, text, scroll): (&str, Text, usize) = match &ui.modal {
        Modal::None => return 0,
        Modal::Help => (" Help ", Text::from(help(ui.stop_means)), 0),
        Modal::Log { scroll } => {
            // Wrapped here, so that a scroll position is a row.
            let mut lines: Vec<Line> = view
                .log
                .iter()
                .flat_map(|l| wrap(l, width))
                .map(Line::raw)
                .collect();
            if let Some(path) = &ui.stderr_log {
                lines.push(Line::styled(
                    format!("(stderr during the run: {})", path.display()),
                    Style::new().fg(Color::DarkGray),
                ));
            }
            (
                " Log · j/k scroll · e open in $EDITOR · x export · Esc close ",
                Text::from(lines),
                *scroll,
            )
        }
        Modal::Diff { lines, scroll } => {
            let lines: Vec<Line> = lines
                .iter()
                .flat_map(|l| wrap(l, width))
                .map(|l| {
                    let colour = if l.starts_with('+') {
                        Color::Green
                    } else if l.starts_with('-') {
                        Color::Red
                    } else if l.starts_with("@@") {
                        Color::Cyan
                    } else {
                        Color::Reset
                    };
                    Line::styled(l, Style::new().fg(colour))
                })
                .collect();
            (
                " The change so far · j/k scroll · Esc close ",
                Text::from(lines),
                *scroll,
            )
        }
        Modal::Confirm(what) => {
            let question = match what {
                Confirm::Abort => {
                    format!("Abort the run? {}.\n\n[y] abort · [n] go on", ui.stop_means)
                }
                Confirm::Quit => format!(
                    "Quit? The run is still going and quitting stops it: {}.\n\n\
                     [y] quit · [n] go on",
                    ui.stop_means
                ),
                Confirm::Skip(i) => format!(
                    "Skip {}? A run under way ends its step and its session is saved \
                     (resumable); a task not started never starts. The next task goes on.\n\n\
                     [y] skip · [n] go on",
                    ui.task_name(*i)
                ),
            };
            (" Confirm ", Text::from(question), 0)
        }
        Modal::Breaker { stuck, raised } => {
            let text = format!(
                "The same failure ended {} iterations (threshold {}):\n{}\n\n\
                 [s] stop here · [g] go on with guidance for the Artisan · [c] go on · \
                 [r] raise the threshold to {raised}",
                stuck.seen,
                stuck.threshold,
                crate::views::state::clean(&stuck.failure)
            );
            (" Stuck ", Text::from(text), 0)
        }
        Modal::Guidance { input, .. } => (
            " Guidance for the Artisan · Enter to send · Esc to go back ",
            Text::from(format!("{input}█")),
            0,
        ),
        Modal::Models(at) => lists::models(ui, *at),
    };
    f.render_widget(Clear, popup);
    let block = Block::new()
        .borders(Borders::ALL)
        .title(title)
        .border_style(Style::new().fg(Color::Cyan));
    let inner_height = popup.height.saturating_sub(2) as usize;
    let most = text.lines.len().saturating_sub(inner_height);
    let top = scroll.min(most) as u16;
    f.render_widget(
        Paragraph::new(text)
            .block(block)
            .wrap(Wrap { trim: false })
            .scroll((top, 0)),
        popup,
    );
    most
}

fn help(stop_means: &str) -> Vec<Line<'static>> {
    [
        "p      pause before the next step; p again resumes".to_string(),
        format!("a      abort: {stop_means}"),
        "l      the log: every event as lines; e opens it in $EDITOR".into(),
        "r      review the change so far (a diff)".into(),
        "x      export the thought stream and the log to a file".into(),
        "m      change a role's model (or the agent's) from its next turn".into(),
        "s      skip the task in focus (a batch's or agent's); Tab/Shift+Tab look at another, f follows the one running".into(),
        "PgUp   scroll the thought stream back; End follows it again".into(),
        "h      this help".into(),
        "q      quit (asks while the run goes on)".into(),
        "Ctrl+C abort and quit; a second Ctrl+C kills everything and exits at once".into(),
    ]
    .into_iter()
    .map(Line::raw)
    .collect()
}

/// A rectangle `w`% by `h`% of `area`, centred.
fn centered(area: Rect, w: u16, h: u16) -> Rect {
    let [_, mid, _] = Layout::vertical([
        Constraint::Percentage((100 - h) / 2),
        Constraint::Percentage(h),
        Constraint::Percentage((100 - h) / 2),
    ])
    .areas(area);
    let [_, centre, _] = Layout::horizontal([
        Constraint::Percentage((100 - w) / 2),
        Constraint::Percentage(w),
        Constraint::Percentage((100 - w) / 2),
    ])
    .areas(mid);
    centre
}

/// The last part of a path: the header names the file, not where it lives.
fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// `line` cut into rows of at most `width` characters (at spaces where it can).
pub fn wrap(line: &str, width: usize) -> Vec<String> {
    if line.is_empty() {
        return vec![String::new()];
    }
    let mut rows = Vec::new();
    let mut row = String::new();
    let mut row_len = 0;
    for word in line.split_inclusive(' ') {
        let len = word.chars().count();
        if row_len + len > width && row_len > 0 {
            rows.push(std::mem::take(&mut row));
            row_len = 0;
        }
        if len > width {
            for c in word.chars() {
                if row_len == width {
                    rows.push(std::mem::take(&mut row));
                    row_len = 0;
                }
                row.push(c);
                row_len += 1;
            }
        } else {
            row.push_str(word);
            row_len += len;
        }
    }
    if !row.is_empty() {
        rows.push(row);
    }
    rows
}
