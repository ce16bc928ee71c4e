//! The Tester: runs the project's tests, re-runs a failed run to find flaky tests
//! (`testing.flaky_retries`), and fingerprints each failing test for the entropy breaker.

use std::sync::Arc;

use actix::{Actor, Context, Handler, ResponseFuture};

use super::{guarded, Role};
use crate::entropy::mark_fingerprints;
use crate::error::{Error, Result};
use crate::flaky::{merge_retry, worth_retrying};
use crate::messages::RunTests;
use crate::runner::{TestRun, TestRunner};

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
            let mut run = runner
                .run(msg.cancel.clone())
                .await
                .map_err(Error::Runner)?;
            while run.retries < retries && worth_retrying(&run) && !msg.cancel.is_cancelled() {
                let again = runner
                    .run(msg.cancel.clone())
                    .await
                    .map_err(Error::Runner)?;
                run = merge_retry(run, again);
            }
            mark_fingerprints(&mut run);
            Ok(run)
        }))
    }
}
