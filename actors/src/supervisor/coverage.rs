//! The coverage gate, the first gate once Chaos's attacks find nothing: of the lines the run
//! changed that the coverage tool counts, the share the unit tests and Chaos's passing files
//! run together (`success_criteria.coverage_threshold`). A project whose own suite is thin can
//! still reach it, through Chaos: below the gate, a Chaos round is spent on the lines no test
//! runs. Its file runs on the fix like any round's (a failing test is judged, and kept, goes to
//! the Artisan); then the coverage is measured again, the new file counting. The rounds are
//! `chaos.max_rounds`, shared with the attacks and mutation testing; spent below the gate, the
//! run stops `max_iterations`, naming the lines.

use actix::Addr;

use crate::events::event::Event;
use crate::machine::state::{Iteration, Next, Outcome, State};
use crate::role::Role;
use crate::roles::chaos::{Chaos, Cover, UncoveredLine};
use crate::schema::adversarial::ChangedCoverage;
use crate::schema::report::Status;
use crate::supervisor::chaos::plural;
use crate::supervisor::run::Run;

impl Run {
    /// Measures the coverage of the changed lines, spending Chaos's rounds on those no test
    /// runs while it is below the gate. `None`: the gate is met (or off); the run goes on to
    /// mutation testing.
    pub(super) async fn cover_changed_lines(
        &mut self,
        chaos: &Addr<Chaos>,
        it: &Iteration,
    ) -> Result<Option<Next>, Outcome> {
        let Some(min) = self.settings.chaos.coverage_min else {
            return Ok(None);
        };
        let n = it.n;
        loop {
            let measured = match self.measure_coverage(chaos, min).await? {
                Ok(measured) => measured,
                Err(why) => {
                    return Ok(Some(Next::Stop(Outcome::new(
                        Status::Error,
                        format!("the coverage of the changed lines could not be measured: {why}"),
                    ))))
                }
            };
            self.events.emit(Event::Note {
                message: format!(
                    "iteration {n}: {} of the changed lines covered ({} of {}, by {}; at least {min}% asked){}",
                    percent(measured.pct),
                    measured.covered,
                    measured.coverable,
                    measured.tool,
                    match measured.uncovered.is_empty() {
                        true => String::new(),
                        false => format!("; no test runs line{} {}", plural(measured.uncovered.len() as u32), lines(&measured.uncovered)),
                    }
                ),
            });
            if measured.met() {
                return Ok(None);
            }
            if self.adversarial().rounds >= self.settings.chaos.max_rounds {
                return Ok(Some(Next::Stop(self.coverage_below(&measured))));
            }
            self.adversarial().rounds += 1;
            let round = self.adversarial().rounds;
            let source = self.on_disk_content().await?;
            let uncovered = measured
                .uncovered
                .iter()
                .map(|&line| UncoveredLine {
                    line,
                    code: source
                        .lines()
                        .nth(line.saturating_sub(1) as usize)
                        .unwrap_or_default()
                        .to_string(),
                })
                .collect();
            let (found, _) = self
                .new_round(chaos, it, round, Vec::new(), uncovered)
                .await?;
            self.checkpoint().await?;
            if found > 0 && self.settings.chaos.must_pass {
                // Chaos's tests found a real failure: the Artisan fixes it, and the new fix is
                // measured afresh.
                return Ok(Some(Next::Continue(State::Begin)));
            }
        }
    }

    /// The changed lines' coverage by the last unit-test run and Chaos's passing files, kept in
    /// the report. `Ok(Err(why))` when no tool reported the target's lines.
    async fn measure_coverage(
        &mut self,
        chaos: &Addr<Chaos>,
        min: f64,
    ) -> Result<Result<ChangedCoverage, String>, Outcome> {
        let Some(unit) = self.last_run.as_ref().and_then(|r| r.coverage.clone()) else {
            return Ok(Err(
                "the unit tests' run reported no coverage (see its output in the session folder)"
                    .into(),
            ));
        };
        let Some(mut hits) = unit.target.clone() else {
            return Ok(Err(format!(
                "{} reported no lines of the target",
                unit.tool
            )));
        };
        let rounds = self.passing_rounds();
        if !rounds.is_empty() {
            let cover = Cover {
                rounds,
                cancel: self.steps.clone(),
            };
            let covered = self.ask(Role::Chaos, chaos, cover).await?;
            self.timed(covered.duration_ms);
            if let Some(chaos_hits) = covered.hits {
                hits = hits.union(&chaos_hits);
            }
        }
        let changed = self.changed_lines().await?;
        let mut measured = ChangedCoverage::of(&unit.tool, &changed, &hits, min);
        let report = self.adversarial();
        measured.runs = report.coverage.as_ref().map_or(0, |c| c.runs) + 1;
        report.coverage = Some(measured.clone());
        Ok(Ok(measured))
    }

    /// The rounds are spent with the changed lines' coverage below the gate.
    fn coverage_below(&self, measured: &ChangedCoverage) -> Outcome {
        Outcome::new(
            Status::MaxIterations,
            format!(
                "chaos.max_rounds ({}) spent with {} of the changed lines covered (success_criteria.coverage_threshold is {}%); no test runs line{} {}",
                self.settings.chaos.max_rounds,
                percent(measured.pct),
                measured.min,
                plural(measured.uncovered.len() as u32),
                lines(&measured.uncovered)
            ),
        )
    }
}

fn percent(pct: f64) -> String {
    format!("{pct}%")
}

/// `3, 7-9, 12`: lines as ranges.
pub(crate) fn lines(lines: &[u32]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut run: Option<(u32, u32)> = None;
    for &l in lines {
        run = match run {
            Some((a, b)) if l == b + 1 => Some((a, l)),
            Some(r) => {
                out.push(range(r));
                Some((l, l))
            }
            None => Some((l, l)),
        };
    }
    out.extend(run.map(range));
    out.join(", ")
}

fn range((a, b): (u32, u32)) -> String {
    match a == b {
        true => a.to_string(),
        false => format!("{a}-{b}"),
    }
}

#[cfg(test)]
mod tests {
    use super::lines;
    use crate::schema::adversarial::ChangedCoverage;
    use crate::schema::test_run::LineHits;

    #[test]
    fn lines_read_as_ranges() {
        assert_eq!(lines(&[3, 7, 8, 9, 12]), "3, 7-9, 12");
        assert_eq!(lines(&[]), "");
    }

    #[test]
    fn only_the_changed_lines_the_tool_counts_are_judged() {
        let hits = LineHits {
            covered: vec![1, 2, 5],
            missed: vec![3, 6, 9],
        };
        let c = ChangedCoverage::of("c8", &[[2, 3], [5, 7]], &hits, 90.0);
        assert_eq!((c.covered, c.coverable), (2, 4));
        assert_eq!(c.uncovered, vec![3, 6]);
        assert_eq!(c.pct, 50.0);
        assert!(!c.met());
        let none = ChangedCoverage::of("c8", &[[4, 4]], &hits, 90.0);
        assert_eq!(
            (none.coverable, none.pct),
            (0, 100.0),
            "a blank line asks nothing"
        );
        assert!(none.met());
        let both = hits.union(&LineHits {
            covered: vec![3, 6],
            missed: vec![5, 10],
        });
        assert_eq!(both.covered, vec![1, 2, 3, 5, 6]);
        assert_eq!(both.missed, vec![9, 10]);
    }
}
