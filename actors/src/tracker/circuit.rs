//! The agent loop's circuit breaker: CLOSED while iterations make progress, HALF_OPEN after
//! `half_open_after` iterations without (the next iteration is a probe, and only one), OPEN
//! after `open_after`, or when the same error comes back `same_error` times in a row, or the
//! tests have failed `tests_failing` iterations in a row. Progress is measured by the loop
//! (files changed in git, tasks checked off, tests newly passing), never taken from the agent.
//!
//! An OPEN breaker admits no iteration. With a cooldown configured, it turns HALF_OPEN once the
//! cooldown has passed, for one probe: progress closes it, none opens it again with the cooldown
//! doubled, and a probe that fails with the cooldown at its cap stops the loop for good (until
//! `ralph-loop breaker reset`). Without a cooldown, OPEN stops the loop at once. The breaker is
//! saved with the Regent's state, so a loop started again finds it as it was left.

use serde::{Deserialize, Serialize};

/// The breaker's three states.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum State {
    Closed,
    HalfOpen,
    Open,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Closed => "CLOSED",
            State::HalfOpen => "HALF_OPEN",
            State::Open => "OPEN",
        }
    }
}

/// Why the breaker is in its state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    NormalOperation,
    NoProgressWarning,
    NoProgressOpen,
    SameErrorRepeated,
    TestsFailingTooLong,
    ProgressDetected,
    CooldownElapsed,
    ProbeFailed,
    ManualReset,
}

impl Reason {
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::NormalOperation => "normal_operation",
            Reason::NoProgressWarning => "no_progress_warning",
            Reason::NoProgressOpen => "no_progress_open",
            Reason::SameErrorRepeated => "same_error_repeated",
            Reason::TestsFailingTooLong => "tests_failing_too_long",
            Reason::ProgressDetected => "progress_detected",
            Reason::CooldownElapsed => "cooldown_elapsed",
            Reason::ProbeFailed => "probe_failed",
            Reason::ManualReset => "manual_reset",
        }
    }
}

/// When the breaker trips (`regent.breaker` in config).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Thresholds {
    /// Iterations without progress before HALF_OPEN.
    pub half_open_after: u32,
    /// Iterations without progress before OPEN.
    pub open_after: u32,
    /// The same error this many iterations in a row opens the breaker.
    pub same_error: u32,
    /// Failing tests this many iterations in a row open the breaker.
    pub tests_failing: u32,
    /// Seconds an OPEN breaker waits before its probe; 0: OPEN stops the loop.
    pub cooldown_seconds: u64,
    /// The cooldown doubles after each failed probe, up to this.
    pub max_cooldown_seconds: u64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            half_open_after: 2,
            open_after: 3,
            same_error: 3,
            tests_failing: 5,
            cooldown_seconds: 0,
            max_cooldown_seconds: 3600,
        }
    }
}

/// What one iteration showed, as the loop measured it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observed {
    pub iteration: u32,
    /// Files changed, tasks checked off or tests newly passing.
    pub progress: bool,
    /// The failure's fingerprint when the tests failed (the entropy breaker's).
    pub error: Option<String>,
    pub tests_failing: bool,
}

/// May the next iteration run?
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    Run,
    /// HALF_OPEN: this iteration is the one probe.
    Probe,
    /// OPEN, cooling down: wait this many milliseconds, then ask again.
    Wait(u64),
    /// OPEN with no cooldown left: the loop stops.
    Stop,
}

/// A change of state, for the log and the event stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transition {
    pub from: State,
    pub to: State,
    pub reason: Reason,
}

/// The breaker and its counters, as saved in `.ralph/regent-state.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Breaker {
    pub state: State,
    pub reason: Reason,
    pub consecutive_no_progress: u32,
    pub consecutive_same_error: u32,
    pub consecutive_tests_failing: u32,
    pub last_progress_iteration: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// Milliseconds since the Unix epoch.
    pub last_transition_at: i64,
    /// The cooldown the current OPEN waits (ms); doubled by each failed probe.
    #[serde(default)]
    pub cooldown_ms: u64,
}

impl Breaker {
    pub fn new(now_ms: i64) -> Breaker {
        Breaker {
            state: State::Closed,
            reason: Reason::NormalOperation,
            consecutive_no_progress: 0,
            consecutive_same_error: 0,
            consecutive_tests_failing: 0,
            last_progress_iteration: 0,
            last_error: None,
            last_transition_at: now_ms,
            cooldown_ms: 0,
        }
    }

    /// Closes the breaker and clears its counters (`ralph-loop breaker reset`).
    pub fn reset(&mut self, now_ms: i64) -> Transition {
        let from = self.state;
        *self = Breaker::new(now_ms);
        self.reason = Reason::ManualReset;
        Transition {
            from,
            to: State::Closed,
            reason: Reason::ManualReset,
        }
    }

    /// Asked before each iteration.
    pub fn admit(&mut self, t: &Thresholds, now_ms: i64) -> (Admission, Option<Transition>) {
        match self.state {
            State::Closed => (Admission::Run, None),
            State::HalfOpen => (Admission::Probe, None),
            State::Open if t.cooldown_seconds == 0 || self.cooldown_ms == 0 => {
                (Admission::Stop, None)
            }
            State::Open => {
                let waited = u64::try_from(now_ms - self.last_transition_at).unwrap_or(0);
                if waited >= self.cooldown_ms {
                    let moved = self.go(State::HalfOpen, Reason::CooldownElapsed, now_ms);
                    (Admission::Probe, moved)
                } else {
                    (Admission::Wait(self.cooldown_ms - waited), None)
                }
            }
        }
    }

    /// Records an iteration's outcome; returns the transition it caused, if any.
    pub fn record(&mut self, seen: &Observed, t: &Thresholds, now_ms: i64) -> Option<Transition> {
        let probing = self.state == State::HalfOpen;
        self.consecutive_same_error = match (&seen.error, &self.last_error) {
            (Some(now), Some(before)) if now == before => self.consecutive_same_error + 1,
            (Some(_), _) => 1,
            (None, _) => 0,
        };
        self.last_error = seen.error.clone();
        self.consecutive_tests_failing = if seen.tests_failing {
            self.consecutive_tests_failing + 1
        } else {
            0
        };
        if seen.progress {
            self.consecutive_no_progress = 0;
            self.last_progress_iteration = seen.iteration;
        } else {
            self.consecutive_no_progress += 1;
        }
        let reopen = |s: &mut Breaker, reason| {
            // A probe that failed doubles the cooldown, up to its cap; at the cap the loop
            // stops (no cooldown is left to wait).
            s.cooldown_ms = if !probing || s.cooldown_ms == 0 {
                t.cooldown_seconds * 1000
            } else if s.cooldown_ms >= t.max_cooldown_seconds * 1000 {
                0
            } else {
                (s.cooldown_ms * 2).min(t.max_cooldown_seconds * 1000)
            };
            s.go(State::Open, reason, now_ms)
        };
        if self.consecutive_same_error >= t.same_error.max(1) {
            return reopen(self, Reason::SameErrorRepeated);
        }
        if self.consecutive_tests_failing >= t.tests_failing.max(1) {
            return reopen(self, Reason::TestsFailingTooLong);
        }
        if seen.progress {
            return self.go(State::Closed, Reason::ProgressDetected, now_ms);
        }
        // A probe after a cooldown that fails says so; the probe HALF_OPEN admits on the way
        // from CLOSED fails as the seed's third iteration without progress.
        if probing && self.reason == Reason::CooldownElapsed {
            return reopen(self, Reason::ProbeFailed);
        }
        if probing || self.consecutive_no_progress >= t.open_after.max(1) {
            return reopen(self, Reason::NoProgressOpen);
        }
        if self.consecutive_no_progress >= t.half_open_after.max(1) {
            return self.go(State::HalfOpen, Reason::NoProgressWarning, now_ms);
        }
        None
    }

    fn go(&mut self, to: State, reason: Reason, now_ms: i64) -> Option<Transition> {
        let from = self.state;
        if from == to {
            return None;
        }
        self.state = to;
        self.reason = reason;
        self.last_transition_at = now_ms;
        if to == State::Closed {
            self.cooldown_ms = 0;
        }
        Some(Transition { from, to, reason })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn seen(iteration: u32, progress: bool) -> Observed {
        Observed {
            iteration,
            progress,
            error: None,
            tests_failing: false,
        }
    }

    fn states(b: &mut Breaker, t: &Thresholds, progress: &[bool]) -> Vec<State> {
        progress
            .iter()
            .enumerate()
            .map(|(i, p)| {
                b.record(&seen(i as u32 + 1, *p), t, 0);
                b.state
            })
            .collect()
    }

    #[test]
    fn no_progress_goes_closed_half_open_open_and_progress_closes() {
        let t = Thresholds::default();
        let mut b = Breaker::new(0);
        use State::*;
        assert_eq!(
            states(&mut b, &t, &[false, false, true]),
            [Closed, HalfOpen, Closed]
        );
        assert_eq!(b.reason, Reason::ProgressDetected);
        assert_eq!(
            states(&mut b, &t, &[false, false, false]),
            [Closed, HalfOpen, Open]
        );
        assert_eq!(b.reason, Reason::NoProgressOpen);
        assert_eq!(b.admit(&t, 0).0, Admission::Stop, "no cooldown: OPEN stops");
        let moved = b.reset(5);
        assert_eq!((moved.from, moved.to), (Open, Closed));
        assert_eq!(
            (b.state, b.reason, b.consecutive_no_progress),
            (Closed, Reason::ManualReset, 0)
        );
    }

    /// HALF_OPEN admits one probe; without a HALF_OPEN step (thresholds equal) OPEN comes
    /// straight from CLOSED.
    #[test]
    fn half_open_admits_exactly_one_probe_and_thresholds_are_configurable() {
        let t = Thresholds::default();
        let mut b = Breaker::new(0);
        states(&mut b, &t, &[false, false]);
        assert_eq!(b.admit(&t, 0).0, Admission::Probe);
        b.record(&seen(3, false), &t, 0);
        assert_eq!(b.state, State::Open);

        let t = Thresholds {
            half_open_after: 4,
            open_after: 4,
            ..Thresholds::default()
        };
        let mut b = Breaker::new(0);
        use State::*;
        assert_eq!(
            states(&mut b, &t, &[false, false, false, false]),
            [Closed, Closed, Closed, Open]
        );
        assert_eq!(b.reason, Reason::NoProgressOpen);
    }

    #[test]
    fn the_same_error_and_long_failing_tests_open_it_even_with_progress() {
        let t = Thresholds::default();
        let mut b = Breaker::new(0);
        for i in 1..=3 {
            b.record(
                &Observed {
                    iteration: i,
                    progress: true,
                    error: Some("fp-1".into()),
                    tests_failing: true,
                },
                &t,
                0,
            );
        }
        assert_eq!(
            (b.state, b.reason),
            (State::Open, Reason::SameErrorRepeated)
        );

        let mut b = Breaker::new(0);
        for i in 1..=5 {
            assert_eq!(b.state, State::Closed, "iteration {i}");
            b.record(
                &Observed {
                    iteration: i,
                    progress: true,
                    error: Some(format!("fp-{i}")),
                    tests_failing: true,
                },
                &t,
                0,
            );
        }
        assert_eq!(
            (b.state, b.reason),
            (State::Open, Reason::TestsFailingTooLong)
        );
    }

    /// OPEN waits its cooldown, probes once, and each failed probe doubles the cooldown up to
    /// its cap; a probe that fails at the cap stops the loop.
    #[test]
    fn the_cooldown_doubles_up_to_its_cap_then_the_loop_stops() {
        let t = Thresholds {
            cooldown_seconds: 10,
            max_cooldown_seconds: 40,
            ..Thresholds::default()
        };
        let mut b = Breaker::new(0);
        states(&mut b, &t, &[false, false, false]);
        assert_eq!((b.state, b.cooldown_ms), (State::Open, 10_000));
        let mut now = 0;
        let mut waits = Vec::new();
        loop {
            match b.admit(&t, now).0 {
                Admission::Wait(ms) => {
                    waits.push(ms);
                    now += ms as i64;
                }
                Admission::Probe => {
                    assert_eq!(b.state, State::HalfOpen);
                    b.record(&seen(9, false), &t, now);
                }
                Admission::Stop => break,
                Admission::Run => panic!("an OPEN breaker ran an iteration"),
            }
        }
        assert_eq!(waits, [10_000, 20_000, 40_000]);

        // A probe that makes progress closes it and clears the cooldown.
        let mut b = Breaker::new(0);
        states(&mut b, &t, &[false, false, false]);
        assert_eq!(b.admit(&t, 10_000).0, Admission::Probe);
        let moved = b.record(&seen(4, true), &t, 10_000).unwrap();
        assert_eq!((moved.from, moved.to), (State::HalfOpen, State::Closed));
        assert_eq!(b.cooldown_ms, 0);
    }

    #[test]
    fn the_breaker_round_trips_through_json() {
        let t = Thresholds::default();
        let mut b = Breaker::new(7);
        states(&mut b, &t, &[false, false]);
        let back: Breaker = serde_json::from_str(&serde_json::to_string(&b).unwrap()).unwrap();
        assert_eq!(back, b);
        assert!(serde_json::to_string(&b).unwrap().contains("\"HALF_OPEN\""));
    }
}
