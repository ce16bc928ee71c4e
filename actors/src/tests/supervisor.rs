//! The Supervisor driving whole runs over mocks: each test sends `StartRun` and reads the report.

use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;

use super::session::*;
use super::*;
use crate::ports::memory::{MemoryError, MockVectorStore};
use crate::ports::user::{BreakerChoice, MockUser};
use crate::schema::attempt::FixAttempt;
use crate::schema::report::MemoryStatus;
use crate::schema::report::Status;
use crate::settings::OnFailure;

/// Fails, showing the reason, unless the run ended with `status` and `exit_code`.
#[track_caller]
fn assert_ended(report: &Report, status: Status, exit_code: i32) {
    assert_eq!(
        (report.status, report.exit_code),
        (status, exit_code),
        "{}",
        report.reason
    );
}

#[actix_rt::test]
async fn baseline_passing_is_success_with_no_iterations() {
    let mut llm = MockLlmClient::new();
    llm.expect_complete().never();
    let session = Session::new(settings(), llm, runner(vec![passing()]));
    let report = session.run().await;

    assert_ended(&report, Status::Success, 0);
    assert_eq!(report.iterations, 0);
    assert_eq!(report.cost_usd, 0.0);
    assert_reason(&report, "already pass");
    assert_eq!(report.tests_before, report.tests_after);
    assert_eq!(session.file(), TARGET, "nothing was written");
    let saved = session.store.saved();
    assert_eq!(
        saved.results.iter().map(|(n, _)| *n).collect::<Vec<_>>(),
        vec![0]
    );
    assert!(saved.iterations.is_empty());
    assert_eq!(saved.reports, vec![report]);
}

#[actix_rt::test]
async fn fixed_on_iteration_2_is_success_and_costs_usage_times_price() {
    let log = Log::default();
    let runs = vec![
        failing("AssertionError: 3 != 2.5"),
        failing("AssertionError: 2 != 2.5"),
        passing(),
    ];
    let session = Session::new(settings(), team(&log), runner(runs));
    let report = session.run().await;

    assert_ended(&report, Status::Success, 0);
    assert_eq!(report.iterations, 2);
    assert_eq!(report.reason, "all tests pass after 2 iterations");
    assert_eq!(report.stuck_on, None);
    assert_eq!(
        log.lock().unwrap().len(),
        6,
        "librarian, artisan and critic, twice"
    );

    let by_role = [
        ("artisan", 2.0 * cost_of(ARTISAN_USAGE)),
        ("critic", 2.0 * cost_of(CRITIC_USAGE)),
        ("librarian", 2.0 * cost_of(LIBRARIAN_USAGE)),
    ];
    let expected: f64 = by_role.iter().map(|(_, c)| c).sum();
    assert!(
        (report.cost_usd - expected).abs() < 1e-12,
        "cost {} != {expected}",
        report.cost_usd
    );
    assert_eq!(
        report
            .cost_by_role
            .keys()
            .map(String::as_str)
            .collect::<Vec<_>>(),
        vec!["artisan", "critic", "librarian"]
    );
    for (role, cost) in by_role {
        assert!(
            (report.cost_by_role[role] - cost).abs() < 1e-12,
            "{role}: {} != {cost}",
            report.cost_by_role[role]
        );
    }
    assert!((report.cost_by_model[MODEL] - expected).abs() < 1e-12);
    let mut tokens = Usage::default();
    for u in [LIBRARIAN_USAGE, ARTISAN_USAGE, CRITIC_USAGE] {
        tokens += u;
        tokens += u;
    }
    assert_eq!(report.tokens, tokens);

    assert_eq!(report.tests_before.as_ref().map(|t| t.failed), Some(1));
    assert_eq!(
        report.tests_after.as_ref().map(|t| (t.passed, t.failed)),
        Some((2, 0))
    );
    assert_eq!(session.file(), FIXED, "the approved proposal was written");
    // Iteration 2's Librarian saw the results iteration 1 saved.
    let librarian = requests(&log, Role::Librarian);
    assert!(
        user_prompt(&librarian[1]).contains("2 != 2.5"),
        "{}",
        user_prompt(&librarian[1])
    );
    let saved = session.store.saved();
    assert_eq!(
        saved.results.iter().map(|(n, _)| *n).collect::<Vec<_>>(),
        vec![0, 1, 2]
    );
    assert_eq!(
        saved
            .iterations
            .iter()
            .map(|r| (r.iteration, r.passed))
            .collect::<Vec<_>>(),
        vec![(1, false), (2, true)]
    );
    assert_eq!(saved.reports, vec![report]);
}

#[actix_rt::test]
async fn a_critic_rejection_sends_the_critique_to_the_artisan() {
    let critique = "- an even-length list must average the two middle values";
    let log = Log::default();
    let llm = team_of(&log, fixed, rejects_first(critique));
    let session = Session::fixing_once(llm);
    let report = session.run().await;

    assert_eq!(report.status, Status::Success, "{}", report.reason);
    assert_eq!(report.iterations, 1);
    assert_eq!(report.critic_rejections, 1);
    let artisan = requests(&log, Role::Artisan);
    assert_eq!(artisan.len(), 2, "the Artisan revised once");
    assert!(!user_prompt(&artisan[0]).contains(critique));
    assert!(
        user_prompt(&artisan[1]).contains(critique),
        "{}",
        user_prompt(&artisan[1])
    );
    assert_eq!(requests(&log, Role::Critic).len(), 2);
    let saved = session.store.saved();
    assert_eq!(saved.iterations[0].critic_rejections, 1);
    assert!(saved.iterations[0].critic_approved);
}

#[actix_rt::test]
async fn the_same_failure_three_times_is_entropy_detected() {
    let log = Log::default();
    // The same failure, its duration changing from run to run.
    let runs = (0..4)
        .map(|i| failing(&format!("AssertionError: assert 3 == 2.5 (took 0.{i}1s)")))
        .collect();
    let session = Session::new(settings(), team(&log), runner(runs));
    let report = session.run().await;

    assert_ended(&report, Status::EntropyDetected, 5);
    assert_eq!(report.iterations, 3);
    assert_reason(&report, "the same failure ended 3 iterations");
    let stuck_on = report.stuck_on.as_deref().expect("stuck_on");
    assert!(
        stuck_on.contains("AssertionError: assert 3 == 2.5"),
        "{stuck_on}"
    );
    let saved = session.store.saved();
    let fingerprints: Vec<_> = saved
        .iterations
        .iter()
        .map(|r| r.fingerprint.clone().expect("a fingerprint"))
        .collect();
    assert_eq!(fingerprints.len(), 3);
    assert!(fingerprints.iter().all(|f| *f == fingerprints[0]));
}

#[actix_rt::test]
async fn max_iterations_2_stops_after_two_iterations() {
    let mut s = settings();
    s.max_iterations = 2;
    let log = Log::default();
    let runs = vec![
        failing("AssertionError: one"),
        failing("TypeError: two"),
        failing("KeyError: three"),
    ];
    let session = Session::new(s, team(&log), runner(runs));
    let report = session.run().await;

    assert_ended(&report, Status::MaxIterations, 4);
    assert_eq!(report.iterations, 2);
    assert_reason(&report, "max_iterations (2)");
    assert_eq!(report.stuck_on.as_deref(), Some("KeyError: three"));
    assert_eq!(requests(&log, Role::Artisan).len(), 2);
}

#[actix_rt::test]
async fn a_tiny_budget_is_budget_exceeded_and_never_overspent() {
    let mut s = settings();
    let cap = 0.02;
    s.max_cost_usd = cap;
    let log = Log::default();
    // Each reply uses at most what the call was granted.
    let llm = llm(&log, |request, _| {
        let output = 300.min(u64::from(request.max_tokens));
        Ok(match request.role {
            Role::Artisan => reply(&code_reply(FIXED), usage(1000, output)),
            Role::Critic => reply("VERDICT: APPROVE", usage(1000, output)),
            _ => reply(ANALYSIS, usage(1000, output)),
        })
    });
    let mut runner = MockTestRunner::new();
    let calls = AtomicUsize::new(0);
    runner.expect_run().returning(move |_| {
        // A new failure every time, so the entropy breaker stays out of it.
        let n = calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(failing(&format!("AssertionError: case {n}")))
    });
    let mut session = Session::new(s, llm, runner);
    session.prices = prices(1.0, 10.0);
    let report = session.run().await;

    assert_ended(&report, Status::BudgetExceeded, 3);
    assert_reason(&report, "cost limit reached");
    assert!(report.cost_usd > 0.0, "some calls were paid");
    assert!(
        report.cost_usd <= cap,
        "spent {} > cap {cap}",
        report.cost_usd
    );
    let spec = settings();
    for request in log.lock().unwrap().iter() {
        assert!(request.max_tokens <= spec.model(request.role).max_tokens);
    }
    assert_eq!(session.store.saved().reports, vec![report]);
}

#[actix_rt::test]
async fn an_llm_auth_error_ends_the_run_as_an_error() {
    let log = Log::default();
    let llm = llm(&log, |_, _| {
        Err(LlmError::Auth {
            provider: "openai".into(),
            env_var: "OPENAI_API_KEY".into(),
            message: "401 invalid api key".into(),
        })
    });
    let session = Session::new(settings(), llm, runner(vec![failing("AssertionError")]));
    let report = session.run().await;

    assert_ended(&report, Status::Error, 1);
    assert_eq!(
        report.reason,
        "openai: authentication failed (401 invalid api key); check OPENAI_API_KEY"
    );
    assert_eq!(report.cost_usd, 0.0);
    assert_eq!(log.lock().unwrap().len(), 1, "no retry of an auth error");
    assert_eq!(session.store.saved().reports, vec![report]);
}

#[actix_rt::test]
async fn interrupt_during_a_slow_test_run_is_interrupted_and_saves_state_and_report() {
    interrupted_during_the_tests(OnFailure::Last).await;
}

/// By default an interrupted run leaves the best state it reached: here the original, since
/// the proposal written was never tested.
#[actix_rt::test]
async fn an_interrupted_run_leaves_the_best_state_by_default() {
    let (session, report) = interrupted_during_the_tests(OnFailure::Best).await;
    assert_eq!(
        session.file(),
        TARGET,
        "back to the best state: the original"
    );
    let left = report.file_left.expect("file_left");
    assert_eq!((left.policy, left.iteration), (OnFailure::Best, Some(0)));
    assert_eq!(left.tests.map(|t| t.failed), Some(1));
    assert_eq!(
        session
            .store
            .saved()
            .checkpoints
            .get(&0)
            .map(String::as_str),
        Some(TARGET)
    );
}

/// Interrupts a run while the tests of its first proposal run; `on_failure` says what the
/// file is left with. With `last`, the untested proposal stays.
async fn interrupted_during_the_tests(on_failure: OnFailure) -> (Session, Report) {
    let log = Log::default();
    let entered = Arc::new(Notify::new());
    let mut inner = MockTestRunner::new();
    let mut runs = vec![
        failing("AssertionError"),
        TestRun {
            output: "cancelled".into(),
            ..failing("cancelled")
        },
    ]
    .into_iter();
    inner
        .expect_run()
        .times(2)
        .returning(move |_| Ok(runs.next().expect("a scripted run")));
    let runner = SlowRunner {
        inner,
        fast: 1,
        calls: AtomicUsize::new(0),
        entered: entered.clone(),
    };
    let mut s = settings();
    s.on_failure = on_failure;
    let session = Session::new(s, team(&log), runner);
    let report = session.run_interrupted(entered.notified()).await;

    assert_ended(&report, Status::Interrupted, 130);
    assert_eq!(report.reason, "interrupted by the user");
    assert_eq!(report.iterations, 0, "iteration 1 did not complete");
    if on_failure == OnFailure::Last {
        assert_eq!(
            session.file(),
            FIXED,
            "the proposal was written before the tests ran"
        );
        let left = report.file_left.clone().expect("file_left");
        assert_eq!((left.policy, left.iteration), (OnFailure::Last, None));
    }
    let saved = session.store.saved();
    let state = saved.states.last().expect("save_state was called");
    assert_eq!(state.status, "interrupted");
    assert_eq!(state.ledger.spent, report.cost_usd);
    assert!(report.cost_usd > 0.0);
    assert_eq!(
        saved.reports,
        vec![report.clone()],
        "save_report was called once"
    );
    drop(saved);
    (session, report)
}

#[actix_rt::test]
async fn max_duration_elapsed_is_budget_exceeded() {
    let mut s = settings();
    s.max_duration = Some(Duration::from_millis(100));
    let log = Log::default();
    let llm = SlowLlm {
        inner: team(&log),
        delay: Duration::from_secs(60),
    };
    let session = Session::new(s, llm, runner(vec![failing("AssertionError")]));
    let started = std::time::Instant::now();
    let report = session.run().await;

    assert_ended(&report, Status::BudgetExceeded, 3);
    assert!(
        report.reason.starts_with("time limit reached"),
        "{}",
        report.reason
    );
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "the slow call was abandoned"
    );
    // The abandoned call may still be billed: its reservation is spent, and said so.
    assert!(report.cost_usd > 0.0, "{report:?}");
    assert_says(&report.warnings, "abandoned");
    assert_eq!(session.store.saved().reports, vec![report]);
}

#[actix_rt::test]
async fn a_panicking_llm_client_ends_the_run_as_an_error() {
    let mut llm = MockLlmClient::new();
    llm.expect_complete().returning(|_| panic!("boom"));
    let session = Session::new(settings(), llm, runner(vec![failing("AssertionError")]));
    let report = session.run().await;

    assert_ended(&report, Status::Error, 1);
    assert_reason(&report, "panicked");
    assert_eq!(report.reason, "librarian panicked: boom");
    assert_eq!(session.store.saved().reports, vec![report]);
}

/// Runs a session whose Artisan first replies `first`, then `FIXED`, over a failure with
/// `message`: that first reply must go back to the Artisan, its second prompt saying each of
/// `said`, and never reach the Critic (`unreviewed` says why).
async fn sent_back_unreviewed(
    first: String,
    message: &str,
    said: &[&str],
    unreviewed: &str,
) -> Report {
    let log = Log::default();
    let artisan = move |n| match n {
        0 => first.clone(),
        _ => code_reply(FIXED),
    };
    let session = Session::new(
        settings(),
        team_of(&log, artisan, approve),
        fails_then_passes(message),
    );
    let report = session.run().await;

    assert_eq!(report.status, Status::Success, "{}", report.reason);
    let artisan = requests(&log, Role::Artisan);
    assert_eq!(artisan.len(), 2);
    let second = user_prompt(&artisan[1]);
    for text in said {
        assert!(second.contains(text), "{second}");
    }
    assert_eq!(requests(&log, Role::Critic).len(), 1, "{unreviewed}");
    assert_eq!(session.file(), FIXED);
    report
}

#[actix_rt::test]
async fn an_artisan_reply_without_code_is_asked_again() {
    sent_back_unreviewed(
        "I would sort the list first.".into(),
        "AssertionError: 3 != 2.5",
        &["no fenced code block"],
        "only the proposal with code is reviewed",
    )
    .await;
}

#[actix_rt::test]
async fn a_proposal_that_skips_a_test_is_sent_back_and_never_written() {
    let report = sent_back_unreviewed(
        code_reply(&format!("import pytest\n\n@pytest.mark.skip\n{FIXED}")),
        "AssertionError",
        &["test-integrity check", "@pytest.mark.skip"],
        "the Critic never saw the skip",
    )
    .await;
    assert_eq!(report.test_integrity_rejections, 1);
    assert_eq!(report.critic_rejections, 0);
}

#[actix_rt::test]
async fn allow_test_edits_lets_a_skip_through() {
    let log = Log::default();
    let skipped = format!("import pytest\n\n@pytest.mark.skip\n{FIXED}");
    let answer = skipped.clone();
    let llm = team_of(&log, move |_| code_reply(&answer), approve);
    let mut s = settings();
    s.allow_test_edits = true;
    let session = Session::new(s, llm, fails_then_passes("AssertionError"));
    let report = session.run().await;
    assert_eq!(report.status, Status::Success, "{}", report.reason);
    assert_eq!(report.test_integrity_rejections, 0);
    assert_eq!(session.file(), skipped);
}

#[actix_rt::test]
async fn a_test_that_passes_on_the_retry_is_flaky_and_not_counted_as_stuck() {
    let log = Log::default();
    let mut s = settings();
    s.flaky_retries = 1;
    // Baseline: fails twice (a real failure); iteration 1: fails, then passes on the re-run.
    let runs = vec![
        failing("AssertionError: 3 != 2.5"),
        failing("AssertionError: 3 != 2.5"),
        failing("ConnectionResetError"),
        passing(),
    ];
    let session = Session::new(s, team(&log), runner(runs));
    let report = session.run().await;

    assert_eq!(report.status, Status::Success, "{}", report.reason);
    assert_eq!(report.iterations, 1);
    let after = report.tests_after.as_ref().expect("tests after");
    assert_eq!(after.flaky, 1);
    assert!(
        report
            .warnings
            .iter()
            .any(|w| w.contains("flaky test") && w.contains(FAILING_ID)),
        "{:?}",
        report.warnings
    );
    let saved = session.store.saved();
    let (_, last) = saved.results.last().expect("results");
    assert_eq!(last.retries, 1);
    let flaky = last
        .tests
        .iter()
        .find(|t| t.id == FAILING_ID)
        .expect("the flaky test");
    assert_eq!(flaky.category, Some(Category::Flaky));
    let (_, baseline) = &saved.results[0];
    assert_eq!(
        baseline.retries, 1,
        "the baseline's real failure was re-run once"
    );
    assert!(baseline.tests[0].fingerprint.is_some());
}

#[actix_rt::test]
async fn passing_tests_below_the_coverage_threshold_keep_the_run_going() {
    let log = Log::default();
    let mut s = settings();
    s.coverage_threshold = Some(80.0);
    let covered = |pct: f64| {
        let mut run = passing();
        run.coverage = Some(Coverage {
            tool: "coverage.py".into(),
            lines_pct: pct,
            branches_pct: None,
            functions_pct: None,
            target: None,
        });
        run
    };
    let runs = vec![failing("AssertionError"), covered(50.0), covered(90.0)];
    let session = Session::new(s, team(&log), runner(runs));
    let report = session.run().await;

    assert_eq!(report.status, Status::Success, "{}", report.reason);
    assert_eq!(report.iterations, 2);
    assert_reason(&report, "every success criterion is met");
    let artisan = requests(&log, Role::Artisan);
    let second = user_prompt(&artisan[1]);
    assert!(
        second.contains("coverage_threshold: line coverage 50.0% < 80% (coverage.py)"),
        "{second}"
    );
    let saved = session.store.saved();
    let (_, first) = &saved.results[1];
    assert!(first.passed() && !first.criteria_met());
    assert_eq!(
        report.tests_after.as_ref().map(|t| t.coverage_pct),
        Some(Some(90.0))
    );
}

/// The Critic rejects the first proposal, so the Artisan revises with its history.
fn reject_once(log: &Log) -> MockLlmClient {
    team_of(log, fixed, rejects_first("- handle even lengths"))
}

#[actix_rt::test]
async fn a_prompt_past_40_percent_of_the_window_drops_the_history() {
    // Within the limit: the revision carries the first exchange.
    let log = Log::default();
    let mut s = settings();
    // The Artisan keeps its conversation (for 3 iterations) unless told to drop it.
    s.context_reset_frequency = 3;
    s.context_windows = BTreeMap::from([(Role::Artisan, 10_000), (Role::Critic, 10_000)]);
    let runs = vec![failing("AssertionError"), passing()];
    let report = Session::new(s.clone(), reject_once(&log), runner(runs.clone()))
        .run()
        .await;
    assert_eq!(report.status, Status::Success, "{}", report.reason);
    let artisan = requests(&log, Role::Artisan);
    assert_eq!(artisan[1].messages.len(), 4, "history kept under the limit");
    assert_eq!(report.context_use.get("artisan"), Some(&0.15));
    assert_eq!(report.context_resets, 0);

    // The Artisan's 1,500-token prompt is half of a 3,000-token window: warned, and its next
    // call starts afresh although context_reset_frequency would keep the history.
    let log = Log::default();
    s.context_windows.insert(Role::Artisan, 3_000);
    let report = Session::new(s, reject_once(&log), runner(runs)).run().await;
    assert_eq!(report.status, Status::Success, "{}", report.reason);
    let artisan = requests(&log, Role::Artisan);
    assert_eq!(
        artisan[1].messages.len(),
        2,
        "history dropped: {:?}",
        artisan[1].messages
    );
    assert_eq!(report.context_use.get("artisan"), Some(&0.5));
    // Both of the Artisan's prompts were over the limit: each dropped the history it left.
    assert_eq!(report.context_resets, 2);
    assert_says(&report.warnings, "artisan's prompt used over 40%");
}

#[actix_rt::test]
async fn the_vault_shows_past_fixes_to_the_artisan_and_records_every_attempt() {
    let log = Log::default();
    let vault = Arc::new(MemVault::default());
    vault.0.lock().unwrap().push(FixAttempt {
        id: "earlier".into(),
        project_id: "project".into(),
        signature: "LOGIC test_even: AssertionError: 3 != 2.5".into(),
        category: Some(Category::Logic),
        test_ids: vec![FAILING_ID.into()],
        hypothesis: "Average the two middle values of the sorted list.".into(),
        diff: "+    s = sorted(xs)\n".into(),
        success: true,
        timestamp_ms: 1_700_000_000_000,
        tokens: 10,
        cost_usd: 0.001,
        model: MODEL.into(),
        language: "python".into(),
    });
    let runs = vec![
        failing("AssertionError: 3 != 2.5"),
        failing("AssertionError: 2 != 2.5"),
        passing(),
    ];
    let mut session = Session::new(settings(), team(&log), runner(runs));
    session.vault = Some(vault.clone());
    let report = session.run().await;
    assert_eq!(report.status, Status::Success, "{}", report.reason);
    assert_eq!(report.memory.status, MemoryStatus::On);
    assert_eq!(report.memory.embedder.as_deref(), Some("unit/1"));
    assert_eq!(report.memory.recorded, 2);
    // Iteration 1 recalls the earlier fix; iteration 2 also iteration 1's attempt.
    assert_eq!((report.memory.recalls, report.memory.recalled), (2, 3));

    let artisan = requests(&log, Role::Artisan);
    let first = user_prompt(&artisan[0]);
    assert!(
        first.contains(
            "## WORKED (similarity 1.00; 1 of 1 attempt at this failure worked; 2023-11-14)"
        ),
        "{first}"
    );
    assert!(
        first.contains("What was tried: Average the two middle values"),
        "{first}"
    );
    assert!(first.contains("+    s = sorted(xs)"), "{first}");

    let stored = vault.0.lock().unwrap().clone();
    assert_eq!(stored.len(), 3);
    let (one, two) = (&stored[1], &stored[2]);
    assert!(!one.success && two.success);
    assert!(one.signature.contains("3 != 2.5"), "{}", one.signature);
    assert!(two.signature.contains("2 != 2.5"), "{}", two.signature);
    assert_eq!(one.test_ids, [FAILING_ID]);
    assert_eq!(one.project_id, "project");
    assert_eq!(one.model, MODEL);
    assert_eq!(one.language, "python");
    assert!(
        one.diff
            .starts_with("--- a/src/stats.py\n+++ b/src/stats.py\n"),
        "{}",
        one.diff
    );
    assert!(one.diff.contains("+    s = sorted(xs)"), "{}", one.diff);
    assert!(!one.hypothesis.contains("```"), "{}", one.hypothesis);
    assert!(one.tokens > 0 && one.cost_usd > 0.0);
}

#[actix_rt::test]
async fn a_vault_that_fails_mid_run_is_dropped_and_the_run_goes_on() {
    let log = Log::default();
    let mut store = MockVectorStore::new();
    store
        .expect_nearest()
        .times(1)
        .returning(|_, _, _| Err(MemoryError::store("disk I/O error")));
    store.expect_insert().never();
    let runs = vec![failing("AssertionError: 3 != 2.5"), passing()];
    let mut session = Session::new(settings(), team(&log), runner(runs));
    session.vault = Some(Arc::new(store));
    let report = session.run().await;
    assert_eq!(report.status, Status::Success, "{}", report.reason);
    assert_eq!(report.memory.status, MemoryStatus::Failed);
    assert_eq!(report.memory.reason.as_deref(), Some("disk I/O error"));
    assert_eq!(report.memory.recorded, 0);
    assert_says(
        &report.warnings,
        "the memory vault stopped working (disk I/O error)",
    );
}

#[actix_rt::test]
async fn without_memory_the_report_says_off() {
    let log = Log::default();
    let runs = vec![failing("AssertionError: 3 != 2.5"), passing()];
    let session = Session::new(settings(), team(&log), runner(runs));
    let report = session.run().await;
    assert_eq!(report.memory.status, MemoryStatus::Off);
    assert!(!user_prompt(&requests(&log, Role::Artisan)[0]).contains("Fixes tried before"));
}

/// A failed run of `failed` tests, each its own id, the same message.
fn failing_tests(failed: u32) -> TestRun {
    let mut run = failing("AssertionError: wrong median");
    run.totals.failed = failed;
    run.totals.passed = 5 - failed.min(5);
    run.tests = (0..failed)
        .map(|i| crate::schema::test_run::TestCase {
            id: format!("tests/test_stats.py::test_{i}"),
            status: CaseStatus::Fail,
            message: Some("AssertionError: wrong median".into()),
            ..Default::default()
        })
        .collect();
    run
}

/// Iteration 1 halves the failures; iterations 2 and 3 make things worse and are undone, the
/// Artisan told why; the run ends at its limit with iteration 1's version in the file.
#[actix_rt::test]
async fn a_proposal_that_does_worse_is_undone_and_the_best_state_is_left() {
    const BETTER: &str = "def median(xs):\n    return sorted(xs)[len(xs) // 2]\n";
    const WORSE: &str = "def median(xs):\n    return 0\n";
    const WORST: &str = "def median(xs):\n    return None\n";
    let log = Log::default();
    let artisan = |n: usize| code_reply([BETTER, WORSE, WORST][n.min(2)]);
    let llm = team_of(&log, artisan, approve);
    let mut s = settings();
    s.max_iterations = 3;
    let session = Session::new(
        s,
        llm,
        runner(vec![
            failing_tests(2),
            failing_tests(1),
            failing_tests(3),
            failing_tests(4),
        ]),
    );
    let report = session.run().await;
    assert_eq!(report.status, Status::MaxIterations, "{}", report.reason);
    assert_eq!(session.file(), BETTER, "the best state is left");
    assert_eq!(report.reverts, 2);
    let left = report.file_left.clone().expect("file_left");
    assert_eq!((left.policy, left.iteration), (OnFailure::Best, Some(1)));
    assert_eq!(left.tests.map(|t| t.failed), Some(1));
    let saved = session.store.saved();
    let kept: Vec<u32> = saved.checkpoints.keys().copied().collect();
    assert_eq!(kept, [0, 1, 2, 3], "every written proposal is a checkpoint");
    assert_eq!(saved.checkpoints[&2], WORSE);
    drop(saved);
    let artisan = requests(&log, Role::Artisan);
    let third = user_prompt(&artisan[2]);
    assert!(third.contains("# Your last change was undone"), "{third}");
    assert!(
        third.contains("iteration 2 made things worse (3 tests failed where 1 failed before it)"),
        "{third}"
    );
    assert!(third.contains("back to iteration 1's version"), "{third}");
    assert!(
        third.contains(BETTER),
        "the Artisan works from the best version again: {third}"
    );
    assert_says(&report.notes, "iteration 3: the proposal made things worse");
}

/// `on_failure: original` puts the file back as it was, whatever was reached.
#[actix_rt::test]
async fn on_failure_original_restores_the_original() {
    let log = Log::default();
    let mut s = settings();
    s.max_iterations = 1;
    s.on_failure = OnFailure::Original;
    let session = Session::new(
        s,
        team(&log),
        runner(vec![failing_tests(2), failing_tests(1)]),
    );
    let report = session.run().await;
    assert_eq!(report.status, Status::MaxIterations);
    assert_eq!(session.file(), TARGET);
    let left = report.file_left.expect("file_left");
    assert_eq!(
        (left.policy, left.iteration),
        (OnFailure::Original, Some(0))
    );
    assert_eq!(left.tests.map(|t| t.failed), Some(2));
}

/// Runs `runs` failures of the same test with the breaker at 2 and `max_iterations`, `user`
/// answering at the breaker: the report and the team's requests.
async fn asked_at_the_breaker(max_iterations: u32, runs: usize, user: MockUser) -> (Report, Log) {
    let log = Log::default();
    let mut s = settings();
    s.entropy_threshold = 2;
    s.max_iterations = max_iterations;
    let mut session = Session::new(s, team(&log), runner(vec![failing("AssertionError"); runs]));
    session.user = Some(Arc::new(user));
    (session.run().await, log)
}

/// FR-019: at the breaker, a person at the terminal is asked. Going on with guidance starts
/// the failure's count over and shows the Artisan the user's words; stopping ends the run
/// `entropy_detected` as before.
#[actix_rt::test]
async fn the_breaker_asks_and_the_user_s_guidance_reaches_the_artisan() {
    let mut user = MockUser::new();
    let mut answers = vec![
        BreakerChoice::Continue {
            guidance: Some("sort the list before picking the middle".into()),
        },
        BreakerChoice::Stop,
    ]
    .into_iter();
    user.expect_on_entropy().times(2).returning(move |stuck| {
        assert_eq!((stuck.seen, stuck.threshold), (2, 2));
        Ok(answers.next().expect("asked twice"))
    });
    let (report, log) = asked_at_the_breaker(10, 5, user).await;
    assert_eq!(report.status, Status::EntropyDetected, "{}", report.reason);
    assert_eq!(report.iterations, 4, "two more iterations after going on");
    let artisan = requests(&log, Role::Artisan);
    assert!(!user_prompt(&artisan[1]).contains("The user's guidance"));
    let third = user_prompt(&artisan[2]);
    assert!(third.contains("# The user's guidance"), "{third}");
    assert!(
        third.contains("> sort the list before picking the middle"),
        "{third}"
    );
    assert_says(
        &report.notes,
        "the user chose to go on, with guidance for the Artisan",
    );
}

/// Raising the threshold lets the same failure end more iterations before the next question.
#[actix_rt::test]
async fn the_user_may_raise_the_breaker_s_threshold() {
    let mut user = MockUser::new();
    user.expect_on_entropy()
        .times(1)
        .returning(|_| Ok(BreakerChoice::RaiseThreshold(4)));
    let (report, _) = asked_at_the_breaker(3, 4, user).await;
    assert_eq!(report.status, Status::MaxIterations, "{}", report.reason);
    assert_says(&report.notes, "raised the breaker's threshold to 4");
}
