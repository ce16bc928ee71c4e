//! Counterexamples kept as named regression tests: when the Critic keeps a finding whose
//! property printed the input it failed on, a test replaying that input is added to the round's
//! file (Hypothesis: by the property's `inner_test`; fast-check, proptest: written by Chaos's
//! model), run at once to check it fails on this fix, and becomes a finding of its own.

use actix::Addr;

use crate::events::event::Event;
use crate::machine::state::Outcome;
use crate::policy::adversarial::{
    counterexample, fast_check_counterexample, proptest_counterexample, Counterexample,
};
use crate::role::Role;
use crate::roles::chaos::{Chaos, Regress, Replay, Rerun};
use crate::schema::adversarial::{Finding, FindingStatus};
use crate::schema::test_run::{CaseStatus, TestRun};
use crate::supervisor::run::Run;

impl Run {
    /// Each kept finding whose property printed a counterexample becomes a named regression
    /// test in its round's file, replaying that input exactly, and a finding of its own: success
    /// then needs the input itself to pass, not only a new random search.
    pub(super) async fn regressions(
        &mut self,
        chaos: &Addr<Chaos>,
        n: u32,
        round: u32,
        run: &TestRun,
        kept: &[String],
    ) -> Result<(), Outcome> {
        for id in kept {
            let Some(case) = run.tests.iter().find(|t| &t.id == id) else {
                continue;
            };
            let text = [
                case.message.as_deref(),
                case.stack.as_deref(),
                case.stdout.as_deref(),
            ]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join("\n");
            // Hypothesis replays by name; fast-check's and proptest's properties have no handle
            // outside their test, so Chaos's model writes the example-based test.
            let printed =
                fast_check_counterexample(&text).or_else(|| proptest_counterexample(&text));
            let (example, name) = if let Some(example) = counterexample(&text) {
                let regress = Regress {
                    round,
                    example: example.clone(),
                };
                let name = self.ask(Role::Chaos, chaos, regress).await?;
                (example, name)
            } else if let Some(example) = printed {
                let replay = Replay {
                    iteration: n,
                    round,
                    test: id.clone(),
                    failure: text.clone(),
                    example: example.clone(),
                    cancel: self.steps.clone(),
                };
                let name = self.ask(Role::Chaos, chaos, replay).await?;
                (example, name)
            } else {
                continue;
            };
            let Some(name) = name else {
                continue;
            };
            // A replay must fail where the property failed: run the file again on this fix.
            let rerun = Rerun {
                round,
                cancel: self.steps.clone(),
            };
            let replayed = self.ask(Role::Chaos, chaos, rerun).await?;
            self.adversarial_ran(n, round, &replayed).await?;
            let Some(case) = replayed
                .tests
                .iter()
                .find(|t| t.name == name || t.id.ends_with(name.as_str()))
                .filter(|t| t.status == CaseStatus::Fail)
            else {
                self.warn(format!(
                    "iteration {n}: the replay of {id}'s counterexample, {name}, did not fail on the fix the property failed on; it is not a finding"
                ));
                continue;
            };
            let test = case.id.clone();
            self.events.emit(Event::Note {
                message: format!(
                    "iteration {n}: the counterexample of {id}, {}, is kept as the regression test {test}",
                    shown(&example)
                ),
            });
            self.adversarial().findings.push(Finding {
                round,
                test,
                message: Some(format!(
                    "replays the counterexample of {id}: {}",
                    shown(&example)
                )),
                status: FindingStatus::Open,
            });
        }
        Ok(())
    }
}

/// A counterexample as the report shows it: `f(x=1,)`, or fast-check's printed input.
fn shown(example: &Counterexample) -> String {
    match example.function.is_empty() {
        true => example.arguments.clone(),
        false => format!("{}({})", example.function, example.arguments),
    }
}
