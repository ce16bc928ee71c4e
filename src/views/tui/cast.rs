//! A session as an asciicast v3 recording of the TUI (`ralph-loop replay --export x.cast`):
//! the view's frames, drawn as the events came, as the bytes a terminal would have been sent,
//! each after its recorded wait ([`crate::views::pace`]). `asciinema play` plays it.

use std::io::Write;

use chrono::{DateTime, Utc};
use ralph_actors::events::event::Envelope;
use ratatui::backend::CrosstermBackend;
use ratatui::layout::Rect;
use ratatui::{Terminal, TerminalOptions, Viewport};

use crate::views::pace;
use crate::views::state::ViewState;
use crate::views::tui::draw;
use crate::views::tui::ui::Ui;

/// The recording's terminal: the size the TUI is designed for.
pub const COLS: u16 = 100;
pub const ROWS: u16 = 30;

/// The recording of `events` at `speed`, titled `title`.
pub fn record(events: &[Envelope], speed: f64, title: &str) -> std::io::Result<String> {
    let area = Rect::new(0, 0, COLS, ROWS);
    let screen = Sink::default();
    let mut terminal = Terminal::with_options(
        CrosstermBackend::new(screen.clone()),
        TerminalOptions {
            viewport: Viewport::Fixed(area),
        },
    )?;
    let started = events.first().map_or_else(Utc::now, |e| e.time);
    let mut out = Vec::new();
    let header = serde_json::json!({
        "version": 3,
        "term": {"cols": COLS, "rows": ROWS, "type": "xterm-256color"},
        "timestamp": started.timestamp(),
        "title": title,
    });
    writeln!(out, "{header}")?;
    let mut view = ViewState::new();
    let mut ui = Ui::new(None);
    let mut before: Option<DateTime<Utc>> = None;
    // The screen cleared and the cursor hidden, as the TUI starts.
    let mut pending = String::from("\x1b[2J\x1b[H\x1b[?25l");
    let mut wait = 0.0;
    for (i, event) in events.iter().enumerate() {
        view.apply(event);
        ui.finished = i + 1 == events.len();
        // Events of one instant make one frame, as in the live view.
        let next_at = events.get(i + 1).map(|e| e.time);
        wait += pace::gap(before, Some(event.time), speed).as_secs_f64();
        before = Some(event.time);
        if next_at == Some(event.time) {
            continue;
        }
        terminal.draw(|f| {
            draw::frame(f, &view, &ui, event.time);
        })?;
        pending.push_str(&screen.take());
        let line = serde_json::json!([round(wait), "o", std::mem::take(&mut pending)]);
        writeln!(out, "{line}")?;
        wait = 0.0;
    }
    // The terminal as it was: the cursor shown again.
    writeln!(out, "{}", serde_json::json!([0.5, "o", "\x1b[?25h"]))?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// What the view wrote to its terminal since the last look.
#[derive(Clone, Default)]
struct Sink(std::rc::Rc<std::cell::RefCell<Vec<u8>>>);

impl Sink {
    fn take(&self) -> String {
        String::from_utf8_lossy(&std::mem::take(&mut *self.0.borrow_mut())).into_owned()
    }
}

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.borrow_mut().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Milliseconds are enough.
fn round(secs: f64) -> f64 {
    (secs * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recorded_session_is_a_valid_asciicast_v3_that_ends_on_its_outcome() {
        let log = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("src/views/tui/testdata/median-js.events.jsonl");
        let (events, _) = crate::printers::event_log::read(&log).unwrap();
        let cast = record(&events, 1.0, "median").unwrap();
        let lines: Vec<serde_json::Value> = cast
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines[0]["version"], 3);
        assert_eq!(lines[0]["term"]["cols"], COLS);
        let frames = &lines[1..];
        assert!(frames.len() > 5, "{}", frames.len());
        let mut screen = vt100::Parser::new(ROWS, COLS, 0);
        let mut total = 0.0;
        for frame in frames {
            assert_eq!(frame[1], "o");
            let wait = frame[0].as_f64().unwrap();
            assert!(
                (0.0..=pace::LONGEST_GAP.as_secs_f64()).contains(&wait),
                "{wait}"
            );
            total += wait;
            screen.process(frame[2].as_str().unwrap().as_bytes());
        }
        // The session took about three seconds; so does its recording.
        assert!((1.0..10.0).contains(&total), "{total}");
        let shown = screen.screen().contents();
        assert!(shown.contains("RALPH LOOP"), "{shown}");
        assert!(shown.contains("finished: success"), "{shown}");
        assert!(!screen.screen().hide_cursor());
        // At speed 0: the same frames, no waiting.
        let fast = record(&events, 0.0, "median").unwrap();
        assert!(fast
            .lines()
            .skip(1)
            .all(
                |l| serde_json::from_str::<serde_json::Value>(l).unwrap()[0] == 0.0
                    || l.contains("?25h")
            ));
    }
}
