//! The event bus: one per session, any number of subscribers.
//!
//! Every event is stamped once, under one lock, with the session's id, a sequence number and
//! the time, folded into the bus's [`Snapshot`], and handed to every subscriber in the same
//! order. Each subscriber has its own unbounded queue: a slow printer never slows the run nor
//! loses an event, and one that went away is dropped at the next event. A subscriber that
//! joins late (a view opened mid-run) starts from the snapshot and continues with the events
//! after it, without a gap or a repeat.

use std::sync::{Arc, Mutex, MutexGuard};

use chrono::Utc;
use tokio::sync::mpsc;

use crate::events::event::{Envelope, Event};
use crate::events::snapshot::Snapshot;

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
    snapshot: Snapshot,
}

impl EventBus {
    /// The bus of session `session`.
    pub fn new(session: impl Into<String>) -> Self {
        let session = session.into();
        Self {
            inner: Arc::new(Mutex::new(Inner {
                snapshot: Snapshot::new(&session),
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
        // A subscriber list and a fold of plain values: still usable after a panic elsewhere.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Stamps `event`, folds it into the snapshot and hands it to every subscriber.
    pub fn emit(&self, event: Event) {
        let mut inner = self.lock();
        inner.seq += 1;
        let envelope = Arc::new(Envelope {
            session: inner.session.clone(),
            seq: inner.seq,
            time: Utc::now(),
            event,
        });
        inner.snapshot.apply(&envelope);
        inner
            .subscribers
            .retain(|tx| tx.send(envelope.clone()).is_ok());
    }

    /// Every event from now on.
    pub fn subscribe(&self) -> Subscription {
        self.attach(&mut self.lock())
    }

    /// The state so far and every event after it: what a view opened mid-run starts from.
    pub fn subscribe_with_snapshot(&self) -> (Snapshot, Subscription) {
        let mut inner = self.lock();
        let subscription = self.attach(&mut inner);
        (inner.snapshot.clone(), subscription)
    }

    fn attach(&self, inner: &mut Inner) -> Subscription {
        let (tx, rx) = mpsc::unbounded_channel();
        inner.subscribers.push(tx);
        Subscription { rx }
    }

    /// The state of the session as the events so far tell it.
    pub fn snapshot(&self) -> Snapshot {
        self.lock().snapshot.clone()
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
    fn a_late_subscriber_starts_from_the_snapshot_without_gap_or_repeat() {
        let bus = EventBus::new("s-2");
        let mut early = bus.subscribe();
        bus.emit(warning(1));
        bus.emit(warning(2));
        let (snapshot, mut late) = bus.subscribe_with_snapshot();
        bus.emit(warning(3));
        assert_eq!(snapshot.seq, 2);
        assert_eq!(snapshot.warnings, ["w1", "w2"]);
        let after: Vec<u64> = std::iter::from_fn(|| late.try_recv())
            .map(|e| e.seq)
            .collect();
        assert_eq!(after, [3]);
        // The snapshot and what followed fold to what the early subscriber saw.
        let mut folded = snapshot;
        let mut all = Snapshot::new("s-2");
        while let Some(e) = early.try_recv() {
            all.apply(&e);
            if e.seq > folded.seq {
                folded.apply(&e);
            }
        }
        assert_eq!(folded, all);
    }

    #[test]
    fn a_dropped_subscriber_is_forgotten_and_the_run_goes_on() {
        let bus = EventBus::discard();
        drop(bus.subscribe());
        bus.emit(warning(1));
        assert_eq!(bus.lock().subscribers.len(), 0);
        assert_eq!(bus.snapshot().seq, 1);
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
