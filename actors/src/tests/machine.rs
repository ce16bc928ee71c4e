//! The state machine's joints: every transition passes the hooks, a hook may amend a proposal or
//! veto a success, no hook can stop a run; runs are values that run side by side under one
//! budget; the event stream is numbered and feeds the report; a hung vault does not hold a stop.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;
use tokio::time::timeout;

use super::session::*;
use super::*;
use crate::events::event::Event;
use crate::machine::hooks::{Gate, Hook, HookError, Transition};
use crate::machine::state::StateKind;
use crate::policy::budget::Budget;
use crate::ports::memory::{MemoryError, VectorStore};
use crate::prompt::reply::Proposal;
use crate::schema::attempt::{FixAttempt, Scored};
use crate::schema::report::{MemoryStatus, Status};
use crate::supervisor::run::Run;

/// Records every transition it is told of.
#[derive(Default)]
struct Recorder(Mutex<Vec<(StateKind, StateKind, u32)>>);

#[async_trait::async_trait]
impl Hook for Recorder {
    fn name(&self) -> &str {
        "recorder"
    }
    async fn on_transition(&self, at: &Transition<'_>) -> Result<(), HookError> {
        self.0.lock().unwrap().push((at.from, at.to, at.iteration));
        Ok(())
    }
}

#[actix_rt::test]
async fn every_transition_passes_the_hooks_in_order() {
    let log = Log::default();
    let llm = team_of(&log, fixed, rejects_first("not yet"));
    let recorder = Arc::new(Recorder::default());
    let mut session = Session::fixing_once(llm);
    session.hooks = vec![recorder.clone()];
    let report = session.run().await;
    assert_eq!(report.status, Status::Success, "{}", report.reason);

    use StateKind::*;
    let seen: Vec<(StateKind, StateKind)> = recorder
        .0
        .lock()
        .unwrap()
        .iter()
        .map(|(from, to, _)| (*from, *to))
        .collect();
    assert_eq!(
        seen,
        [
            (Baseline, TestBaseline),
            (TestBaseline, Begin),
            (Begin, Context),
            (Context, Recall),
            (Recall, Generate),
            (Generate, Check),
            (Check, Review),
            (Review, Generate),
            (Generate, Check),
            (Check, Review),
            (Review, Write),
            (Write, Test),
            (Test, Decide),
            (Decide, Done),
        ]
    );
    let iterations: Vec<u32> = recorder.0.lock().unwrap().iter().map(|t| t.2).collect();
    assert_eq!(&iterations[..2], [0, 0], "the baseline is iteration 0");
    assert!(iterations[2..].iter().all(|n| *n == 1), "{iterations:?}");
}

/// Appends a line to every proposal's code, as a formatter would change it.
struct Formatter;

#[async_trait::async_trait]
impl Hook for Formatter {
    fn name(&self) -> &str {
        "formatter"
    }
    async fn amend(&self, _: &Transition<'_>, proposal: &mut Proposal) -> Result<(), HookError> {
        if let Some(code) = &mut proposal.code {
            code.push_str("# formatted\n");
        }
        Ok(())
    }
}

#[actix_rt::test]
async fn a_hook_amends_the_proposal_before_it_is_reviewed_and_written() {
    let log = Log::default();
    let mut session = Session::fixing_once(team(&log));
    session.hooks = vec![Arc::new(Formatter)];
    let mut events = session.events.subscribe();
    let report = session.run().await;

    assert_eq!(report.status, Status::Success, "{}", report.reason);
    assert_eq!(session.file(), format!("{FIXED}# formatted\n"));
    let critic = requests(&log, Role::Critic);
    assert!(
        user_prompt(&critic[0]).contains("# formatted"),
        "the Critic reviewed the amended code"
    );
    let amended = std::iter::from_fn(|| events.try_recv())
        .filter(|e| matches!(&e.event, Event::ProposalAmended { iteration: 1, hook } if hook == "formatter"))
        .count();
    assert_eq!(amended, 1);
}

/// Vetoes the first success it is asked about.
struct Adversary(AtomicUsize);

const VETO: &str = "median([]) must raise ValueError, not IndexError";

#[async_trait::async_trait]
impl Hook for Adversary {
    fn name(&self) -> &str {
        "adversary"
    }
    async fn before_success(&self, _: &Transition<'_>, run: &TestRun) -> Result<Gate, HookError> {
        assert!(run.criteria_met(), "asked only about a passing run");
        Ok(match self.0.fetch_add(1, Ordering::SeqCst) {
            0 => Gate::Veto {
                reasons: vec![VETO.into()],
            },
            _ => Gate::Pass,
        })
    }
}

#[actix_rt::test]
async fn a_vetoed_success_goes_on_and_the_reasons_reach_the_artisan() {
    let log = Log::default();
    let mut session = Session::new(
        settings(),
        team(&log),
        runner(vec![
            failing("AssertionError: 3 != 2.5"),
            passing(),
            passing(),
        ]),
    );
    session.hooks = vec![Arc::new(Adversary(AtomicUsize::new(0)))];
    let mut events = session.events.subscribe();
    let report = session.run().await;

    assert_eq!(report.status, Status::Success, "{}", report.reason);
    assert_eq!(report.iterations, 2, "the veto cost one more iteration");
    let artisan = requests(&log, Role::Artisan);
    assert!(!user_prompt(&artisan[0]).contains(VETO));
    assert!(
        user_prompt(&artisan[1]).contains(VETO),
        "{}",
        user_prompt(&artisan[1])
    );
    let vetoes: Vec<_> = std::iter::from_fn(|| events.try_recv())
        .filter_map(|e| match &e.event {
            Event::SuccessVetoed {
                iteration,
                hook,
                reasons,
            } => Some((*iteration, hook.clone(), reasons.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        vetoes,
        [(1, "adversary".to_string(), vec![VETO.to_string()])]
    );
    // The reasons were saved with the state until the next iteration took them.
    let saved = session.store.saved();
    assert_eq!(saved.states[0].hook_notes, [VETO]);
    assert!(saved.states.last().unwrap().hook_notes.is_empty());
}

/// Fails at every hook point.
struct Broken;

#[async_trait::async_trait]
impl Hook for Broken {
    fn name(&self) -> &str {
        "broken"
    }
    async fn on_transition(&self, _: &Transition<'_>) -> Result<(), HookError> {
        Err(HookError::new("broken", "exit 1"))
    }
    async fn amend(&self, _: &Transition<'_>, proposal: &mut Proposal) -> Result<(), HookError> {
        proposal.code = Some("garbage".into());
        Err(HookError::new("broken", "crashed mid-way"))
    }
    async fn before_success(&self, _: &Transition<'_>, _: &TestRun) -> Result<Gate, HookError> {
        Err(HookError::new("broken", "no answer"))
    }
}

#[actix_rt::test]
async fn a_failing_hook_is_a_warning_and_never_stops_the_run() {
    let log = Log::default();
    let mut session = Session::fixing_once(team(&log));
    session.hooks = vec![Arc::new(Broken)];
    let report = session.run().await;

    assert_eq!(report.status, Status::Success, "{}", report.reason);
    assert_eq!(session.file(), FIXED, "a failed amendment is undone");
    let said = |text: &str| report.warnings.iter().any(|w| w.contains(text));
    assert!(
        said("hook broken: exit 1; ignored"),
        "{:?}",
        report.warnings
    );
    assert!(
        said("hook broken: crashed mid-way; the proposal is kept as it was"),
        "{:?}",
        report.warnings
    );
    assert!(
        said("hook broken: no answer; its gate counts as passed"),
        "{:?}",
        report.warnings
    );
}

/// Tests that fail every time, each time differently (the breaker never trips).
#[derive(Default)]
struct NeverPasses(AtomicUsize);

#[async_trait::async_trait]
impl TestRunner for NeverPasses {
    async fn run(
        &self,
        _: tokio_util::sync::CancellationToken,
    ) -> Result<TestRun, crate::ports::runner::RunnerError> {
        let n = self.0.fetch_add(1, Ordering::SeqCst);
        Ok(failing(&format!("AssertionError: run {n}")))
    }
    fn command(&self) -> String {
        "pytest".into()
    }
}

#[actix_rt::test]
async fn two_runs_execute_side_by_side_and_never_cross_their_shared_budget() {
    // Each run alone could spend $1; together they may spend what two first iterations cost.
    let one_iteration = cost_of(LIBRARIAN_USAGE) + cost_of(ARTISAN_USAGE) + cost_of(CRITIC_USAGE);
    let shared = Budget::new(2.0 * one_iteration + 1e-9, 0.0);
    let sessions: Vec<Session> = (0..2)
        .map(|_| {
            let log = Log::default();
            let mut s = settings();
            s.max_cost_usd = 1.0;
            Session::new(s, team(&log), NeverPasses::default())
        })
        .collect();
    let runs: Vec<Run> = sessions
        .iter()
        .map(|s| {
            let ledger = Ledger::new(1.0, prices(INPUT_PRICE, OUTPUT_PRICE), s.events.clone())
                .within(shared.clone());
            Run::new(s.deps_with(ledger))
        })
        .collect();
    let [a, b]: [Run; 2] = runs.try_into().ok().expect("two runs");
    let (a, b) = timeout(NO_HANG, async { tokio::join!(a.execute(), b.execute()) })
        .await
        .expect("both runs end");

    assert!(a.cost_usd + b.cost_usd <= shared.cap() + 1e-9);
    assert!((shared.spent() - (a.cost_usd + b.cost_usd)).abs() < 1e-12);
    for report in [&a, &b] {
        assert_eq!(report.status, Status::BudgetExceeded, "{}", report.reason);
    }
}

#[actix_rt::test]
async fn events_are_numbered_and_every_warning_reaches_the_report() {
    let log = Log::default();
    let mut session = Session::fixing_once(team(&log));
    // No price for the model: the ledger warns, once, on the stream; it must reach the report.
    session.prices = Default::default();
    let mut events = session.events.subscribe();
    let report = session.run().await;

    let all: Vec<_> = std::iter::from_fn(|| events.try_recv()).collect();
    let seqs: Vec<u64> = all.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=all.len() as u64).collect::<Vec<_>>());
    assert!(all.iter().all(|e| e.session == "session-test"));
    assert!(all.windows(2).all(|w| w[0].time <= w[1].time));
    assert!(matches!(all[0].event, Event::SessionStarted { .. }));
    assert!(matches!(
        all.last().unwrap().event,
        Event::SessionFinished { .. }
    ));
    assert!(
        report
            .warnings
            .iter()
            .any(|w| w.starts_with("no price known for test/model")),
        "{:?}",
        report.warnings
    );
    let Event::SessionFinished { report: told } = &all.last().unwrap().event else {
        unreachable!("matched above")
    };
    assert_eq!(told.as_ref(), &report);
}

#[actix_rt::test]
async fn a_resumed_session_reads_its_last_results_once_and_a_damaged_file_ends_it() {
    // Resumed after the baseline: the last results come from the store, read once.
    let log = Log::default();
    let mut session = Session::new(settings(), team(&log), runner(vec![passing()]));
    let mut state =
        crate::schema::state::SessionState::new("session-test", TARGET_PATH, "pytest", 3);
    state.tests_before = Some((&failing("AssertionError: 3 != 2.5")).into());
    session.state = Some(state.clone());
    session
        .store
        .saved()
        .results
        .push((0, failing("AssertionError: 3 != 2.5")));
    let report = session.run().await;
    assert_eq!(report.status, Status::Success, "{}", report.reason);
    let librarian = requests(&log, Role::Librarian);
    assert!(
        user_prompt(&librarian[0]).contains("3 != 2.5"),
        "{}",
        user_prompt(&librarian[0])
    );

    // A damaged results file: the run ends with an error that names it, before any call.
    let log = Log::default();
    let mut damaged = Session::new(settings(), team(&log), runner(vec![]));
    damaged.state = Some(state);
    damaged.store = Arc::new(MemStore::failing_reads());
    let report = damaged.run().await;
    assert_eq!(report.status, Status::Error);
    assert_reason(&report, "test-results-iteration-0.json is damaged");
    assert!(log.lock().unwrap().is_empty());
}

/// A vault whose writes never finish; `entered` is told when one begins.
struct HungVault {
    entered: Arc<Notify>,
}

#[async_trait::async_trait]
impl VectorStore for HungVault {
    async fn insert(&self, _: Vec<(FixAttempt, Vec<f32>)>) -> Result<(), MemoryError> {
        self.entered.notify_one();
        std::future::pending().await
    }
    async fn nearest(&self, _: Vec<f32>, _: usize, _: f32) -> Result<Vec<Scored>, MemoryError> {
        Ok(Vec::new())
    }
}

#[actix_rt::test]
async fn a_hung_vault_holds_neither_ctrl_c_nor_the_report() {
    let log = Log::default();
    let entered = Arc::new(Notify::new());
    let mut session = Session::new(settings(), team(&log), NeverPasses::default());
    session.vault = Some(Arc::new(HungVault {
        entered: entered.clone(),
    }));
    // The vault hangs: the run must end all the same.
    let report = session.run_interrupted(entered.notified()).await;
    assert_eq!(report.status, Status::Interrupted, "{}", report.reason);
    assert_eq!(report.memory.status, MemoryStatus::Failed);
    assert!(
        report
            .memory
            .reason
            .as_deref()
            .is_some_and(|r| r.contains("no answer within 2s")),
        "{:?}",
        report.memory
    );
    assert_eq!(session.store.saved().reports, vec![report]);
}
