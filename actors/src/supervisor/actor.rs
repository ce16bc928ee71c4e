//! The Supervisor actor: a [`Run`] behind a mailbox, for callers that speak actix. It is
//! started with the run's parts, answers [`StartRun`] with the final report, and [`Interrupt`]
//! stops the run as Ctrl+C would.

use std::panic::AssertUnwindSafe;

use actix::{Actor, Context, Handler, Message, ResponseFuture};
use futures::FutureExt;
use tokio_util::sync::CancellationToken;

use crate::roles::caller::panic_message;
use crate::schema::report::Report;
use crate::supervisor::finish::error_report;
use crate::supervisor::run::{Run, RunDeps};

/// Starts the run; answered with the final report when it ends.
#[derive(Message)]
#[rtype(result = "Report")]
pub struct StartRun;

/// Ctrl+C: end the current step, write state and report, finish as `interrupted`.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Interrupt;

pub struct Supervisor {
    deps: Option<RunDeps>,
    cancel: CancellationToken,
}

impl Supervisor {
    pub fn new(deps: RunDeps) -> Self {
        Self {
            cancel: deps.cancel.clone(),
            deps: Some(deps),
        }
    }
}

impl Actor for Supervisor {
    type Context = Context<Self>;
}

impl Handler<StartRun> for Supervisor {
    type Result = ResponseFuture<Report>;

    fn handle(&mut self, _: StartRun, _: &mut Context<Self>) -> Self::Result {
        let Some(deps) = self.deps.take() else {
            let report = error_report("the session was already started");
            return Box::pin(async move { report });
        };
        Box::pin(async move {
            // Starting the actors may panic too (a store's constructor, a bad setting).
            let run = match std::panic::catch_unwind(AssertUnwindSafe(|| Run::new(deps))) {
                Ok(run) => run,
                Err(panic) => {
                    return error_report(&format!(
                        "supervisor panicked: {}",
                        panic_message(&*panic)
                    ))
                }
            };
            match AssertUnwindSafe(run.execute()).catch_unwind().await {
                Ok(report) => report,
                Err(panic) => {
                    error_report(&format!("supervisor panicked: {}", panic_message(&*panic)))
                }
            }
        })
    }
}

impl Handler<Interrupt> for Supervisor {
    type Result = ();

    fn handle(&mut self, _: Interrupt, _: &mut Context<Self>) {
        self.cancel.cancel();
    }
}
