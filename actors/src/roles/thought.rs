//! A role's thought stream: the text a provider streams during one call, gathered into
//! [`Event::Thought`]s of whole lines (or about a tenth of a second of text), so that a view
//! sees the reply grow without an event per token.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::events::bus::EventBus;
use crate::events::event::Event;
use crate::ports::stream::Sink;
use crate::role::Role;

/// How long text may wait for the end of its line before it is sent anyway.
const GATHER: Duration = Duration::from_millis(100);

/// One call's stream, from its first piece to [`Thoughts::finish`].
pub(crate) struct Thoughts {
    inner: Arc<Mutex<Gathered>>,
}

struct Gathered {
    events: EventBus,
    iteration: u32,
    role: Role,
    pending: String,
    since: Instant,
    /// Whether any text streamed at all.
    streamed: bool,
}

impl Gathered {
    fn send(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let text = std::mem::take(&mut self.pending);
        self.events.emit(Event::Thought {
            iteration: self.iteration,
            role: self.role,
            text,
        });
    }
}

impl Thoughts {
    pub(crate) fn new(events: EventBus, iteration: u32, role: Role) -> Self {
        Self {
            inner: Arc::new(Mutex::new(Gathered {
                events,
                iteration,
                role,
                pending: String::new(),
                since: Instant::now(),
                streamed: false,
            })),
        }
    }

    /// The sink a provider's stream writes to during the call.
    pub(crate) fn sink(&self) -> Sink {
        let inner = self.inner.clone();
        Arc::new(move |text: &str| {
            let mut g = lock(&inner);
            if g.pending.is_empty() {
                g.since = Instant::now();
            }
            g.streamed = true;
            g.pending.push_str(text);
            // Whole lines go at once; a line still growing waits a little for its end.
            if let Some(end) = g.pending.rfind('\n') {
                let rest = g.pending.split_off(end + 1);
                g.send();
                g.pending = rest;
                g.since = Instant::now();
            } else if g.since.elapsed() >= GATHER {
                g.send();
            }
        })
    }

    /// The call ended: what is still gathered is sent; a reply that did not stream (a
    /// provider asked not to, a recording) is sent whole.
    pub(crate) fn finish(self, reply: Option<&str>) {
        let mut g = lock(&self.inner);
        if !g.streamed {
            if let Some(text) = reply {
                g.pending = text.to_string();
            }
        }
        g.send();
    }
}

fn lock(inner: &Mutex<Gathered>) -> std::sync::MutexGuard<'_, Gathered> {
    // Plain text and a bus: still usable after a panic in a provider.
    inner.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(sub: &mut crate::events::bus::Subscription) -> Vec<String> {
        std::iter::from_fn(|| sub.try_recv())
            .filter_map(|e| match &e.event {
                Event::Thought { text, role, .. } => {
                    assert_eq!(*role, Role::Artisan);
                    Some(text.clone())
                }
                _ => None,
            })
            .collect()
    }

    /// The Artisan's thoughts in iteration 1, and a subscription to what they send.
    fn artisan_thoughts() -> (Thoughts, crate::events::bus::Subscription) {
        let bus = EventBus::new("s");
        let sub = bus.subscribe();
        (Thoughts::new(bus, 1, Role::Artisan), sub)
    }

    #[test]
    fn streamed_text_is_sent_in_whole_lines_and_the_rest_at_the_end() {
        let (thoughts, mut sub) = artisan_thoughts();
        let sink = thoughts.sink();
        for piece in ["Sort", "ing first", ".\nThen", " the middle\nand "] {
            sink(piece);
        }
        thoughts.finish(Some("ignored: the reply streamed"));
        assert_eq!(
            texts(&mut sub),
            ["Sorting first.\n", "Then the middle\n", "and "]
        );
    }

    #[test]
    fn a_line_that_grows_slowly_is_sent_before_its_end() {
        let (thoughts, mut sub) = artisan_thoughts();
        let sink = thoughts.sink();
        sink("thinking");
        std::thread::sleep(GATHER + Duration::from_millis(10));
        sink("...");
        assert_eq!(texts(&mut sub), ["thinking..."]);
        thoughts.finish(None);
        assert!(texts(&mut sub).is_empty());
    }

    #[test]
    fn a_reply_that_did_not_stream_is_sent_whole() {
        let (thoughts, mut sub) = artisan_thoughts();
        thoughts.finish(Some("the whole reply"));
        assert_eq!(texts(&mut sub), ["the whole reply"]);
    }
}
