//! The breaker asks (FR-019): when one failure has ended `entropy_threshold` iterations, the
//! person at the terminal may stop, go on with guidance for the Artisan, or raise the
//! threshold. A headless run, or one whose user cannot be asked, stops as before.

use crate::events::event::Event;
use crate::machine::state::Outcome;
use crate::ports::user::{BreakerChoice, Stuck};
use crate::roles::caller::watched;
use crate::supervisor::run::Run;

impl Run {
    /// Asks whether to go on past the breaker; true to go on. The failure's count starts over
    /// when the user goes on.
    pub(super) async fn ask_to_go_on(
        &mut self,
        iteration: u32,
        fingerprint: Option<&str>,
        failure: &str,
        seen: u32,
    ) -> Result<bool, Outcome> {
        let Some(user) = self.user.clone() else {
            return Ok(false);
        };
        let stuck = Stuck {
            iteration,
            failure: failure.to_string(),
            seen,
            threshold: self.state.breaker.threshold,
        };
        let choice = match watched(&self.steps, user.on_entropy(&stuck)).await {
            Ok(choice) => choice,
            Err(crate::error::Error::Cancelled) => return Err(self.cancelled()),
            Err(e) => {
                self.warn(format!("{e}; the run stops as a headless one would"));
                return Ok(false);
            }
        };
        let said = match &choice {
            BreakerChoice::Stop => return Ok(false),
            BreakerChoice::Continue { guidance: Some(g) } => {
                // Kept and said like everything else the run keeps: masked.
                let g = self.guard.mask_typed(g, Some("your guidance")).text;
                let said = format!("the user chose to go on, with guidance for the Artisan: {g}");
                self.state.guidance = Some(g);
                said
            }
            BreakerChoice::Continue { guidance: None } => "the user chose to go on".to_string(),
            BreakerChoice::RaiseThreshold(t) => {
                self.state.breaker.threshold = *t;
                format!("the user raised the breaker's threshold to {t}")
            }
        };
        if !matches!(choice, BreakerChoice::RaiseThreshold(_)) {
            if let Some(fp) = fingerprint {
                self.state.breaker.seen.remove(fp);
            }
        }
        self.events.emit(Event::Note {
            message: format!(
                "iteration {iteration}: the same failure ended {seen} iterations; {said}"
            ),
        });
        Ok(true)
    }
}
