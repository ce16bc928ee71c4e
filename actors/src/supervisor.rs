//! The Supervisor: owns a session, drives the role actors through each iteration and decides when
//! the run ends.
//!
//! One iteration is a state machine: context → generate → review (the Artisan revises while the
//! Critic rejects, up to `critic_max_rejections` times) → test → decide. Everything an iteration
//! needs is read from disk at its start; the only thing carried in memory is the bookkeeping in
//! [`SessionState`], which is saved after every iteration so an interrupted session can resume.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::dev::ToEnvelope;
use actix::{Actor, Addr, Context, Handler, Message, ResponseFuture};
use futures::FutureExt;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::budget::{Ledger, LedgerSnapshot, Prices};
use crate::criteria;
use crate::entropy::{fingerprint, headline, Breaker};
use crate::error::{Error, Result};
use crate::events::{Event, EventSink, Phase};
use crate::integrity;
use crate::llm::{LlmClient, TokenCounter};
use crate::memory::{self, Embedder, Failure, FixAttempt, VectorStore};
use crate::messages::{
    GatherContext, Generate, Interrupt, ResetContext, Review, RunTests, StartRun,
};
use crate::report::{MemoryReport, MemoryStatus, Report, Status, TestsSnapshot, Timings};
use crate::roles::{
    panic_message, Artisan, Caller, ContextBundle, Critic, FallbackRecord, Librarian, MemoryView,
    Role, Tester,
};
use crate::runner::{Category, TestRun, TestRunner};
use crate::settings::RunSettings;
use crate::vault::{MemoryVault, Recall, Remember, VaultSettings};
use crate::workspace::{IterationRecord, SessionStore, Workspace};

/// What a session has done so far; `state.json` in the session folder.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionState {
    pub session_id: String,
    pub target: String,
    pub test_command: String,
    /// `running` until the session ends, then its final status.
    pub status: String,
    /// Iterations completed.
    pub iteration: u32,
    pub ledger: LedgerSnapshot,
    pub breaker: Breaker,
    pub tests_before: Option<TestsSnapshot>,
    pub tests_after: Option<TestsSnapshot>,
    pub critic_rejections: u32,
    #[serde(default)]
    pub test_integrity_rejections: u32,
    pub context_resets: u32,
    /// Wall time of the session's earlier runs (before a resume).
    pub elapsed_ms: u64,
    pub timings: Timings,
    pub warnings: Vec<String>,
    #[serde(default)]
    pub fallbacks: Vec<FallbackRecord>,
    /// The largest share of its model's context window each role's prompt has used.
    #[serde(default)]
    pub context_use: BTreeMap<Role, f64>,
    /// The MemoryVault's status and counts so far.
    #[serde(default)]
    pub memory: MemoryReport,
    pub started_at: String,
}

impl SessionState {
    pub fn new(session_id: &str, target: &str, test_command: &str, entropy_threshold: u32) -> Self {
        Self {
            session_id: session_id.into(),
            target: target.into(),
            test_command: test_command.into(),
            status: "running".into(),
            iteration: 0,
            ledger: LedgerSnapshot::default(),
            breaker: Breaker::new(entropy_threshold),
            tests_before: None,
            tests_after: None,
            critic_rejections: 0,
            test_integrity_rejections: 0,
            context_resets: 0,
            elapsed_ms: 0,
            timings: Timings::default(),
            warnings: Vec::new(),
            fallbacks: Vec::new(),
            context_use: BTreeMap::new(),
            memory: MemoryReport::default(),
            started_at: now(),
        }
    }
}

/// Everything a session needs from outside.
pub struct SupervisorDeps {
    pub settings: Arc<RunSettings>,
    pub workspace: Arc<dyn Workspace>,
    pub store: Arc<dyn SessionStore>,
    pub runner: Arc<dyn TestRunner>,
    pub llm: Arc<dyn LlmClient>,
    pub counter: Arc<dyn TokenCounter>,
    pub prices: Prices,
    pub events: EventSink,
    /// A new session's state, or the state of the session being resumed. Without `memory`,
    /// `state.memory` says why (off, or unavailable with the reason).
    pub state: SessionState,
    /// The MemoryVault's parts, when memory is on and the vault opened.
    pub memory: Option<MemoryDeps>,
}

/// What the MemoryVault actor is built from.
pub struct MemoryDeps {
    pub embedder: Arc<dyn Embedder>,
    pub store: Arc<dyn VectorStore>,
    /// The shared store, when `memory.global_sharing` is on.
    pub shared: Option<Arc<dyn VectorStore>>,
    pub settings: VaultSettings,
    /// Recorded with each attempt (a hash of the project root).
    pub project_id: String,
}

pub struct Supervisor {
    deps: Option<SupervisorDeps>,
    cancel: CancellationToken,
}

impl Supervisor {
    pub fn new(deps: SupervisorDeps) -> Self {
        Self {
            deps: Some(deps),
            cancel: CancellationToken::new(),
        }
    }
}

impl Actor for Supervisor {
    type Context = Context<Self>;
}

impl Handler<StartRun> for Supervisor {
    type Result = ResponseFuture<Report>;

    fn handle(&mut self, _: StartRun, _: &mut Context<Self>) -> Self::Result {
        let Some(deps) = self.deps.take() else {
            let report = error_report("the session was already started");
            return Box::pin(async move { report });
        };
        let run = Run::start(deps, self.cancel.clone());
        Box::pin(async move {
            match AssertUnwindSafe(run.run()).catch_unwind().await {
                Ok(report) => report,
                Err(panic) => {
                    error_report(&format!("supervisor panicked: {}", panic_message(&*panic)))
                }
            }
        })
    }
}

impl Handler<Interrupt> for Supervisor {
    type Result = ();

    fn handle(&mut self, _: Interrupt, _: &mut Context<Self>) {
        self.cancel.cancel();
    }
}

/// Why the run ends.
struct Stop(Status, String);

type Step<T> = std::result::Result<T, Stop>;

struct Run {
    settings: Arc<RunSettings>,
    workspace: Arc<dyn Workspace>,
    store: Arc<dyn SessionStore>,
    events: EventSink,
    caller: Arc<Caller>,
    librarian: Addr<Librarian>,
    artisan: Addr<Artisan>,
    critic: Addr<Critic>,
    tester: Addr<Tester>,
    state: SessionState,
    started: Instant,
    /// Ctrl+C.
    user_cancel: CancellationToken,
    /// Ctrl+C or the time limit: ends the current step.
    steps: CancellationToken,
    time_up: CancellationToken,
    /// Cancelled when the run ends, so its watcher tasks end too.
    done: CancellationToken,
    test_ms: AtomicU64,
    stuck_on: Option<String>,
    /// `None` when memory is off, unavailable, or stopped working during the run.
    vault: Option<Addr<MemoryVault>>,
    project_id: String,
    /// The last attempt's write, under way: its iteration, its outcome, the vault's answer.
    pending_record: Option<(u32, bool, actix::dev::Request<MemoryVault, Remember>)>,
}

impl Run {
    fn start(d: SupervisorDeps, user_cancel: CancellationToken) -> Self {
        let ledger = Arc::new(Ledger::resume(
            d.settings.max_cost_usd,
            d.prices,
            d.events.clone(),
            d.state.ledger.clone(),
        ));
        let caller = Arc::new(
            Caller::new(d.llm, d.counter, ledger, d.events.clone())
                .with_fallbacks(d.state.fallbacks.clone())
                .with_windows(d.settings.context_windows.clone())
                .with_context_peaks(d.state.context_use.clone()),
        );
        let librarian = Librarian::new(
            d.workspace.clone(),
            d.store.clone(),
            caller.clone(),
            d.settings.clone(),
            d.state.test_command.clone(),
        )
        .start();
        let artisan = Artisan::new(caller.clone(), d.settings.clone()).start();
        let critic = Critic::new(caller.clone(), d.settings.clone()).start();
        let tester = Tester::new(d.runner, d.settings.flaky_retries).start();
        let mut state = d.state;
        let (vault, project_id) = match d.memory {
            Some(m) => {
                state.memory.status = MemoryStatus::On;
                state.memory.reason = None;
                state.memory.embedder = Some(m.embedder.id());
                let vault = MemoryVault::new(m.embedder, m.store, m.shared, m.settings).start();
                (Some(vault), m.project_id)
            }
            None => (None, String::new()),
        };

        let steps = CancellationToken::new();
        let time_up = CancellationToken::new();
        let done = CancellationToken::new();
        {
            let (steps, user, done) = (steps.clone(), user_cancel.clone(), done.clone());
            actix::spawn(async move {
                tokio::select! {
                    _ = user.cancelled() => steps.cancel(),
                    _ = done.cancelled() => {}
                }
            });
        }
        if let Some(limit) = d.settings.max_duration {
            let left = limit.saturating_sub(Duration::from_millis(state.elapsed_ms));
            let (steps, time_up, done) = (steps.clone(), time_up.clone(), done.clone());
            actix::spawn(async move {
                tokio::select! {
                    _ = tokio::time::sleep(left) => {
                        time_up.cancel();
                        steps.cancel();
                    }
                    _ = done.cancelled() => {}
                }
            });
        }
        Self {
            settings: d.settings,
            workspace: d.workspace,
            store: d.store,
            events: d.events,
            caller,
            librarian,
            artisan,
            critic,
            tester,
            state,
            started: Instant::now(),
            user_cancel,
            steps,
            time_up,
            done,
            test_ms: AtomicU64::new(0),
            stuck_on: None,
            vault,
            project_id,
            pending_record: None,
        }
    }

    async fn run(mut self) -> Report {
        // A panic in the Supervisor's own steps (a store or workspace call) must still end in a
        // written report, not a closed mailbox.
        let stop = AssertUnwindSafe(self.drive()).catch_unwind().await;
        let Stop(status, reason) = match stop {
            Ok(Err(stop)) => stop,
            Err(panic) => Stop(
                Status::Error,
                format!("supervisor panicked: {}", panic_message(&*panic)),
            ),
        };
        self.done.cancel();
        self.finish(status, reason).await
    }

    async fn drive(&mut self) -> Step<Infallible> {
        let s = &self.settings;
        self.events.emit(Event::SessionStarted {
            session_id: self.state.session_id.clone(),
            target: self.state.target.clone(),
            test_command: self.state.test_command.clone(),
            models: Role::MODEL_ROLES
                .iter()
                .map(|r| (*r, s.model(*r).model.clone()))
                .collect(),
            max_cost_usd: s.max_cost_usd,
            max_iterations: s.max_iterations,
            resumed_from_iteration: self.state.iteration,
        });
        if s.context_reset_frequency > 1 {
            self.warn(format!(
                "context_reset_frequency is {}: the Artisan and Critic keep their conversation for {} iterations; \
                 quality drops as context fills (1, a fresh context every iteration, is the default)",
                s.context_reset_frequency, s.context_reset_frequency
            ));
        }
        if self.state.tests_before.is_none() {
            self.phase(0, Phase::Baseline);
            let run = self.test().await?;
            self.save_results(0, &run).await?;
            self.state.tests_before = Some(TestsSnapshot::from(&run));
            self.state.tests_after = Some(TestsSnapshot::from(&run));
            if run.criteria_met() {
                return Err(Stop(
                    Status::Success,
                    "the tests already pass; nothing to fix".into(),
                ));
            }
        }
        loop {
            self.iteration().await?;
        }
    }

    /// One iteration; returns only to start the next one.
    async fn iteration(&mut self) -> Step<()> {
        let s = self.settings.clone();
        if self.state.iteration >= s.max_iterations {
            let last = self
                .stuck_on
                .clone()
                .map(|l| format!("; last failure: {l}"))
                .unwrap_or_default();
            return Err(Stop(
                Status::MaxIterations,
                format!(
                    "reached max_iterations ({}) without passing tests{last}",
                    s.max_iterations
                ),
            ));
        }
        let n = self.state.iteration + 1;
        let iter_started = Instant::now();
        let started_at = now();
        let cost_before = self.caller.ledger.spent();
        self.events.emit(Event::IterationStarted {
            iteration: n,
            max_iterations: s.max_iterations,
        });
        if n > 1 && (n - 1).is_multiple_of(s.context_reset_frequency) {
            self.artisan.do_send(ResetContext);
            self.critic.do_send(ResetContext);
            self.state.context_resets += 1;
            // With the default frequency of 1 every iteration is fresh; the event marks only the
            // discarding of history that was kept.
            if s.context_reset_frequency > 1 {
                self.events.emit(Event::ContextReset { iteration: n });
            }
        }

        self.phase(n, Phase::Context);
        let cancel = self.steps.clone();
        let mut bundle = self
            .ask(
                Role::Librarian,
                &self.librarian,
                GatherContext {
                    iteration: n,
                    cancel: cancel.clone(),
                },
            )
            .await?;
        let fixing = self.recall(n, &mut bundle).await;
        let context = Arc::new(bundle);
        let tokens_before = self.caller.ledger.snapshot().tokens;
        let mut reply;

        let mut critique = None;
        let mut rejections = 0;
        // Replies without a code block are asked again, within the same allowance as rejections.
        let mut retries = 0;
        let mut approved = !s.critic_enabled;
        let code = loop {
            self.reset_over_limit(n);
            self.phase(n, Phase::Generate);
            let proposal = self
                .ask(
                    Role::Artisan,
                    &self.artisan,
                    Generate {
                        iteration: n,
                        context: context.clone(),
                        critique: critique.take(),
                        cancel: cancel.clone(),
                    },
                )
                .await?;
            reply = proposal.reply;
            let Some(code) = proposal.code else {
                if rejections + retries >= s.critic_max_rejections {
                    break None;
                }
                retries += 1;
                critique = Some(
                    "Your reply had no fenced code block. Reply with the whole file in one fenced code block.".into(),
                );
                continue;
            };
            if !s.allow_test_edits {
                let violations =
                    integrity::check(&context.target.path, &context.target.content, &code);
                if !violations.is_empty() {
                    self.state.test_integrity_rejections += 1;
                    self.events.emit(Event::TestIntegrity {
                        iteration: n,
                        violations: violations.clone(),
                    });
                    if rejections + retries >= s.critic_max_rejections {
                        self.warn(format!(
                            "iteration {n}: the proposal {}; not written (testing.allow_test_edits is false)",
                            violations.join(", ")
                        ));
                        break None;
                    }
                    retries += 1;
                    critique = Some(format!(
                        "Your proposal was rejected by the test-integrity check: it {}. The tests define \
                         correct behaviour: do not edit, delete or skip them. Fix the code under test instead.",
                        violations.join(", ")
                    ));
                    continue;
                }
            }
            if !s.critic_enabled {
                break Some(code);
            }
            self.reset_over_limit(n);
            self.phase(n, Phase::Review);
            let verdict = self
                .ask(
                    Role::Critic,
                    &self.critic,
                    Review {
                        iteration: n,
                        context: context.clone(),
                        code: code.clone(),
                        cancel: cancel.clone(),
                    },
                )
                .await?;
            if !verdict.explicit {
                self.warn(format!(
                    "iteration {n}: the Critic's reply had no VERDICT line; taken as APPROVE"
                ));
            }
            self.events.emit(Event::CriticVerdict {
                iteration: n,
                approved: verdict.approved,
                reasons: verdict.reasons.clone(),
            });
            if verdict.approved {
                approved = true;
                break Some(code);
            }
            if rejections + retries >= s.critic_max_rejections {
                self.warn(format!(
                    "iteration {n}: the Critic rejected {} proposals; the tests judge the last one",
                    rejections + 1
                ));
                break Some(code);
            }
            rejections += 1;
            critique = Some(verdict.reasons);
        };
        self.state.critic_rejections += rejections;

        let written = code.clone();
        match code {
            Some(code) => self
                .workspace
                .write_target(code)
                .await
                .map_err(|e| self.fail(Error::Workspace(e)))?,
            None if self.state.test_integrity_rejections > 0 && !s.allow_test_edits => {}
            None => self.warn(format!(
                "iteration {n}: the Artisan gave no code block; the file is unchanged"
            )),
        }

        let run = self.test().await?;
        self.save_results(n, &run).await?;
        self.phase(n, Phase::Decide);
        self.state.iteration = n;
        self.state.tests_after = Some(TestsSnapshot::from(&run));
        let passed = run.criteria_met();
        if run.totals.flaky > 0 {
            let flaky: Vec<&str> = run
                .tests
                .iter()
                .filter(|t| t.category == Some(Category::Flaky))
                .map(|t| t.id.as_str())
                .collect();
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
        let record = IterationRecord {
            iteration: n,
            started_at,
            duration_ms: iter_started.elapsed().as_millis() as u64,
            critic_rejections: rejections,
            critic_approved: approved,
            tests: run.summary(),
            passed,
            fingerprint: fp.clone(),
            cost_usd: self.caller.ledger.spent() - cost_before,
            outcome: None,
            context: Some(context.context.clone()),
        };
        self.store
            .append_iteration(&record)
            .await
            .map_err(|e| self.fail(Error::Workspace(e)))?;
        if let (Some(failure), Some(code)) = (fixing, written) {
            let used = self.caller.ledger.snapshot().tokens;
            let tokens = (used.input_tokens + used.output_tokens)
                .saturating_sub(tokens_before.input_tokens + tokens_before.output_tokens);
            let attempt = FixAttempt {
                id: uuid::Uuid::new_v4().to_string(),
                project_id: self.project_id.clone(),
                signature: failure.signature,
                category: failure.category,
                test_ids: failure.test_ids,
                hypothesis: memory::hypothesis(&reply),
                diff: memory::diff(&context.target.path, &context.target.content, &code),
                success: passed,
                timestamp_ms: chrono::Utc::now().timestamp_millis(),
                tokens,
                cost_usd: record.cost_usd,
                model: s.model(Role::Artisan).model.clone(),
                language: context.target.language.clone(),
            };
            self.remember(n, attempt);
        }
        self.checkpoint().await?;
        if passed {
            let plural = if n == 1 { "" } else { "s" };
            let extra = if run.criteria.len() > 1 {
                " and every success criterion is met"
            } else {
                ""
            };
            return Err(Stop(
                Status::Success,
                format!("all tests pass{extra} after {n} iteration{plural}"),
            ));
        }
        if tripped {
            let seen = fp
                .as_deref()
                .and_then(|f| self.state.breaker.seen.get(f))
                .copied()
                .unwrap_or(0);
            let stuck = self.stuck_on.clone().unwrap_or_default();
            return Err(Stop(
                Status::EntropyDetected,
                format!(
                    "the same failure ended {seen} iterations (threshold {}): {stuck}",
                    s.entropy_threshold
                ),
            ));
        }
        Ok(())
    }

    /// Sends `msg` to a role and waits for the answer, unless the user or the clock stops the run.
    async fn ask<A, M, T>(&self, role: Role, addr: &Addr<A>, msg: M) -> Step<T>
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
            Ok(Err(Error::Cancelled)) => Err(self.cancelled()),
            Ok(Err(e)) => Err(self.fail(e)),
            Err(mailbox) => Err(Stop(
                Status::Error,
                format!("the {role} actor stopped: {mailbox}"),
            )),
        }
    }

    /// Runs the tests. The runner hears the cancel token itself and kills its process group, so
    /// this waits for it rather than abandon a running child.
    async fn test(&mut self) -> Step<TestRun> {
        let n = self.state.iteration + u32::from(self.state.tests_before.is_some());
        self.phase(n, Phase::Test);
        let answer = self
            .tester
            .send(RunTests {
                cancel: self.steps.child_token(),
            })
            .await;
        if self.steps.is_cancelled() {
            return Err(self.cancelled());
        }
        let run = match answer {
            Ok(Ok(run)) => run,
            Ok(Err(e)) => return Err(self.fail(e)),
            Err(mailbox) => {
                return Err(Stop(
                    Status::Error,
                    format!("the tester actor stopped: {mailbox}"),
                ))
            }
        };
        let mut run = run;
        criteria::judge(&mut run, &self.settings);
        self.test_ms.fetch_add(run.duration_ms, Ordering::Relaxed);
        self.events.emit(Event::TestsFinished {
            iteration: n,
            tests: TestsSnapshot::from(&run),
        });
        Ok(run)
    }

    async fn save_results(&self, n: u32, run: &TestRun) -> Step<()> {
        self.store
            .save_test_results(n, run)
            .await
            .map_err(|e| self.fail(Error::Workspace(e)))
    }

    async fn checkpoint(&mut self) -> Step<()> {
        self.sync_state();
        self.store
            .save_state(&self.state)
            .await
            .map_err(|e| self.fail(Error::Workspace(e)))
    }

    fn sync_state(&mut self) {
        self.state.ledger = self.caller.ledger.snapshot();
        self.state.fallbacks = self.caller.fallbacks();
        self.state.context_use = self.caller.context_peaks();
    }

    /// Drops the history of every role whose last prompt reached the context limit, whatever
    /// `context_reset_frequency` says: the role's next call starts afresh. Actix delivers the
    /// reset before any later message to the same actor.
    fn reset_over_limit(&mut self, n: u32) {
        for role in self.caller.take_over_limit() {
            match role {
                Role::Artisan => self.artisan.do_send(ResetContext),
                Role::Critic => self.critic.do_send(ResetContext),
                // The Librarian keeps no history: each of its prompts is built afresh.
                _ => continue,
            }
            self.state.context_resets += 1;
            self.events.emit(Event::ContextReset { iteration: n });
            self.warn(format!(
                "iteration {n}: the {role}'s prompt used over {:.0}% of its context window; its history was dropped",
                crate::roles::CONTEXT_LIMIT * 100.0
            ));
        }
    }

    /// When the last run failed, asks the vault for attempts at similar failures and puts them
    /// in the bundle. Returns the failure this iteration tries to fix, to record the attempt by.
    async fn recall(&mut self, n: u32, bundle: &mut ContextBundle) -> Option<Failure> {
        self.settle_record().await;
        let vault = self.vault.clone()?;
        let last = match self.store.last_test_results().await {
            Ok(Some(run)) => run,
            Ok(None) => return None,
            Err(e) => {
                self.warn(format!(
                    "iteration {n}: no recall, the last test results are unreadable: {e}"
                ));
                return None;
            }
        };
        let failure = memory::failure(&last)?;
        let answer = vault
            .send(Recall {
                failure: failure.clone(),
            })
            .await
            .map_err(|e| e.to_string())
            .and_then(|r| r);
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
                }
                bundle.memory = found.fixes.iter().map(MemoryView::from).collect();
            }
            Err(e) => self.memory_failed(n, e),
        }
        Some(failure)
    }

    /// Records an attempt. The write goes on while the next iteration starts (its Librarian
    /// call); [`Run::settle_record`] waits for it before the next recall, so no recall misses
    /// it, and before the report, so no write is lost.
    fn remember(&mut self, n: u32, attempt: FixAttempt) {
        let Some(vault) = self.vault.clone() else {
            return;
        };
        let success = attempt.success;
        self.pending_record = Some((n, success, vault.send(Remember { attempt })));
    }

    /// Waits for the attempt being recorded, if any; a vault that failed is left out for the
    /// rest of the run.
    async fn settle_record(&mut self) {
        let Some((n, success, request)) = self.pending_record.take() else {
            return;
        };
        let answer = request.await.map_err(|e| e.to_string()).and_then(|r| r);
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

    fn memory_failed(&mut self, n: u32, error: String) {
        self.vault = None;
        self.state.memory.status = MemoryStatus::Failed;
        self.state.memory.reason = Some(error.clone());
        self.warn(format!(
            "iteration {n}: the memory vault stopped working ({error}); the run goes on without memory"
        ));
    }

    fn cancelled(&self) -> Stop {
        if self.user_cancel.is_cancelled() {
            Stop(Status::Interrupted, "interrupted by the user".into())
        } else if self.time_up.is_cancelled() {
            let secs = self.settings.max_duration.map_or(0.0, |d| d.as_secs_f64());
            let limit = if secs < 60.0 {
                format!("{secs:.0} seconds")
            } else {
                format!("{:.1} minutes", secs / 60.0)
            };
            Stop(
                Status::BudgetExceeded,
                format!("time limit reached: {limit}"),
            )
        } else {
            Stop(Status::Interrupted, "cancelled".into())
        }
    }

    fn fail(&self, e: Error) -> Stop {
        match e {
            Error::Budget(why) => Stop(Status::BudgetExceeded, why),
            Error::Cancelled => self.cancelled(),
            other => Stop(Status::Error, other.to_string()),
        }
    }

    fn phase(&self, iteration: u32, phase: Phase) {
        self.events.emit(Event::PhaseChanged { iteration, phase });
    }

    fn warn(&mut self, message: String) {
        tracing::warn!("{message}");
        self.state.warnings.push(message.clone());
        self.events.emit(Event::Warning { message });
    }

    async fn finish(mut self, status: Status, reason: String) -> Report {
        self.settle_record().await;
        self.sync_state();
        let wall_ms = self.started.elapsed().as_millis() as u64;
        let llm_ms = self.caller.llm_ms.load(Ordering::Relaxed);
        let test_ms = self.test_ms.load(Ordering::Relaxed);
        let t = &mut self.state.timings;
        t.llm_ms += llm_ms;
        t.test_ms += test_ms;
        t.overhead_ms += wall_ms.saturating_sub(llm_ms + test_ms);
        self.state.elapsed_ms += wall_ms;
        // An interrupted session stays resumable; any other end is final.
        self.state.status = status.as_str().to_string();
        let st = &self.state;
        let l = &st.ledger;
        let report = Report {
            session_id: st.session_id.clone(),
            status,
            exit_code: status.exit_code(),
            reason,
            target: st.target.clone(),
            test_command: st.test_command.clone(),
            iterations: st.iteration,
            duration_ms: st.elapsed_ms,
            cost_usd: l.spent,
            cost_by_role: l.by_role.clone(),
            cost_by_model: l.by_model.clone(),
            tokens: l.tokens,
            tokens_by_role: l.tokens_by_role.clone(),
            tests_before: st.tests_before.clone(),
            tests_after: st.tests_after.clone(),
            stuck_on: if status == Status::Success {
                None
            } else {
                self.stuck_on.clone()
            },
            context_resets: st.context_resets,
            critic_rejections: st.critic_rejections,
            test_integrity_rejections: st.test_integrity_rejections,
            timings: st.timings,
            warnings: st.warnings.clone(),
            fallbacks: st.fallbacks.clone(),
            context_use: st
                .context_use
                .iter()
                .map(|(r, u)| (r.to_string(), *u))
                .collect(),
            memory: st.memory.clone(),
            started_at: st.started_at.clone(),
            finished_at: now(),
        };
        let mut report = report;
        if let Err(e) = self.store.save_state(&self.state).await {
            report
                .warnings
                .push(format!("could not save the session state: {e}"));
        }
        if let Err(e) = self.store.save_report(&report).await {
            report
                .warnings
                .push(format!("could not save report.json: {e}"));
        }
        self.events.emit(Event::SessionFinished {
            report: Box::new(report.clone()),
        });
        report
    }
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

fn error_report(reason: &str) -> Report {
    Report {
        session_id: String::new(),
        status: Status::Error,
        exit_code: Status::Error.exit_code(),
        reason: reason.into(),
        target: String::new(),
        test_command: String::new(),
        iterations: 0,
        duration_ms: 0,
        cost_usd: 0.0,
        cost_by_role: BTreeMap::new(),
        cost_by_model: BTreeMap::new(),
        tokens: Default::default(),
        tokens_by_role: BTreeMap::new(),
        tests_before: None,
        tests_after: None,
        stuck_on: None,
        context_resets: 0,
        critic_rejections: 0,
        test_integrity_rejections: 0,
        timings: Timings::default(),
        warnings: Vec::new(),
        fallbacks: Vec::new(),
        context_use: BTreeMap::new(),
        memory: MemoryReport::default(),
        started_at: now(),
        finished_at: now(),
    }
}
