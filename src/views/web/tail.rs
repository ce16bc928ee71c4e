//! A run's `events.jsonl` as server-sent events, in one of two [`Shape`]s: each line, in order,
//! with its `seq` as the event id, from just after the id a reconnecting client last saw (no
//! gap, no repeat), then each new line as the run appends it; or the run's view
//! ([`ViewState`], the one fold of the events) as JSON after each batch of lines, its id the
//! last `seq` folded in: what the dashboard's page renders.
//!
//! One [`Hub`] watches the folders of the logs being followed (inotify, one thread for all of
//! them) and wakes their readers; a reader also looks once a second, in case a change was not
//! told.

use std::collections::HashMap;
use std::convert::Infallible;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::response::sse::Event as SseEvent;
use chrono::{DateTime, Utc};
use notify::{RecursiveMode, Watcher};
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use crate::views::state::ViewState;

/// What a reader sends: one server-sent event.
pub type Item = Result<SseEvent, Infallible>;

type Bells = Arc<Mutex<HashMap<PathBuf, watch::Sender<u64>>>>;

/// What a stream sends of the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// Each line as it is (`event: ralph`).
    Events,
    /// The view folded from every line so far (`event: view`), sent at most every
    /// [`VIEW_EVERY`] while the run is live.
    View,
}

/// The shortest time between two views sent while a run is live: a model streaming its reply
/// writes many events a second, and each view sent is the whole state; about the page's own
/// frame rate, so a view that comes on its own (no other in the last 20 ms) waits for nothing.
pub const VIEW_EVERY: Duration = Duration::from_millis(20);

/// The watcher of the followed logs' folders, and the count of streams that have not yet sent
/// their run's end.
pub struct Hub {
    bells: Bells,
    watcher: Mutex<Option<notify::RecommendedWatcher>>,
    unfinished: watch::Sender<usize>,
}

impl Default for Hub {
    fn default() -> Self {
        Self::new()
    }
}

impl Hub {
    pub fn new() -> Self {
        let bells: Bells = Arc::default();
        let rung = bells.clone();
        // Without inotify, readers still look once a second.
        let watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
            let Ok(event) = event else { return };
            // Only a write: a reader opening the log is told too (an access), and must not
            // wake itself.
            if !matches!(
                event.kind,
                notify::EventKind::Modify(_)
                    | notify::EventKind::Create(_)
                    | notify::EventKind::Remove(_)
            ) {
                return;
            }
            let Ok(bells) = rung.lock() else { return };
            for path in &event.paths {
                if let Some(bell) = path.parent().and_then(|dir| bells.get(dir)) {
                    bell.send_modify(|n| *n += 1);
                }
            }
        })
        .ok();
        Self {
            bells,
            watcher: Mutex::new(watcher),
            unfinished: watch::Sender::new(0),
        }
    }

    /// Rings on every change in `dir`.
    fn bell(&self, dir: &Path) -> watch::Receiver<u64> {
        let Ok(mut bells) = self.bells.lock() else {
            return watch::Sender::new(0).subscribe();
        };
        if let Some(bell) = bells.get(dir) {
            return bell.subscribe();
        }
        let bell = watch::Sender::new(0);
        let rx = bell.subscribe();
        bells.insert(dir.to_path_buf(), bell);
        if let Ok(mut watcher) = self.watcher.lock() {
            if let Some(watcher) = watcher.as_mut() {
                let _ = watcher.watch(dir, RecursiveMode::NonRecursive);
            }
        }
        rx
    }

    /// The number of streams that have not sent their run's end yet.
    pub fn unfinished(&self) -> watch::Receiver<usize> {
        self.unfinished.subscribe()
    }

    /// Follows the log at `path` from after `after`, until `stop` or the client goes; with a
    /// `speed` (a replay), each event waits its recorded time after the one before
    /// ([`crate::views::pace`]). A [`Shape::View`] stream folds the log from its start and sends
    /// the view once it holds an event past `after`.
    pub fn follow(
        self: &Arc<Self>,
        path: PathBuf,
        shape: Shape,
        after: u64,
        speed: Option<f64>,
        stop: CancellationToken,
    ) -> mpsc::Receiver<Item> {
        let (tx, rx) = mpsc::channel(256);
        let bell = path
            .parent()
            .map(|dir| self.bell(dir))
            .unwrap_or_else(|| watch::Sender::new(0).subscribe());
        let hub = self.clone();
        let out = match shape {
            Shape::Events => Out::Events,
            Shape::View => Out::View {
                view: Box::new(ViewState::new()),
                unsent: false,
            },
        };
        let follower = Follower {
            reader: Reader::new(path, if shape == Shape::View { 0 } else { after }),
            seen: after,
            speed,
            out,
            tx,
            stop,
        };
        tokio::spawn(async move {
            hub.unfinished.send_modify(|n| *n += 1);
            follower.run(bell, &hub.unfinished).await;
        });
        rx
    }
}

/// What a stream turns the lines into.
enum Out {
    Events,
    View {
        view: Box<ViewState>,
        /// Lines past what the client saw are folded in but not sent yet.
        unsent: bool,
    },
}

impl Out {
    /// The line `seq` taken in: what to send for it now, if anything.
    fn take(&mut self, seq: u64, line: String, seen: u64) -> Option<SseEvent> {
        match self {
            Out::Events => Some(
                SseEvent::default()
                    .id(seq.to_string())
                    .event("ralph")
                    .data(line),
            ),
            Out::View { view, unsent } => {
                // A line that is not an event (a newer binary's type) is left out of the view.
                if let Ok(envelope) = serde_json::from_str(&line) {
                    view.apply(&envelope);
                    *unsent |= seq > seen;
                }
                None
            }
        }
    }

    /// The view not sent yet, if there is one.
    fn flush(&mut self) -> Option<SseEvent> {
        let Out::View { view, unsent } = self else {
            return None;
        };
        if !std::mem::take(unsent) {
            return None;
        }
        let json = serde_json::to_string(view).ok()?;
        Some(
            SseEvent::default()
                .id(view.seq.to_string())
                .event("view")
                .data(json),
        )
    }
}

/// One stream's reading of its log.
struct Follower {
    reader: Reader,
    /// The last `seq` the client has seen (from `Last-Event-ID`).
    seen: u64,
    speed: Option<f64>,
    out: Out,
    tx: mpsc::Sender<Item>,
    stop: CancellationToken,
}

impl Follower {
    /// Reads and sends until the client goes or the dashboard stops; counts the stream out of
    /// `unfinished` once it has sent its run's end.
    async fn run(mut self, mut bell: watch::Receiver<u64>, unfinished: &watch::Sender<usize>) {
        let mut counted = true;
        let mut before = None;
        loop {
            let (lines, ended) = self.reader.read_new();
            let mut sent = false;
            for (seq, time, line) in lines {
                if let Some(speed) = self.speed.filter(|_| seq > self.seen) {
                    let wait = crate::views::pace::gap(before, time, speed);
                    before = time;
                    // A timer rounds up to the next millisecond: none for no wait.
                    if !wait.is_zero() {
                        let flushed = self.out.flush();
                        if !self.send(flushed).await || !self.pause(wait).await {
                            return self.uncount(counted, unfinished);
                        }
                    }
                }
                let event = self.out.take(seq, line, self.seen);
                if !self.send(event).await {
                    return self.uncount(counted, unfinished);
                }
            }
            let flushed = self.out.flush();
            sent |= flushed.is_some();
            if !self.send(flushed).await {
                return self.uncount(counted, unfinished);
            }
            if ended && counted {
                unfinished.send_modify(|n| *n = n.saturating_sub(1));
                counted = false;
            }
            // A live view waits a little before the next, however often the log grows.
            if sent && self.speed.is_none() && !self.pause(VIEW_EVERY).await {
                return self.uncount(counted, unfinished);
            }
            if self.reader.behind() {
                continue;
            }
            tokio::select! {
                _ = bell.changed() => {}
                _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                _ = self.tx.closed() => return self.uncount(counted, unfinished),
                _ = self.stop.cancelled() => return self.uncount(counted, unfinished),
            }
        }
    }

    /// Sends `event` if there is one; false once the client has gone.
    async fn send(&self, event: Option<SseEvent>) -> bool {
        match event {
            Some(event) => self.tx.send(Ok(event)).await.is_ok(),
            None => true,
        }
    }

    /// Waits `wait`; false when the client went or the dashboard stopped meanwhile.
    async fn pause(&self, wait: Duration) -> bool {
        tokio::select! {
            _ = tokio::time::sleep(wait) => true,
            _ = self.tx.closed() => false,
            _ = self.stop.cancelled() => false,
        }
    }

    fn uncount(&self, counted: bool, unfinished: &watch::Sender<usize>) {
        if counted {
            unfinished.send_modify(|n| *n = n.saturating_sub(1));
        }
    }
}

/// A whole line of the log: its `seq`, its time, the line.
type Line = (u64, Option<DateTime<Utc>>, String);

/// The most of a log read at once: a log that grew by more is read over the next reads, which
/// come at once, so a huge log costs a follower this much memory, not its size.
const MOST_PER_READ: u64 = 8 << 20;

/// The longest line held while its end has not come: no event is near it, so a longer one is
/// dropped (its rest, when it comes, is no JSON and is skipped as a line cut short).
const LONGEST_LINE: usize = 16 << 20;

/// Where a reader is in its log.
pub(crate) struct Reader {
    path: PathBuf,
    after: u64,
    offset: u64,
    /// The start of a line not yet ended.
    partial: Vec<u8>,
    /// The last read stopped at [`MOST_PER_READ`]: more is there to read now.
    behind: bool,
}

impl Reader {
    /// A reader of `path` from its start, keeping the lines whose `seq` is past `after`.
    pub(crate) fn new(path: PathBuf, after: u64) -> Self {
        Self {
            path,
            after,
            offset: 0,
            partial: Vec::new(),
            behind: false,
        }
    }

    /// Whether the last read stopped short of the log's end.
    pub(crate) fn behind(&self) -> bool {
        self.behind
    }

    /// The whole lines appended since the last read whose `seq` is past `after` (with their
    /// time), and whether one of them ended the run. Only the bytes just read are searched for
    /// the last line end, so a line written a byte at a time costs its length.
    pub(crate) fn read_new(&mut self) -> (Vec<Line>, bool) {
        let mut bytes = Vec::new();
        let read = std::fs::File::open(&self.path).and_then(|mut file| {
            let len = file.metadata()?.len();
            if len < self.offset {
                // A new log in place of the old: read it from its start.
                self.offset = 0;
                self.partial.clear();
            }
            file.seek(SeekFrom::Start(self.offset))?;
            file.take(MOST_PER_READ).read_to_end(&mut bytes)
        });
        let Ok(n) = read else {
            self.behind = false;
            return (Vec::new(), false);
        };
        self.offset += n as u64;
        self.behind = n as u64 == MOST_PER_READ;
        let Some(last_newline) = bytes.iter().rposition(|b| *b == b'\n') else {
            self.partial.extend_from_slice(&bytes);
            if self.partial.len() > LONGEST_LINE {
                self.partial = Vec::new();
            }
            return (Vec::new(), false);
        };
        let mut whole = std::mem::replace(&mut self.partial, bytes[last_newline + 1..].to_vec());
        whole.extend_from_slice(&bytes[..=last_newline]);
        let mut lines = Vec::new();
        let mut ended = false;
        for line in String::from_utf8_lossy(&whole).lines() {
            let Ok(head) = serde_json::from_str::<Head>(line) else {
                continue; // a line cut short by a kill, or blank
            };
            if head.seq <= self.after {
                continue;
            }
            self.after = head.seq;
            ended |= matches!(head.kind.as_str(), "session_finished" | "loop_finished");
            lines.push((head.seq, head.time, line.to_string()));
        }
        (lines, ended)
    }
}

/// What a reader needs of a line.
#[derive(serde::Deserialize)]
struct Head {
    seq: u64,
    #[serde(default)]
    time: Option<DateTime<Utc>>,
    #[serde(rename = "type")]
    kind: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn lines_are_read_whole_once_each_past_the_id_given() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let mut file = std::fs::File::create(&path).unwrap();
        write!(
            file,
            "{{\"seq\":1,\"type\":\"note\"}}\n{{\"seq\":2,\"type\":\"note\"}}\n{{\"seq\":3,\"ty"
        )
        .unwrap();
        let mut reader = Reader::new(path.clone(), 1);
        let (lines, ended) = reader.read_new();
        assert_eq!(lines.iter().map(|l| l.0).collect::<Vec<_>>(), [2]);
        assert_eq!(lines[0].1, None, "no time: no wait in a replay");
        assert!(!ended);
        write!(
            file,
            "pe\":\"note\"}}\nnot json\n{{\"seq\":4,\"type\":\"session_finished\"}}\n"
        )
        .unwrap();
        let (lines, ended) = reader.read_new();
        assert_eq!(lines.iter().map(|l| l.0).collect::<Vec<_>>(), [3, 4]);
        assert!(ended);
        assert!(reader.read_new().0.is_empty());
    }
}
