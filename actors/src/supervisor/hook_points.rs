//! Where the Supervisor calls the hooks: every transition, the proposal before it is checked,
//! and the gate before success. A hook that fails is a warning; the run goes on as if it had
//! done nothing.

use std::sync::Arc;

use crate::events::event::Event;
use crate::machine::hooks::{Gate, Transition};
use crate::machine::state::{Iteration, StateKind};
use crate::prompt::reply::Proposal;
use crate::schema::test_run::TestRun;
use crate::supervisor::run::Run;

impl Run {
    fn transition<'a>(
        &'a self,
        session: &'a str,
        iteration: u32,
        from: StateKind,
        to: StateKind,
        it: Option<&'a Iteration>,
    ) -> Transition<'a> {
        Transition {
            session,
            iteration,
            from,
            to,
            spent_usd: self.caller.ledger.spent(),
            max_cost_usd: self.settings.max_cost_usd,
            context: it.and_then(|it| it.context()).map(|c| &**c),
            last_run: self.last_run.as_deref(),
        }
    }

    /// Tells every hook of a transition.
    pub(super) async fn observe(
        &self,
        from: StateKind,
        to: StateKind,
        iteration: u32,
        it: Option<&Iteration>,
    ) {
        if self.hooks.is_empty() {
            return;
        }
        let session = self.state.session_id.clone();
        let at = self.transition(&session, iteration, from, to, it);
        for hook in &self.hooks {
            if let Err(e) = hook.on_transition(&at).await {
                self.warn(format!("{e}; ignored"));
            }
        }
    }

    /// Lets every hook amend the Artisan's proposal, in order.
    pub(super) async fn amend(&self, it: &Iteration, proposal: &mut Proposal) {
        if self.hooks.is_empty() {
            return;
        }
        let session = self.state.session_id.clone();
        let at = self.transition(&session, it.n, StateKind::Check, StateKind::Check, Some(it));
        for hook in &self.hooks {
            let before = proposal.clone();
            match hook.amend(&at, proposal).await {
                Ok(()) if *proposal != before => self.events.emit(Event::ProposalAmended {
                    iteration: it.n,
                    hook: hook.name().to_string(),
                }),
                Ok(()) => {}
                Err(e) => {
                    *proposal = before;
                    self.warn(format!("{e}; the proposal is kept as it was"));
                }
            }
        }
    }

    /// Asks every hook whether a run whose tests pass may end with success. The first veto
    /// decides; its reasons go to the Artisan.
    pub(super) async fn gate(&self, it: &Iteration, run: &Arc<TestRun>) -> Gate {
        if self.hooks.is_empty() {
            return Gate::Pass;
        }
        let session = self.state.session_id.clone();
        let at = self.transition(&session, it.n, StateKind::Decide, StateKind::Done, Some(it));
        for hook in &self.hooks {
            match hook.before_success(&at, run).await {
                Ok(Gate::Pass) => {}
                Ok(Gate::Veto { reasons }) => {
                    self.events.emit(Event::SuccessVetoed {
                        iteration: it.n,
                        hook: hook.name().to_string(),
                        reasons: reasons.clone(),
                    });
                    return Gate::Veto { reasons };
                }
                Err(e) => self.warn(format!("{e}; its gate counts as passed")),
            }
        }
        Gate::Pass
    }
}
