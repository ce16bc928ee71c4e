//! Mutation testing, the last of Chaos's strategies: once its attacks find nothing, the lines
//! the run changed are mutated one small edit at a time and the unit tests, with Chaos's
//! passing files, run against each mutant (StrykerJS, mutmut: the Chaos port's `mutate`).
//!
//! Without a gate the score is reported and the run succeeds. With
//! `success_criteria.mutation_score_min`, a score below it costs a Chaos round: Chaos is shown
//! the surviving mutants and writes tests to kill them (and may argue some equivalent, with a
//! reason, at most a tenth of them). Its file must pass on the fix (a failing test is judged
//! like any other and, kept, goes to the Artisan); then only the survivors run again, with the
//! new file, and the score is recomputed. The rounds are `chaos.max_rounds`, shared with the
//! attacks; spent below the gate, the run stops with `max_iterations` and the survivors listed.

use actix::Addr;

use crate::error::Error;
use crate::events::event::Event;
use crate::machine::state::{Iteration, Next, Outcome, State};
use crate::ports::chaos::MutationRequest;
use crate::role::Role;
use crate::roles::caller::watched;
use crate::roles::chaos::{Chaos, Mutate};
use crate::schema::adversarial::FindingStatus;
use crate::schema::mutation::{
    schema_document, Equivalent, Mutant, MutationReport, MutationRun, Scores,
};
use crate::schema::report::Status;
use crate::supervisor::run::{Measured, Run};
use crate::supervisor::steps::Step;

impl Run {
    /// Chaos's attacks found nothing more: mutation testing when it is on, then success, or a
    /// round to kill the survivors while the score is below the gate.
    pub(super) async fn attacks_done(&mut self, chaos: &Addr<Chaos>, it: &Iteration) -> Step {
        let n = it.n;
        if let Some(next) = self.cover_changed_lines(chaos, it).await? {
            return Ok(next);
        }
        if !self.settings.chaos.mutation() {
            return self.chaos_success(chaos, n).await;
        }
        let min = self.settings.chaos.mutation_score_min;
        let mut survivors_only = self
            .mutation
            .as_ref()
            .is_some_and(|m| m.on_disk == self.state.on_disk);
        loop {
            let scores = match self.measure(chaos, n, survivors_only).await? {
                Ok(scores) => scores,
                Err(why) if min.is_some() => {
                    return Ok(Next::Stop(Outcome::new(
                        Status::Error,
                        format!("mutation testing could not run: {why}"),
                    )))
                }
                Err(why) => {
                    self.warn(format!(
                        "iteration {n}: mutation testing could not run, so no score was measured: {why}"
                    ));
                    return self.chaos_success(chaos, n).await;
                }
            };
            let Some(min) = min else {
                return self.chaos_success(chaos, n).await;
            };
            if scores.operational >= min {
                return self.chaos_success(chaos, n).await;
            }
            let max_rounds = self.settings.chaos.max_rounds;
            let report = self.adversarial();
            if report.rounds >= max_rounds {
                return Ok(Next::Stop(self.score_below(min, &scores)));
            }
            report.rounds += 1;
            let round = report.rounds;
            let survivors = report.surviving_mutants.clone();
            let (found, equivalent) = self
                .new_round(chaos, it, round, survivors, Vec::new())
                .await?;
            self.accept_equivalent(n, equivalent);
            self.checkpoint().await?;
            if found > 0 && self.settings.chaos.must_pass {
                // Chaos's tests found a real failure: the Artisan fixes it, and the new fix is
                // mutated afresh.
                return Ok(Next::Continue(State::Begin));
            }
            survivors_only = true;
        }
    }

    /// One mutation run (of every mutant on the changed lines, or of the survivors only), its
    /// results merged into the report. `Ok(Err(why))` when the tool could not run.
    async fn measure(
        &mut self,
        chaos: &Addr<Chaos>,
        n: u32,
        survivors_only: bool,
    ) -> Result<Result<Scores, String>, Outcome> {
        let lines = self.changed_lines().await?;
        let only: Vec<Mutant> = match (&self.mutation, survivors_only) {
            (Some(m), true) => m
                .mutants
                .iter()
                .filter(|m| m.status.undetected())
                .cloned()
                .collect(),
            _ => Vec::new(),
        };
        let request = MutationRequest {
            lines: lines.clone(),
            rounds: self.passing_rounds(),
            only: only.clone(),
            timeout: self.settings.chaos.mutation_timeout,
        };
        let answer = tokio::select! {
            biased;
            _ = self.steps.cancelled() => return Err(self.cancelled()),
            r = chaos.send(Mutate { request, cancel: self.steps.clone() }) => r,
        };
        if self.steps.is_cancelled() {
            return Err(self.cancelled());
        }
        let run: MutationRun = match answer {
            Ok(Ok(run)) => run,
            // The tool failed: the run goes on without a score (or stops, with a gate).
            Ok(Err(Error::Runner(e))) => return Ok(Err(e.to_string())),
            Ok(Err(e)) => return Err(self.fail(e)),
            Err(mailbox) => {
                return Err(self.fail(Error::Stopped {
                    role: Role::Chaos,
                    message: mailbox.to_string(),
                }))
            }
        };
        self.timed(run.duration_ms);
        let ran = run.mutants.len() as u32;
        let mutants = match (self.mutation.take(), survivors_only) {
            (Some(mut earlier), true) => {
                for m in run.mutants {
                    if let Some(e) = earlier.mutants.iter_mut().find(|e| e.id == m.id) {
                        *e = m;
                    }
                }
                earlier.mutants
            }
            _ => run.mutants,
        };
        let detected = mutants
            .iter()
            .filter(|m| only.iter().any(|o| o.id == m.id) && m.status.detected())
            .count() as u32;
        // Mutants set aside as equivalent hold for the code they were argued on: a new fix's
        // mutants (whose ids may name other edits) are judged afresh.
        let equivalent = match survivors_only {
            true => self
                .state
                .adversarial
                .as_ref()
                .and_then(|r| r.mutation.as_ref())
                .map(|m| m.equivalent.clone())
                .unwrap_or_default(),
            false => Vec::new(),
        };
        let scores = Scores::of(&mutants, &equivalent);
        let source = self.on_disk_content().await?;
        let document = schema_document(&run.file, language_of(&run.file), &source, &mutants);
        let save = self.store.save_mutation_report(&document);
        let report_path = watched(&self.steps, save).await.map_err(|e| self.fail(e))?;
        let min_score = self.settings.chaos.mutation_score_min;
        let report = self.adversarial();
        report.mutation_score = Some(scores.operational);
        report.surviving_mutants = mutants
            .iter()
            .filter(|m| m.status.undetected() && !equivalent.iter().any(|e| e.id == m.id))
            .cloned()
            .collect();
        let surviving = report.surviving_mutants.len() as u32;
        let earlier = report.mutation.take();
        report.mutation = Some(MutationReport {
            tool: run.tool.clone(),
            lines,
            min_score,
            scores,
            runs: earlier.as_ref().map_or(0, |m| m.runs) + 1,
            duration_ms: earlier.as_ref().map_or(0, |m| m.duration_ms) + run.duration_ms,
            equivalent,
            report_path: Some(report_path),
        });
        self.events.emit(Event::ChaosMutation {
            iteration: n,
            tool: run.tool,
            mutants: ran,
            detected: match survivors_only {
                true => detected,
                false => scores.killed + scores.timeout,
            },
            surviving,
            equivalent: scores.equivalent,
            score: scores.operational,
            strict: scores.strict,
            min_score,
            duration_ms: run.duration_ms,
        });
        self.mutation = Some(Measured {
            on_disk: self.state.on_disk,
            mutants,
        });
        Ok(Ok(scores))
    }

    /// Keeps the equivalents Chaos argued, within a tenth of the valid mutants; warns about
    /// the rest.
    fn accept_equivalent(&mut self, n: u32, argued: Vec<Equivalent>) {
        if argued.is_empty() {
            return;
        }
        let Some(report) = self.state.adversarial.as_mut() else {
            return;
        };
        let Some(mutation) = report.mutation.as_mut() else {
            return;
        };
        let room = mutation
            .scores
            .max_equivalent()
            .saturating_sub(mutation.equivalent.len() as u32) as usize;
        let (kept, refused): (Vec<_>, Vec<_>) = argued
            .into_iter()
            .filter(|e| !mutation.equivalent.iter().any(|k| k.id == e.id))
            .enumerate()
            .partition(|(i, _)| *i < room);
        mutation.equivalent.extend(kept.into_iter().map(|(_, e)| e));
        if !refused.is_empty() {
            let ids: Vec<String> = refused.into_iter().map(|(_, e)| e.id).collect();
            self.warn(format!(
                "iteration {n}: Chaos argued {} more mutant{} equivalent ({}) than the tenth of the mutants that may be set aside; they still count",
                ids.len(),
                if ids.len() == 1 { "" } else { "s" },
                ids.join(", ")
            ));
        }
    }

    /// The rounds whose Chaos files pass on the fix as a whole: no test dropped, no finding
    /// open. They run with the unit tests against each mutant.
    pub(super) fn passing_rounds(&self) -> Vec<u32> {
        let Some(report) = &self.state.adversarial else {
            return Vec::new();
        };
        report
            .suites
            .iter()
            .map(|s| s.round)
            .filter(|round| {
                !report.rejected.iter().any(|r| r.round == *round)
                    && !report
                        .findings
                        .iter()
                        .any(|f| f.round == *round && f.status == FindingStatus::Open)
            })
            .collect()
    }

    /// The lines of the file on disk that differ from the original, as `[first, last]` ranges.
    pub(super) async fn changed_lines(&mut self) -> Result<Vec<[u32; 2]>, Outcome> {
        let original = self.checkpoint_content(0).await?;
        let now = self.on_disk_content().await?;
        Ok(changed_lines(&original, &now))
    }

    /// The target as it is on disk.
    pub(super) async fn on_disk_content(&mut self) -> Result<String, Outcome> {
        let read = self.workspace.target();
        Ok(watched(&self.steps, read)
            .await
            .map_err(|e| self.fail(e))?
            .content)
    }

    /// The rounds are spent with the score below the gate.
    fn score_below(&self, min: f64, scores: &Scores) -> Outcome {
        let survivors: Vec<String> = self
            .state
            .adversarial
            .iter()
            .flat_map(|r| r.surviving_mutants.iter())
            .take(5)
            .map(|m| format!("{} (line {}: {})", m.id, m.line, m.mutator))
            .collect();
        Outcome::new(
            Status::MaxIterations,
            format!(
                "chaos.max_rounds ({}) spent with the mutation score at {}% (success_criteria.mutation_score_min is {}%); surviving mutants: {}",
                self.settings.chaos.max_rounds,
                scores.operational,
                min,
                survivors.join(", ")
            ),
        )
    }
}

/// The lines of `now` that differ from `before`, as `[first, last]` ranges (1-based): lines
/// inserted or changed, and for a deletion the line after it. Empty when nothing changed.
pub(crate) fn changed_lines(before: &str, now: &str) -> Vec<[u32; 2]> {
    let diff = similar::TextDiff::from_lines(before, now);
    let last = now.lines().count().max(1) as u32;
    let mut ranges: Vec<[u32; 2]> = Vec::new();
    for op in diff.ops() {
        let new = op.new_range();
        let (first, end) = match op.tag() {
            similar::DiffTag::Equal => continue,
            similar::DiffTag::Delete => {
                let at = (new.start as u32 + 1).min(last);
                (at, at)
            }
            _ => (new.start as u32 + 1, new.end as u32),
        };
        match ranges.last_mut() {
            Some(prev) if first <= prev[1] + 1 => prev[1] = prev[1].max(end),
            _ => ranges.push([first, end]),
        }
    }
    ranges
}

fn language_of(file: &str) -> &'static str {
    match file.rsplit('.').next() {
        Some("py") => "python",
        Some("ts" | "tsx" | "mts" | "cts") => "typescript",
        Some("rs") => "rust",
        _ => "javascript",
    }
}

#[cfg(test)]
mod tests {
    use super::changed_lines;

    #[test]
    fn changed_lines_are_the_new_file_s_changed_ranges() {
        let before = "a\nb\nc\nd\ne\n";
        assert_eq!(changed_lines(before, before), Vec::<[u32; 2]>::new());
        assert_eq!(changed_lines(before, "a\nB\nc\nd\ne\n"), vec![[2, 2]]);
        assert_eq!(
            changed_lines(before, "a\nB\nx\nC\nd\ne\n"),
            vec![[2, 4]],
            "an insertion beside a change is one range"
        );
        assert_eq!(
            changed_lines(before, "a\nb\nd\ne\n"),
            vec![[3, 3]],
            "a deletion marks the line after it"
        );
        assert_eq!(
            changed_lines(before, "A\nb\nc\nd\nE\n"),
            vec![[1, 1], [5, 5]]
        );
    }
}
