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
use crate::policy::adversarial::{Counterexample, Strategy};
use crate::ports::chaos::{ChaosLayout, ChaosRunner, Covered, MutationRequest};
use crate::ports::runner::RunnerError;
use crate::prompt::bundle::ContextBundle;
use crate::prompt::reply::{extract_code, test_name};
use crate::prompt::templates::{render_source, REPLAY};
use crate::role::Role;
use crate::roles::caller::{guarded, Caller, RoleModel};
use crate::schema::mutation::{Equivalent, Mutant, MutationRun};
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
    /// Mutants no test noticed: this round's file is to kill them (a mutation round).
    pub survivors: Vec<Mutant>,
    /// Changed lines no test runs: this round's file is to run them (a coverage round).
    pub uncovered: Vec<UncoveredLine>,
    pub cancel: CancellationToken,
}

/// Chaos's answer: its reply, the test file in it (`None` when the reply had no fenced
/// block), and in a mutation round the survivors it argues are equivalent to the fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attack {
    pub reply: String,
    pub suite: Option<String>,
    pub equivalent: Vec<Equivalent>,
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

/// Supervisor → Chaos: mutation-test the target on disk.
#[derive(Message)]
#[rtype(result = "Result<MutationRun>")]
pub struct Mutate {
    pub request: MutationRequest,
    pub cancel: CancellationToken,
}

/// Supervisor → Chaos: run the files of `rounds` with coverage; the target's lines they ran
/// (`None` when the tool does not report lines per file).
#[derive(Message)]
#[rtype(result = "Result<Covered>")]
pub struct Cover {
    pub rounds: Vec<u32>,
    pub cancel: CancellationToken,
}

/// A changed line of the target that no test runs: a coverage round's file is to run it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UncoveredLine {
    pub line: u32,
    pub code: String,
}

/// Supervisor → Chaos: keep `example`, found by a property of round `round`'s file, as a
/// named regression test in that file; its name.
#[derive(Message)]
#[rtype(result = "Result<Option<String>>")]
pub struct Regress {
    pub round: u32,
    pub example: Counterexample,
}

/// Supervisor → Chaos: a property of round `round`'s file failed on `example`, which its
/// library cannot replay by name (fast-check): Chaos's model writes one example-based test of
/// it, appended to the file. The test's name, or `None` when the reply held none.
#[derive(Message)]
#[rtype(result = "Result<Option<String>>")]
pub struct Replay {
    pub iteration: u32,
    pub round: u32,
    pub test: String,
    pub failure: String,
    pub example: Counterexample,
    pub cancel: CancellationToken,
}

#[derive(Serialize)]
struct ReplayVars<'a> {
    path: String,
    language: String,
    suite: String,
    test: &'a str,
    failure: &'a str,
    counterexample: &'a str,
    seed: Option<&'a str>,
    replay_path: Option<&'a str>,
}

/// Supervisor → Chaos: add the files of `rounds` to the project (`chaos.keep_tests`): the
/// paths written, and warnings.
#[derive(Message)]
#[rtype(result = "Result<(Vec<String>, Vec<String>)>")]
pub struct Keep {
    pub rounds: Vec<u32>,
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
    survivors: &'a [Mutant],
    uncovered: &'a [UncoveredLine],
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

impl Chaos {
    /// The runner's answer to one message, guarded like every role's answer.
    fn on_runner<T, F>(
        &self,
        work: impl FnOnce(Arc<dyn ChaosRunner>) -> F,
    ) -> ResponseFuture<Result<T>>
    where
        T: 'static,
        F: std::future::Future<Output = std::result::Result<T, RunnerError>> + 'static,
    {
        let answer = work(self.runner.clone());
        Box::pin(guarded(Role::Chaos, async move { Ok(answer.await?) }))
    }
}

impl Actor for Chaos {
    type Context = Context<Self>;
}

impl Handler<Write> for Chaos {
    type Result = ResponseFuture<Result<Attack>>;

    fn handle(&mut self, msg: Write, _: &mut Context<Self>) -> Self::Result {
        let model = RoleModel::of(Role::Chaos, &self.caller, &self.settings);
        let (settings, runner) = (self.settings.clone(), self.runner.clone());
        Box::pin(guarded(Role::Chaos, async move {
            let vars = Vars {
                context: &msg.context,
                layout: runner.layout(msg.round),
                strategies: settings.chaos.attacks().map(Strategy::as_str).collect(),
                round: msg.round,
                max_rounds: settings.chaos.max_rounds,
                earlier: &msg.earlier,
                repair: msg.repair.as_ref(),
                survivors: &msg.survivors,
                uncovered: &msg.uncovered,
            };
            // Every call starts afresh: a round's file is judged by running it, not by what
            // Chaos said before.
            let messages = settings.templates.render(Role::Chaos, &vars)?.to_vec();
            let reply = model.call(msg.iteration, messages, &msg.cancel).await?;
            let equivalent = match msg.survivors.is_empty() {
                true => Vec::new(),
                false => parse_equivalent(&reply.text, &msg.survivors),
            };
            Ok(Attack {
                suite: extract_code(&reply.text),
                reply: reply.text,
                equivalent,
            })
        }))
    }
}

impl Handler<RunSuite> for Chaos {
    type Result = ResponseFuture<Result<SuiteRun>>;

    fn handle(&mut self, msg: RunSuite, _: &mut Context<Self>) -> Self::Result {
        self.on_runner(|runner| async move {
            let run = runner.run(msg.round, &msg.suite, msg.cancel).await?;
            Ok(SuiteRun {
                run,
                path: runner.path(msg.round),
            })
        })
    }
}

impl Handler<Rerun> for Chaos {
    type Result = ResponseFuture<Result<TestRun>>;

    fn handle(&mut self, msg: Rerun, _: &mut Context<Self>) -> Self::Result {
        self.on_runner(|runner| async move { runner.rerun(msg.round, msg.cancel).await })
    }
}

impl Handler<Mutate> for Chaos {
    type Result = ResponseFuture<Result<MutationRun>>;

    fn handle(&mut self, msg: Mutate, _: &mut Context<Self>) -> Self::Result {
        self.on_runner(|runner| async move { runner.mutate(msg.request, msg.cancel).await })
    }
}

impl Handler<Cover> for Chaos {
    type Result = ResponseFuture<Result<Covered>>;

    fn handle(&mut self, msg: Cover, _: &mut Context<Self>) -> Self::Result {
        self.on_runner(|runner| async move { runner.cover(msg.rounds, msg.cancel).await })
    }
}

impl Handler<Regress> for Chaos {
    type Result = ResponseFuture<Result<Option<String>>>;

    fn handle(&mut self, msg: Regress, _: &mut Context<Self>) -> Self::Result {
        self.on_runner(|runner| async move { runner.regress(msg.round, &msg.example).await })
    }
}

impl Handler<Replay> for Chaos {
    type Result = ResponseFuture<Result<Option<String>>>;

    fn handle(&mut self, msg: Replay, _: &mut Context<Self>) -> Self::Result {
        let model = RoleModel::of(Role::Chaos, &self.caller, &self.settings);
        let runner = self.runner.clone();
        Box::pin(guarded(Role::Chaos, async move {
            let Some(suite) = runner.suite(msg.round).await else {
                return Ok(None);
            };
            let vars = ReplayVars {
                path: runner.path(msg.round),
                language: runner.layout(msg.round).language,
                suite,
                test: &msg.test,
                failure: &msg.failure,
                counterexample: &msg.example.arguments,
                seed: msg.example.seed.as_deref(),
                replay_path: msg.example.path.as_deref(),
            };
            let messages = render_source(Role::Chaos, REPLAY, &vars)?.to_vec();
            let reply = model.call(msg.iteration, messages, &msg.cancel).await?;
            let Some(code) = extract_code(&reply.text) else {
                return Ok(None);
            };
            let Some(name) = test_name(&code) else {
                return Ok(None);
            };
            match runner.append(msg.round, &code).await {
                // A placeholder LocalGuard cannot put back: no regression test, the finding stays.
                Err(RunnerError::Unrestorable(_)) => Ok(None),
                other => other.map(|()| Some(name)).map_err(Into::into),
            }
        }))
    }
}

impl Handler<Keep> for Chaos {
    type Result = ResponseFuture<Result<(Vec<String>, Vec<String>)>>;

    fn handle(&mut self, msg: Keep, _: &mut Context<Self>) -> Self::Result {
        self.on_runner(|runner| async move { runner.keep(msg.rounds).await })
    }
}

impl Handler<SuiteOf> for Chaos {
    type Result = ResponseFuture<Option<String>>;

    fn handle(&mut self, msg: SuiteOf, _: &mut Context<Self>) -> Self::Result {
        let runner = self.runner.clone();
        Box::pin(async move { runner.suite(msg.round).await })
    }
}

/// The `EQUIVALENT: <mutant id>: <reason>` lines of a reply (outside its code block), for
/// survivors it was shown; a line without a reason does not count.
pub fn parse_equivalent(reply: &str, survivors: &[Mutant]) -> Vec<Equivalent> {
    let mut in_block = false;
    let mut found: Vec<Equivalent> = Vec::new();
    for line in reply.lines() {
        let line = line.trim();
        if line.starts_with("```") {
            in_block = !in_block;
            continue;
        }
        let Some(rest) = line
            .strip_prefix("EQUIVALENT:")
            .or_else(|| line.strip_prefix("- EQUIVALENT:"))
        else {
            continue;
        };
        if in_block {
            continue;
        }
        let rest = rest.trim().trim_start_matches('`');
        let Some(m) = survivors
            .iter()
            .filter(|m| {
                rest.strip_prefix(m.id.as_str())
                    .is_some_and(|after| after.is_empty() || after.starts_with([':', ' ', '`']))
            })
            .max_by_key(|m| m.id.len())
        else {
            continue;
        };
        let reason = rest[m.id.len()..]
            .trim_start_matches('`')
            .trim_start_matches([':', ' ', '-', '\u{2014}'])
            .trim();
        if !reason.is_empty() && !found.iter().any(|e| e.id == m.id) {
            found.push(Equivalent {
                id: m.id.clone(),
                reason: reason.to_string(),
            });
        }
    }
    found
}
