//! The run's models as hooks ask them ([`Ask`]): an `agent` hook's question goes through the
//! run's [`Caller`], so LocalGuard seals it and the budget meters it like a role's call.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::machine::hooks::{Ask, AskError};
use crate::ports::llm::ChatMessage;
use crate::role::Role;
use crate::roles::caller::Caller;
use crate::settings::ModelSpec;

/// The run's models as hooks ask them: on the Critic's line of the budget (a hook's question
/// is a review of sorts), on its model unless the hook names one.
pub(crate) struct RunAsk {
    pub(crate) caller: Arc<Caller>,
    pub(crate) critic: Option<ModelSpec>,
    /// The run's steps: a question is abandoned as the run stops.
    pub(crate) cancel: CancellationToken,
}

#[async_trait::async_trait]
impl Ask for RunAsk {
    async fn ask(
        &self,
        iteration: u32,
        model: Option<&str>,
        system: &str,
        prompt: &str,
    ) -> Result<String, AskError> {
        let spec = match (model, &self.critic) {
            (Some(model), critic) => ModelSpec {
                model: model.to_string(),
                temperature: None,
                max_tokens: critic
                    .as_ref()
                    .map_or(Role::Critic.info().default_max_tokens, |c| c.max_tokens),
                fallbacks: Vec::new(),
            },
            (None, Some(critic)) => critic.clone(),
            (None, None) => {
                return Err(AskError::NoModel(
                    "the run has no Critic's model to ask: name one with `model:`",
                ))
            }
        };
        let messages = vec![ChatMessage::system(system), ChatMessage::user(prompt)];
        self.caller
            .call(iteration, Role::Critic, &spec, messages, &self.cancel)
            .await
            .map(|reply| reply.text)
            .map_err(AskError::from)
    }
}
