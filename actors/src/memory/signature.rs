//! The signature of a failing run: what an attempt is recorded and recalled by.

use crate::memory::text::cut_to;
use crate::policy::entropy::normalise;
use crate::schema::test_run::{CaseStatus, Category, RunStatus, TestRun};

/// At most this many failing tests make up a signature: the first few say what is wrong, and a
/// run with fifty failures is recalled by its first ones.
const SIGNATURE_FAILURES: usize = 5;
/// Lines of each failure's message kept in a signature.
const SIGNATURE_MESSAGE_LINES: usize = 3;
/// A signature is at most this many bytes: embedders have input limits, and the first lines
/// carry the meaning.
const SIGNATURE_BYTES: usize = 2_000;

/// What a failing run is recalled and recorded by: its category, the failing tests' ids, and
/// the signature text. `None` for a run with no failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub signature: String,
    pub category: Option<Category>,
    pub test_ids: Vec<String>,
}

/// The signature of a failing run: for each of its first failing tests (by id), its category,
/// name, error type and the first lines of its message, normalised as the entropy breaker does
/// (timestamps, durations, addresses, absolute paths and line numbers taken out). A run that
/// named no test is signed by its status and the end of its output.
pub fn failure(run: &TestRun) -> Option<Failure> {
    if run.criteria_met() {
        return None;
    }
    let mut failing: Vec<_> = run
        .tests
        .iter()
        .filter(|t| matches!(t.status, CaseStatus::Fail | CaseStatus::Timeout))
        .collect();
    failing.sort_by(|a, b| a.id.cmp(&b.id));
    let mut lines = Vec::new();
    for case in failing.iter().take(SIGNATURE_FAILURES) {
        let message: Vec<&str> = case
            .message
            .as_deref()
            .unwrap_or_default()
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .take(SIGNATURE_MESSAGE_LINES)
            .collect();
        let category = case.category.or(run.category).map(|c| c.as_str());
        let mut line = String::new();
        if let Some(category) = category {
            line.push_str(category);
            line.push(' ');
        }
        line.push_str(&case.name);
        line.push_str(": ");
        if let Some(kind) = case.error_type.as_deref().filter(|k| !k.is_empty()) {
            line.push_str(kind);
            line.push_str(": ");
        }
        line.push_str(&message.join(" "));
        lines.push(normalise(&line));
    }
    if lines.is_empty() {
        if run.status == RunStatus::Passed {
            // The tests pass but a criterion (coverage, lint) does not: that is the failure.
            let unmet = run.unmet_criteria().unwrap_or_default();
            lines.push(normalise(&format!("UNMET {unmet}")));
        } else {
            // No test named (a syntax error, a missing module): the end of the output says
            // what is wrong.
            let tail: Vec<&str> = run
                .output
                .lines()
                .rev()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .take(SIGNATURE_MESSAGE_LINES * 2)
                .collect();
            let category = run.category.map_or("", |c| c.as_str());
            let text = format!(
                "{category} {:?}: {}",
                run.status,
                tail.into_iter().rev().collect::<Vec<_>>().join(" ")
            );
            lines.push(normalise(text.trim()));
        }
    }
    let mut signature = lines.join("\n");
    cut_to(&mut signature, SIGNATURE_BYTES);
    Some(Failure {
        signature,
        category: run
            .category
            .or_else(|| failing.first().and_then(|c| c.category)),
        test_ids: failing.iter().map(|c| c.id.clone()).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::test_run::TestCase;

    #[test]
    fn a_signature_is_normalised_ordered_and_bounded() {
        let case = |id: &str, message: &str| TestCase {
            id: id.into(),
            name: id.rsplit("::").next().unwrap_or(id).into(),
            status: CaseStatus::Fail,
            category: Some(Category::Logic),
            error_type: Some("AssertionError".into()),
            message: Some(message.into()),
            ..TestCase::default()
        };
        let mut run = TestRun::new("pytest", RunStatus::Failed);
        run.status = RunStatus::Failed;
        run.tests = vec![
            case(
                "t.py::test_b",
                "assert 3 == 2.5\n at /home/u/p/stats.py:12:4",
            ),
            case("t.py::test_a", "expected 1 at 2026-11-22T07:05:07Z"),
        ];
        let first = failure(&run).unwrap();
        assert_eq!(first.test_ids, ["t.py::test_a", "t.py::test_b"]);
        let lines: Vec<&str> = first.signature.lines().collect();
        assert_eq!(lines.len(), 2);
        assert!(
            lines[0].starts_with("LOGIC test_a: AssertionError: expected 1 at <TS>"),
            "{lines:?}"
        );
        assert!(lines[1].contains("<PATH>/stats.py"), "{lines:?}");
        assert!(!lines[1].contains("/home/u"), "{lines:?}");

        // Another run of the same failure at another time, from another checkout: same signature.
        run.tests[1].message = Some("expected 1 at 2026-12-01T10:00:00Z".into());
        run.tests[0].message = Some("assert 3 == 2.5\n at /tmp/other/stats.py:12:4".into());
        assert_eq!(failure(&run).unwrap().signature, first.signature);

        run.tests[0].message = Some("x".repeat(10_000));
        assert!(failure(&run).unwrap().signature.len() <= SIGNATURE_BYTES);
    }

    #[test]
    fn a_passing_run_has_no_failure_and_a_crash_is_signed_by_its_output() {
        let mut run = TestRun::new("cargo test", RunStatus::Passed);
        run.status = RunStatus::Passed;
        assert!(failure(&run).is_none());
        run.status = RunStatus::Error;
        run.category = Some(Category::Syntax);
        run.output = "compiling\nerror[E0425]: cannot find value `x` in this scope\n".into();
        let f = failure(&run).unwrap();
        assert!(f.signature.starts_with("SYNTAX Error: "), "{}", f.signature);
        assert!(f.signature.contains("cannot find value"), "{}", f.signature);
        assert!(f.test_ids.is_empty());
    }
}
