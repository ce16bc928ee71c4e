//! The Critic: reviews a proposal before any test runs.

use std::sync::Arc;

use actix::fut::wrap_future;
use actix::{Actor, ActorFutureExt, Context, Handler, ResponseActFuture};
use serde::Serialize;

use super::{guarded, Caller, ContextBundle, Role};
use crate::error::{Error, Result};
use crate::llm::ChatMessage;
use crate::messages::{ResetContext, Review};
use crate::reply::{parse_verdict, Verdict};
use crate::settings::RunSettings;

#[derive(Serialize)]
struct Vars<'a> {
    #[serde(flatten)]
    context: &'a ContextBundle,
    proposal: &'a str,
}

pub struct Critic {
    caller: Arc<Caller>,
    settings: Arc<RunSettings>,
    history: Vec<ChatMessage>,
}

impl Critic {
    pub fn new(caller: Arc<Caller>, settings: Arc<RunSettings>) -> Self {
        Self {
            caller,
            settings,
            history: Vec::new(),
        }
    }
}

impl Actor for Critic {
    type Context = Context<Self>;
}

impl Handler<Review> for Critic {
    type Result = ResponseActFuture<Self, Result<Verdict>>;

    fn handle(&mut self, msg: Review, _: &mut Context<Self>) -> Self::Result {
        let (caller, settings) = (self.caller.clone(), self.settings.clone());
        let history = self.history.clone();
        let fut = guarded(Role::Critic, async move {
            let vars = Vars {
                context: &msg.context,
                proposal: &msg.code,
            };
            let [system, user] = settings
                .templates
                .render(Role::Critic, &vars)
                .map_err(Error::Workspace)?;
            let mut messages = Vec::with_capacity(history.len() + 2);
            messages.push(system);
            messages.extend(history);
            messages.push(user.clone());
            let reply = caller
                .call(
                    msg.iteration,
                    Role::Critic,
                    settings.model(Role::Critic),
                    messages,
                    &msg.cancel,
                )
                .await?;
            Ok((user, reply.text))
        });
        Box::pin(wrap_future::<_, Self>(fut).map(|res, act, _| {
            let (user, text) = res?;
            if act.settings.context_reset_frequency > 1 {
                act.history.push(user);
                act.history.push(ChatMessage::assistant(text.clone()));
            }
            Ok(parse_verdict(&text))
        }))
    }
}

impl Handler<ResetContext> for Critic {
    type Result = ();

    fn handle(&mut self, _: ResetContext, _: &mut Context<Self>) {
        self.history.clear();
    }
}
