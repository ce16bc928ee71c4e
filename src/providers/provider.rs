//! What the router asks of each provider's client, beyond answering calls.

use ralph_actors::ports::llm::{LlmClient, LlmError};

/// A client for one provider, as the router holds it.
pub trait Provider: LlmClient {
    /// How a user reaches it, for the "available" list of errors.
    fn describe(&self) -> String;
    /// Fails when a call could not be sent (no key, say), without sending anything.
    fn check(&self) -> Result<(), LlmError> {
        Ok(())
    }
}
