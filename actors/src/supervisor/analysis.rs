//! The Librarian's analysis beside the Artisan's call (`librarian.analyze`): asked as soon as
//! the iteration's context is gathered, never waited for before the Artisan's call (unless
//! `librarian.wait_for_analysis`), and shown to the Artisan's next call once it is in — a retry
//! in the same iteration, or a later iteration, where it says how many proposals ago the failure
//! it explains was seen.
//!
//! One analysis is out at a time: while one is, a later iteration that would ask for another
//! waits for that one to serve it instead, so that an analysis slower than an iteration still
//! arrives rather than being replaced before it can. Once the tests pass, what is out or in is
//! dropped: the failures it explains are gone.

use std::sync::Arc;

use crate::machine::state::Outcome;
use crate::prompt::bundle::ContextBundle;
use crate::role::Role;
use crate::roles::librarian::Analyse;
use crate::supervisor::pending::Pending;
use crate::supervisor::run::Run;

impl Run {
    /// Asks for the analysis the context calls for (its `analysis_reason`), if any: beside
    /// what follows, or, with `librarian.wait_for_analysis`, before it, into the context. An
    /// iteration that finds one still out asks for none (its `analysis_reason` is cleared, so
    /// its log line says none was asked).
    pub(super) async fn analyse(
        &mut self,
        n: u32,
        context: &mut Arc<ContextBundle>,
    ) -> Result<(), Outcome> {
        if context.analysis_reason.is_none() {
            return Ok(());
        }
        if self.settings.wait_for_analysis {
            let msg = Analyse {
                iteration: n,
                context: context.clone(),
                cancel: self.steps.clone(),
            };
            let text = self.ask(Role::Librarian, &self.team.librarian, msg).await?;
            Arc::make_mut(context).analysis = Some(text).filter(|t| !t.is_empty());
            return Ok(());
        }
        self.hear_analysis();
        if self.pending_analysis.is_some() {
            Arc::make_mut(context).analysis_reason = None;
            return Ok(());
        }
        let cancel = self.steps.child_token();
        let request = self.team.librarian.send(Analyse {
            iteration: n,
            context: context.clone(),
            cancel: cancel.clone(),
        });
        self.pending_analysis = Some(Pending::new(Role::Librarian, n, cancel, request));
        Ok(())
    }

    /// Puts the latest analysis that is in into the context of the Artisan's call about to be
    /// made in iteration `n`, with its age: 0 for this iteration's, else the proposals made
    /// since the failure it explains.
    pub(super) fn show_analysis(&mut self, n: u32, context: &mut Arc<ContextBundle>) {
        self.hear_analysis();
        if let Some((of, text)) = &self.analysis {
            if context.analysis.as_ref() != Some(text) {
                let context = Arc::make_mut(context);
                context.analysis = Some(text.clone());
                context.analysis_age = n.saturating_sub(*of);
            }
        }
    }

    /// Takes in the analysis under way if it has come: kept for the Artisan's next calls. One
    /// that failed is a warning: the Artisan works without it.
    fn hear_analysis(&mut self) {
        let Some(answer) = self.pending_analysis.as_mut().and_then(|p| p.poll_now()) else {
            return;
        };
        let Some(pending) = self.pending_analysis.take() else {
            return;
        };
        match answer {
            Ok(text) if !text.is_empty() => self.analysis = Some((pending.iteration, text)),
            Ok(_) | Err(crate::error::Error::Cancelled) => {}
            Err(e) => self.warn(format!(
                "iteration {}: the Librarian's analysis failed ({e}); the Artisan goes on without it",
                pending.iteration
            )),
        }
    }

    /// The tests pass: no failure is left for an analysis to explain. One still out is
    /// stopped (and keeps its reservation as spent, as every abandoned call does).
    pub(super) async fn forget_analysis(&mut self) {
        self.hear_analysis();
        self.analysis = None;
        if let Some(pending) = self.pending_analysis.take() {
            pending.stop().await;
        }
    }
}
