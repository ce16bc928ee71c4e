//! A role's answer under way while the run goes on: the Critic's review beside the tests (or
//! beside Chaos's round), the Librarian's analysis beside the Artisan's call.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures::future::BoxFuture;
use futures::FutureExt;
use tokio_util::sync::CancellationToken;

use crate::error::{Error, Result};
use crate::prompt::reply::Verdict;
use crate::role::Role;

/// A review under way beside (or after) its proposal's tests.
pub(crate) type PendingReview = Pending<Verdict>;

/// The Librarian's analysis under way beside the Artisan's call.
pub(crate) type PendingAnalysis = Pending<String>;

/// A message sent to a role whose answer is not awaited yet.
pub(crate) struct Pending<T> {
    /// The iteration that asked.
    pub(crate) iteration: u32,
    /// Ends this call alone, as the run ends with it still out.
    pub(crate) cancel: CancellationToken,
    answer: BoxFuture<'static, Result<T>>,
}

impl<T: Send + 'static> Pending<T> {
    /// `request` is the actor's answer to come (`addr.send(msg)`); a closed mailbox becomes the
    /// role's typed error.
    pub(crate) fn new<F>(role: Role, iteration: u32, cancel: CancellationToken, request: F) -> Self
    where
        F: Future<Output = std::result::Result<Result<T>, actix::MailboxError>> + Send + 'static,
    {
        let answer = request.map(move |answer| match answer {
            Ok(r) => r,
            Err(mailbox) => Err(Error::Stopped {
                role,
                message: mailbox.to_string(),
            }),
        });
        Self {
            iteration,
            cancel,
            answer: answer.boxed(),
        }
    }

    /// The answer, if it is in.
    pub(crate) fn poll_now(&mut self) -> Option<Result<T>> {
        (&mut self.answer).now_or_never()
    }

    /// Stops the call and waits for it to hear so (a cancelled call charges its reservation
    /// as it does).
    pub(crate) async fn stop(mut self) {
        self.cancel.cancel();
        let _ = (&mut self.answer).await;
    }
}

impl<T> Future for Pending<T> {
    type Output = Result<T>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<T>> {
        self.answer.as_mut().poll(cx)
    }
}
