//! What every printer is: a [`Printer`] that renders events as a subscriber of the session's
//! bus, [`drive`]n until the session finishes, writing to stdout or stderr (each write takes the
//! stream's lock, as [`std::io::Stdout`] and [`std::io::Stderr`] do).

use ralph_actors::events::bus::Subscription;
use ralph_actors::events::event::{Envelope, Event};
use ralph_actors::schema::report::Report;

/// Renders events as they come. Writing errors are the printer's to report, never the run's:
/// a closed stdout (`| head`) must not end a run that spends money.
pub trait Printer: Send {
    fn print(&mut self, event: &Envelope) -> std::io::Result<()>;
}

/// Prints every event of `events` until the session (or the agent loop) finishes; returns the
/// session's final report.
pub async fn drive(mut printer: Box<dyn Printer>, mut events: Subscription) -> Option<Report> {
    while let Some(envelope) = events.recv().await {
        // A closed stdout (`| head`) must not end the run: output errors are ignored.
        let _ = printer.print(&envelope);
        match &envelope.event {
            Event::SessionFinished { report } => return Some((**report).clone()),
            Event::LoopFinished { .. } => return None,
            _ => {}
        }
    }
    None
}
