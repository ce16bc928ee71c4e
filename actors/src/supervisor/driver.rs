//! The fix loop on the machine's driver ([`crate::machine::driver`]): the run started and
//! ended around it, and [`Run`] as a [`Machine`] (entering a state, the pause, the one step
//! function, the hooks told of each move).

use std::panic::AssertUnwindSafe;
use std::time::Duration;

use futures::FutureExt;

use crate::events::event::Event;
use crate::machine::driver::{self, Machine};
use crate::machine::hold;
use crate::machine::state::{Next, Outcome, State, StateKind};
use crate::roles::caller::{panic_message, watched};
use crate::schema::report::{Report, Status};
use crate::supervisor::run::Run;

impl Run {
    /// Runs the session to its end and returns its report, which is also saved and emitted as
    /// the last event. Call inside an actix system (the actors need one); any number of runs
    /// may execute at once.
    pub async fn execute(mut self) -> Report {
        self.watch_time_limit();
        // A panic in the Supervisor's own steps (a store or workspace call) must still end in a
        // written report, not a closed mailbox.
        let outcome = match AssertUnwindSafe(self.drive()).catch_unwind().await {
            Ok(outcome) => outcome,
            Err(panic) => Outcome::new(
                Status::Error,
                format!("supervisor panicked: {}", panic_message(&*panic)),
            ),
        };
        self.done.cancel();
        self.finish(outcome).await
    }

    /// Cancels the steps when `--max-duration` is reached (counting the session's earlier
    /// runs).
    fn watch_time_limit(&self) {
        let Some(limit) = self.settings.max_duration else {
            return;
        };
        let left = limit.saturating_sub(Duration::from_millis(self.state.elapsed_ms));
        let (steps, time_up, done) = (self.steps.clone(), self.time_up.clone(), self.done.clone());
        tokio::spawn(async move {
            tokio::select! {
                _ = tokio::time::sleep(left) => {
                    time_up.cancel();
                    steps.cancel();
                }
                _ = done.cancelled() => {}
            }
        });
    }

    async fn drive(&mut self) -> Outcome {
        self.announce();
        let first = if self.state.tests_before.is_none() {
            State::Baseline
        } else {
            // A resumed session: the last run comes from disk, once.
            if let Err(outcome) = self.resume_last_run().await {
                return outcome;
            }
            State::Begin
        };
        driver::drive(self, first).await
    }

    /// The end of a run its caller asked to stop between iterations, once the last one ended.
    pub(super) fn drained(&self) -> Option<Outcome> {
        self.drain.is_cancelled().then(|| {
            Outcome::new(
                Status::Interrupted,
                format!(
                    "stopped after iteration {} as asked; resume goes on from iteration {}",
                    self.state.iteration,
                    self.state.iteration + 1
                ),
            )
        })
    }

    /// The session's first events: what runs, on which models, within what; then what the
    /// caller said while preparing it.
    fn announce(&mut self) {
        let s = &self.settings;
        self.events.emit(Event::SessionStarted {
            session_id: self.state.session_id.clone(),
            target: self.state.target.clone(),
            test_command: self.state.test_command.clone(),
            models: s
                .models
                .iter()
                .map(|(r, m)| (*r, m.model.clone()))
                .collect(),
            max_cost_usd: s.max_cost_usd,
            max_iterations: s.max_iterations,
            resumed_from_iteration: self.state.iteration,
            spent_usd: self.caller.ledger.spent(),
        });
        for event in std::mem::take(&mut self.preamble) {
            self.events.emit(event);
        }
        if s.context_reset_frequency > 1 {
            self.warn(format!(
                "context_reset_frequency is {}: the Artisan and Critic keep their conversation for {} iterations; \
                 quality drops as context fills (1, a fresh context every iteration, is the default)",
                s.context_reset_frequency, s.context_reset_frequency
            ));
        }
    }

    /// Reads the last test results of a resumed session: the only time a run reads its own
    /// results back from disk.
    async fn resume_last_run(&mut self) -> Result<(), Outcome> {
        let read = self.store.last_test_results();
        let last = watched(&self.steps, read).await.map_err(|e| self.fail(e))?;
        self.last_run = last.map(std::sync::Arc::new);
        self.resume_checkpoints().await
    }
}

/// The fix loop on the one driver: its states, its pause, its hook points.
impl Machine for Run {
    type State = State;
    type Outcome = Outcome;

    fn kind(state: &State) -> StateKind {
        state.kind()
    }

    /// Entering a state: a role about to be called starts afresh if its last prompt was over
    /// the context limit, and the live view is told the phase.
    fn enter(&mut self, state: &State) {
        let kind = state.kind();
        let n = state.iteration().map_or(self.state.iteration, |it| it.n);
        if matches!(kind, StateKind::Generate | StateKind::Review) {
            self.reset_over_limit(n);
        }
        if let Some(phase) = kind.phase() {
            self.events.emit(Event::PhaseChanged {
                iteration: n,
                phase,
            });
        }
    }

    /// Waits while the live view holds the run paused; a stop meanwhile ends the run, a stop
    /// between iterations lets the iteration under way end as it would.
    async fn hold(&mut self) -> Result<(), Outcome> {
        let Some(mut pause) = self.pause.take() else {
            return Ok(());
        };
        let iteration = self.state.iteration;
        let held = hold::hold(
            &mut pause,
            &self.events,
            iteration,
            &self.steps,
            &self.drain,
        )
        .await;
        self.pause = Some(pause);
        held.map_err(|hold::Stopped| self.cancelled())
    }

    async fn step(&mut self, state: State) -> Next {
        let stepped = match state {
            State::Baseline => Ok(Next::Continue(State::TestBaseline)),
            State::TestBaseline => self.test_baseline().await,
            State::Begin => self.begin(),
            State::Context(it) => self.context(it).await,
            State::Recall(it) => self.recall(it).await,
            State::Generate(it) => self.generate(it).await,
            State::Check(it, proposal) => self.check(it, proposal).await,
            State::Review(it, code) => self.review(it, code).await,
            State::Write(it, code) => self.write(it, code).await,
            State::Test(it) => self.run_tests(it).await,
            State::Decide(it, run) => self.decide(it, run).await,
            State::Attack(it) => self.attack(it).await,
        };
        stepped.unwrap_or_else(Next::Stop)
    }

    /// The hooks are told of the move. A hook's failure that stops the run ends it before the
    /// next step (the iteration is still judged and recorded); a run already ending keeps its
    /// status.
    async fn moved(&mut self, from: StateKind, next: &Next) -> Option<Outcome> {
        let (to, it) = match next {
            Next::Continue(s) => (s.kind(), s.iteration()),
            Next::Stop(_) => (StateKind::Done, None),
        };
        let n = it.map_or(self.state.iteration, |it| it.n);
        let ended = match next {
            Next::Stop(outcome) => Some(outcome.status),
            Next::Continue(_) => None,
        };
        self.observe(from, to, n, it, ended).await;
        match next {
            Next::Continue(s) if self.hook_stop.is_some() && s.kind() != StateKind::Decide => {
                let why = self.hook_stop.take().unwrap_or_default();
                Some(Outcome::new(
                    Status::Error,
                    format!("stopped by a hook: {why}"),
                ))
            }
            _ => None,
        }
    }
}
