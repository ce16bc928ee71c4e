//! Chaos's rounds over mocks: a finding kept by the Critic goes to the Artisan and is re-run
//! on the next fix; a test the Critic drops is not a finding; a file that cannot run is
//! repaired; a fix that leaves more findings failing is undone; the rounds end the run when
//! spent; findings never trip the breaker.

use std::sync::{Arc, Mutex};

use super::session::*;
use super::*;
use crate::policy::adversarial::ChaosSettings;
use crate::ports::chaos::{ChaosLayout, MockChaosRunner};
use crate::schema::adversarial::FindingStatus;
use crate::schema::promise::CheckStatus;
use crate::schema::report::Status;

const FIXED2: &str = "def median(xs):\n    if not xs:\n        raise ValueError('empty')\n    s = sorted(xs)\n    n = len(s)\n    return (s[(n - 1) // 2] + s[n // 2]) / 2\n";
const FIXED3: &str = "def median(xs):\n    return sorted(xs)[len(xs) // 2] if len(xs) % 2 else 0\n";
const FIXED4: &str = "def median(xs):\n    if not xs:\n        raise ValueError('empty')\n    s = sorted(xs)\n    n = len(s)\n    return (s[(n - 1) // 2] + s[n // 2]) / 2.0\n";
const SUITE: &str = "from stats import median\n\ndef test_empty():\n    median([])\n";

fn chaos_settings(max_rounds: u32) -> RunSettings {
    let mut s = settings();
    s.chaos = ChaosSettings {
        max_rounds,
        ..ChaosSettings::default()
    };
    s
}

/// A run of Chaos's file: each `(test, passed)`.
fn suite_run(tests: &[(&str, bool)]) -> TestRun {
    let failed = tests.iter().filter(|(_, ok)| !ok).count() as u32;
    TestRun {
        status: if failed == 0 {
            RunStatus::Passed
        } else {
            RunStatus::Failed
        },
        totals: Totals {
            passed: tests.len() as u32 - failed,
            failed,
            ..Totals::default()
        },
        tests: tests
            .iter()
            .map(|(id, ok)| TestCase {
                id: id.to_string(),
                status: if *ok {
                    CaseStatus::Pass
                } else {
                    CaseStatus::Fail
                },
                message: (!ok).then(|| format!("{id}: AssertionError")),
                category: (!ok).then_some(Category::Logic),
                ..TestCase::default()
            })
            .collect(),
        ..passing()
    }
}

/// A file that failed to import: no test ran.
fn broken_suite() -> TestRun {
    TestRun {
        status: RunStatus::Failed,
        exit_code: Some(2),
        totals: Totals::default(),
        tests: Vec::new(),
        output: "E   ModuleNotFoundError: No module named 'stat'\n".into(),
        ..passing()
    }
}

/// A Chaos runner whose first runs of each round's new file give `fresh` in turn, and whose
/// re-runs give `rerun(content of the target on disk)`.
fn chaos_runner(
    fresh: Vec<TestRun>,
    file: &Arc<Mutex<String>>,
    rerun: impl Fn(&str) -> TestRun + Send + Sync + 'static,
) -> MockChaosRunner {
    let mut mock = MockChaosRunner::new();
    mock.expect_layout().returning(|_| ChaosLayout {
        framework: "pytest".into(),
        language: "python".into(),
        file_name: "test_chaos_round_1.py".into(),
        import_hint: "from stats import median".into(),
        ..ChaosLayout::default()
    });
    mock.expect_path()
        .returning(|round| format!(".ralph/session-test/chaos/test_chaos_round_{round}.py"));
    let fresh = Mutex::new(fresh.into_iter());
    mock.expect_run()
        .returning(move |_, _, _| Ok(fresh.lock().unwrap().next().expect("a scripted run")));
    let file = file.clone();
    mock.expect_rerun()
        .returning(move |_, _| Ok(rerun(&file.lock().unwrap())));
    mock.expect_suite().returning(|_| Some(SUITE.to_string()));
    mock
}

/// The team of `team`, its Artisan replying `artisan(n)`, with Chaos answering `SUITE` and the
/// Critic judging by `judge(n)`.
fn chaos_team(
    log: &Log,
    artisan: impl Fn(usize) -> String + Send + 'static,
    judge: impl Fn(usize) -> String + Send + 'static,
) -> MockLlmClient {
    let judged = Arc::new(Mutex::new(0));
    llm(log, move |request, n| {
        let system = &request.messages[0].content;
        Ok(match request.role {
            Role::Librarian => reply(ANALYSIS, LIBRARIAN_USAGE),
            Role::Artisan => reply(&artisan(n), ARTISAN_USAGE),
            Role::Chaos => reply(
                &format!("Empty lists are not handled.\n```python\n{SUITE}```"),
                ARTISAN_USAGE,
            ),
            Role::Critic if system.contains("Chaos, the team's adversary") => {
                let mut k = judged.lock().unwrap();
                *k += 1;
                reply(&judge(*k - 1), CRITIC_USAGE)
            }
            _ => reply("Fine.\nVERDICT: APPROVE", CRITIC_USAGE),
        })
    })
}

/// Tests that pass as they are end the run at once: nothing changed, so Chaos and the gates had
/// no changed line to attack or measure, and the promise says so rather than `unmet`.
#[actix_rt::test]
async fn tests_passing_as_they_are_leave_chaos_and_the_gates_off_not_unmet() {
    let log = Log::default();
    let llm = chaos_team(&log, fixed, |_| "KEEP: chaos::test_empty".into());
    let mut settings = chaos_settings(2);
    settings.chaos.coverage_min = Some(90.0);
    settings.chaos.mutation_score_min = Some(80.0);
    let mut session = Session::new(settings, llm, runner(vec![passing()]));
    session.chaos = Some(Arc::new(chaos_runner(Vec::new(), &session.file, |_| {
        passing()
    })));
    let report = session.run().await;

    assert_eq!(report.status, Status::Success, "{}", report.reason);
    assert_eq!(report.iterations, 0);
    let status = |name: &str| {
        report
            .promise
            .check(name)
            .map(|c| (c.status, c.detail.as_str()))
    };
    assert_eq!(status("tests").map(|s| s.0), Some(CheckStatus::Met));
    for gate in ["adversarial", "coverage", "mutation"] {
        assert_eq!(
            status(gate),
            Some((
                CheckStatus::Off,
                "nothing changed: the tests passed as they were"
            )),
            "{gate}: {:?}",
            report.promise
        );
    }
}

#[actix_rt::test]
async fn a_kept_finding_goes_to_the_artisan_and_the_next_round_finds_nothing() {
    let log = Log::default();
    let llm = chaos_team(
        &log,
        |n| code_reply([FIXED, FIXED2][n.min(1)]),
        |_| "KEEP: chaos::test_empty".into(),
    );
    let mut session = Session::new(
        chaos_settings(3),
        llm,
        runner(vec![failing("AssertionError"), passing(), passing()]),
    );
    let fresh = vec![
        suite_run(&[("chaos::test_empty", false), ("chaos::test_one", true)]),
        suite_run(&[("chaos::test_nan", true)]),
    ];
    session.chaos = Some(Arc::new(chaos_runner(fresh, &session.file, |file| {
        suite_run(&[
            ("chaos::test_empty", file == FIXED2),
            ("chaos::test_one", true),
        ])
    })));
    let report = session.run().await;

    assert_eq!(report.status, Status::Success, "{}", report.reason);
    assert_eq!(report.iterations, 2);
    assert_reason(
        &report,
        "Chaos's adversarial tests pass too (1 finding fixed in 2 rounds)",
    );
    let adversarial = report.adversarial.expect("Chaos ran");
    assert_eq!(adversarial.rounds, 2);
    assert_eq!(adversarial.tests_generated, 3);
    assert_eq!(
        (adversarial.failures_found, adversarial.failures_fixed),
        (1, 1)
    );
    assert_eq!(adversarial.findings[0].status, FindingStatus::Fixed);
    assert_eq!(adversarial.suites.len(), 2);
    // The Artisan saw the finding and Chaos's file, apart from the unit tests' results.
    let artisan = requests(&log, Role::Artisan);
    let second = user_prompt(&artisan[1]);
    assert!(second.contains("# Adversarial tests that fail"), "{second}");
    assert!(second.contains("chaos::test_empty"), "{second}");
    assert!(second.contains("def test_empty():"), "{second}");
    // Round 2's Chaos knows what round 1 found.
    let chaos = requests(&log, Role::Chaos);
    assert!(user_prompt(&chaos[1])
        .contains("`chaos::test_empty` (round 1): found a failure, since fixed"));
    // Findings are not failures the breaker counts.
    let state = session.store.saved().states.last().cloned().expect("state");
    assert!(state.breaker.seen.len() <= 1, "{:?}", state.breaker);
    assert_eq!(session.file(), FIXED2);
    // Each run of a Chaos file is kept: round 1's first run, its re-run, round 2's run.
    let kept: Vec<(u32, u32)> = session
        .store
        .saved()
        .adversarial
        .iter()
        .map(|(n, r, _)| (*n, *r))
        .collect();
    assert_eq!(kept, vec![(1, 1), (2, 1), (2, 2)]);
}

#[actix_rt::test]
async fn a_test_the_critic_drops_is_no_finding() {
    let log = Log::default();
    let llm = chaos_team(&log, fixed, |_| {
        "DROP: chaos::test_strings: the contract is about numbers".into()
    });
    let mut settings = chaos_settings(3);
    settings.chaos.strategies = vec![crate::policy::adversarial::Strategy::Boundary];
    let mut session = Session::new(settings, llm, fails_then_passes("AssertionError"));
    let fresh = vec![suite_run(&[
        ("chaos::test_strings", false),
        ("chaos::test_one", true),
    ])];
    session.chaos = Some(Arc::new(chaos_runner(fresh, &session.file, |_| {
        unreachable!("nothing to re-run")
    })));
    let report = session.run().await;

    assert_eq!(report.status, Status::Success, "{}", report.reason);
    assert_eq!(report.iterations, 1);
    let adversarial = report.adversarial.expect("Chaos ran");
    assert_eq!(adversarial.rounds, 1);
    assert_eq!(adversarial.tests_rejected, 1);
    assert!(adversarial.findings.is_empty());
    assert_eq!(
        adversarial.rejected[0].reason,
        "the contract is about numbers"
    );
    // Chaos was asked for the strategies configured, and nothing else.
    let chaos = requests(&log, Role::Chaos);
    let prompt = user_prompt(&chaos[0]);
    assert!(prompt.contains("- Boundary values"), "{prompt}");
    assert!(!prompt.contains("- Properties"), "{prompt}");
    assert!(!prompt.contains("- Concurrency"), "{prompt}");
}

#[actix_rt::test]
async fn a_file_that_cannot_run_goes_back_to_chaos_for_repair() {
    let log = Log::default();
    let llm = chaos_team(&log, fixed, |_| String::new());
    let mut session = Session::new(chaos_settings(1), llm, fails_then_passes("AssertionError"));
    let fresh = vec![broken_suite(), suite_run(&[("chaos::test_one", true)])];
    session.chaos = Some(Arc::new(chaos_runner(fresh, &session.file, |_| {
        unreachable!("nothing to re-run")
    })));
    let report = session.run().await;

    assert_eq!(report.status, Status::Success, "{}", report.reason);
    let chaos = requests(&log, Role::Chaos);
    assert_eq!(chaos.len(), 2);
    let repair = user_prompt(&chaos[1]);
    assert!(
        repair.contains("# Your last test file could not run"),
        "{repair}"
    );
    assert!(repair.contains("No module named 'stat'"), "{repair}");
    let adversarial = report.adversarial.expect("Chaos ran");
    assert_eq!(adversarial.suites[0].repairs, 1);
}

#[actix_rt::test]
async fn spent_rounds_with_findings_open_stop_the_run() {
    let log = Log::default();
    let llm = chaos_team(&log, fixed, |_| "KEEP: chaos::test_empty".into());
    let mut session = Session::new(
        chaos_settings(1),
        llm,
        runner(vec![failing("AssertionError"), passing(), passing()]),
    );
    let fresh = vec![suite_run(&[("chaos::test_empty", false)])];
    session.chaos = Some(Arc::new(chaos_runner(fresh, &session.file, |_| {
        suite_run(&[("chaos::test_empty", false)])
    })));
    let report = session.run().await;

    assert_eq!(report.status, Status::MaxIterations, "{}", report.reason);
    assert_eq!(
        report.reason,
        "chaos.max_rounds (1) spent with 1 adversarial test still failing: chaos::test_empty"
    );
    let adversarial = report.adversarial.expect("Chaos ran");
    assert_eq!(adversarial.open().count(), 1);
    // Unit tests never failed after the baseline: the breaker saw one failure, the baseline's.
    assert_eq!(report.iterations, 2);
}

#[actix_rt::test]
async fn a_fix_that_leaves_more_findings_failing_is_undone() {
    let log = Log::default();
    let llm = chaos_team(
        &log,
        |n| code_reply([FIXED, FIXED2, FIXED3, FIXED4][n.min(3)]),
        |_| "KEEP: chaos::test_empty\nKEEP: chaos::test_even".into(),
    );
    let mut session = Session::new(
        chaos_settings(3),
        llm,
        runner(vec![
            failing("AssertionError"),
            passing(),
            passing(),
            passing(),
            passing(),
        ]),
    );
    let fresh = vec![suite_run(&[
        ("chaos::test_empty", false),
        ("chaos::test_even", false),
    ])];
    session.chaos = Some(Arc::new(chaos_runner(fresh, &session.file, |file| {
        let (empty, even) = match file {
            f if f == FIXED2 => (true, false),
            f if f == FIXED4 => (true, true),
            _ => (false, false),
        };
        suite_run(&[("chaos::test_empty", empty), ("chaos::test_even", even)])
    })));
    let report = session.run().await;

    assert_eq!(report.status, Status::Success, "{}", report.reason);
    assert_eq!(report.iterations, 4);
    assert_eq!(report.reverts, 1);
    let artisan = requests(&log, Role::Artisan);
    let fourth = user_prompt(&artisan[3]);
    assert!(
        fourth.contains("Your change in iteration 3 made things worse (it left 2 adversarial tests failing where 1 failed before)"),
        "{fourth}"
    );
    assert!(
        fourth.contains(FIXED2),
        "the file is back to iteration 2's: {fourth}"
    );
    assert_eq!(session.file(), FIXED4);
}

/// A session whose Chaos has `rounds` rounds to lift the mutation score to 90%; its Critic keeps
/// none of Chaos's failures.
fn mutation_gated(log: &Log, rounds: u32) -> Session {
    let llm = chaos_team(log, fixed, |_| "KEEP: none".into());
    let mut settings = chaos_settings(rounds);
    settings.chaos.mutation_score_min = Some(90.0);
    Session::new(settings, llm, fails_then_passes("AssertionError"))
}

/// `tool`'s run over `stats.py` that found `mutants`.
fn mutation_run(
    tool: &str,
    mutants: Vec<crate::schema::mutation::Mutant>,
) -> crate::schema::mutation::MutationRun {
    crate::schema::mutation::MutationRun {
        tool: tool.into(),
        file: "stats.py".into(),
        mutants,
        duration_ms: 5,
    }
}

/// `n` mutants on line 2, the first `survivors` of them surviving.
fn mutants(n: usize, survivors: usize) -> Vec<crate::schema::mutation::Mutant> {
    use crate::schema::mutation::{Mutant, MutantStatus};
    (0..n)
        .map(|i| Mutant {
            id: format!("m{i}"),
            mutator: "ArithmeticOperator".into(),
            line: 2,
            original: Some("    return a + b".into()),
            replacement: Some(format!("a - b #{i}")),
            status: if i < survivors {
                MutantStatus::Survived
            } else {
                MutantStatus::Killed
            },
        })
        .collect()
}

#[actix_rt::test]
async fn a_score_below_the_gate_spends_a_round_on_the_survivors_and_re_runs_only_them() {
    use crate::schema::mutation::MutantStatus;
    let log = Log::default();
    let mut session = mutation_gated(&log, 2);
    let fresh = vec![
        suite_run(&[("chaos::test_one", true)]),
        suite_run(&[("chaos::test_kills", true)]),
    ];
    let mut mock = chaos_runner(fresh, &session.file, |_| {
        suite_run(&[("chaos::test_one", true)])
    });
    let asked = Arc::new(Mutex::new(Vec::new()));
    let seen = asked.clone();
    mock.expect_mutate().returning(move |request, _| {
        seen.lock().unwrap().push(request.clone());
        let mutants = match request.only.is_empty() {
            true => mutants(10, 2),
            // Round 2's file kills both survivors.
            false => request
                .only
                .iter()
                .map(|m| crate::schema::mutation::Mutant {
                    status: MutantStatus::Killed,
                    ..m.clone()
                })
                .collect(),
        };
        Ok(mutation_run("mutmut", mutants))
    });
    session.chaos = Some(Arc::new(mock));
    let report = session.run().await;

    assert_eq!(report.status, Status::Success, "{}", report.reason);
    assert_reason(&report, "mutation score 100% (at least 90% asked)");
    let a = report.adversarial.expect("Chaos ran");
    assert_eq!(a.rounds, 2);
    assert_eq!(a.mutation_score, Some(100.0));
    assert!(a.surviving_mutants.is_empty());
    let m = a.mutation.expect("measured");
    assert_eq!((m.runs, m.scores.total, m.scores.killed), (2, 10, 10));
    // The first run mutated the changed lines; the second only the two survivors, with both
    // rounds' files.
    let asked = asked.lock().unwrap();
    assert_eq!(asked.len(), 2);
    assert!(asked[0].only.is_empty() && !asked[0].lines.is_empty());
    let ids: Vec<&str> = asked[1].only.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids, ["m0", "m1"]);
    assert_eq!(asked[1].rounds, [1, 2]);
    // Round 2's Chaos was shown the survivors.
    let chaos = requests(&log, Role::Chaos);
    let second = user_prompt(&chaos[1]);
    assert!(
        second.contains("# Mutants your tests must kill"),
        "{second}"
    );
    assert!(second.contains("`m1`, line 2"), "{second}");
    assert_eq!(session.store.saved().mutation_reports.len(), 2);
}

#[actix_rt::test]
async fn rounds_spent_below_the_gate_stop_the_run_with_the_survivors() {
    let log = Log::default();
    let mut session = mutation_gated(&log, 1);
    let mut mock = chaos_runner(
        vec![suite_run(&[("chaos::test_one", true)])],
        &session.file,
        |_| suite_run(&[("chaos::test_one", true)]),
    );
    mock.expect_mutate()
        .returning(|_, _| Ok(mutation_run("stryker", mutants(4, 2))));
    session.chaos = Some(Arc::new(mock));
    let report = session.run().await;
    assert_eq!(report.status, Status::MaxIterations, "{}", report.reason);
    assert_reason(&report, "mutation score at 50%");
    assert_reason(&report, "m0 (line 2");
    let a = report.adversarial.expect("Chaos ran");
    assert_eq!(a.surviving_mutants.len(), 2);
}

/// Chaos on, the Critic's review beside the tests; the Critic's reviews answer `verdict`.
fn reviewed_beside_chaos(
    log: &Log,
    order: &super::beside::Order,
    delay: fn(Role) -> std::time::Duration,
    verdict: &'static str,
) -> Session {
    let mut s = chaos_settings(3);
    s.critic_mode = crate::settings::CriticMode::Parallel;
    let llm = super::beside::Timed::new(log, order, delay, move |request, _| match request.role {
        Role::Librarian => reply(ANALYSIS, LIBRARIAN_USAGE),
        Role::Artisan => reply(&code_reply(FIXED), ARTISAN_USAGE),
        Role::Chaos => reply(
            &format!("Nothing breaks.\n```python\n{SUITE}```"),
            ARTISAN_USAGE,
        ),
        _ => reply(verdict, CRITIC_USAGE),
    });
    let mut session = Session::new(s, llm, fails_then_passes("AssertionError"));
    let quiet = vec![suite_run(&[("chaos::test_one", true)])];
    session.chaos = Some(Arc::new(chaos_runner(quiet, &session.file, |_| passing())));
    session
}

/// A review slower than the tests, Chaos's call slower than the review.
fn review_then_chaos(role: Role) -> std::time::Duration {
    std::time::Duration::from_millis(match role {
        Role::Critic => 150,
        Role::Chaos => 400,
        _ => 10,
    })
}

#[actix_rt::test]
async fn the_passing_fix_s_review_runs_beside_chaos_s_round() {
    use super::beside::at;
    use crate::schema::report::{FixReview, FixVerdict};
    let (log, order) = (Log::default(), super::beside::Order::default());
    let session = reviewed_beside_chaos(&log, &order, review_then_chaos, "VERDICT: APPROVE");
    let report = session.run().await;
    assert_eq!(report.status, Status::Success, "{}", report.reason);
    // Chaos's call started before the review of the fix it attacks had ended.
    assert!(at(&order, Role::Chaos, true, 0) < at(&order, Role::Critic, false, 0));
    assert_eq!(
        report.fix_review,
        Some(FixReview {
            iteration: 1,
            verdict: FixVerdict::Approved
        })
    );
    let saved = session.store.saved();
    assert!(saved.iterations[0].review_pending, "{:?}", saved.iterations);
    assert!(report.notes.is_empty(), "{:?}", report.notes);
}

#[actix_rt::test]
async fn a_rejection_of_the_passing_fix_beside_chaos_is_a_note_and_in_the_report() {
    use crate::schema::report::FixVerdict;
    let (log, order) = (Log::default(), super::beside::Order::default());
    let session = reviewed_beside_chaos(
        &log,
        &order,
        review_then_chaos,
        "VERDICT: REJECT\n- an empty list must raise",
    );
    let report = session.run().await;
    assert_eq!(report.status, Status::Success, "{}", report.reason);
    assert_eq!(
        report.fix_review.map(|r| r.verdict),
        Some(FixVerdict::Rejected)
    );
    assert_says(&report.notes, "iteration 1: the Critic rejected the passing fix (kept as a note; critic.mode: gate sends it back): - an empty list must raise");
}

#[actix_rt::test]
async fn a_run_stopped_before_the_fix_s_review_came_in_says_it_is_not_reviewed() {
    use crate::schema::report::FixVerdict;
    let (log, order) = (Log::default(), super::beside::Order::default());
    let slow = |role| {
        std::time::Duration::from_millis(match role {
            Role::Critic | Role::Chaos => 30_000,
            _ => 10,
        })
    };
    let session = reviewed_beside_chaos(&log, &order, slow, "VERDICT: APPROVE");
    // Once Chaos's call is under way, the user stops the run.
    let chaos_called = async {
        while !order.lock().unwrap().contains(&(Role::Chaos, true)) {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    };
    let report = session.run_interrupted(chaos_called).await;
    assert_eq!(report.status, Status::Interrupted, "{}", report.reason);
    assert_eq!(
        report.fix_review.map(|r| r.verdict),
        Some(FixVerdict::Unreviewed)
    );
    assert_says(&report.notes, "iteration 1: the Critic's review of the passing fix had not come in when the run ended: the fix is not reviewed");
}
