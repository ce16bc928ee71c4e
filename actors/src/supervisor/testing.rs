//! A run's test runs: asked of the Tester (the runner hears the cancel token itself and kills
//! its process group, so a stopped run still answers), their criteria judged, and, for a run
//! that judges its proposal, counted, shown, saved and kept as the last run.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::error::{Error, Result};
use crate::events::event::Event;
use crate::machine::state::Outcome;
use crate::policy::criteria;
use crate::policy::entropy::fingerprint;
use crate::role::Role;
use crate::roles::caller::watched;
use crate::roles::tester::{RunTests, Tester};
use crate::schema::report::TestsSnapshot;
use crate::schema::test_run::TestRun;
use crate::supervisor::run::Run;

impl Run {
    /// Runs the tests for iteration `n` (0: the baseline), judges the criteria and saves the
    /// results. The runner hears the cancel token itself and kills its process group, so this
    /// waits for it rather than abandon a running child.
    pub(super) async fn test(&mut self, n: u32) -> std::result::Result<Arc<TestRun>, Outcome> {
        let answer = self.start_tests(self.steps.child_token()).await;
        let run = self.tests_answered(answer)?;
        self.tests_ran(n, run).await
    }

    /// Asks the Tester for a run, stopped by `cancel`: its answer to come.
    pub(super) fn start_tests(
        &self,
        cancel: CancellationToken,
    ) -> actix::dev::Request<Tester, RunTests> {
        self.team.tester.send(RunTests { cancel })
    }

    /// The run out of the Tester's answer, its criteria judged; a stopped run ends the step.
    pub(super) fn tests_answered(
        &self,
        answer: std::result::Result<Result<TestRun>, actix::MailboxError>,
    ) -> std::result::Result<TestRun, Outcome> {
        if self.steps.is_cancelled() {
            return Err(self.cancelled());
        }
        let mut run = match answer {
            Ok(Ok(run)) => run,
            Ok(Err(e)) => return Err(self.fail(e)),
            Err(mailbox) => {
                return Err(self.fail(Error::Stopped {
                    role: Role::Tester,
                    message: mailbox.to_string(),
                }))
            }
        };
        criteria::judge(&mut run, &self.settings.thresholds());
        Ok(run)
    }

    /// A test run of iteration `n` that judges its proposal: counted, shown, saved, and the
    /// last run from now on.
    pub(super) async fn tests_ran(
        &mut self,
        n: u32,
        run: TestRun,
    ) -> std::result::Result<Arc<TestRun>, Outcome> {
        if !run.criteria_met() {
            self.fingerprints.push(fingerprint(&run));
        }
        self.timed(run.duration_ms);
        self.events.emit(Event::TestsFinished {
            iteration: n,
            tests: TestsSnapshot::from(&run),
        });
        let run = Arc::new(run);
        let save = self.store.save_test_results(n, &run);
        watched(&self.steps, save).await.map_err(|e| self.fail(e))?;
        self.last_run = Some(run.clone());
        Ok(run)
    }

    /// A test run that took `duration_ms` and has just ended, counted as test time (its own,
    /// and the span it was in flight for the overhead the report gives).
    pub(super) fn timed(&mut self, duration_ms: u64) {
        self.test_ms += duration_ms;
        self.caller.waits.tests(Duration::from_millis(duration_ms));
    }
}
