//! The Critic's review beside the tests (`critic.mode: parallel`, or `auto` with tests faster
//! than a review): started with the tests, awaited only when they pass, otherwise left to come
//! in while the next iteration's calls run.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures::FutureExt;

use crate::error::Error;
use crate::events::event::Event;
use crate::machine::state::{Iteration, Outcome};
use crate::prompt::reply::Verdict;
use crate::role::Role;
use crate::roles::critic::Review;
use crate::supervisor::run::{PendingReview, Run};

/// What became of a review.
type Heard = Result<Verdict, Error>;

impl PendingReview {
    /// The answer, if it is in.
    fn poll_now(&mut self) -> Option<Heard> {
        let answer = (&mut self.request).now_or_never()?;
        Some(flatten(answer))
    }
}

impl Future for PendingReview {
    type Output = Heard;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Heard> {
        self.request.as_mut().poll(cx).map(flatten)
    }
}

fn flatten(answer: Result<crate::error::Result<Verdict>, actix::MailboxError>) -> Heard {
    match answer {
        Ok(r) => r,
        Err(mailbox) => Err(Error::Stopped {
            role: Role::Critic,
            message: mailbox.to_string(),
        }),
    }
}

impl Run {
    /// Sends `code` to the Critic without waiting for the verdict.
    pub(super) fn start_review(
        &self,
        it: &Iteration,
        code: String,
    ) -> Result<PendingReview, Outcome> {
        let cancel = self.steps.child_token();
        let request = self.team.critic.send(Review {
            iteration: it.n,
            context: self.context_of(it)?,
            code,
            cancel: cancel.clone(),
        });
        Ok(PendingReview {
            iteration: it.n,
            cancel,
            request: Box::pin(request),
        })
    }

    /// Waits for the review of a proposal whose tests passed, unless the run is stopped.
    pub(super) async fn await_review(
        &mut self,
        mut review: PendingReview,
    ) -> Result<Verdict, Outcome> {
        let heard = tokio::select! {
            biased;
            _ = self.steps.cancelled() => {
                review.cancel.cancel();
                let _ = (&mut review).await;
                return Err(self.cancelled());
            }
            heard = &mut review => heard,
        };
        let verdict = heard.map_err(|e| self.fail(e))?;
        self.heard(review.iteration, &verdict);
        Ok(verdict)
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
    /// their reservation as spent (the provider may bill them).
    pub(super) async fn end_reviews(&mut self) {
        let _ = self.late_reviews();
        for mut review in std::mem::take(&mut self.pending_reviews) {
            review.cancel.cancel();
            let _ = (&mut review).await;
        }
    }
}
