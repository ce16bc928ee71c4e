//! One run of any agent: an ACP agent's session (`acp`), or a command whose output is read line
//! by line (`invoke`), by its definition's format.

use ralph_actors::schema::agent::AgentEvent;
use tokio_util::sync::CancellationToken;

use super::acp::invoke_acp;
use super::invoke::{invoke, AgentOutcome, Invocation};
use super::output::Format;
use crate::process::groups::ProcessGroups;
use crate::process::supervise::SpawnError;

/// Runs the agent once, as its format says; `observe` sees each event as it comes.
pub async fn launch(
    run: Invocation,
    cancel: CancellationToken,
    groups: &ProcessGroups,
    observe: impl FnMut(&AgentEvent),
) -> Result<AgentOutcome, SpawnError> {
    match run.def.format {
        Format::Acp => invoke_acp(run, cancel, groups, observe).await,
        _ => invoke(run, cancel, groups, observe).await,
    }
}
