//! The event bus: one per session, any number of subscribers.
//!
//! Every event is stamped once, under one lock, with the session's id, a sequence number and
//! the time, and handed to every subscriber in the same order. Each subscriber has its own
//! unbounded queue: a slow printer never slows the run nor loses an event, and one that went
//! away is dropped at the next event. The bus keeps only what the report needs from the stream
//! ([`Said`]: its warnings and notes); what a view shows is folded by the view, once
//! (`views::state::ViewState` in the binary's crate), from the session's log or a subscription.

use std::sync::{Arc, Mutex, MutexGuard};

use chrono::Utc;
use tokio::sync::mpsc;

use crate::events::event::{Envelope, Event};

/// Where the run's parts emit events. Cheap to clone; every clone is the same bus.
#[derive(Debug, Clone)]
pub struct EventBus {
    inner: Arc<Mutex<Inner>>,
}

#[derive(Debug)]
struct Inner {
    session: String,
    seq: u64,
    subscribers: Vec<mpsc::UnboundedSender<Arc<Envelope>>>,
    said: Said,
}

/// The warnings and notes the run's parts emitted, in order: the report lists them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Said {
    pub warnings: Vec<String>,
    pub notes: Vec<String>,
}

impl EventBus {
    /// The bus of session `session`.
    pub fn new(session: impl Into<String>) -> Self {
        let session = session.into();
        Self {
            inner: Arc::new(Mutex::new(Inner {
                said: Said::default(),
                session,
                seq: 0,
                subscribers: Vec::new(),
            })),
        }
    }

    /// The bus of a session resumed after `seq` events: its numbering goes on from there, so
    /// the session's event log keeps one id per event.
    pub fn continuing(session: impl Into<String>, seq: u64) -> Self {
        let bus = Self::new(session);
        bus.lock().seq = seq;
        bus
    }

    /// A bus nobody subscribes to yet, for tests and callers that want only the report.
    pub fn discard() -> Self {
        Self::new("")
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A subscriber list and plain values: still usable after a panic elsewhere.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Stamps `event`, keeps it when it is a warning or a note, and hands it to every subscriber.
    pub fn emit(&self, event: Event) {
        let mut inner = self.lock();
        inner.seq += 1;
        let envelope = Arc::new(Envelope {
            session: inner.session.clone(),
            seq: inner.seq,
            time: Utc::now(),
            event,
        });
        match &envelope.event {
            Event::Warning { message } => inner.said.warnings.push(message.clone()),
            Event::Note { message } => inner.said.notes.push(message.clone()),
            _ => {}
        }
        inner
            .subscribers
            .retain(|tx| tx.send(envelope.clone()).is_ok());
    }

    /// Every event from now on.
    pub fn subscribe(&self) -> Subscription {
        self.attach(&mut self.lock())
    }

    fn attach(&self, inner: &mut Inner) -> Subscription {
        let (tx, rx) = mpsc::unbounded_channel();
        inner.subscribers.push(tx);
        Subscription { rx }
    }

    /// The warnings and notes emitted so far.
    pub fn said(&self) -> Said {
        self.lock().said.clone()
    }

    /// The number of the last event emitted (0: none yet).
    pub fn seq(&self) -> u64 {
        self.lock().seq
    }

    /// The session's id, as every envelope carries it.
    pub fn session(&self) -> String {
        self.lock().session.clone()
    }
}

/// One subscriber's queue. It ends when every clone of the bus is gone.
#[derive(Debug)]
pub struct Subscription {
    rx: mpsc::UnboundedReceiver<Arc<Envelope>>,
}

impl Subscription {
    /// The next event, waiting for it; `None` once the bus is gone and the queue is empty.
    pub async fn recv(&mut self) -> Option<Arc<Envelope>> {
        self.rx.recv().await
    }

    /// The next event if one is queued.
    pub fn try_recv(&mut self) -> Option<Arc<Envelope>> {
        self.rx.try_recv().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn warning(n: u32) -> Event {
        Event::Warning {
            message: format!("w{n}"),
        }
    }

    #[test]
    fn every_subscriber_sees_every_event_in_order_stamped() {
        let bus = EventBus::new("s-1");
        let mut a = bus.subscribe();
        let mut b = bus.clone().subscribe();
        for n in 0..3 {
            bus.emit(warning(n));
        }
        for sub in [&mut a, &mut b] {
            let seqs: Vec<u64> = std::iter::from_fn(|| sub.try_recv())
                .map(|e| {
                    assert_eq!(e.session, "s-1");
                    e.seq
                })
                .collect();
            assert_eq!(seqs, [1, 2, 3]);
        }
    }

    #[test]
    fn the_warnings_and_notes_are_kept_for_the_report_in_order() {
        let bus = EventBus::new("s-2");
        bus.emit(warning(1));
        bus.emit(Event::Note {
            message: "n1".into(),
        });
        bus.emit(Event::Paused { iteration: 1 });
        bus.emit(warning(2));
        let said = bus.said();
        assert_eq!(said.warnings, ["w1", "w2"]);
        assert_eq!(said.notes, ["n1"]);
        assert_eq!(bus.seq(), 4);
    }

    #[test]
    fn a_dropped_subscriber_is_forgotten_and_the_run_goes_on() {
        let bus = EventBus::discard();
        drop(bus.subscribe());
        bus.emit(warning(1));
        assert_eq!(bus.lock().subscribers.len(), 0);
        assert_eq!(bus.seq(), 1);
    }

    #[test]
    fn envelopes_serialise_flat() {
        let bus = EventBus::new("s-3");
        let mut sub = bus.subscribe();
        bus.emit(warning(7));
        let e = sub.try_recv().expect("an event");
        let json = serde_json::to_value(&*e).expect("serialises");
        assert_eq!(json["type"], "warning");
        assert_eq!(json["message"], "w7");
        assert_eq!(json["session"], "s-3");
        assert_eq!(json["seq"], 1);
        let back: Envelope = serde_json::from_value(json).expect("reads back");
        assert_eq!(back, *e);
    }
}
