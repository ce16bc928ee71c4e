//! Chaos: the adversary. Once a fix passes its unit tests, Chaos writes a test file meant to
//! break it (boundary values, properties over generated inputs, interleavings) and runs it,
//! saved in the session folder, against the fix; a file that cannot run goes back to it for
//! repair. Which failures count is the Critic's judgement and the Supervisor's bookkeeping
//! (`supervisor::chaos`).

use std::sync::Arc;

use actix::{Actor, Context, Handler, Message, ResponseFuture};
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use crate::error::Result;
use crate::policy::adversarial::Strategy;
use crate::ports::chaos::{ChaosLayout, ChaosRunner};
use crate::prompt::bundle::ContextBundle;
use crate::prompt::reply::extract_code;
use crate::role::Role;
use crate::roles::caller::{guarded, Caller};
use crate::schema::test_run::TestRun;
use crate::settings::RunSettings;

/// A test Chaos wrote in an earlier round, and what became of it: its prompt shows them so
/// that it looks elsewhere.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EarlierTest {
    pub round: u32,
    pub test: String,
    /// `found a failure, fixed`, `found a failure, still open`, `dropped by the Critic`.
    pub status: String,
    pub reason: Option<String>,
}

/// A test file that could not run, sent back to Chaos.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Repair {
    pub suite: String,
    pub error: String,
}

/// Supervisor → Chaos: write round `round`'s test file (or repair the last one).
#[derive(Message)]
#[rtype(result = "Result<Attack>")]
pub struct Write {
    pub iteration: u32,
    pub round: u32,
    pub context: Arc<ContextBundle>,
    pub earlier: Vec<EarlierTest>,
    pub repair: Option<Repair>,
    pub cancel: CancellationToken,
}

/// Chaos's answer: its reply, and the test file in it (`None` when the reply had no fenced
/// block).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attack {
    pub reply: String,
    pub suite: Option<String>,
}

/// A round's file, run: its results and where it is kept (relative to the project root).
#[derive(Debug, Clone)]
pub struct SuiteRun {
    pub run: TestRun,
    pub path: String,
}

/// Supervisor → Chaos: save `suite` as round `round`'s file and run it against the target.
#[derive(Message)]
#[rtype(result = "Result<SuiteRun>")]
pub struct RunSuite {
    pub round: u32,
    pub suite: String,
    pub cancel: CancellationToken,
}

/// Supervisor → Chaos: run round `round`'s saved file again.
#[derive(Message)]
#[rtype(result = "Result<TestRun>")]
pub struct Rerun {
    pub round: u32,
    pub cancel: CancellationToken,
}

/// Supervisor → Chaos: round `round`'s saved file, for the Artisan's prompt.
#[derive(Message)]
#[rtype(result = "Option<String>")]
pub struct SuiteOf {
    pub round: u32,
}

#[derive(Serialize)]
struct Vars<'a> {
    #[serde(flatten)]
    context: &'a ContextBundle,
    layout: ChaosLayout,
    strategies: Vec<&'static str>,
    round: u32,
    max_rounds: u32,
    earlier: &'a [EarlierTest],
    repair: Option<&'a Repair>,
}

pub struct Chaos {
    caller: Arc<Caller>,
    settings: Arc<RunSettings>,
    runner: Arc<dyn ChaosRunner>,
}

impl Chaos {
    pub fn new(
        caller: Arc<Caller>,
        settings: Arc<RunSettings>,
        runner: Arc<dyn ChaosRunner>,
    ) -> Self {
        Self {
            caller,
            settings,
            runner,
        }
    }
}

impl Actor for Chaos {
    type Context = Context<Self>;
}

impl Handler<Write> for Chaos {
    type Result = ResponseFuture<Result<Attack>>;

    fn handle(&mut self, msg: Write, _: &mut Context<Self>) -> Self::Result {
        let (caller, settings, runner) = (
            self.caller.clone(),
            self.settings.clone(),
            self.runner.clone(),
        );
        Box::pin(guarded(Role::Chaos, async move {
            let vars = Vars {
                context: &msg.context,
                layout: runner.layout(msg.round),
                strategies: settings
                    .chaos
                    .strategies
                    .iter()
                    .map(|s| Strategy::as_str(*s))
                    .collect(),
                round: msg.round,
                max_rounds: settings.chaos.max_rounds,
                earlier: &msg.earlier,
                repair: msg.repair.as_ref(),
            };
            // Every call starts afresh: a round's file is judged by running it, not by what
            // Chaos said before.
            let messages = settings.templates.render(Role::Chaos, &vars)?.to_vec();
            let reply = caller
                .call(
                    msg.iteration,
                    Role::Chaos,
                    settings.model(Role::Chaos),
                    messages,
                    &msg.cancel,
                )
                .await?;
            Ok(Attack {
                suite: extract_code(&reply.text),
                reply: reply.text,
            })
        }))
    }
}

impl Handler<RunSuite> for Chaos {
    type Result = ResponseFuture<Result<SuiteRun>>;

    fn handle(&mut self, msg: RunSuite, _: &mut Context<Self>) -> Self::Result {
        let runner = self.runner.clone();
        Box::pin(guarded(Role::Chaos, async move {
            let run = runner.run(msg.round, &msg.suite, msg.cancel).await?;
            Ok(SuiteRun {
                run,
                path: runner.path(msg.round),
            })
        }))
    }
}

impl Handler<Rerun> for Chaos {
    type Result = ResponseFuture<Result<TestRun>>;

    fn handle(&mut self, msg: Rerun, _: &mut Context<Self>) -> Self::Result {
        let runner = self.runner.clone();
        Box::pin(guarded(Role::Chaos, async move {
            Ok(runner.rerun(msg.round, msg.cancel).await?)
        }))
    }
}

impl Handler<SuiteOf> for Chaos {
    type Result = ResponseFuture<Option<String>>;

    fn handle(&mut self, msg: SuiteOf, _: &mut Context<Self>) -> Self::Result {
        let runner = self.runner.clone();
        Box::pin(async move { runner.suite(msg.round).await })
    }
}
