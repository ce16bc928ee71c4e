//! The Critic's review beside the tests (`critic.mode: parallel`, or `auto` with tests faster
//! than a review): started with the tests; when they pass, awaited, or left to come in beside
//! Chaos's round when Chaos attacks the fix next; when they fail, left to come in while the next
//! iteration's calls run.

use std::sync::Arc;

use crate::events::event::Event;
use crate::machine::state::{Iteration, Outcome};
use crate::policy::pace::CriticMode;
use crate::prompt::bundle::ContextBundle;
use crate::prompt::reply::Verdict;
use crate::role::Role;
use crate::roles::critic::Review;
use crate::schema::report::{FixReview, FixVerdict};
use crate::supervisor::pending::{Pending, PendingReview};
use crate::supervisor::run::Run;

impl Run {
    /// Sends `code` to the Critic without waiting for the verdict.
    pub(super) fn start_review(
        &self,
        n: u32,
        context: Arc<ContextBundle>,
        code: String,
    ) -> PendingReview {
        let cancel = self.steps.child_token();
        let request = self.team.critic.send(Review {
            iteration: n,
            context,
            code,
            cancel: cancel.clone(),
        });
        Pending::new(Role::Critic, n, cancel, request)
    }

    /// Waits for the review of a proposal whose tests passed, unless the run is stopped.
    pub(super) async fn await_review(
        &mut self,
        mut review: PendingReview,
    ) -> Result<Verdict, Outcome> {
        let heard = tokio::select! {
            biased;
            _ = self.steps.cancelled() => {
                review.stop().await;
                return Err(self.cancelled());
            }
            heard = &mut review => heard,
        };
        let verdict = heard.map_err(|e| self.fail(e))?;
        self.heard(review.iteration, &verdict);
        Ok(verdict)
    }

    /// The review of a proposal whose tests passed: awaited now, unless Chaos attacks the fix
    /// next, whose round it then overlaps (heard at the round's end). A rejection is a note.
    pub(super) async fn passing_review(
        &mut self,
        it: &mut Iteration,
        review: PendingReview,
    ) -> Result<(), Outcome> {
        if self.chaos_due() {
            if let Some(older) = self.passing_review.replace(review) {
                self.pending_reviews.push(older);
            }
            it.review_pending = true;
            return Ok(());
        }
        let verdict = self.await_review(review).await?;
        it.approved = verdict.approved;
        self.passing_heard(it.n, &verdict);
        Ok(())
    }

    /// Hears the review of the passing fix that ran beside Chaos's round, waiting for it if it
    /// is still out.
    pub(super) async fn settle_passing_review(&mut self) -> Result<(), Outcome> {
        let Some(review) = self.passing_review.take() else {
            return Ok(());
        };
        let n = review.iteration;
        let verdict = self.await_review(review).await?;
        self.passing_heard(n, &verdict);
        Ok(())
    }

    /// The iteration's tests passed: the Critic's word on its proposal, as far as it is known.
    pub(super) fn passed_review(&mut self, it: &Iteration) {
        self.state.fix_review = match (&it.written, it.critic_mode) {
            (None, _) | (_, CriticMode::Off) => None,
            _ => Some(FixReview {
                iteration: it.n,
                verdict: if it.review_pending {
                    FixVerdict::Unreviewed
                } else {
                    FixVerdict::of(it.approved)
                },
            }),
        };
    }

    /// The verdict on iteration `n`'s passing proposal: the report's `fix_review` when it is
    /// that iteration's (a review heard after the iteration was recorded), and a note for a
    /// rejection.
    fn passing_heard(&mut self, n: u32, verdict: &Verdict) {
        if let Some(review) = self.state.fix_review.as_mut().filter(|r| r.iteration == n) {
            review.verdict = FixVerdict::of(verdict.approved);
        }
        if !verdict.approved {
            self.events.emit(Event::Note {
                message: format!(
                    "iteration {n}: the Critic rejected the passing fix (kept as a note; critic.mode: gate sends it back): {}",
                    one_line(&verdict.reasons)
                ),
            });
        }
    }

    /// A verdict as the user sees it: the event, and a warning when the reply had no verdict
    /// line.
    pub(super) fn heard(&self, n: u32, verdict: &Verdict) {
        if !verdict.explicit {
            self.warn(format!(
                "iteration {n}: the Critic's reply had no VERDICT line; taken as APPROVE"
            ));
        }
        self.events.emit(Event::CriticVerdict {
            iteration: n,
            approved: verdict.approved,
            reasons: verdict.reasons.clone(),
        });
    }

    /// Keeps the review of a failing proposal to come in while the run goes on.
    pub(super) fn keep_review(&mut self, review: PendingReview) {
        self.pending_reviews.push(review);
    }

    /// The reviews of failing proposals that have come in, heard; the reasons of those that
    /// rejected, for the Artisan's next prompt. A review that failed is a warning: the tests
    /// have already judged its proposal.
    pub(super) fn late_reviews(&mut self) -> Option<String> {
        let mut reasons = Vec::new();
        let mut still_out = Vec::new();
        for mut review in std::mem::take(&mut self.pending_reviews) {
            match review.poll_now() {
                None => still_out.push(review),
                Some(Ok(verdict)) => {
                    self.heard(review.iteration, &verdict);
                    if !verdict.approved {
                        reasons.push(verdict.reasons);
                    }
                }
                Some(Err(e)) => self.warn(format!(
                    "iteration {}: the Critic's review beside the tests failed: {e}",
                    review.iteration
                )),
            }
        }
        self.pending_reviews = still_out;
        (!reasons.is_empty()).then(|| reasons.join("\n\n"))
    }

    /// At the run's end: hears the reviews that came in and stops those still out, which keep
    /// their reservation as spent (the provider may bill them). A passing fix whose review is
    /// stopped so is said to be unreviewed, never taken as approved.
    pub(super) async fn end_reviews(&mut self) {
        let _ = self.late_reviews();
        if let Some(mut review) = self.passing_review.take() {
            let n = review.iteration;
            match review.poll_now() {
                Some(Ok(verdict)) => {
                    self.heard(n, &verdict);
                    self.passing_heard(n, &verdict);
                }
                _ => {
                    review.stop().await;
                    self.events.emit(Event::Note {
                        message: format!(
                            "iteration {n}: the Critic's review of the passing fix had not come in when the run ended: the fix is not reviewed"
                        ),
                    });
                }
            }
        }
        for review in std::mem::take(&mut self.pending_reviews) {
            review.stop().await;
        }
    }
}

/// `text` on one line, for a note.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
