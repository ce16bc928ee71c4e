//! Flaky tests: a failed run is run again (`testing.flaky_retries`), and a test whose outcome
//! changes between the runs is FLAKY. A FLAKY test counts as passed (with `totals.flaky` telling
//! how many), takes no part in the entropy fingerprint, and a run whose only failures were flaky
//! passes.

use std::collections::HashMap;

use crate::schema::test_run::{CaseStatus, Category, RunStatus, TestCase, TestRun};

/// Whether a failed run is worth running again to look for flaky tests: it failed on tests the
/// tool named. A run that timed out, ran out of memory or failed before naming a test (a syntax
/// error, a missing module) fails the same way again.
pub fn worth_retrying(run: &TestRun) -> bool {
    run.status == RunStatus::Failed && run.failures().next().is_some()
}

/// Folds a re-run (`again`) into the run it repeats (`first`).
///
/// A test that failed in one run and passed in the other is FLAKY. When `again` passed outright,
/// every failure of `first` was flaky and `again` (with its coverage and lint) is the result;
/// otherwise `first` is, with its flaky tests marked passed.
pub fn merge_retry(first: TestRun, again: TestRun) -> TestRun {
    let retries = first.retries + 1;
    let (mut base, other) = if again.passed() {
        (again, first)
    } else {
        (first, again)
    };
    let outcome: HashMap<&str, CaseStatus> = other
        .tests
        .iter()
        .map(|t| (t.id.as_str(), t.status))
        .collect();
    let failed = |s: CaseStatus| matches!(s, CaseStatus::Fail | CaseStatus::Timeout);
    if base.passed() {
        // Every failure of the first run passed this time, whether or not this run's output
        // lists passing tests (text output often names failures only).
        for case in other.failures() {
            if !base.tests.iter().any(|t| t.id == case.id) {
                base.tests.push(TestCase {
                    status: CaseStatus::Pass,
                    category: Some(Category::Flaky),
                    fingerprint: None,
                    ..case.clone()
                });
            }
        }
    }
    let mut flaky = Vec::new();
    for case in base.tests.iter_mut() {
        let Some(&theirs) = outcome.get(case.id.as_str()) else {
            continue;
        };
        if failed(case.status) != failed(theirs)
            && (case.status == CaseStatus::Pass || theirs == CaseStatus::Pass)
        {
            if failed(case.status) {
                flaky.push(case.status);
                case.status = CaseStatus::Pass;
            }
            case.category = Some(Category::Flaky);
            case.fingerprint = None;
            if case.message.is_none() {
                case.message = other
                    .tests
                    .iter()
                    .find(|t| t.id == case.id)
                    .and_then(|t| t.message.clone());
            }
        }
    }
    // Tests that failed in `other` but are missing from `base` (a text report lists failures
    // only) and passed there cannot be told apart from tests `base` never ran; only ids both
    // runs name are judged.
    for status in &flaky {
        match status {
            CaseStatus::Timeout => base.totals.timed_out = base.totals.timed_out.saturating_sub(1),
            _ => base.totals.failed = base.totals.failed.saturating_sub(1),
        }
        base.totals.passed += 1;
    }
    base.totals.flaky = u32::try_from(base.flaky_ids().len()).unwrap_or(u32::MAX);
    if base.status == RunStatus::Failed && base.failures().next().is_none() && base.totals.flaky > 0
    {
        // Every failure was flaky: the tests pass.
        base.status = RunStatus::Passed;
        base.category = None;
    } else if base.totals.flaky > 0 && base.category == Some(Category::Flaky) {
        base.category = None;
    }
    base.retries = retries;
    let flaky = base.flaky_ids();
    let note = (!flaky.is_empty()).then(|| {
        format!(
            "[ralph-loop] flaky (outcome changed on re-run {retries}): {}\n",
            flaky.join(", ")
        )
    });
    if let Some(note) = note {
        if !base.output.is_empty() && !base.output.ends_with('\n') {
            base.output.push('\n');
        }
        base.output.push_str(&note);
    }
    base
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::test_run::{ResultSource, Totals};

    fn case(id: &str, status: CaseStatus) -> TestCase {
        TestCase {
            id: id.into(),
            status,
            message: (status == CaseStatus::Fail).then(|| format!("{id} failed")),
            category: (status == CaseStatus::Fail).then_some(Category::Logic),
            ..TestCase::default()
        }
    }

    fn run(cases: &[(&str, CaseStatus)]) -> TestRun {
        let tests: Vec<TestCase> = cases.iter().map(|(i, s)| case(i, *s)).collect();
        let failed = tests
            .iter()
            .filter(|t| t.status == CaseStatus::Fail)
            .count() as u32;
        let passed = tests.len() as u32 - failed;
        let status = if failed > 0 {
            RunStatus::Failed
        } else {
            RunStatus::Passed
        };
        TestRun {
            source: ResultSource::Report,
            exit_code: Some(i32::from(failed > 0)),
            category: (failed > 0).then_some(Category::Logic),
            totals: Totals {
                passed,
                failed,
                ..Totals::default()
            },
            tests,
            ..TestRun::new("t", status)
        }
    }

    use CaseStatus::{Fail, Pass};

    #[test]
    fn a_test_that_passes_on_the_rerun_is_flaky_and_the_run_passes() {
        let first = run(&[("a", Pass), ("b", Fail)]);
        let again = run(&[("a", Pass), ("b", Pass)]);
        let merged = merge_retry(first, again);
        assert!(merged.passed());
        assert_eq!(merged.retries, 1);
        assert_eq!(
            (
                merged.totals.passed,
                merged.totals.failed,
                merged.totals.flaky
            ),
            (2, 0, 1)
        );
        let b = merged.tests.iter().find(|t| t.id == "b").unwrap();
        assert_eq!((b.status, b.category), (Pass, Some(Category::Flaky)));
        assert_eq!(
            b.message.as_deref(),
            Some("b failed"),
            "keeps what it failed with"
        );
        assert!(merged
            .output
            .contains("flaky (outcome changed on re-run 1): b"));
    }

    #[test]
    fn a_test_that_fails_twice_still_fails_and_others_can_be_flaky() {
        let first = run(&[("a", Fail), ("b", Fail), ("c", Pass)]);
        let again = run(&[("a", Fail), ("b", Pass), ("c", Fail)]);
        let merged = merge_retry(first, again);
        assert!(!merged.passed());
        assert_eq!(merged.failing_ids(), vec!["a"]);
        let flaky = merged.flaky_ids();
        assert_eq!(flaky, vec!["b", "c"]);
        assert_eq!((merged.totals.failed, merged.totals.flaky), (1, 2));
        assert_eq!(merged.category, Some(Category::Logic));
    }

    #[test]
    fn a_passing_rerun_that_lists_no_tests_still_marks_the_first_failures_flaky() {
        let first = run(&[("a", Pass), ("b", Fail)]);
        let mut again = run(&[]);
        again.totals.passed = 2;
        let merged = merge_retry(first, again);
        assert!(merged.passed());
        assert_eq!((merged.totals.passed, merged.totals.flaky), (2, 1));
        assert_eq!(merged.tests[0].id, "b");
        assert_eq!(merged.tests[0].category, Some(Category::Flaky));
    }

    #[test]
    fn only_runs_that_named_failing_tests_are_retried() {
        assert!(worth_retrying(&run(&[("a", Fail)])));
        assert!(!worth_retrying(&run(&[("a", Pass)])));
        let mut syntax = TestRun::new("t", RunStatus::Failed);
        syntax.category = Some(Category::Syntax);
        assert!(!worth_retrying(&syntax));
        let mut timeout = run(&[("a", Fail)]);
        timeout.status = RunStatus::Timeout;
        assert!(!worth_retrying(&timeout));
    }
}
