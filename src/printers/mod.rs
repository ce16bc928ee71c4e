//! Renderings of the one event stream, each a [`Printer`]: a live [`human`] view on stderr,
//! [`jsonl`] (every event, one JSON line each, on stdout) and [`json`] (the final report alone).
//! A printer is a subscriber of the session's event bus; any number can watch one run.
//!
//! Adding a printer is one type that implements [`Printer`] and one arm in [`for_format`].

pub mod human;
pub mod json;
pub mod jsonl;

use std::io::Write;

use ralph_actors::events::bus::{Envelope, Subscription};
use ralph_actors::events::event::Event;
use ralph_actors::schema::report::Report;

use crate::cli::OutputFormat;

/// Renders events as they come. Writing errors are the printer's to report, never the run's:
/// a closed stdout (`| head`) must not end a run that spends money.
pub trait Printer: Send {
    fn print(&mut self, event: &Envelope) -> std::io::Result<()>;
}

/// The printer of `--output`, writing where that format belongs.
pub fn for_format(format: OutputFormat) -> Box<dyn Printer> {
    match format {
        OutputFormat::Human => Box::new(human::Human::new(Stderr)),
        OutputFormat::Jsonl => Box::new(jsonl::JsonLines::new(Stdout)),
        OutputFormat::Json => Box::new(json::JsonReport::new(Stdout)),
    }
}

/// Prints every event of `events` until the session finishes; returns the final report.
pub async fn drive(mut printer: Box<dyn Printer>, mut events: Subscription) -> Option<Report> {
    while let Some(envelope) = events.recv().await {
        // A closed stdout (`| head`) must not end the run: output errors are ignored.
        let _ = printer.print(&envelope);
        if let Event::SessionFinished { report } = &envelope.event {
            return Some((**report).clone());
        }
    }
    None
}

/// stdout, locked for each write.
pub struct Stdout;

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        std::io::stdout().lock().write(buf)
    }
    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        std::io::stdout().lock().write_all(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stdout().lock().flush()
    }
}

/// stderr, locked for each write.
pub struct Stderr;

impl Write for Stderr {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        std::io::stderr().lock().write(buf)
    }
    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        std::io::stderr().lock().write_all(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().lock().flush()
    }
}
