//! A run's timeline: the spans of its model calls (as the server times them) and its test runs,
//! and what they say of the critical path.

use std::collections::BTreeMap;

/// Something in flight from `start` to `end` (seconds since the run began): a role's call, or
/// a test run.
#[derive(Clone, Debug)]
pub struct Span {
    pub what: String,
    pub start: f64,
    pub end: f64,
}

impl Span {
    pub fn new(what: &str, start: f64, end: f64) -> Self {
        Self {
            what: what.to_string(),
            start,
            end: end.max(start),
        }
    }
}

pub struct Timeline {
    spans: Vec<Span>,
    /// Each stretch between two consecutive span boundaries, with the spans in flight over it.
    pieces: Vec<(f64, Vec<usize>)>,
}

/// Shorter than this, a stretch alone in flight is not a wait for that call: the few
/// milliseconds between two things started one after the other (an analysis asked just before
/// the Artisan's call), or the clock's noise.
const NOISE_S: f64 = 0.1;

impl Timeline {
    pub fn new(spans: Vec<Span>) -> Self {
        let mut bounds: Vec<f64> = spans.iter().flat_map(|s| [s.start, s.end]).collect();
        bounds.sort_by(f64::total_cmp);
        bounds.dedup();
        let pieces = bounds
            .windows(2)
            .map(|w| {
                let active = spans
                    .iter()
                    .enumerate()
                    .filter(|(_, s)| s.start <= w[0] && s.end >= w[1])
                    .map(|(i, _)| i)
                    .collect();
                (w[1] - w[0], active)
            })
            .collect();
        Self { spans, pieces }
    }

    /// The time something was in flight.
    pub fn covered(&self) -> f64 {
        self.pieces
            .iter()
            .filter(|(_, active)| !active.is_empty())
            .map(|(len, _)| len)
            .sum()
    }

    /// The stretches of `0..wall` when nothing was in flight, each named by what ended before it
    /// and what started after it (`start`, `exit` at the ends): where the overhead went.
    pub fn gaps(&self, wall: f64) -> Vec<(String, f64)> {
        let mut marks: Vec<(f64, bool, &str)> = self
            .spans
            .iter()
            .flat_map(|s| {
                [
                    (s.start, true, s.what.as_str()),
                    (s.end, false, s.what.as_str()),
                ]
            })
            .collect();
        marks.sort_by(|a, b| a.0.total_cmp(&b.0).then(b.1.cmp(&a.1)));
        let mut out = Vec::new();
        let (mut active, mut idle_since, mut last) = (0usize, Some(0.0), "start");
        for (at, starts, what) in marks {
            if starts {
                if let Some(since) = idle_since.take() {
                    out.push((format!("{last} → {what}"), at - since));
                }
                active += 1;
            } else {
                active = active.saturating_sub(1);
                if active == 0 {
                    idle_since = Some(at);
                    last = what;
                }
            }
        }
        if let Some(since) = idle_since {
            out.push((format!("{last} → exit"), wall - since));
        }
        out
    }

    /// Seconds each kind of span was alone in flight: what the run waited for.
    pub fn alone(&self) -> BTreeMap<String, f64> {
        let mut out = BTreeMap::new();
        for (len, active) in &self.pieces {
            if let [only] = active[..] {
                *out.entry(self.spans[only].what.clone()).or_default() += len;
            }
        }
        out.retain(|_, s| *s > NOISE_S);
        out
    }

    /// The spans chosen by `pick` that were alone in flight at some moment: on the path.
    pub fn calls_alone(&self, pick: impl Fn(&str) -> bool) -> usize {
        (0..self.spans.len())
            .filter(|&i| pick(&self.spans[i].what))
            .filter(|&i| {
                self.pieces
                    .iter()
                    .filter(|(_, active)| active[..] == [i])
                    .map(|(len, _)| len)
                    .sum::<f64>()
                    > NOISE_S
            })
            .count()
    }

    /// The summed length of the spans chosen by `pick`.
    pub fn total(&self, pick: impl Fn(&str) -> bool) -> f64 {
        self.spans
            .iter()
            .filter(|s| pick(&s.what))
            .map(|s| s.end - s.start)
            .sum()
    }
}
