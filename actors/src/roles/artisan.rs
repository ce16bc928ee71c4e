//! The Artisan: writes the whole new target file.

use std::sync::Arc;

use actix::fut::wrap_future;
use actix::{Actor, ActorFutureExt, Context, Handler, ResponseActFuture};
use serde::Serialize;

use super::{guarded, Caller, ContextBundle, Role};
use crate::error::{Error, Result};
use crate::llm::ChatMessage;
use crate::messages::{Generate, Proposal, ResetContext};
use crate::reply::extract_code;
use crate::settings::RunSettings;

#[derive(Serialize)]
struct Vars<'a> {
    #[serde(flatten)]
    context: &'a ContextBundle,
    critique: Option<&'a str>,
}

pub struct Artisan {
    caller: Arc<Caller>,
    settings: Arc<RunSettings>,
    /// Earlier turns, kept only when `context_reset_frequency` > 1.
    history: Vec<ChatMessage>,
}

impl Artisan {
    pub fn new(caller: Arc<Caller>, settings: Arc<RunSettings>) -> Self {
        Self {
            caller,
            settings,
            history: Vec::new(),
        }
    }
}

impl Actor for Artisan {
    type Context = Context<Self>;
}

impl Handler<Generate> for Artisan {
    type Result = ResponseActFuture<Self, Result<Proposal>>;

    fn handle(&mut self, msg: Generate, _: &mut Context<Self>) -> Self::Result {
        let (caller, settings) = (self.caller.clone(), self.settings.clone());
        let history = self.history.clone();
        let fut = guarded(Role::Artisan, async move {
            let vars = Vars {
                context: &msg.context,
                critique: msg.critique.as_deref(),
            };
            let [system, user] = settings
                .templates
                .render(Role::Artisan, &vars)
                .map_err(Error::Workspace)?;
            let mut messages = Vec::with_capacity(history.len() + 2);
            messages.push(system);
            messages.extend(history);
            messages.push(user.clone());
            let reply = caller
                .call(
                    msg.iteration,
                    Role::Artisan,
                    settings.model(Role::Artisan),
                    messages,
                    &msg.cancel,
                )
                .await?;
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
            if act.settings.context_reset_frequency > 1 {
                act.history.push(user);
                act.history
                    .push(ChatMessage::assistant(proposal.reply.clone()));
            }
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
