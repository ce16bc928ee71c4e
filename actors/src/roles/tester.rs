//! The Tester: runs the project's tests, re-runs a failed run to find flaky tests
//! (`testing.flaky_retries`), and fingerprints each failing test for the entropy breaker.

use std::sync::Arc;

use actix::{Actor, Context, Handler, Message, ResponseFuture};
use tokio_util::sync::CancellationToken;

use crate::error::Result;
use crate::policy::entropy::mark_fingerprints;
use crate::policy::flaky::{merge_retry, worth_retrying};
use crate::ports::runner::TestRunner;
use crate::role::Role;
use crate::roles::caller::guarded;
use crate::schema::test_run::TestRun;

/// Supervisor → Tester: run the tests. The runner hears `cancel` itself and kills its process
/// group, so a cancelled run still answers (with status `error`).
#[derive(Message)]
#[rtype(result = "Result<TestRun>")]
pub struct RunTests {
    pub cancel: CancellationToken,
}

pub struct Tester {
    runner: Arc<dyn TestRunner>,
    flaky_retries: u32,
}

impl Tester {
    pub fn new(runner: Arc<dyn TestRunner>, flaky_retries: u32) -> Self {
        Self {
            runner,
            flaky_retries,
        }
    }
}

impl Actor for Tester {
    type Context = Context<Self>;
}

impl Handler<RunTests> for Tester {
    type Result = ResponseFuture<Result<TestRun>>;

    fn handle(&mut self, msg: RunTests, _: &mut Context<Self>) -> Self::Result {
        let runner = self.runner.clone();
        let retries = self.flaky_retries;
        Box::pin(guarded(Role::Tester, async move {
            let mut run = runner.run(msg.cancel.clone()).await?;
            while run.retries < retries && worth_retrying(&run) && !msg.cancel.is_cancelled() {
                let again = runner.run(msg.cancel.clone()).await?;
                run = merge_retry(run, again);
            }
            mark_fingerprints(&mut run);
            Ok(run)
        }))
    }
}
