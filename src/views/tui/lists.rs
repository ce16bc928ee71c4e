//! The lists drawn beside and over the run: a batch's or agent's tasks, and the model picker's
//! overlay. Pure, as [`super::draw`] is.

use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span, Text};
use ratatui::widgets::{Block, Borders, Paragraph};
use ratatui::Frame;

use crate::views::board::Board;
use crate::views::state::Mark;
use crate::views::tui::picker::Cursor;
use crate::views::tui::ui::Ui;

/// A batch's or agent's tasks, the one in focus marked, the newest kept in view.
pub fn tasks(f: &mut Frame, area: Rect, board: &Board, focus: Option<usize>) {
    let (done, all) = board.done();
    let money = match board.cap {
        Some(cap) => format!("${:.4} of ${cap:.2}", board.spent()),
        None => format!("${:.4}", board.spent()),
    };
    let block = Block::new()
        .borders(Borders::ALL)
        .title(format!(" Tasks {done}/{all} done · {money} "));
    let height = area.height.saturating_sub(2) as usize;
    let lines: Vec<Line> = board
        .tasks
        .iter()
        .enumerate()
        .map(|(i, task)| {
            let colour = mark_colour(task.mark);
            let chosen = Some(i) == focus;
            let mut spans = vec![
                Span::raw(if chosen { "›" } else { " " }),
                Span::styled(format!("{} ", task.mark.symbol()), Style::new().fg(colour)),
                Span::styled(
                    task.name.clone(),
                    if chosen {
                        Style::new().add_modifier(Modifier::BOLD)
                    } else {
                        Style::new()
                    },
                ),
            ];
            if task.cost_usd > 0.0 {
                spans.push(Span::raw(format!(" ${:.4}", task.cost_usd)));
            }
            if !task.detail.is_empty() {
                spans.push(Span::styled(
                    format!(" {}", task.detail),
                    Style::new().fg(Color::DarkGray),
                ));
            }
            Line::from(spans)
        })
        .collect();
    // The task in focus stays in view.
    let skip = focus.map_or(lines.len(), |i| i + 1).saturating_sub(height);
    let shown: Vec<Line> = lines.into_iter().skip(skip).collect();
    f.render_widget(Paragraph::new(shown).block(block), area);
}

pub fn mark_colour(mark: Mark) -> Color {
    match mark {
        Mark::Done => Color::Green,
        Mark::Failed => Color::Red,
        Mark::Running => Color::Cyan,
        Mark::Paused => Color::Yellow,
        Mark::Skipped | Mark::Pending => Color::DarkGray,
    }
}

/// The picker's overlay: who may change model, or the choices of the one opened.
pub fn models(ui: &Ui, at: Cursor) -> (&'static str, Text<'static>, usize) {
    let picked = Style::new().add_modifier(Modifier::REVERSED);
    let dim = Style::new().fg(Color::DarkGray);
    let Some(row) = ui.models.get(at.row) else {
        return (" Models ", Text::default(), 0);
    };
    let Some(choice) = at.choice else {
        let width = ui.models.iter().map(|r| r.who.len()).max().unwrap_or(0);
        let lines = ui.models.iter().enumerate().map(|(i, r)| {
            let (mark, style) = if i == at.row {
                ("›", picked)
            } else {
                (" ", Style::new())
            };
            let mut spans = vec![Span::styled(
                format!("{mark} {:width$}  {} ", r.who, r.now),
                style,
            )];
            if let Some(note) = &r.note {
                spans.push(Span::styled(format!(" {note}"), dim));
            }
            Line::from(spans)
        });
        return (
            " Models · ↑↓ choose · Enter change · Esc close ",
            Text::from(lines.collect::<Vec<_>>()),
            0,
        );
    };
    let mut lines = vec![
        Line::raw(format!("The {}'s model, from its next turn:", row.who)),
        Line::raw(""),
    ];
    lines.extend(row.choices.iter().enumerate().map(|(i, model)| {
        let now = if *model == row.now { "  (now)" } else { "" };
        let (mark, style) = if i == choice {
            ("›", picked)
        } else {
            (" ", Style::new())
        };
        Line::styled(format!("{mark} {model}{now} "), style)
    }));
    // The choice under the cursor stays in view.
    let scroll = (choice + 2).saturating_sub(8);
    (
        " Change model · ↑↓ choose · Enter switch · Esc back ",
        Text::from(lines),
        scroll,
    )
}
