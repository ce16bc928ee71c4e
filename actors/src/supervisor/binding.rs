//! The Critic's review beside the tests, binding (`critic.mode: binding`, and `auto` when the
//! tests are slower than a review): the tests and the review start together. A rejection that
//! comes in before the tests end stops them (the runner kills their process group), puts the
//! file back as the iteration found it and sends the proposal back, as `gate` does; a passing
//! proposal waits for its verdict and goes back if rejected; a failing one does not wait, and
//! its review reaches the Artisan's next call if it is in by then. So a bad proposal costs
//! the review, not a whole slow test run, and a good one costs no review on the path.

use std::pin::pin;

use crate::machine::state::{Iteration, Next, State};
use crate::prompt::reply::Verdict;
use crate::roles::caller::watched;
use crate::supervisor::run::Run;
use crate::supervisor::steps::Step;

impl Run {
    /// The tests of the proposal `code` written in iteration `it`, with its binding review.
    pub(super) async fn binding(&mut self, mut it: Box<Iteration>, code: String) -> Step {
        let context = self.context_of(&it)?;
        let stop_tests = self.steps.child_token();
        let mut tests = pin!(self.start_tests(stop_tests.clone()));
        let mut review = self.start_review(it.n, context, code);
        // Past the allowance, the tests judge the proposal whatever the Critic says.
        let binds = it.sent_back() < self.settings.critic_max_rejections;
        let mut verdict: Option<Verdict> = None;
        let answer = loop {
            tokio::select! {
                biased;
                heard = &mut review, if verdict.is_none() => {
                    let heard = match heard {
                        Ok(v) => v,
                        Err(e) => {
                            stop_tests.cancel();
                            let _ = (&mut tests).await;
                            return Err(self.fail(e));
                        }
                    };
                    self.heard(it.n, &heard);
                    if !heard.approved && binds {
                        stop_tests.cancel();
                        if let Ok(Ok(run)) = (&mut tests).await {
                            self.timed(run.duration_ms);
                        }
                        return self.send_back(it, heard.reasons).await;
                    }
                    verdict = Some(heard);
                }
                answer = &mut tests => break answer,
            }
        };
        let run = match self.tests_answered(answer) {
            Ok(run) => run,
            Err(outcome) => {
                if verdict.is_none() {
                    review.stop().await;
                }
                return Err(outcome);
            }
        };
        let verdict = match verdict {
            Some(verdict) => Some(verdict),
            None if run.criteria_met() => Some(self.await_review(review).await?),
            None => {
                self.keep_review(review);
                None
            }
        };
        if let Some(verdict) = verdict {
            if !verdict.approved && binds {
                self.timed(run.duration_ms);
                return self.send_back(it, verdict.reasons).await;
            }
            if !verdict.approved {
                self.rejections_spent(&it);
            }
            it.approved = verdict.approved;
        }
        let run = self.tests_ran(it.n, run).await?;
        Ok(Next::Continue(State::Decide(it, run)))
    }

    /// A proposal the Critic rejected while its tests ran: its run is set aside, the file goes
    /// back to what the iteration found, and the Artisan tries again with the reasons.
    async fn send_back(&mut self, mut it: Box<Iteration>, reasons: String) -> Step {
        let before = self.context_of(&it)?.target.content.clone();
        let write = self.workspace.write_target(before);
        watched(&self.steps, write)
            .await
            .map_err(|e| self.fail(e))?;
        self.state.on_disk = it.on_disk;
        it.written = None;
        self.rejected(&mut it, reasons);
        Ok(Next::Continue(State::Generate(it)))
    }
}
