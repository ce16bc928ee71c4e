//! `--output json`: the final report alone, as one pretty-printed JSON document.

use std::io::Write;

use ralph_actors::events::event::Envelope;
use ralph_actors::events::event::Event;
use ralph_actors::schema::report::Report;

use crate::printers::printer::Printer;

pub struct JsonReport<W> {
    out: W,
}

impl<W: Write> JsonReport<W> {
    pub fn new(out: W) -> Self {
        Self { out }
    }
}

impl<W: Write + Send> Printer for JsonReport<W> {
    fn print(&mut self, event: &Envelope) -> std::io::Result<()> {
        match &event.event {
            Event::SessionFinished { report } => write_report(report, &mut self.out),
            Event::LoopFinished { report } => {
                serde_json::to_writer_pretty(&mut self.out, report)?;
                self.out.write_all(b"\n")?;
                self.out.flush()
            }
            _ => Ok(()),
        }
    }
}

/// `report` as pretty JSON and a line break (also `ralph-loop status --json`).
pub fn write_report(report: &Report, out: &mut impl Write) -> std::io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, report)?;
    out.write_all(b"\n")?;
    out.flush()
}
