//! Where the Supervisor calls the hooks: every transition, the proposal before it is checked,
//! and the gate before success. A hook that fails is a warning; the run goes on as if it had
//! done nothing, unless the failure asks to stop it, which the driver does before the next
//! step.

use std::sync::Arc;

use crate::events::event::Event;
use crate::machine::hooks::{self, Asker, Gate, HookError, Transition};
use crate::machine::state::{Iteration, StateKind};
use crate::prompt::reply::Proposal;
use crate::schema::report::Status;
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
        ended: Option<Status>,
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
            ended,
            ask: Some(Asker(&self.ask)),
        }
    }

    /// A hook's failure: a warning, which ends with `then`; one that stops the run is kept
    /// for the driver (the first one wins).
    fn failed(&mut self, e: &HookError, then: &str) {
        if e.stop {
            self.warn(format!("{e}; the run stops"));
            self.hook_stop.get_or_insert_with(|| e.to_string());
        } else {
            self.warn(format!("{e}; {then}"));
        }
    }

    /// Tells every hook of a transition (`ended`: how the run ends, on the last one).
    pub(super) async fn observe(
        &mut self,
        from: StateKind,
        to: StateKind,
        iteration: u32,
        it: Option<&Iteration>,
        ended: Option<Status>,
    ) {
        if self.hooks.is_empty() {
            return;
        }
        let session = self.state.session_id.clone();
        let failures = {
            let at = self.transition(&session, iteration, from, to, it, ended);
            hooks::tell(&self.hooks, &at).await
        };
        for e in failures {
            self.failed(&e, "ignored");
        }
    }

    /// The notes every hook has for the Artisan.
    pub(super) fn hook_notes(&self) -> Vec<String> {
        self.hooks.iter().flat_map(|h| h.take_notes()).collect()
    }

    /// Lets every hook amend the Artisan's proposal, in order.
    pub(super) async fn amend(&mut self, it: &Iteration, proposal: &mut Proposal) {
        if self.hooks.is_empty() {
            return;
        }
        let session = self.state.session_id.clone();
        let mut failures = Vec::new();
        {
            let at = self.transition(
                &session,
                it.n,
                StateKind::Check,
                StateKind::Check,
                Some(it),
                None,
            );
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
                        failures.push(e);
                    }
                }
            }
        }
        for e in failures {
            self.failed(&e, "the proposal is kept as it was");
        }
    }

    /// Asks every hook whether a run whose tests pass may end with success. The first veto
    /// decides; its reasons go to the Artisan.
    ///
    /// A failure that stops the run is a veto too: what the hook guards never goes through.
    pub(super) async fn gate(&mut self, it: &Iteration, run: &Arc<TestRun>) -> Gate {
        if self.hooks.is_empty() {
            return Gate::Pass;
        }
        let session = self.state.session_id.clone();
        let gated = {
            let at = self.transition(
                &session,
                it.n,
                StateKind::Decide,
                StateKind::Done,
                Some(it),
                None,
            );
            hooks::gate(&self.hooks, &at, run, &self.events).await
        };
        for e in gated.failures {
            self.failed(&e, "its gate counts as passed");
        }
        gated.gate
    }
}
