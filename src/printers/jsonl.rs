//! `--output jsonl`: every event as one JSON object per line, flat: the event's `type` and
//! fields beside the envelope's `session`, `seq` and `time`. The last line is
//! `session_finished` with the report.

use std::io::Write;

use ralph_actors::events::event::Envelope;

use crate::printers::printer::Printer;

pub struct JsonLines<W> {
    out: W,
}

impl<W: Write> JsonLines<W> {
    pub fn new(out: W) -> Self {
        Self { out }
    }
}

impl<W: Write + Send> Printer for JsonLines<W> {
    fn print(&mut self, event: &Envelope) -> std::io::Result<()> {
        // One buffer, one write: a line is never interleaved with another writer's.
        let mut line = serde_json::to_vec(event)?;
        line.push(b'\n');
        self.out.write_all(&line)?;
        self.out.flush()
    }
}
