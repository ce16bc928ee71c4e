//! The wait before restarting an agent that crashed or hung: `regent.retry_backoff_seconds`
//! first, doubling after each failure in a row, with jitter (so loops restarted together do not
//! hit a provider together), never above `regent.max_backoff_seconds`. A finished run starts
//! the sequence again.

use std::time::Duration;

use backon::{BackoffBuilder, ExponentialBackoff, ExponentialBuilder};

#[derive(Debug)]
pub struct Backoff {
    first: Duration,
    cap: Duration,
    delays: ExponentialBackoff,
}

impl Backoff {
    pub fn new(first: Duration, cap: Duration) -> Self {
        let cap = cap.max(first);
        Self {
            first,
            cap,
            delays: build(first, cap),
        }
    }

    /// The wait before the next restart.
    pub fn next_delay(&mut self) -> Duration {
        // backon adds its jitter (up to the delay again) after its own cap: cap it again.
        self.delays.next().unwrap_or(self.cap).min(self.cap)
    }

    /// After a run that finished: the next failure waits the first delay again.
    pub fn reset(&mut self) {
        self.delays = build(self.first, self.cap);
    }
}

fn build(first: Duration, cap: Duration) -> ExponentialBackoff {
    ExponentialBuilder::new()
        .with_min_delay(first)
        .with_factor(2.0)
        .with_max_delay(cap)
        .without_max_times()
        .with_jitter()
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_with_jitter_within_the_cap_and_starts_again_after_a_reset() {
        let first = Duration::from_millis(100);
        let cap = Duration::from_millis(1000);
        let mut backoff = Backoff::new(first, cap);
        let delays: Vec<Duration> = (0..8).map(|_| backoff.next_delay()).collect();
        // Each delay is the doubled base plus up to as much again, never above the cap.
        for (i, d) in delays.iter().enumerate() {
            let base = (first * 2u32.pow(i as u32)).min(cap);
            assert!(*d >= base && *d <= (base * 2).min(cap), "{i}: {d:?}");
        }
        assert_eq!(delays[7], cap);
        backoff.reset();
        let again = backoff.next_delay();
        assert!(again >= first && again <= first * 2, "{again:?}");
    }
}
