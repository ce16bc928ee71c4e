//! What to try next, derived from how the run ended and its last test run: the report's
//! `next_steps`.

use crate::schema::report::Status;
use crate::schema::test_run::{Category, TestRun};
use crate::settings::RunSettings;

/// What the next steps are made from.
pub(super) struct Ending<'a> {
    pub status: Status,
    pub reason: &'a str,
    pub session_id: &'a str,
    pub iterations: u32,
    pub spent: f64,
    pub last: Option<&'a TestRun>,
    pub stuck_on: Option<&'a str>,
    pub settings: &'a RunSettings,
}

/// The steps a user can take next, most useful first.
pub(super) fn next_steps(e: &Ending<'_>) -> Vec<String> {
    let id = short(e.session_id);
    let s = e.settings;
    let mut steps = Vec::new();
    match e.status {
        Status::Success => {}
        Status::MaxIterations => steps.push(format!(
            "give it more iterations: `ralph-loop resume {id} -m {}`",
            e.iterations + s.max_iterations.clamp(5, 30)
        )),
        Status::BudgetExceeded if e.reason.starts_with("time limit") => steps.push(format!(
            "give it more time: `ralph-loop resume {id} --max-duration MINUTES` (the time it ran counts)"
        )),
        Status::BudgetExceeded => steps.push(format!(
            "raise the budget: `ralph-loop resume {id} --budget {:.2}` (the ${:.4} spent still counts)",
            (s.max_cost_usd * 2.0).max(e.spent + 0.5),
            e.spent
        )),
        Status::EntropyDetected => {
            let stuck = e.stuck_on.unwrap_or("the same failure");
            steps.push(format!(
                "the same failure ended {} iterations ({stuck}): say what to try, \
                 `ralph-loop resume {id} --guidance \"...\"`, or allow more repeats with \
                 `circuit_breaker.entropy_threshold`",
                s.entropy_threshold
            ));
        }
        Status::Interrupted => steps.push(format!("continue: `ralph-loop resume {id}`")),
        Status::Error => steps.push(format!(
            "fix what stopped the run ({}), then run it again",
            first_line(e.reason)
        )),
    }
    let Some(run) = e.last else {
        return steps;
    };
    if e.status != Status::Success {
        let failing: Vec<&str> = run.failures().map(|t| t.id.as_str()).collect();
        match (failing.len(), run.category) {
            (0, _) if run.passed() => {}
            (_, Some(c @ (Category::Syntax | Category::Environment))) => steps.push(format!(
                "the last run has a {c} failure: {}",
                crate::policy::entropy::headline(run)
            )),
            (0, _) => steps.push(format!(
                "the last run failed without naming a test: {}",
                crate::policy::entropy::headline(run)
            )),
            (n, _) => steps.push(format!(
                "{n} test{} still fail{}: {}{}",
                if n == 1 { "" } else { "s" },
                if n == 1 { "s" } else { "" },
                failing
                    .iter()
                    .take(3)
                    .copied()
                    .collect::<Vec<_>>()
                    .join(", "),
                if n > 3 { ", ..." } else { "" }
            )),
        }
    }
    if let Some(unmet) = run.passed().then(|| run.unmet_criteria()).flatten() {
        steps.push(format!(
            "the tests pass but a success criterion is unmet: {unmet}"
        ));
    }
    let flaky = run.flaky_ids();
    if !flaky.is_empty() {
        steps.push(format!(
            "flaky (failed, then passed on a re-run): {}; make {} deterministic",
            flaky.join(", "),
            if flaky.len() == 1 { "it" } else { "them" }
        ));
    }
    steps
}

/// A session id as short as `resume` accepts (a unique prefix): its first 8 characters.
fn short(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::test_run::{CaseStatus, RunStatus, TestCase, Totals};

    fn ending<'a>(status: Status, reason: &'a str, settings: &'a RunSettings) -> Ending<'a> {
        Ending {
            status,
            reason,
            session_id: "0123456789abcdef",
            iterations: 30,
            spent: 0.42,
            last: None,
            stuck_on: Some("AssertionError: 3 != 2"),
            settings,
        }
    }

    #[test]
    fn each_ending_says_how_to_go_on() {
        let s = RunSettings::with_model("openai/gpt-4.1");
        let cases = [
            (
                Status::MaxIterations,
                "",
                "`ralph-loop resume 01234567 -m 60`",
            ),
            (
                Status::BudgetExceeded,
                "cost limit reached",
                "`ralph-loop resume 01234567 --budget 4.00`",
            ),
            (
                Status::BudgetExceeded,
                "time limit reached: 5 minutes",
                "--max-duration MINUTES",
            ),
            (
                Status::EntropyDetected,
                "",
                "(AssertionError: 3 != 2): say what to try, `ralph-loop resume 01234567 --guidance",
            ),
            (
                Status::Interrupted,
                "",
                "continue: `ralph-loop resume 01234567`",
            ),
            (
                Status::Error,
                "openai: authentication failed\nmore",
                "fix what stopped the run (openai: authentication failed)",
            ),
        ];
        for (status, reason, expected) in cases {
            let steps = next_steps(&ending(status, reason, &s));
            assert!(steps[0].contains(expected), "{status}: {steps:?}");
        }
        assert!(next_steps(&ending(Status::Success, "", &s)).is_empty());
    }

    #[test]
    fn the_last_run_adds_what_still_fails_and_what_is_flaky() {
        let s = RunSettings::with_model("openai/gpt-4.1");
        let case = |id: &str, status, category| TestCase {
            id: id.into(),
            status,
            category,
            ..TestCase::default()
        };
        let run = TestRun {
            totals: Totals {
                passed: 1,
                failed: 2,
                ..Totals::default()
            },
            tests: vec![
                case("t::a", CaseStatus::Fail, Some(Category::Logic)),
                case("t::b", CaseStatus::Fail, Some(Category::Logic)),
                case("t::c", CaseStatus::Pass, Some(Category::Flaky)),
            ],
            category: Some(Category::Logic),
            ..TestRun::new("pytest", RunStatus::Failed)
        };
        let mut e = ending(Status::MaxIterations, "", &s);
        e.last = Some(&run);
        let steps = next_steps(&e);
        assert_eq!(steps[1], "2 tests still fail: t::a, t::b");
        assert!(steps[2].starts_with("flaky (failed, then passed on a re-run): t::c"));
    }
}
