//! The Critic: reviews a proposal (before its tests, or beside them), and judges whether the
//! tests Chaos wrote that fail expect what the target's contract implies.

use std::sync::Arc;

use actix::fut::wrap_future;
use actix::{Actor, ActorFutureExt, Context, Handler, Message, ResponseActFuture};
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use crate::error::Result;
use crate::policy::adversarial::Candidate;
use crate::prompt::bundle::ContextBundle;
use crate::prompt::reply::{parse_judgement, parse_verdict, Judgement, Verdict};
use crate::prompt::templates::{render_source, JUDGE};
use crate::role::Role;
use crate::roles::caller::{guarded, Caller, RoleModel};
use crate::roles::history::{History, ResetContext};
use crate::settings::RunSettings;

/// Supervisor → Critic: review a proposal before any test runs.
#[derive(Message)]
#[rtype(result = "Result<Verdict>")]
pub struct Review {
    pub iteration: u32,
    pub context: Arc<ContextBundle>,
    pub code: String,
    pub cancel: CancellationToken,
}

/// Supervisor → Critic: judge Chaos's failing tests before the Artisan is asked to pass them.
#[derive(Message)]
#[rtype(result = "Result<Judgement>")]
pub struct Judge {
    pub iteration: u32,
    pub round: u32,
    pub context: Arc<ContextBundle>,
    /// Chaos's test file.
    pub suite: String,
    pub failures: Vec<Candidate>,
    pub cancel: CancellationToken,
}

#[derive(Serialize)]
struct JudgeVars<'a> {
    #[serde(flatten)]
    context: &'a ContextBundle,
    round: u32,
    suite: &'a str,
    failures: &'a [Candidate],
}

#[derive(Serialize)]
struct Vars<'a> {
    #[serde(flatten)]
    context: &'a ContextBundle,
    proposal: &'a str,
}

pub struct Critic {
    caller: Arc<Caller>,
    settings: Arc<RunSettings>,
    history: History,
}

impl Critic {
    pub fn new(caller: Arc<Caller>, settings: Arc<RunSettings>) -> Self {
        Self {
            history: History::new(Role::Critic, &settings),
            caller,
            settings,
        }
    }
}

impl Actor for Critic {
    type Context = Context<Self>;
}

impl Handler<Review> for Critic {
    type Result = ResponseActFuture<Self, Result<Verdict>>;

    fn handle(&mut self, msg: Review, _: &mut Context<Self>) -> Self::Result {
        let model = RoleModel::of(Role::Critic, &self.caller, &self.settings);
        let settings = self.settings.clone();
        let history = self.history.clone();
        let fut = guarded(Role::Critic, async move {
            let vars = Vars {
                context: &msg.context,
                proposal: &msg.code,
            };
            let [system, user] = settings.templates.render(Role::Critic, &vars)?;
            let messages = history.messages(system, user.clone());
            let reply = model.call(msg.iteration, messages, &msg.cancel).await?;
            Ok((user, reply.text))
        });
        Box::pin(wrap_future::<_, Self>(fut).map(|res, act, _| {
            let (user, text) = res?;
            act.history.record(user, &text);
            Ok(parse_verdict(&text))
        }))
    }
}

impl Handler<Judge> for Critic {
    type Result = ResponseActFuture<Self, Result<Judgement>>;

    fn handle(&mut self, msg: Judge, _: &mut Context<Self>) -> Self::Result {
        let model = RoleModel::of(Role::Critic, &self.caller, &self.settings);
        // A judgement is a task of its own: no review history goes with it.
        let fut = guarded(Role::Critic, async move {
            let vars = JudgeVars {
                context: &msg.context,
                round: msg.round,
                suite: &msg.suite,
                failures: &msg.failures,
            };
            let messages = render_source(Role::Critic, JUDGE, &vars)?.to_vec();
            let reply = model.call(msg.iteration, messages, &msg.cancel).await?;
            let tests: Vec<String> = msg.failures.iter().map(|f| f.test.clone()).collect();
            Ok(parse_judgement(&reply.text, &tests))
        });
        Box::pin(wrap_future::<_, Self>(fut))
    }
}

impl Handler<ResetContext> for Critic {
    type Result = ();

    fn handle(&mut self, _: ResetContext, _: &mut Context<Self>) {
        self.history.clear();
    }
}
