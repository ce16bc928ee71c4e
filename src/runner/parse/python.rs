//! Python's tools: pytest's output (with or without `-q`) and `python -m unittest`'s, whose ids
//! are pytest's node ids so that a switch of runner keeps them.

use std::collections::HashMap;
use std::path::Path;

use ralph_actors::schema::test_run::Totals;

use super::cases::{last_summary, Bucket, Cases};
use crate::runner::reading::pytest_ids::python_node_id;
use crate::runner::reading::text::clip;
use crate::runner::reading::trace::{self, regex};
use crate::runner::reading::Parsed;

// ---------------------------------------------------------------------------------------------
// pytest

/// pytest's final line, with or without `-q`:
/// `=== 3 failed, 3 passed, 1 skipped, 1 error in 0.07s ===`, `no tests ran in 0.00s`.
pub(crate) fn pytest(out: &str, cwd: &Path) -> Option<Parsed> {
    let summary = regex!(
        r"^=*\s*(no tests ran|\d+ [a-z]+(?:, \d+ [a-z]+)*) in \d+(?:\.\d+)?s(?: \([\d:.]+\))?\s*=*$"
    )?;
    let entry = regex!(r"^(FAILED|ERROR) (.+?)(?: - (.*))?$")?;
    let section = regex!(r"^_{3,} (.+?) _{3,}$")?;

    let lines: Vec<&str> = out.lines().collect();
    let (last, totals) = last_summary(&lines, summary, |w| match w {
        "passed" | "xpassed" => Some(Bucket::Passed),
        "failed" | "error" | "errors" => Some(Bucket::Failed),
        "skipped" | "xfailed" => Some(Bucket::Skipped),
        _ => None,
    })?;

    // The `E   ` lines of each FAILURES/ERRORS section, for entries whose summary line has no
    // message (a module that failed to import: `ERROR tests/test_x.py`), and the section's
    // text, for where the error was raised.
    let mut sections: HashMap<&str, Vec<&str>> = HashMap::new();
    let mut bodies: HashMap<&str, (usize, usize)> = HashMap::new();
    let mut current: Option<&str> = None;
    for (i, line) in lines[..last].iter().enumerate() {
        if let Some(c) = section.captures(line) {
            current = c.get(1).map(|m| m.as_str());
            if let Some(title) = current {
                bodies.insert(title, (i + 1, i + 1));
            }
        } else if line.starts_with("====") {
            current = None;
        } else if let Some(title) = current {
            if let Some(b) = bodies.get_mut(title) {
                b.1 = i + 1;
            }
            if let Some(e) = line.strip_prefix("E ") {
                sections.entry(title).or_default().push(e);
            }
        }
    }

    // The short summary (pytest's default `-rfE`): one entry per failure; in CI mode a message
    // continues over the following lines.
    let from = lines[..last]
        .iter()
        .rposition(|l| l.contains(" short test summary info "))
        .map_or(0, |i| i + 1);
    let mut cases = Cases::default();
    let mut i = from;
    while i < last {
        let Some(c) = entry.captures(lines[i]) else {
            i += 1;
            continue;
        };
        let id = c[2].to_string();
        let mut msg: Vec<&str> = c.get(3).map(|m| vec![m.as_str()]).unwrap_or_default();
        i += 1;
        while i < last && !entry.is_match(lines[i]) && !lines[i].starts_with(['=', '!']) {
            if !msg.is_empty() {
                msg.push(lines[i]);
            }
            i += 1;
        }
        if msg.is_empty() && &c[1] == "ERROR" {
            if let Some(e) = sections.get(format!("ERROR collecting {id}").as_str()) {
                msg = e.clone();
            }
        }
        // The section of `tests/t.py::TestCls::test_x` is headed `TestCls.test_x` (or `ERROR
        // at setup of ...`, `ERROR collecting tests/t.py`).
        let head = id.split_once("::").map(|(_, h)| h.replace("::", "."));
        let body = [
            head.clone(),
            head.as_ref().map(|h| format!("ERROR at setup of {h}")),
            head.as_ref().map(|h| format!("ERROR at teardown of {h}")),
            Some(format!("ERROR collecting {id}")),
        ]
        .into_iter()
        .flatten()
        .find_map(|title| bodies.get(title.as_str()).copied());
        let n = cases.add(id, clip(msg));
        if let Some((from, to)) = body {
            let text = lines[from..to].join("\n");
            cases.locate(n, trace::location(&text, Some(cwd)));
            if let Some(t) = cases.tests.get_mut(n) {
                t.error_type = t
                    .error_type
                    .take()
                    .or_else(|| trace::python_error_type(&text));
            }
        }
    }
    Some(cases.into_parsed("pytest", "pytest-text", totals))
}

// ---------------------------------------------------------------------------------------------
// python -m unittest

/// `Ran 7 tests in 0.006s`, then `OK` or `FAILED (failures=1, errors=2, skipped=1)`; each
/// failure is a block headed `FAIL: test_x (module.Class.test_x)` between `====` rules.
pub(crate) fn unittest(out: &str, cwd: &Path) -> Option<Parsed> {
    let ran = regex!(r"^Ran (\d+) tests? in [\d.]+s$")?;
    let outcome = regex!(r"^(OK|FAILED)(?: \((.*)\))?$")?;
    let head = regex!(r"^(FAIL|ERROR): (\S+) \(([^)]*)\)(.*)$")?;
    let count = regex!(r"([a-z ]+)=(\d+)")?;
    let lines: Vec<&str> = out.lines().collect();
    let at = lines.iter().rposition(|l| ran.is_match(l))?;
    let end = lines[at + 1..]
        .iter()
        .position(|l| outcome.is_match(l))
        .map(|p| at + 1 + p)?;

    let total: u32 = ran.captures(lines[at]).and_then(|c| c[1].parse().ok())?;
    let mut totals = Totals::default();
    if let Some(counts) = outcome.captures(lines[end]).and_then(|c| c.get(2)) {
        for c in count.captures_iter(counts.as_str()) {
            let n: u32 = c[2].parse().unwrap_or(0);
            match c[1].trim() {
                "failures" | "errors" => totals.failed = totals.failed.saturating_add(n),
                "skipped" | "expected failures" => {
                    totals.skipped = totals.skipped.saturating_add(n)
                }
                // Unexpected successes ran and passed.
                _ => {}
            }
        }
    }
    totals.passed = total.saturating_sub(totals.failed.saturating_add(totals.skipped));

    let mut cases = Cases::default();
    let mut i = 0;
    while i < at {
        let Some(c) = head.captures(lines[i]) else {
            i += 1;
            continue;
        };
        let (method, path) = (&c[2], &c[3]);
        // 3.11+ print `module.Class.method`, older ones `module.Class`; a module that failed
        // to import is `unittest.loader._FailedTest.module`.
        let id = if let Some(module) = path.strip_prefix("unittest.loader._FailedTest.") {
            python_node_id("", module, None, cwd).0
        } else {
            let class = path
                .strip_suffix(method)
                .and_then(|p| p.strip_suffix('.'))
                .unwrap_or(path);
            let id = python_node_id(class, method, None, cwd).0;
            // A subtest: `test_x (m.C.test_x) (i=1)`.
            match c[4].trim() {
                "" => id,
                sub => format!("{id} {sub}"),
            }
        };
        i += 1;
        // The body runs from the `----` rule to the next `====` rule or the closing rule. The
        // search for the `----` rule stops at the next `====`: a heading without a body does not
        // search the rest of the output (which cost the square of the headings).
        let from = lines[i..at]
            .iter()
            .position(|l| l.starts_with("----") || l.starts_with("===="))
            .map(|p| i + p)
            .filter(|&r| lines[r].starts_with("----"))
            .map_or(i, |r| r + 1);
        let to = lines[from..at]
            .iter()
            .position(|l| l.starts_with("====") || l.starts_with("----"))
            .map_or(at, |p| from + p);
        let body = &lines[from..to];
        // The message: what follows the last frame and its source lines.
        let last_frame = body.iter().rposition(|l| l.starts_with("  File \""));
        let message_from = match last_frame {
            Some(f) => body[f + 1..]
                .iter()
                .position(|l| !l.starts_with("    "))
                .map_or(body.len(), |p| f + 1 + p),
            None => 0,
        };
        let n = cases.add(id, clip(body[message_from..].iter().copied()));
        let text = body.join("\n");
        cases.locate(n, trace::location(&text, Some(cwd)));
        if let Some(t) = cases.tests.get_mut(n) {
            t.stack = Some(trace::cap(text.trim(), trace::STACK_MAX_BYTES));
        }
        i = to;
    }
    Some(cases.into_parsed("unittest", "unittest-text", totals))
}

#[cfg(test)]
mod tests {
    use ralph_actors::schema::test_run::CaseStatus;

    use crate::runner::parse::samples::Says::*;
    use crate::runner::parse::samples::{as_expected, assert_failures, parsed, totals};

    #[test]
    fn pytest_failures_errors_and_totals() {
        let p = as_expected("pytest");
        assert!(p.tests.iter().all(|t| t.status == CaseStatus::Fail));
    }

    #[test]
    fn pytest_places_and_error_types_come_from_the_sections() {
        let p = parsed("pytest", "/tmp/samp/py");
        let place = |id: &str| {
            p.tests
                .iter()
                .find(|t| t.id == id)
                .and_then(|t| t.location.as_ref())
                .map(|l| (l.file.clone(), l.line))
        };
        let kind = |id: &str| {
            p.tests
                .iter()
                .find(|t| t.id == id)
                .and_then(|t| t.error_type.clone())
        };
        assert_eq!(
            place("tests/test_m.py::test_bad"),
            Some(("tests/test_m.py".into(), Some(5)))
        );
        assert_eq!(
            place("tests/test_m.py::TestCls::test_in_class"),
            Some(("tests/test_m.py".into(), Some(13)))
        );
        // An error in a fixture: the `ERROR at setup of` section.
        assert_eq!(
            place("tests/test_m.py::test_err"),
            Some(("tests/test_m.py".into(), Some(9)))
        );
        assert_eq!(
            kind("tests/test_m.py::test_err").as_deref(),
            Some("RuntimeError")
        );
        assert_eq!(
            kind("tests/test_m.py::test_param[2]").as_deref(),
            Some("AssertionError")
        );
    }

    #[test]
    fn unittest_failures_errors_and_totals() {
        for name in ["unittest", "unittest_v"] {
            let p = parsed(name, "/tmp/rls/ut");
            assert_eq!((p.framework, p.format), ("unittest", "unittest-text"));
            // `Ran 7 tests`, `FAILED (failures=1, errors=2, skipped=1, expected failures=1)`.
            assert_eq!(p.totals, totals(2, 3, 2), "{name}");
            // pytest's node ids, so that a switch of runner keeps them.
            assert_failures(
                name,
                &p,
                &[
                    (
                        "tests/test_calc.py::TestMedian::test_empty",
                        Is("IndexError: list index out of range"),
                    ),
                    (
                        "tests/test_imp.py",
                        Is("ModuleNotFoundError: No module named 'nosuchmod'"),
                    ),
                    (
                        "tests/test_calc.py::TestMedian::test_even",
                        Is("AssertionError: 3 != 2.5"),
                    ),
                ],
            );
            let t = &p.tests[0];
            assert_eq!(t.error_type.as_deref(), Some("IndexError"));
            // Raised in `median`, below the test.
            assert_eq!(
                t.location.as_ref().map(|l| (l.file.as_str(), l.line)),
                Some(("tests/test_calc.py", Some(6)))
            );
            assert!(t.stack.as_deref().unwrap_or("").starts_with("Traceback"));
        }
        let p = parsed("unittest_ok", "/");
        assert_eq!((p.totals, p.tests.len()), (totals(1, 0, 0), 0));
    }

    #[test]
    fn pytest_quiet_mode() {
        let p = parsed("pytest_q", "/");
        assert_eq!(p.totals, totals(3, 4, 1));
        assert_eq!(p.tests.len(), 4);
    }

    #[test]
    fn pytest_collection_errors_take_the_e_lines() {
        as_expected("pytest_collect");
    }

    #[test]
    fn pytest_passing_and_empty_runs() {
        let p = parsed("pytest_pass", "/");
        assert_eq!(p.totals, totals(2, 0, 1));
        assert!(p.tests.is_empty());
        let p = parsed("pytest_none", "/");
        assert_eq!((p.framework, p.totals), ("pytest", totals(0, 0, 0)));
    }
}
