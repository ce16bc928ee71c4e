//! The conversation a role may keep between calls, and the message that ends it.
//!
//! With `memory.context_reset_frequency: 1` (the default) every call starts afresh; with N > 1
//! the roles whose [`RoleInfo::keeps_history`](crate::role::RoleInfo) is set keep their turns
//! until the Supervisor sends [`ResetContext`] (every N iterations, or when a prompt reached the
//! context limit).

use actix::Message;

use crate::ports::llm::ChatMessage;
use crate::role::Role;
use crate::settings::RunSettings;

/// Supervisor → a role that keeps history: forget the conversation so far.
#[derive(Message)]
#[rtype(result = "()")]
pub struct ResetContext;

/// Earlier turns of one role.
#[derive(Debug, Clone, Default)]
pub struct History {
    turns: Vec<ChatMessage>,
    keep: bool,
}

impl History {
    pub fn new(role: Role, settings: &RunSettings) -> Self {
        Self {
            turns: Vec::new(),
            keep: role.info().keeps_history && settings.context_reset_frequency > 1,
        }
    }

    /// A call's messages: the system prompt, the turns kept, then this call's user prompt.
    pub fn messages(&self, system: ChatMessage, user: ChatMessage) -> Vec<ChatMessage> {
        let mut messages = Vec::with_capacity(self.turns.len() + 2);
        messages.push(system);
        messages.extend(self.turns.iter().cloned());
        messages.push(user);
        messages
    }

    /// Keeps a finished call's prompt and reply, when this role keeps history.
    pub fn record(&mut self, user: ChatMessage, reply: &str) {
        if self.keep {
            self.turns.push(user);
            self.turns.push(ChatMessage::assistant(reply));
        }
    }

    pub fn clear(&mut self) {
        self.turns.clear();
    }
}
