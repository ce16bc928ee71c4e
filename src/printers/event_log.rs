//! The session's event log, `events.jsonl` in its folder: every event as `--output jsonl`
//! prints it, one line each, written as it happens. What `ralph-loop dashboard` shows of
//! sessions it did not start and what `ralph-loop replay` plays back.
//!
//! A resumed session appends to the same file, its numbering going on from the last line
//! ([`last_seq`]), so an event's `seq` names it in the whole log.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::Path;

use ralph_actors::events::event::Envelope;

use crate::printers::printer::Printer;

/// The log's file name in a session's folder.
pub const FILE: &str = "events.jsonl";

/// Appends every event to the log.
pub struct EventLog {
    file: File,
}

impl EventLog {
    /// The log at `path`, created or appended to.
    pub fn append(path: &Path) -> std::io::Result<Self> {
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .read(true)
            .open(path)?;
        // A run killed in the middle of a line left it unended: the next line starts afresh.
        let len = file.seek(SeekFrom::End(0))?;
        if len > 0 {
            let mut last = [0u8; 1];
            file.seek(SeekFrom::Start(len - 1))?;
            file.read_exact(&mut last)?;
            if last[0] != b'\n' {
                file.write_all(b"\n")?;
            }
        }
        Ok(Self { file })
    }
}

impl Printer for EventLog {
    fn print(&mut self, event: &Envelope) -> std::io::Result<()> {
        // One write per line, unbuffered: a reader tailing the file (the dashboard of another
        // process) sees each event whole as soon as it happens.
        let mut line = serde_json::to_vec(event)?;
        line.push(b'\n');
        self.file.write_all(&line)
    }
}

/// The `seq` of the log's last whole line; 0 for a log that is missing or empty.
pub fn last_seq(path: &Path) -> u64 {
    last_line(path)
        .and_then(|line| serde_json::from_str::<SeqOnly>(&line).ok())
        .map_or(0, |last| last.seq)
}

/// The log's last whole line (an event that reads); `None` for a log that is missing or empty.
pub fn last_line(path: &Path) -> Option<String> {
    let mut file = File::open(path).ok()?;
    // The last line is near the end; a final report can be long, so read back until one whole
    // line is found.
    let len = file.seek(SeekFrom::End(0)).ok()?;
    let mut back = 64 * 1024u64;
    loop {
        let from = len.saturating_sub(back);
        let mut tail = Vec::new();
        file.seek(SeekFrom::Start(from)).ok()?;
        file.read_to_end(&mut tail).ok()?;
        let text = String::from_utf8_lossy(&tail);
        let whole = text
            .lines()
            .skip(usize::from(from > 0))
            .filter(|l| serde_json::from_str::<SeqOnly>(l).is_ok())
            .last();
        match whole {
            Some(last) => return Some(last.to_string()),
            None if from == 0 => return None,
            None => back *= 4,
        }
    }
}

#[derive(serde::Deserialize)]
struct SeqOnly {
    seq: u64,
}

/// Every event of the log at `path`, in order. A line that does not read (a run killed in the
/// middle of writing it, even inside a character) is skipped, and counted in the second value.
pub fn read(path: &Path) -> std::io::Result<(Vec<Envelope>, usize)> {
    let file = File::open(path)?;
    let mut events = Vec::new();
    let mut unread = 0;
    // Bytes, not text: a line cut inside a character by a kill is one unread line, not an
    // error for the whole log.
    for line in BufReader::new(file).split(b'\n') {
        let line = line?;
        if line.trim_ascii().is_empty() {
            continue;
        }
        match serde_json::from_slice::<Envelope>(&line) {
            Ok(e) => events.push(e),
            Err(_) => unread += 1,
        }
    }
    Ok((events, unread))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ralph_actors::events::bus::EventBus;
    use ralph_actors::events::event::Event;

    fn warning(n: u32) -> Event {
        Event::Warning {
            message: format!("w{n}"),
        }
    }

    /// `events` emitted on `bus` and each written to the log at `path`, appended to.
    fn log_to(path: &Path, bus: &EventBus, events: impl IntoIterator<Item = Event>) {
        let mut sub = bus.subscribe();
        for e in events {
            bus.emit(e);
        }
        let mut log = EventLog::append(path).expect("opens");
        while let Some(e) = sub.try_recv() {
            log.print(&e).expect("writes");
        }
    }

    #[test]
    fn a_resumed_session_appends_and_numbers_on() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(FILE);
        assert_eq!(last_seq(&path), 0);
        for run in 0..2 {
            let bus = EventBus::continuing("s", last_seq(&path));
            log_to(&path, &bus, (0..3).map(|n| warning(run * 3 + n)));
        }
        let (events, unread) = read(&path).expect("reads");
        assert_eq!(unread, 0);
        let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, [1, 2, 3, 4, 5, 6]);
        assert_eq!(last_seq(&path), 6);
    }

    #[test]
    fn a_line_cut_short_is_skipped_and_counted() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(FILE);
        log_to(&path, &EventBus::new("s"), [warning(1)]);
        let mut f = OpenOptions::new().append(true).open(&path).expect("opens");
        f.write_all(b"{\"session\":\"s\",\"seq\":2,\"ti")
            .expect("writes");
        let (events, unread) = read(&path).expect("reads");
        assert_eq!((events.len(), unread), (1, 1));
        assert_eq!(last_seq(&path), 1);
        // The resumed run's lines start on a line of their own.
        log_to(&path, &EventBus::continuing("s", 1), [warning(2)]);
        let (events, unread) = read(&path).expect("reads");
        assert_eq!((events.len(), unread), (2, 1));
        assert_eq!(last_seq(&path), 2);
    }

    /// Found reading the parsers for the fuzz targets: a kill inside a character made the
    /// whole log unreadable (`lines()` fails on bytes that are not UTF-8).
    #[test]
    fn a_line_cut_inside_a_character_is_one_unread_line() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(FILE);
        log_to(&path, &EventBus::new("s"), [warning(1)]);
        let mut f = OpenOptions::new().append(true).open(&path).expect("opens");
        f.write_all(b"{\"session\":\"s\",\"seq\":2,\"message\":\"caf\xC3")
            .expect("writes");
        log_to(&path, &EventBus::continuing("s", 1), [warning(2)]);
        let (events, unread) = read(&path).expect("reads");
        assert_eq!((events.len(), unread), (2, 1));
    }

    #[test]
    fn the_last_seq_is_found_behind_a_long_last_line() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(FILE);
        let long = Event::Warning {
            message: "x".repeat(200_000),
        };
        log_to(&path, &EventBus::new("s"), [warning(1), long]);
        assert_eq!(last_seq(&path), 2);
    }
}
