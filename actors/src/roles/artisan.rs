//! The Artisan: writes the whole new target file.

use std::sync::Arc;

use actix::fut::wrap_future;
use actix::{Actor, ActorFutureExt, Context, Handler, Message, ResponseActFuture};
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use crate::error::Result;
use crate::prompt::bundle::ContextBundle;
use crate::prompt::reply::{extract_code, Proposal};
use crate::role::Role;
use crate::roles::caller::{guarded, Caller, RoleModel};
use crate::roles::history::{History, ResetContext};
use crate::settings::RunSettings;

/// Supervisor → Artisan: write the whole new target file.
#[derive(Message)]
#[rtype(result = "Result<Proposal>")]
pub struct Generate {
    pub iteration: u32,
    pub context: Arc<ContextBundle>,
    /// Why the previous proposal of this iteration was sent back (the Critic's reasons, the
    /// test-integrity check, a reply without code).
    pub critique: Option<String>,
    pub cancel: CancellationToken,
}

#[derive(Serialize)]
struct Vars<'a> {
    #[serde(flatten)]
    context: &'a ContextBundle,
    critique: Option<&'a str>,
}

pub struct Artisan {
    caller: Arc<Caller>,
    settings: Arc<RunSettings>,
    history: History,
}

impl Artisan {
    pub fn new(caller: Arc<Caller>, settings: Arc<RunSettings>) -> Self {
        Self {
            history: History::new(Role::Artisan, &settings),
            caller,
            settings,
        }
    }
}

impl Actor for Artisan {
    type Context = Context<Self>;
}

impl Handler<Generate> for Artisan {
    type Result = ResponseActFuture<Self, Result<Proposal>>;

    fn handle(&mut self, msg: Generate, _: &mut Context<Self>) -> Self::Result {
        let model = RoleModel::of(Role::Artisan, &self.caller, &self.settings);
        let settings = self.settings.clone();
        let history = self.history.clone();
        let fut = guarded(Role::Artisan, async move {
            let vars = Vars {
                context: &msg.context,
                critique: msg.critique.as_deref(),
            };
            let [system, user] = settings.templates.render(Role::Artisan, &vars)?;
            let messages = history.messages(system, user.clone());
            let reply = model.call(msg.iteration, messages, &msg.cancel).await?;
            let code = extract_code(&reply.text);
            Ok((
                user,
                Proposal {
                    code,
                    reply: reply.text,
                },
            ))
        });
        Box::pin(wrap_future::<_, Self>(fut).map(|res, act, _| {
            let (user, proposal) = res?;
            act.history.record(user, &proposal.reply);
            Ok(proposal)
        }))
    }
}

impl Handler<ResetContext> for Artisan {
    type Result = ();

    fn handle(&mut self, _: ResetContext, _: &mut Context<Self>) {
        self.history.clear();
    }
}
