//! The Supervisor's side of the MemoryVault: recall before the Artisan writes, record after the
//! tests judge. Memory is a help, never a reason to fail: a vault that errs, panics or hangs is
//! left out for the rest of the run with a warning.

use std::sync::Arc;
use std::time::Duration;

use crate::events::event::Event;
use crate::machine::state::{Iteration, Next, State};
use crate::memory::signature::failure;
use crate::memory::view::MemoryView;
use crate::ports::memory::MemoryError;
use crate::roles::vault::{Recall, Remember};
use crate::schema::attempt::FixAttempt;
use crate::schema::report::MemoryStatus;
use crate::supervisor::run::Run;
use crate::supervisor::steps::Step;

/// How long the report waits for the last attempt's write when the run ends normally, and
/// when it was stopped (Ctrl+C, the time limit): a hung vault must not hold the report.
const RECORD_WAIT: Duration = Duration::from_secs(30);
const RECORD_WAIT_STOPPED: Duration = Duration::from_secs(2);

impl Run {
    /// When the last run failed, asks the vault for attempts at similar failures and puts them
    /// in the iteration's context, and notes the failure the iteration tries to fix, to record
    /// the attempt by.
    pub(super) async fn recall(&mut self, mut it: Box<Iteration>) -> Step {
        self.settle_record(None).await;
        let n = it.n;
        let Some(vault) = self.vault.clone() else {
            return Ok(Next::Continue(State::Generate(it)));
        };
        let Some(last) = self.last_run.clone() else {
            return Ok(Next::Continue(State::Generate(it)));
        };
        let Some(fixing) = failure(&last) else {
            return Ok(Next::Continue(State::Generate(it)));
        };
        let ask = vault.send(Recall {
            failure: fixing.clone(),
        });
        let answer = tokio::select! {
            biased;
            _ = self.steps.cancelled() => return Err(self.cancelled()),
            r = ask => r.map_err(|e| MemoryError::Stopped(e.to_string())).and_then(|r| r),
        };
        it.fixing = Some(fixing);
        match answer {
            Ok(found) => {
                for warning in found.warnings {
                    self.warn(format!("iteration {n}: {warning}"));
                }
                if !found.fixes.is_empty() {
                    let m = &mut self.state.memory;
                    m.recalls += 1;
                    m.recalled += found.fixes.len() as u32;
                    self.events.emit(Event::MemoryRecalled {
                        iteration: n,
                        attempts: found.fixes.len() as u32,
                        worked: found.fixes.iter().filter(|f| f.attempt.success).count() as u32,
                        best_similarity: found
                            .fixes
                            .iter()
                            .map(|f| f.similarity)
                            .fold(0.0, f32::max),
                    });
                    let context = self.context_of(&it)?;
                    let mut bundle = (*context).clone();
                    bundle.memory = found.fixes.iter().map(MemoryView::from).collect();
                    it.context = Some(Arc::new(bundle));
                }
            }
            Err(e) => self.memory_failed(n, e),
        }
        Ok(Next::Continue(State::Generate(it)))
    }

    /// Records an attempt. The write goes on while the next iteration starts (its Librarian
    /// call); [`Run::settle_record`] waits for it before the next recall, so no recall misses
    /// it, and before the report, so no write is lost.
    pub(super) fn remember(&mut self, n: u32, attempt: FixAttempt) {
        let Some(vault) = self.vault.clone() else {
            return;
        };
        let success = attempt.success;
        self.pending_record = Some((n, success, Box::pin(vault.send(Remember { attempt }))));
    }

    /// Waits for the attempt being recorded, if any: until the run is stopped during an
    /// iteration, or at most `limit` at the end. A vault that failed is left out for the rest
    /// of the run.
    pub(super) async fn settle_record(&mut self, limit: Option<Duration>) {
        let Some((n, success, mut request)) = self.pending_record.take() else {
            return;
        };
        let answer = match limit {
            None => {
                let answered = tokio::select! {
                    biased;
                    _ = self.steps.cancelled() => None,
                    r = &mut request => Some(r),
                };
                let Some(r) = answered else {
                    // Stopped mid-write: the report waits for it, briefly.
                    self.pending_record = Some((n, success, request));
                    return;
                };
                r.map_err(|e| MemoryError::Stopped(e.to_string()))
                    .and_then(|r| r)
            }
            Some(limit) => match tokio::time::timeout(limit, request).await {
                Ok(r) => r
                    .map_err(|e| MemoryError::Stopped(e.to_string()))
                    .and_then(|r| r),
                Err(_) => Err(MemoryError::Stopped(format!(
                    "no answer within {:.0}s",
                    limit.as_secs_f64()
                ))),
            },
        };
        match answer {
            Ok(warnings) => {
                self.state.memory.recorded += 1;
                self.events.emit(Event::MemoryRecorded {
                    iteration: n,
                    success,
                });
                for warning in warnings {
                    self.warn(format!("iteration {n}: {warning}"));
                }
            }
            Err(e) => self.memory_failed(n, e),
        }
    }

    /// How long the report waits for the last write.
    pub(super) fn record_wait(&self) -> Duration {
        if self.steps.is_cancelled() {
            RECORD_WAIT_STOPPED
        } else {
            RECORD_WAIT
        }
    }

    fn memory_failed(&mut self, n: u32, error: MemoryError) {
        self.vault = None;
        self.state.memory.reason = Some(error.to_string());
        if let MemoryError::Unavailable(_) = error {
            // The store never opened: as if it had failed to open before the run.
            self.state.memory.status = MemoryStatus::Unavailable;
            self.warn(format!("{error}; the run goes on without memory"));
        } else {
            self.state.memory.status = MemoryStatus::Failed;
            self.warn(format!(
                "iteration {n}: the memory vault stopped working ({error}); the run goes on without memory"
            ));
        }
    }
}
