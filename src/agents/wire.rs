//! Whether an agent run's calls go through the model gateway, and the run pointed at it: the
//! one decision `loop` and the fix loop's agent Artisan share.
//!
//! An agent goes behind the gateway when its definition has a `gateway` section, the section
//! serves the run's model, and the user's key for the section's provider is at hand (the
//! gateway forwards with it). Otherwise it calls its provider directly, and the note says what
//! that leaves uncovered.

use std::ffi::OsString;
use std::sync::{Arc, OnceLock};

use ralph_actors::events::bus::EventBus;
use ralph_guard::Guard;

use super::definition::AgentDef;
use crate::gateway::{Gateway, GatewayError, Purse, Upstream};

/// How an agent run reaches its model.
#[derive(Debug)]
pub enum Route {
    /// Through a gateway forwarding to this upstream.
    Through(Upstream),
    /// Directly: no `gateway` section (`None`), or one that cannot be used now (why, for the
    /// run's notes).
    Direct(Option<String>),
}

/// The route of `agent`'s runs on `model` (its own default when `None`), with `env` the user's
/// environment.
pub fn route(
    agent: &AgentDef,
    model: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Route, GatewayError> {
    let Some(section) = &agent.gateway else {
        return Ok(Route::Direct(None));
    };
    if !section.serves(model) {
        return Ok(Route::Direct(Some(format!(
            "{}'s model {} is not one the model gateway serves for it ({}): its calls go to their provider directly; LocalGuard does not see them, and their cost is counted after each run",
            agent.title_or_name(),
            model.unwrap_or("(its own default)"),
            section.models.join(", ")
        ))));
    }
    let upstream = Upstream::from_env(section.provider, env)?;
    if upstream.key.is_none() {
        return Ok(Route::Direct(Some(format!(
            "{}'s calls go to {} directly: {} is not set (it signs in its own way), so ralph-loop's model gateway cannot stand between them; LocalGuard does not see its calls, and its cost is counted after each run",
            agent.title_or_name(),
            section.provider.name(),
            section.provider.key_envs().join(" or ")
        ))));
    }
    Ok(Route::Through(upstream))
}

/// The note a run behind `gateway` starts with.
pub fn through_note(agent: &AgentDef, gateway: &Gateway) -> String {
    format!(
        "{}'s calls go through ralph-loop's model gateway ({}): masked by LocalGuard, paid for within the budget, and the key kept from it",
        agent.title_or_name(),
        gateway.url()
    )
}

/// `agent`'s definition and environment (`env`) for a run: pointed at `gateway` when there is
/// one (the section's arguments first, its variables set, no provider key left), else as
/// they are.
pub fn pointed(
    agent: &AgentDef,
    env: &[(OsString, OsString)],
    gateway: Option<&Gateway>,
) -> (AgentDef, Vec<(OsString, OsString)>) {
    let mut def = agent.clone();
    match (gateway, &agent.gateway) {
        (Some(gateway), Some(section)) => {
            let mut args = section.arguments(gateway);
            args.append(&mut def.args);
            def.args = args;
            (def, section.environment(env, gateway))
        }
        _ => (def, env.to_vec()),
    }
}

/// A gateway started on first use: the fix loop's agent Artisan builds its client before any
/// runtime runs, so its gateway starts with its first run, on the run's runtime. The run's
/// event bus is made after the client too: it is handed over in [`Lazy::bus`], and the
/// gateway's ledger says its warnings (a model with no price) there.
pub struct Lazy {
    upstream: Upstream,
    guard: Arc<Guard>,
    purse: Purse,
    bus: Arc<OnceLock<EventBus>>,
    started: tokio::sync::OnceCell<Arc<Gateway>>,
}

impl Lazy {
    pub fn new(upstream: Upstream, guard: Arc<Guard>, purse: Purse) -> Self {
        Self {
            upstream,
            guard,
            purse,
            bus: Arc::new(OnceLock::new()),
            started: tokio::sync::OnceCell::new(),
        }
    }

    /// Where the run's event bus is put once it exists.
    pub fn bus(&self) -> Arc<OnceLock<EventBus>> {
        self.bus.clone()
    }

    /// The gateway, started now if it was not yet.
    pub async fn gateway(&self) -> Result<Arc<Gateway>, GatewayError> {
        self.started
            .get_or_try_init(|| async {
                let mut purse = self.purse.clone();
                if let Some(bus) = self.bus.get() {
                    purse.events = bus.clone();
                }
                let g = Gateway::start(self.upstream.clone(), self.guard.clone(), purse).await?;
                Ok(Arc::new(g))
            })
            .await
            .cloned()
    }
}
