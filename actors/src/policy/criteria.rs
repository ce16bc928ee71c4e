//! The completion promise: the success criteria of `success_criteria:` judged on a test run.
//! The tests passing is always required; coverage and linter errors only when configured.

use crate::schema::test_run::{Criterion, TestRun};

/// What success needs beyond the tests passing (`success_criteria:`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Thresholds {
    /// This percent of lines covered, at least.
    pub coverage: Option<f64>,
    /// At most this many linter errors.
    pub linter_errors: Option<u32>,
}

/// Judges every configured criterion on `run` and records the verdicts in `run.criteria`.
pub fn judge(run: &mut TestRun, settings: &Thresholds) {
    let mut criteria = vec![Criterion {
        name: "tests_pass".into(),
        met: run.passed(),
        detail: run.summary(),
    }];
    if let Some(threshold) = settings.coverage {
        criteria.push(match &run.coverage {
            Some(c) => Criterion {
                name: "coverage_threshold".into(),
                met: c.lines_pct + f64::EPSILON >= threshold,
                detail: format!(
                    "line coverage {:.1}% {} {threshold}% ({})",
                    c.lines_pct,
                    if c.lines_pct + f64::EPSILON >= threshold {
                        ">="
                    } else {
                        "<"
                    },
                    c.tool
                ),
            },
            None => Criterion {
                name: "coverage_threshold".into(),
                met: false,
                detail: format!("no coverage was measured (threshold {threshold}%)"),
            },
        });
    }
    if let Some(max) = settings.linter_errors {
        criteria.push(match &run.lint {
            Some(l) => Criterion {
                name: "linter_errors".into(),
                met: l.errors <= max,
                detail: format!(
                    "{} {} error{} (at most {max} allowed)",
                    l.tool,
                    l.errors,
                    if l.errors == 1 { "" } else { "s" }
                ),
            },
            None => Criterion {
                name: "linter_errors".into(),
                met: false,
                detail: format!("the linter did not run (at most {max} errors allowed)"),
            },
        });
    }
    run.criteria = criteria;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::test_run::{Coverage, Lint, RunStatus};

    fn settings(coverage: Option<f64>, lint: Option<u32>) -> Thresholds {
        Thresholds {
            coverage,
            linter_errors: lint,
        }
    }

    /// Judges `run` against the thresholds; whether every criterion is met.
    fn met(run: &mut TestRun, coverage: Option<f64>, lint: Option<u32>) -> bool {
        judge(run, &settings(coverage, lint));
        run.criteria_met()
    }

    #[test]
    fn only_the_tests_are_judged_by_default() {
        let mut run = TestRun::new("t", RunStatus::Passed);
        judge(&mut run, &settings(None, None));
        assert_eq!(run.criteria.len(), 1);
        assert!(run.criteria_met());
        let mut failed = TestRun::new("t", RunStatus::Failed);
        assert!(!met(&mut failed, None, None));
    }

    #[test]
    fn coverage_below_the_threshold_or_missing_is_unmet() {
        let mut run = TestRun::new("t", RunStatus::Passed);
        run.coverage = Some(Coverage {
            tool: "c8".into(),
            lines_pct: 72.5,
            branches_pct: None,
            functions_pct: None,
            target: None,
        });
        assert!(!met(&mut run, Some(80.0), None));
        assert_eq!(
            run.unmet_criteria().as_deref(),
            Some("coverage_threshold: line coverage 72.5% < 80% (c8)")
        );
        assert!(met(&mut run, Some(72.5), None));
        run.coverage = None;
        assert!(!met(&mut run, Some(10.0), None));
    }

    #[test]
    fn linter_errors_over_the_limit_are_unmet() {
        let mut run = TestRun::new("t", RunStatus::Passed);
        run.lint = Some(Lint {
            tool: "ruff".into(),
            command: "ruff check".into(),
            errors: 2,
            warnings: 5,
            findings: Vec::new(),
        });
        assert!(!met(&mut run, None, Some(0)));
        assert_eq!(
            run.unmet_criteria().as_deref(),
            Some("linter_errors: ruff 2 errors (at most 0 allowed)")
        );
        assert!(met(&mut run, None, Some(2)));
    }
}
