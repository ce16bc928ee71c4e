//! The terminal view's model pickers: a fix run's roles, each switchable to any model the run
//! already checked it can call and price ([`roles`]); a loop's agent, switchable to the models
//! the agent lists ([`agent`]).

use std::collections::BTreeMap;

use ralph_actors::policy::budget::{Price, Prices};
use ralph_actors::role::Role;
use ralph_actors::roles::switch::{Chosen, ModelSwitch};
use ralph_actors::settings::{ModelSpec, RunSettings};
use tokio::sync::{oneshot, watch};

use crate::agents::cost::price_of;
use crate::agents::definition::AgentDef;
use crate::agents::registry;
use crate::process::groups::ProcessGroups;
use crate::views::tui::picker::{Picker, Row};

/// A fix run's roles: each may change to any model of the run (every role's model and
/// fallbacks, all checked callable and priced as the run was planned; an agent CLI only for
/// the Artisan). A choice goes into `switch`, read before each of the role's calls.
pub(crate) fn roles(settings: &RunSettings, switch: ModelSwitch) -> Picker {
    let roles: Vec<Role> = settings.roles().collect();
    let mut all: Vec<String> = Vec::new();
    for role in &roles {
        let spec: &ModelSpec = settings.model(*role);
        for model in std::iter::once(&spec.model).chain(&spec.fallbacks) {
            if !all.contains(model) {
                all.push(model.clone());
            }
        }
    }
    let rows = roles
        .iter()
        .map(|role| Row {
            who: role.to_string(),
            now: settings.model(*role).model.clone(),
            choices: all
                .iter()
                .filter(|m| crate::models::agent_misplaced(*role, m).is_none())
                .cloned()
                .collect(),
            note: None,
        })
        .collect();
    let windows: BTreeMap<String, Option<u32>> = all
        .iter()
        .map(|m| {
            let window = crate::providers::prices::info(m).map(|i| i.context_window);
            (m.clone(), window)
        })
        .collect();
    let choose = Box::new(move |i: usize, model: &str| {
        let role = *roles.get(i).ok_or("no such role")?;
        switch.set(
            role,
            Chosen {
                model: model.to_string(),
                context_window: windows.get(model).copied().flatten(),
            },
        );
        Ok(format!("the {role} runs on {model} from its next call"))
    });
    Picker {
        rows,
        later: None,
        choose,
    }
}

/// A loop's agent: it may change to the models the agent lists (from the cache, else asked of
/// the agent in the background while the loop starts). A choice, with its price for estimated
/// costs, goes into `switch`, taken before the next iteration.
pub(crate) fn agent(
    def: &AgentDef,
    model: Option<&str>,
    prices: Prices,
    groups: &ProcessGroups,
    switch: watch::Sender<Option<(String, Price)>>,
) -> Picker {
    let (tx, rx) = oneshot::channel();
    let who = def.name.clone();
    let (def, groups) = (def.clone(), groups.clone());
    actix_rt::spawn(async move {
        let cache = registry::models_cache(&def.name);
        let listed = registry::models(&def, false, &cache, &groups)
            .await
            .map(|m| m.names)
            .map_err(|e| e.to_string());
        let _ = tx.send(listed);
    });
    let choose = Box::new(move |_: usize, model: &str| {
        let (price, _, _) = price_of(&prices, Some(model));
        switch.send_replace(Some((model.to_string(), price)));
        Ok(format!("the agent runs on {model} from the next iteration"))
    });
    Picker {
        rows: vec![Row {
            who,
            now: model.unwrap_or("its default").to_string(),
            choices: Vec::new(),
            note: Some("listing the agent's models…".into()),
        }],
        later: Some((0, rx)),
        choose,
    }
}
