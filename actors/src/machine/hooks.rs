//! The hook points of the machine: the seam through which later parts join a run without
//! changing it (plugins, the Chaos role, lifecycle hooks).
//!
//! A [`Hook`] sees every transition ([`Hook::on_transition`]), may amend the Artisan's proposal
//! before it is checked, reviewed and written ([`Hook::amend`]), and may veto the success of a
//! run whose tests pass ([`Hook::before_success`]); the reasons of a veto go to the Artisan in
//! the next iteration, as do the notes a hook leaves ([`Hook::take_notes`]). Hooks run in the
//! order they were given. A hook that fails is reported as a warning and counts as having done
//! nothing, unless its error asks to stop the run ([`HookError::stopping`]): the run then ends
//! with status `error` before its next step (a run already ending keeps its status).

use serde::{Deserialize, Serialize};

use crate::machine::state::StateKind;
use crate::prompt::bundle::ContextBundle;
use crate::prompt::reply::Proposal;
use crate::schema::report::Status;
use crate::schema::test_run::TestRun;

/// What a hook is shown at a hook point.
#[derive(Debug, Clone, Copy)]
pub struct Transition<'a> {
    pub session: &'a str,
    /// The iteration under way (0 for the baseline).
    pub iteration: u32,
    pub from: StateKind,
    pub to: StateKind,
    /// Dollars spent so far in the run.
    pub spent_usd: f64,
    /// The budget's cap.
    pub max_cost_usd: f64,
    /// The iteration's context, once the Librarian has gathered it.
    pub context: Option<&'a ContextBundle>,
    /// The last test run (the baseline's before the first iteration's).
    pub last_run: Option<&'a TestRun>,
    /// How the run ends, on the transition to [`StateKind::Done`].
    pub ended: Option<Status>,
    /// The run's models, for a hook that asks one (an `agent` hook).
    pub ask: Option<Asker<'a>>,
}

/// A model a hook may ask, metered against the run's budget and sealed by LocalGuard as the
/// roles' calls are.
#[async_trait::async_trait]
pub trait Ask: Send + Sync {
    /// Sends `prompt` (after `system`) to `model`, a `provider/model` name (`None`: the
    /// Critic's model, with its fallbacks); the reply's text, or why there is none.
    async fn ask(
        &self,
        iteration: u32,
        model: Option<&str>,
        system: &str,
        prompt: &str,
    ) -> Result<String, AskError>;
}

/// Why a hook's question got no answer.
#[derive(Debug, thiserror::Error)]
pub enum AskError {
    /// No model here to ask: the hook named none and the run has no Critic (or the machine, an
    /// agent loop, has no models at all).
    #[error("{0}")]
    NoModel(&'static str),
    /// The call failed as a role's would (the provider, the budget, a stop).
    #[error(transparent)]
    Call(#[from] crate::error::Error),
}

/// The run's [`Ask`], as a transition carries it.
#[derive(Clone, Copy)]
pub struct Asker<'a>(pub &'a dyn Ask);

impl std::fmt::Debug for Asker<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Asker")
    }
}

/// Whether a run whose tests pass may end with success.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "gate", rename_all = "snake_case")]
pub enum Gate {
    Pass,
    /// Not yet: the reasons go to the Artisan, and the run goes on.
    Veto {
        reasons: Vec<String>,
    },
}

/// Why a hook could not do its part.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("hook {hook}: {message}")]
pub struct HookError {
    pub hook: String,
    pub message: String,
    /// Whether it may work if asked again (a plugin that timed out).
    pub transient: bool,
    /// The run must stop: the hook's failure is one its user said ends the run.
    pub stop: bool,
}

impl HookError {
    pub fn new(hook: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            hook: hook.into(),
            message: message.into(),
            transient: false,
            stop: false,
        }
    }

    /// A failure that ends the run.
    pub fn stopping(hook: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            stop: true,
            ..Self::new(hook, message)
        }
    }

    pub fn is_transient(&self) -> bool {
        self.transient
    }
}

/// A part that joins a run at its hook points. Every method has a default that does nothing,
/// so a hook implements only the points it serves.
#[async_trait::async_trait]
pub trait Hook: Send + Sync {
    /// The name in warnings and events.
    fn name(&self) -> &str;

    /// Every transition, after the step that decided it and before the next state's step.
    async fn on_transition(&self, _at: &Transition<'_>) -> Result<(), HookError> {
        Ok(())
    }

    /// The Artisan's proposal, before the checks, the Critic and the write: may change the code
    /// (a formatter). A proposal without code may be given some.
    async fn amend(&self, _at: &Transition<'_>, _proposal: &mut Proposal) -> Result<(), HookError> {
        Ok(())
    }

    /// The tests pass and every criterion is met: may the run end with success?
    async fn before_success(
        &self,
        _at: &Transition<'_>,
        _run: &TestRun,
    ) -> Result<Gate, HookError> {
        Ok(Gate::Pass)
    }

    /// What the hook has for the Artisan since it was last asked: taken into the next
    /// iteration's context, each note once.
    fn take_notes(&self) -> Vec<String> {
        Vec::new()
    }
}

/// Tells every hook of the transition `at`, in order; the failures, for the caller to report.
pub async fn tell(hooks: &[std::sync::Arc<dyn Hook>], at: &Transition<'_>) -> Vec<HookError> {
    let mut failures = Vec::new();
    for hook in hooks {
        if let Err(e) = hook.on_transition(at).await {
            failures.push(e);
        }
    }
    failures
}

/// What the hooks' gate before a success came to.
#[derive(Debug)]
pub struct Gated {
    pub gate: Gate,
    /// The hook whose veto decided, if one did.
    pub by: Option<String>,
    pub failures: Vec<HookError>,
}

/// Asks every hook whether a run whose tests pass (`run`) may end with success. The first veto
/// decides, and is told on `events` (`success_vetoed`). A failure that stops the run is a veto
/// too: what the hook guards never goes through.
pub async fn gate(
    hooks: &[std::sync::Arc<dyn Hook>],
    at: &Transition<'_>,
    run: &TestRun,
    events: &crate::events::bus::EventBus,
) -> Gated {
    let mut gated = Gated {
        gate: Gate::Pass,
        by: None,
        failures: Vec::new(),
    };
    for hook in hooks {
        match hook.before_success(at, run).await {
            Ok(Gate::Pass) => {}
            Ok(Gate::Veto { reasons }) => {
                events.emit(crate::events::event::Event::SuccessVetoed {
                    iteration: at.iteration,
                    hook: hook.name().to_string(),
                    reasons: reasons.clone(),
                });
                gated.gate = Gate::Veto { reasons };
                gated.by = Some(hook.name().to_string());
                break;
            }
            Err(e) if e.stop => {
                gated.gate = Gate::Veto {
                    reasons: vec![e.to_string()],
                };
                gated.failures.push(e);
                break;
            }
            Err(e) => gated.failures.push(e),
        }
    }
    gated
}
