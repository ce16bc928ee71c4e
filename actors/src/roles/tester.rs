//! The Tester: runs the project's test command.

use std::sync::Arc;

use actix::{Actor, Context, Handler, ResponseFuture};

use super::{guarded, Role};
use crate::error::{Error, Result};
use crate::messages::RunTests;
use crate::runner::{TestRun, TestRunner};

pub struct Tester {
    runner: Arc<dyn TestRunner>,
}

impl Tester {
    pub fn new(runner: Arc<dyn TestRunner>) -> Self {
        Self { runner }
    }
}

impl Actor for Tester {
    type Context = Context<Self>;
}

impl Handler<RunTests> for Tester {
    type Result = ResponseFuture<Result<TestRun>>;

    fn handle(&mut self, msg: RunTests, _: &mut Context<Self>) -> Self::Result {
        let runner = self.runner.clone();
        Box::pin(guarded(Role::Tester, async move {
            runner.run(msg.cancel).await.map_err(Error::Runner)
        }))
    }
}
