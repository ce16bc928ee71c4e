//! The Regent actor: an agent loop ([`LoopRun`]) behind a mailbox. Started with the loop's
//! parts, it answers [`StartLoop`] with the loop's report; [`Shutdown`] stops it as a signal
//! would: gracefully (finish the iteration under way, its commit included) or now (kill the
//! agent's process group).

use std::panic::AssertUnwindSafe;

use actix::{Actor, Context, Handler, Message, ResponseFuture};
use futures::FutureExt;
use tokio_util::sync::CancellationToken;

use super::run::{LoopDeps, LoopRun};
use ralph_actors::schema::regent::LoopReport;

/// Runs the loop; answered with its report when it ends.
#[derive(Message)]
#[rtype(result = "Option<LoopReport>")]
pub struct StartLoop;

/// Stops the loop: `now` kills the agent at once (SIGQUIT), otherwise the iteration under way
/// finishes first (SIGINT, SIGTERM).
#[derive(Message)]
#[rtype(result = "()")]
pub struct Shutdown {
    pub now: bool,
}

pub struct Regent {
    deps: Option<LoopDeps>,
    drain: CancellationToken,
    quit: CancellationToken,
}

impl Regent {
    pub fn new(deps: LoopDeps) -> Self {
        Self {
            drain: deps.drain.clone(),
            quit: deps.quit.clone(),
            deps: Some(deps),
        }
    }
}

impl Actor for Regent {
    type Context = Context<Self>;
}

impl Handler<StartLoop> for Regent {
    type Result = ResponseFuture<Option<LoopReport>>;

    fn handle(&mut self, _: StartLoop, _: &mut Context<Self>) -> Self::Result {
        let deps = self.deps.take();
        Box::pin(async move {
            let run = LoopRun::new(deps?);
            match AssertUnwindSafe(run.execute()).catch_unwind().await {
                Ok(report) => Some(report),
                Err(_) => {
                    tracing::error!("the Regent panicked");
                    None
                }
            }
        })
    }
}

impl Handler<Shutdown> for Regent {
    type Result = ();

    fn handle(&mut self, msg: Shutdown, _: &mut Context<Self>) {
        if msg.now {
            self.quit.cancel();
        } else {
            self.drain.cancel();
        }
    }
}
