//! The fix loop's Artisan as a coding-agent CLI (`--models artisan=agent:claude`): the agent is
//! not a provider, so its model is set aside while the providers are built, and the agent is
//! put in front of them (`agents::artisan`).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use ralph_actors::policy::budget::Prices;
use ralph_actors::ports::llm::LlmClient;
use ralph_actors::role::Role;
use ralph_actors::settings::ModelSpec;

use ralph_actors::events::bus::EventBus;
use ralph_guard::Guard;

use crate::agents::artisan::{split_model, AgentArtisan, WithAgent, UNBOUNDED_OUTPUT};
use crate::agents::cost::price_of;
use crate::agents::registry::{ready, Registry};
use crate::agents::wire::{route, Lazy, Route};
use crate::config::Config;
use crate::error::{Result, UsageError};
use crate::gateway::Purse;
use crate::models::agent_misplaced;
use crate::process::groups::ProcessGroups;
use crate::providers::LlmSource;

/// Where a run's event bus is handed to what was built before it.
pub(crate) type BusSlot = Arc<std::sync::OnceLock<EventBus>>;

/// The agent that will be the Artisan, its model set aside.
pub(crate) struct Pending {
    spec: ModelSpec,
    artisan: AgentArtisan,
    notes: Vec<String>,
}

/// Takes the Artisan's model out of `models` when it is an agent (`agent/NAME[/MODEL]`), with
/// the agent installed and signed in. An agent named for another role, or a fallback, is
/// refused; so is recording or replaying an agent's run, which is not a model's exchange.
pub(crate) fn take(
    models: &mut BTreeMap<Role, ModelSpec>,
    config: &Config,
    source: &LlmSource,
    (root, target): (&Path, &Path),
    groups: &ProcessGroups,
    (prices, guard, max_cost_usd): (&Prices, &Arc<Guard>, f64),
) -> Result<Option<Pending>> {
    for (role, spec) in models.iter() {
        if let Some(m) = spec.fallbacks.iter().find(|m| split_model(m).is_some()) {
            return Err(UsageError::flag(
                "--models",
                format!("the {role}'s fallback {m} is an agent CLI: an agent is the Artisan's model only, never a fallback"),
            )
            .into());
        }
        if let Some(why) = agent_misplaced(*role, &spec.model) {
            return Err(UsageError::flag("--models", why).into());
        }
    }
    let Some(model_name) = models.get(&Role::Artisan).map(|s| s.model.clone()) else {
        return Ok(None);
    };
    let Some((name, model)) = split_model(&model_name) else {
        return Ok(None);
    };
    if !matches!(source, LlmSource::Live(_)) {
        return Err(UsageError::flag(
            "--record/--replay",
            format!("the Artisan is the agent {name}, whose runs cannot be recorded or replayed"),
        )
        .into());
    }
    let registry = Registry::new(&config.agents);
    let def = registry.get(name)?.clone();
    let binary = ready(&def)?;
    let (price, priced_as, known) = price_of(prices, model);
    let env = |name: &str| std::env::var(name).ok();
    let (wire, mut notes) = match route(&def, model, &env)? {
        Route::Through(upstream) => {
            let purse = Purse {
                max_cost_usd,
                prices: prices.clone(),
                // The run's bus, once it exists, replaces this one (`Lazy::bus`).
                events: EventBus::discard(),
            };
            let note = format!(
                "{}'s calls go through ralph-loop's model gateway: masked by LocalGuard, paid for within what the Supervisor reserves for each Artisan call, and the key kept from it",
                def.title_or_name()
            );
            (Some(Lazy::new(upstream, guard.clone(), purse)), vec![note])
        }
        Route::Direct(note) => (None, note.into_iter().collect()),
    };
    let unpriced = wire.is_none() && !known && !def.reports_cost;
    notes.extend(unpriced.then(|| {
        format!(
            "{} reports no cost and its model's price is not known: the Artisan's costs are estimated at {priced_as}'s price",
            def.title
        )
    }));
    let artisan = AgentArtisan {
        model_name: model_name.clone(),
        def,
        binary,
        root: root.to_path_buf(),
        target: target.to_path_buf(),
        env: std::env::vars_os().collect(),
        limits: config.regent.limits(),
        reaper: std::env::current_exe().ok(),
        groups: groups.clone(),
        price,
        retry: config.regent.retry(),
        repo: crate::git::Repo::at(root),
        wire,
    };
    // The agent has no fallback model: a crash or hang is run again, as the Regent does.
    let Some(mut spec) = models.remove(&Role::Artisan) else {
        return Ok(None);
    };
    spec.fallbacks.clear();
    if artisan.wire.is_some() {
        spec.max_tokens = UNBOUNDED_OUTPUT;
    }
    Ok(Some(Pending {
        spec,
        artisan,
        notes,
    }))
}

/// Puts the agent back as the Artisan, in front of the providers' client; its model is priced
/// as the agent's model (for the budget's reservation; the agent's own cost is what is
/// counted). Behind the model gateway, its output limit is unbounded, so each call reserves
/// what the budget has left and the agent's calls are held to it.
/// Returns the client, and where the run's event bus goes when the agent is behind the
/// gateway.
pub(crate) fn attach(
    pending: Pending,
    llm: Arc<dyn LlmClient>,
    models: &mut BTreeMap<Role, ModelSpec>,
    prices: &mut Prices,
    notes: &mut Vec<String>,
) -> (Arc<dyn LlmClient>, Option<BusSlot>) {
    prices
        .0
        .insert(pending.spec.model.clone(), pending.artisan.price);
    models.insert(Role::Artisan, pending.spec);
    notes.extend(pending.notes);
    let bus = pending.artisan.wire.as_ref().map(|w| w.bus());
    let client = Arc::new(WithAgent {
        agent: pending.artisan,
        models: llm,
    });
    (client, bus)
}
