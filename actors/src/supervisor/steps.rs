//! The step of each state: what the Supervisor does there and which state comes next.
//!
//! A step returns the next state or the run's end ([`Next`]); a failure of a port or a role
//! ends the run through `Err(Outcome)`, so that `?` reads as "or stop".

use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::dev::ToEnvelope;
use actix::{Actor, Addr, Handler, Message};

use crate::error::{Error, Result};
use crate::events::event::Event;
use crate::machine::hooks::Gate;
use crate::machine::state::{Iteration, Next, Outcome, State};
use crate::memory::attempt::{diff, hypothesis};
use crate::policy::entropy::{fingerprint, headline};
use crate::policy::integrity;
use crate::policy::pace::{self, CriticMode, History};
use crate::prompt::reply::Proposal;
use crate::role::Role;
use crate::roles::artisan::Generate;
use crate::roles::caller::watched;
use crate::roles::critic::Review;
use crate::roles::librarian::GatherContext;
use crate::schema::attempt::FixAttempt;
use crate::schema::report::{Status, TestsSnapshot};
use crate::schema::state::{timestamp, IterationRecord};
use crate::schema::test_run::TestRun;
use crate::supervisor::run::{Run, SIGHUP, SIGTERM};

/// What a step returns: the next state, or the run's end; `Err` when a failure ends it.
pub(super) type Step = std::result::Result<Next, Outcome>;

impl Run {
    /// The tests as they are, before any change: `tests_before`. A target whose tests already
    /// pass ends the run at once.
    pub(super) async fn test_baseline(&mut self) -> Step {
        let run = self.test(0).await?;
        self.state.tests_before = Some(TestsSnapshot::from(&*run));
        self.state.tests_after = Some(TestsSnapshot::from(&*run));
        self.keep_original(&run).await?;
        if run.criteria_met() {
            return Ok(Next::Stop(Outcome::new(
                Status::Success,
                "the tests already pass; nothing to fix",
            )));
        }
        Ok(Next::Continue(State::Begin))
    }

    /// Between iterations: stop at the iteration limit, else start the next one.
    pub(super) fn begin(&mut self) -> Step {
        let s = self.settings.clone();
        if let Some(drained) = self.drained() {
            return Ok(Next::Stop(drained));
        }
        if self.state.iteration >= s.max_iterations {
            let last = self
                .stuck_on
                .clone()
                .map(|l| format!("; last failure: {l}"))
                .unwrap_or_default();
            return Ok(Next::Stop(Outcome::new(
                Status::MaxIterations,
                format!(
                    "reached max_iterations ({}) without passing tests{last}",
                    s.max_iterations
                ),
            )));
        }
        let n = self.state.iteration + 1;
        let it = Iteration {
            n,
            started: Instant::now(),
            started_at: timestamp(),
            cost_before: self.caller.ledger.spent(),
            tokens_before: self.caller.ledger.snapshot().tokens,
            context: None,
            fixing: None,
            critique: None,
            rejections: 0,
            retries: 0,
            approved: s.critic_mode == CriticMode::Off,
            reply: String::new(),
            written: None,
            critic_mode: s.critic_mode,
            review_pending: false,
            on_disk: self.state.on_disk,
        };
        self.events.emit(Event::IterationStarted {
            iteration: n,
            max_iterations: s.max_iterations,
        });
        // With the default frequency of 1 no role keeps history, so there is nothing to reset:
        // only the discarding of history that was kept counts, in the report and the events.
        if s.context_reset_frequency > 1
            && n > 1
            && (n - 1).is_multiple_of(s.context_reset_frequency)
        {
            for role in Role::ALL {
                self.team.reset(role);
            }
            self.state.context_resets += 1;
            self.events.emit(Event::ContextReset { iteration: n });
        }
        Ok(Next::Continue(State::Context(Box::new(it))))
    }

    /// The Librarian reads the project and the last run; hooks' notes are added.
    pub(super) async fn context(&mut self, mut it: Box<Iteration>) -> Step {
        let history = History {
            repeat: self
                .fingerprints
                .split_last()
                .is_some_and(|(last, earlier)| earlier.contains(last)),
            undone: self.state.undone.is_some(),
        };
        let mut bundle = self
            .ask(
                Role::Librarian,
                &self.team.librarian,
                GatherContext {
                    iteration: it.n,
                    last: self.last_run.clone(),
                    history,
                },
            )
            .await?;
        bundle.notes = std::mem::take(&mut self.state.hook_notes);
        bundle.notes.extend(self.hook_notes());
        bundle.undone = self.state.undone.take();
        bundle.guidance = self.state.guidance.clone();
        bundle.adversarial = self.adversarial_view().await;
        let mut context = Arc::new(bundle);
        self.analyse(it.n, &mut context).await?;
        it.context = Some(context);
        Ok(Next::Continue(State::Recall(it)))
    }

    /// The Artisan proposes the whole file, with the critique of the last try if any.
    pub(super) async fn generate(&mut self, mut it: Box<Iteration>) -> Step {
        let late = self.late_reviews();
        if let Some(context) = it.context.as_mut() {
            if let Some(reasons) = late {
                Arc::make_mut(context).late_review = Some(reasons);
            }
            self.show_analysis(it.n, context);
        }
        let context = self.context_of(&it)?;
        let proposal = self
            .ask(
                Role::Artisan,
                &self.team.artisan,
                Generate {
                    iteration: it.n,
                    context,
                    critique: it.critique.take(),
                    cancel: self.steps.clone(),
                },
            )
            .await?;
        Ok(Next::Continue(State::Check(it, proposal)))
    }

    /// Hooks amend the proposal; then it must hold code and leave the tests alone, or go back
    /// to the Artisan within the allowance it shares with the Critic's rejections.
    pub(super) async fn check(&mut self, mut it: Box<Iteration>, mut proposal: Proposal) -> Step {
        self.amend(&it, &mut proposal).await;
        let s = self.settings.clone();
        let n = it.n;
        it.reply = proposal.reply;
        let Some(code) = proposal.code else {
            if it.sent_back() >= s.critic_max_rejections {
                return Ok(Next::Continue(State::Write(it, None)));
            }
            it.retries += 1;
            it.critique = Some(
                "Your reply had no fenced code block. Reply with the whole file in one fenced code block.".into(),
            );
            return Ok(Next::Continue(State::Generate(it)));
        };
        if let Some(why) = self.unrestorable(&code).await {
            if it.sent_back() >= s.critic_max_rejections {
                self.warn(format!(
                    "iteration {n}: the proposal was not written: {why}"
                ));
                return Ok(Next::Continue(State::Write(it, None)));
            }
            it.retries += 1;
            it.critique = Some(format!("Your file could not be written: {why}. Copy every placeholder exactly as you were given it, and write none of your own."));
            return Ok(Next::Continue(State::Generate(it)));
        }
        if !s.allow_test_edits {
            let context = self.context_of(&it)?;
            let violations = integrity::check(&context.target.path, &context.target.content, &code);
            if !violations.is_empty() {
                self.state.test_integrity_rejections += 1;
                self.events.emit(Event::TestIntegrity {
                    iteration: n,
                    violations: violations.clone(),
                });
                if it.sent_back() >= s.critic_max_rejections {
                    self.warn(format!(
                        "iteration {n}: the proposal {}; not written (testing.allow_test_edits is false)",
                        violations.join(", ")
                    ));
                    return Ok(Next::Continue(State::Write(it, None)));
                }
                it.retries += 1;
                it.critique = Some(format!(
                    "Your proposal was rejected by the test-integrity check: it {}. The tests define \
                     correct behaviour: do not edit, delete or skip them. Fix the code under test instead.",
                    violations.join(", ")
                ));
                return Ok(Next::Continue(State::Generate(it)));
            }
        }
        // The review gates the tests only when they take longer than a review: there it
        // saves a test run on a bad proposal; otherwise it runs beside them.
        let tests = Duration::from_millis(self.last_run.as_ref().map_or(0, |r| r.duration_ms));
        it.critic_mode = pace::critic_mode(s.critic_mode, tests, self.caller.expected_review());
        if it.critic_mode == CriticMode::Gate {
            return Ok(Next::Continue(State::Review(it, code)));
        }
        Ok(Next::Continue(State::Write(it, Some(code))))
    }

    /// The Critic approves (the code is written), or rejects (back to the Artisan with its
    /// reasons) until the allowance is spent, when the tests judge the last proposal.
    pub(super) async fn review(&mut self, mut it: Box<Iteration>, code: String) -> Step {
        let n = it.n;
        let verdict = self
            .ask(
                Role::Critic,
                &self.team.critic,
                Review {
                    iteration: n,
                    context: self.context_of(&it)?,
                    code: code.clone(),
                    cancel: self.steps.clone(),
                },
            )
            .await?;
        self.heard(n, &verdict);
        if verdict.approved {
            it.approved = true;
            return Ok(Next::Continue(State::Write(it, Some(code))));
        }
        if it.sent_back() >= self.settings.critic_max_rejections {
            self.rejections_spent(&it);
            return Ok(Next::Continue(State::Write(it, Some(code))));
        }
        self.rejected(&mut it, verdict.reasons);
        Ok(Next::Continue(State::Generate(it)))
    }

    /// The Critic rejected iteration `it`'s proposal and it goes back to the Artisan with the
    /// reasons (`gate`, `binding`).
    pub(super) fn rejected(&mut self, it: &mut Iteration, reasons: String) {
        it.rejections += 1;
        self.state.critic_rejections += 1;
        it.critique = Some(reasons);
    }

    /// The Critic rejected a proposal past its allowance: the tests judge it.
    pub(super) fn rejections_spent(&self, it: &Iteration) {
        self.warn(format!(
            "iteration {}: the Critic rejected {} proposals; the tests judge the last one",
            it.n,
            it.sent_back() + 1
        ));
    }

    /// Writes the proposal to the target, atomically; without one the file stays as it was.
    pub(super) async fn write(&mut self, mut it: Box<Iteration>, code: Option<String>) -> Step {
        match &code {
            Some(code) => {
                // From here until its tests have run, the file holds an untested proposal.
                self.state.on_disk = None;
                let write = self.workspace.write_target(code.clone());
                watched(&self.steps, write)
                    .await
                    .map_err(|e| self.fail(e))?;
            }
            None if self.state.test_integrity_rejections > 0 && !self.settings.allow_test_edits => {
            }
            None => self.warn(format!(
                "iteration {}: the Artisan gave no code block; the file is unchanged",
                it.n
            )),
        }
        it.written = code;
        Ok(Next::Continue(State::Test(it)))
    }

    /// Runs the tests on what was written, with the Critic's review beside them when it does
    /// not gate them: a passing proposal waits for its review (a rejection is then a note); a
    /// failing one does not, and its review reaches the Artisan if it is in by the next call.
    pub(super) async fn run_tests(&mut self, mut it: Box<Iteration>) -> Step {
        let review = match (&it.written, it.critic_mode) {
            (Some(code), CriticMode::Binding) => {
                let code = code.clone();
                return self.binding(it, code).await;
            }
            (Some(code), CriticMode::Parallel | CriticMode::Auto) => {
                Some((self.context_of(&it)?, code.clone()))
            }
            _ => None,
        };
        // The tests first: they are on the path, the review beside them.
        let tests = self.start_tests(self.steps.child_token());
        let review = review.map(|(context, code)| self.start_review(it.n, context, code));
        let run = self.tests_answered(tests.await)?;
        let run = self.tests_ran(it.n, run).await?;
        if let Some(review) = review {
            if run.criteria_met() {
                self.passing_review(&mut it, review).await?;
            } else {
                self.keep_review(review);
            }
        }
        Ok(Next::Continue(State::Decide(it, run)))
    }

    /// Judges the iteration: records it, then ends the run on success (unless a hook vetoes)
    /// or on a failure seen too often, else goes on.
    pub(super) async fn decide(&mut self, it: Box<Iteration>, run: Arc<TestRun>) -> Step {
        let s = self.settings.clone();
        let n = it.n;
        self.state.iteration = n;
        self.state.tests_after = Some(TestsSnapshot::from(&*run));
        let passed = run.criteria_met();
        if run.totals.flaky > 0 {
            let flaky = run.flaky_ids();
            self.warn(format!(
                "iteration {n}: flaky test{} (failed, then passed on a re-run): {}",
                if flaky.len() == 1 { "" } else { "s" },
                flaky.join(", ")
            ));
        }
        let fp = (!passed).then(|| fingerprint(&run));
        let tripped = fp
            .as_deref()
            .is_some_and(|fp| self.state.breaker.record(fp));
        if !passed {
            self.stuck_on = Some(headline(&run));
        }
        let context = self.context_of(&it)?;
        let reverts = self.state.reverts;
        self.judge_proposal(n, it.written.as_deref(), &run).await?;
        let outcome = if passed {
            "passed"
        } else if self.state.reverts > reverts {
            "undone"
        } else {
            "failed"
        };
        let record = IterationRecord {
            iteration: n,
            started_at: it.started_at.clone(),
            duration_ms: it.started.elapsed().as_millis() as u64,
            critic_rejections: it.rejections,
            critic_approved: it.approved,
            tests: run.summary(),
            passed,
            fingerprint: fp.clone(),
            cost_usd: self.caller.ledger.spent() - it.cost_before,
            outcome: Some(outcome.into()),
            context: Some(context.context.clone()),
            analysis: context.analysis_reason.clone(),
            critic: Some(it.critic_mode.as_str().to_string()),
            review_pending: it.review_pending,
        };
        let append = self.store.append_iteration(&record);
        watched(&self.steps, append)
            .await
            .map_err(|e| self.fail(e))?;
        if let (Some(failure), Some(code)) = (&it.fixing, &it.written) {
            let used = self.caller.ledger.snapshot().tokens;
            let tokens = (used.input_tokens + used.output_tokens)
                .saturating_sub(it.tokens_before.input_tokens + it.tokens_before.output_tokens);
            let attempt = FixAttempt {
                id: uuid::Uuid::new_v4().to_string(),
                project_id: self.project_id.clone(),
                signature: failure.signature.clone(),
                category: failure.category,
                test_ids: failure.test_ids.clone(),
                hypothesis: hypothesis(&it.reply),
                diff: diff(&context.target.path, &context.target.content, code),
                success: passed,
                timestamp_ms: chrono::Utc::now().timestamp_millis(),
                tokens,
                cost_usd: record.cost_usd,
                model: s.model(Role::Artisan).model.clone(),
                language: context.target.language.clone(),
            };
            self.remember(n, attempt);
        }
        if passed {
            self.passed_review(&it);
            self.forget_analysis().await;
            if let Gate::Veto { reasons } = self.gate(&it, &run).await {
                self.state.hook_notes = reasons;
                self.checkpoint().await?;
                return Ok(Next::Continue(State::Begin));
            }
        }
        self.checkpoint().await?;
        if passed {
            if self.chaos_due() {
                return Ok(Next::Continue(State::Attack(it)));
            }
            return Ok(Next::Stop(Outcome::new(
                Status::Success,
                self.success_reason(n),
            )));
        }
        if tripped {
            let seen = fp
                .as_deref()
                .and_then(|f| self.state.breaker.seen.get(f))
                .copied()
                .unwrap_or(0);
            let stuck = self.stuck_on.clone().unwrap_or_default();
            if self.ask_to_go_on(n, fp.as_deref(), &stuck, seen).await? {
                return Ok(Next::Continue(State::Begin));
            }
            return Ok(Next::Stop(Outcome::new(
                Status::EntropyDetected,
                format!(
                    "the same failure ended {seen} iterations (threshold {}): {stuck}",
                    s.entropy_threshold
                ),
            )));
        }
        Ok(Next::Continue(State::Begin))
    }

    /// Why a run whose tests pass after `n` iterations succeeds, in words.
    pub(super) fn success_reason(&self, n: u32) -> String {
        let plural = if n == 1 { "" } else { "s" };
        let extra = match &self.last_run {
            Some(run) if run.criteria.len() > 1 => " and every success criterion is met",
            _ => "",
        };
        format!("all tests pass{extra} after {n} iteration{plural}")
    }

    /// The iteration's context; the Context step sets it before any state that reads it.
    pub(super) fn context_of(
        &self,
        it: &Iteration,
    ) -> std::result::Result<Arc<crate::prompt::bundle::ContextBundle>, Outcome> {
        it.context().cloned().ok_or_else(|| {
            Outcome::new(
                Status::Error,
                format!("iteration {}: no context was gathered", it.n),
            )
        })
    }

    /// Sends `msg` to a role and waits for the answer, unless the user or the clock stops the
    /// run.
    pub(super) async fn ask<A, M, T>(
        &self,
        role: Role,
        addr: &Addr<A>,
        msg: M,
    ) -> std::result::Result<T, Outcome>
    where
        A: Actor + Handler<M>,
        A::Context: ToEnvelope<A, M>,
        M: Message<Result = Result<T>> + Send + 'static,
        T: Send + 'static,
    {
        let answer = tokio::select! {
            biased;
            _ = self.steps.cancelled() => return Err(self.cancelled()),
            r = addr.send(msg) => r,
        };
        match answer {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(self.fail(e)),
            Err(mailbox) => Err(self.fail(Error::Stopped {
                role,
                message: mailbox.to_string(),
            })),
        }
    }

    /// Saves the state: after every iteration, so an interrupted session resumes from there.
    pub(super) async fn checkpoint(&mut self) -> std::result::Result<(), Outcome> {
        self.sync_state();
        let save = self.store.save_state(&self.state);
        watched(&self.steps, save).await.map_err(|e| self.fail(e))
    }

    /// Drops the history of every role whose last prompt reached the context limit, whatever
    /// `context_reset_frequency` says: the role's next call starts afresh. Actix delivers the
    /// reset before any later message to the same actor.
    pub(super) fn reset_over_limit(&mut self, n: u32) {
        let over = self.caller.take_over_limit();
        if self.settings.context_reset_frequency <= 1 {
            // No role keeps history: every call already starts afresh.
            return;
        }
        for role in over {
            // The Librarian keeps no history: each of its prompts is built afresh.
            if !self.team.reset(role) {
                continue;
            }
            self.state.context_resets += 1;
            self.events.emit(Event::ContextReset { iteration: n });
            self.warn(format!(
                "iteration {n}: the {role}'s prompt used over {:.0}% of its context window; its history was dropped",
                crate::roles::caller::CONTEXT_LIMIT * 100.0
            ));
        }
    }

    /// How the run ends when the user, a signal or the clock stopped it.
    pub(super) fn cancelled(&self) -> Outcome {
        if self.user_cancel.is_cancelled() {
            // The binary's edge names the signal before it cancels.
            match self.stop_signal.load(std::sync::atomic::Ordering::SeqCst) {
                SIGTERM => Outcome {
                    exit_code: Some(128 + SIGTERM),
                    ..Outcome::new(Status::Interrupted, "terminated (SIGTERM)")
                },
                SIGHUP => Outcome {
                    exit_code: Some(128 + SIGHUP),
                    ..Outcome::new(Status::Interrupted, "hung up (SIGHUP)")
                },
                _ => Outcome::new(Status::Interrupted, "interrupted by the user"),
            }
        } else if self.time_up.is_cancelled() {
            let secs = self.settings.max_duration.map_or(0.0, |d| d.as_secs_f64());
            let limit = if secs < 60.0 {
                format!("{secs:.0} seconds")
            } else {
                format!("{:.1} minutes", secs / 60.0)
            };
            Outcome::new(
                Status::BudgetExceeded,
                format!("time limit reached: {limit}"),
            )
        } else {
            Outcome::new(Status::Interrupted, "cancelled")
        }
    }

    /// How the run ends on an error.
    pub(super) fn fail(&self, e: Error) -> Outcome {
        match e {
            Error::Budget(why) => Outcome::new(Status::BudgetExceeded, why),
            Error::Cancelled => self.cancelled(),
            other => Outcome::new(Status::Error, other.to_string()),
        }
    }
}
