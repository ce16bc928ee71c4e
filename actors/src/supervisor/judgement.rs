//! The Critic's judgement of what one of Chaos's rounds made fail: the failures it keeps are
//! findings, open until a fix passes them (and kept as regression tests), those it drops are
//! rejected with its reason.

use std::sync::Arc;

use actix::Addr;

use crate::events::event::Event;
use crate::machine::state::Outcome;
use crate::policy::adversarial::Candidate;
use crate::prompt::bundle::ContextBundle;
use crate::role::Role;
use crate::roles::chaos::Chaos;
use crate::roles::critic::Judge;
use crate::schema::adversarial::{Finding, FindingStatus, Floor, Rejected};
use crate::schema::test_run::TestRun;
use crate::supervisor::run::Run;

impl Run {
    /// The Critic judges the failures of round `round`'s file: those it keeps are findings,
    /// open (and kept as regression tests), those it drops are rejected. How many it kept.
    pub(super) async fn judged(
        &mut self,
        chaos: &Addr<Chaos>,
        n: u32,
        round: u32,
        (context, suite): (Arc<ContextBundle>, String),
        run: &TestRun,
        failures: Vec<Candidate>,
    ) -> Result<u32, Outcome> {
        let judgement = self
            .ask(
                Role::Critic,
                &self.team.critic,
                Judge {
                    iteration: n,
                    round,
                    context,
                    suite,
                    failures: failures.clone(),
                    cancel: self.steps.clone(),
                },
            )
            .await?;
        if !judgement.unjudged.is_empty() {
            self.warn(format!(
                "iteration {n}: the Critic's judgement of Chaos's round {round} named no verdict for {}; kept",
                judgement.unjudged.join(", ")
            ));
        }
        let dropped: Vec<String> = judgement.dropped.iter().map(|(t, _)| t.clone()).collect();
        let kept: Vec<&Candidate> = failures
            .iter()
            .filter(|f| !dropped.contains(&f.test))
            .collect();
        let on_disk = self.state.on_disk.unwrap_or(n);
        let report = self.adversarial();
        report.tests_rejected += dropped.len() as u32;
        report
            .rejected
            .extend(judgement.dropped.iter().map(|(test, reason)| Rejected {
                round,
                test: test.clone(),
                reason: reason.clone(),
            }));
        report.findings.extend(kept.iter().map(|f| Finding {
            round,
            test: f.test.clone(),
            message: f.message.clone(),
            status: FindingStatus::Open,
        }));
        let kept_ids: Vec<String> = kept.iter().map(|f| f.test.clone()).collect();
        self.events.emit(Event::ChaosJudged {
            iteration: n,
            round,
            kept: kept_ids.clone(),
            dropped: judgement.dropped,
        });
        self.regressions(chaos, n, round, run, &kept_ids).await?;
        let report = self.adversarial();
        report.failures_found = report.findings.len() as u32;
        let open = report.open().count() as u32;
        // The fix on disk is what Chaos has judged, with these findings open.
        self.state.adversarial_floor = Some(Floor {
            iteration: on_disk,
            open,
        });
        Ok(kept.len() as u32)
    }
}
