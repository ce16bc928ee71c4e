//! When a run's model calls and test runs were in flight, for the report's timings.
//!
//! Calls overlap: the Librarian's analysis runs beside the Artisan's call, the Critic's review
//! beside the tests or beside Chaos's round. Their durations added up would count the same
//! second twice and make the orchestration overhead (the wall time less the waits) read zero,
//! so the waits are kept as spans and measured as their union.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// What a span waited on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wait {
    Call,
    Tests,
}

/// The spans of a run's waits, in the order they ended.
#[derive(Debug, Default)]
pub struct Waits {
    spans: Mutex<Vec<(Wait, Instant, Instant)>>,
}

impl Waits {
    /// A model call that started at `start` and ends now.
    pub fn call(&self, start: Instant) {
        self.push(Wait::Call, start, Instant::now());
    }

    /// A test run that took `duration` and ends now (the runner measures its own duration; its
    /// answer reaches the Supervisor as it ends).
    pub fn tests(&self, duration: Duration) {
        let end = Instant::now();
        self.push(Wait::Tests, end.checked_sub(duration).unwrap_or(end), end);
    }

    /// The time at least one model call was in flight.
    pub fn calls_ms(&self) -> u64 {
        self.covered(|w| w == Wait::Call)
    }

    /// The time at least one model call or test run was in flight.
    pub fn busy_ms(&self) -> u64 {
        self.covered(|_| true)
    }

    fn push(&self, wait: Wait, start: Instant, end: Instant) {
        let mut spans = self.spans.lock().unwrap_or_else(|e| e.into_inner());
        spans.push((wait, start, end));
    }

    /// The length of the union of the spans `keep` selects.
    fn covered(&self, keep: impl Fn(Wait) -> bool) -> u64 {
        let mut spans: Vec<(Instant, Instant)> = {
            let spans = self.spans.lock().unwrap_or_else(|e| e.into_inner());
            spans
                .iter()
                .filter(|(w, ..)| keep(*w))
                .map(|&(_, s, e)| (s, e))
                .collect()
        };
        spans.sort_unstable_by_key(|&(s, _)| s);
        let mut total = Duration::ZERO;
        let mut open: Option<(Instant, Instant)> = None;
        for (s, e) in spans {
            open = match open {
                Some((os, oe)) if s <= oe => Some((os, oe.max(e))),
                Some((os, oe)) => {
                    total += oe - os;
                    Some((s, e))
                }
                None => Some((s, e)),
            };
        }
        if let Some((os, oe)) = open {
            total += oe - os;
        }
        total.as_millis() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn overlapping_waits_count_once_and_gaps_are_left_out() {
        let waits = Waits::default();
        let t0 = Instant::now();
        let mut spans = waits.spans.lock().unwrap();
        // The Artisan 0–100, the analysis beside it 20–150, the tests 160–200 with the review
        // beside them 170–260, then a lone call 300–310.
        spans.push((Wait::Call, t0, t0 + ms(100)));
        spans.push((Wait::Call, t0 + ms(20), t0 + ms(150)));
        spans.push((Wait::Tests, t0 + ms(160), t0 + ms(200)));
        spans.push((Wait::Call, t0 + ms(170), t0 + ms(260)));
        spans.push((Wait::Call, t0 + ms(300), t0 + ms(310)));
        drop(spans);
        assert_eq!(waits.calls_ms(), 150 + 90 + 10);
        assert_eq!(waits.busy_ms(), 150 + 100 + 10);
    }

    #[test]
    fn a_test_run_ends_when_it_is_heard_of() {
        let waits = Waits::default();
        waits.tests(ms(40));
        assert_eq!(waits.busy_ms(), 40);
        assert_eq!(waits.calls_ms(), 0);
    }
}
