//! LocalGuard, the fifth role: every text bound for a model passes through it. It seals each
//! call's request (the only kind a client takes, [`GuardedRequest`]) and each batch of texts a
//! remote embedder gets ([`GuardedTexts`]), tells the event stream what a call carries masked,
//! and checks a model's text before it is written (a placeholder invented or mangled). The
//! masking itself is the run's [`Guard`], shared with the ports' wrappers ([`crate::guard`]).

use std::sync::Arc;

use actix::{Actor, Context, Handler, Message};
use ralph_guard::{Guard, GuardError};

use crate::events::bus::EventBus;
use crate::events::event::Event;
use crate::guard::{seal_strings, DocumentError, NOTE};
use crate::ports::llm::{ChatRequest, GuardedRequest};
use crate::ports::memory::GuardedTexts;
use crate::schema::attempt::FixAttempt;

/// Caller → LocalGuard: seal a call's request.
#[derive(Message)]
#[rtype(result = "Result<GuardedRequest, GuardError>")]
pub struct Seal {
    pub iteration: u32,
    pub request: ChatRequest,
}

/// MemoryVault → LocalGuard: seal texts for the embedder.
#[derive(Message)]
#[rtype(result = "Result<GuardedTexts, GuardError>")]
pub struct SealTexts(pub Vec<String>);

/// MemoryVault → LocalGuard: seal an attempt before it is shared.
#[derive(Message)]
#[rtype(result = "Result<FixAttempt, DocumentError>")]
pub struct SealRecord(pub FixAttempt);

/// Supervisor → LocalGuard: can every placeholder in this model's text be put back?
#[derive(Message)]
#[rtype(result = "Result<(), GuardError>")]
pub struct Check(pub String);

pub struct LocalGuard {
    guard: Arc<Guard>,
    events: EventBus,
}

impl LocalGuard {
    pub fn new(guard: Arc<Guard>, events: EventBus) -> Self {
        Self { guard, events }
    }
}

impl Actor for LocalGuard {
    type Context = Context<Self>;
}

impl Handler<Seal> for LocalGuard {
    type Result = Result<GuardedRequest, GuardError>;

    fn handle(&mut self, msg: Seal, _: &mut Context<Self>) -> Self::Result {
        let role = msg.request.role;
        let (sealed, kinds) = GuardedRequest::seal(&self.guard, msg.request, NOTE)?;
        if !kinds.is_empty() {
            self.events.emit(Event::Masked {
                iteration: msg.iteration,
                role,
                kinds,
            });
        }
        Ok(sealed)
    }
}

impl Handler<SealTexts> for LocalGuard {
    type Result = Result<GuardedTexts, GuardError>;

    fn handle(&mut self, msg: SealTexts, _: &mut Context<Self>) -> Self::Result {
        GuardedTexts::seal(&self.guard, msg.0)
    }
}

impl Handler<SealRecord> for LocalGuard {
    type Result = Result<FixAttempt, DocumentError>;

    fn handle(&mut self, msg: SealRecord, _: &mut Context<Self>) -> Self::Result {
        seal_strings(&self.guard, msg.0)
    }
}

impl Handler<Check> for LocalGuard {
    type Result = Result<(), GuardError>;

    fn handle(&mut self, msg: Check, _: &mut Context<Self>) -> Self::Result {
        self.guard.check(&msg.0)
    }
}
