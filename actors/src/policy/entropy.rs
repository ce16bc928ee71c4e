//! The entropy circuit breaker: a run that ends iterations on the same failure again and again is
//! stuck, and more money will not unstick it.
//!
//! Each failing test gets a fingerprint: a hash of its id, its category and its failure message
//! with what changes from run to run taken out (timestamps, durations, memory addresses, absolute
//! paths, line:column numbers). A run's fingerprint combines those of its failing tests; FLAKY
//! tests (failed, then passed on a re-run) have passed and take no part. A run that named no test
//! is fingerprinted from its output instead.

use std::sync::LazyLock;

use regex::Regex;
use sha2::{Digest, Sha256};

use crate::schema::test_run::{CaseStatus, TestCase, TestRun};

/// The failure text fingerprinted is at most this many bytes from the end of the output, where
/// test tools put their summaries.
const TEXT_TAIL: usize = 16 * 1024;

// The patterns are constants, exercised by the tests below: a bad one fails every test run.
#[allow(clippy::expect_used)]
static RULES: LazyLock<Vec<(Regex, &'static str)>> = LazyLock::new(|| {
    let rule = |re: &str, with: &'static str| (Regex::new(re).expect("static regex"), with);
    vec![
        // 2026-11-22T07:05:07.123Z, 2026-11-22 07:05:07
        rule(
            r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?",
            "<TS>",
        ),
        rule(r"\b\d{1,2}:\d{2}:\d{2}(?:\.\d+)?\b", "<TIME>"),
        rule(r"0x[0-9a-fA-F]+", "<ADDR>"),
        // Absolute paths keep their last component, which names the file.
        rule(
            r#"(?:[A-Za-z]:\\|/)(?:[^\s:'"()\[\]<>,]+[/\\])+"#,
            "<PATH>/",
        ),
        // file.py:12:5, file.ts:(12:5), "line 12", ":12"
        rule(r":\d+:\d+\b", ":<L>:<C>"),
        rule(r"\(\d+:\d+\)", "(<L>:<C>)"),
        rule(r"\bline \d+\b", "line <L>"),
        rule(r"(\.[A-Za-z]{1,4}):\d+\b", "$1:<L>"),
        // node --test prints `duration_ms: 1.23`
        rule(r"duration_ms:?\s*[\d.]+", "duration_ms <DUR>"),
        // 0.12s, 45 ms, 1.5 seconds, (12ms), 3µs
        rule(
            r"\b\d+(?:\.\d+)?\s?(?:ms|s|sec|secs|seconds|µs|us|ns|m)\b",
            "<DUR>",
        ),
        rule(r"[ \t]+", " "),
    ]
});

/// Takes out of `text` what differs between two runs of the same failure.
/// Compiles the rules now, so that the first normalisation (right after the baseline test run)
/// does not; see [`crate::warm`].
pub fn warm() {
    LazyLock::force(&RULES);
}

pub fn normalise(text: &str) -> String {
    let mut out = text.to_string();
    for (re, with) in RULES.iter() {
        if let std::borrow::Cow::Owned(s) = re.replace_all(&out, *with) {
            out = s;
        }
    }
    out.lines()
        .map(str::trim_end)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

/// How much of a test's message its fingerprint reads: the assertion and its values, not a long
/// diff whose tail may hold run-specific noise.
const CASE_MESSAGE_LINES: usize = 12;

/// The fingerprint of one failing test: 16 hex digits.
pub fn case_fingerprint(case: &TestCase) -> String {
    let message = case
        .message
        .as_deref()
        .or(case.stack.as_deref())
        .unwrap_or("");
    let head: Vec<&str> = message.lines().take(CASE_MESSAGE_LINES).collect();
    let mut h = Sha256::new();
    h.update(case.id.as_bytes());
    h.update(b"\n");
    h.update(case.category.map_or("", |c| c.as_str()).as_bytes());
    h.update(b"\n");
    h.update(format!("{:?}\n", case.status).as_bytes());
    h.update(normalise(&head.join("\n")).as_bytes());
    hex16(&h.finalize())
}

/// Sets the fingerprint of every failing and timed-out test of `run`.
pub fn mark_fingerprints(run: &mut TestRun) {
    for case in run.tests.iter_mut() {
        if matches!(case.status, CaseStatus::Fail | CaseStatus::Timeout) {
            case.fingerprint = Some(case_fingerprint(case));
        }
    }
}

fn hex16(digest: &[u8]) -> String {
    digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

/// The fingerprint of a failed run: 16 hex digits. From its failing tests' fingerprints when it
/// named any, else from the end of its output.
pub fn fingerprint(run: &TestRun) -> String {
    let mut cases: Vec<String> = run
        .failures()
        .map(|c| c.fingerprint.clone().unwrap_or_else(|| case_fingerprint(c)))
        .collect();
    let mut h = Sha256::new();
    h.update(format!("{:?}\n", run.status));
    if !cases.is_empty() {
        cases.sort_unstable();
        for c in cases {
            h.update(c.as_bytes());
            h.update(b"\n");
        }
        // A test without a message (some text outputs name failures only) says too little on
        // its own: the output tells its failures apart.
        if run
            .failures()
            .all(|c| c.message.is_some() || c.stack.is_some())
        {
            return hex16(&h.finalize());
        }
        h.update(normalise(&tail(&run.output)).as_bytes());
        return hex16(&h.finalize());
    }
    let text = tail(&failure_text(run));
    // Unmet criteria (coverage, lint) of a run whose tests passed.
    for c in run.criteria.iter().filter(|c| !c.met) {
        h.update(c.name.as_bytes());
        h.update(b"\n");
    }
    h.update(normalise(&text).as_bytes());
    hex16(&h.finalize())
}

/// The last [`TEXT_TAIL`] bytes of `text`, where test tools put their summaries.
fn tail(text: &str) -> String {
    let mut cut = text.len().saturating_sub(TEXT_TAIL);
    while !text.is_char_boundary(cut) {
        cut += 1;
    }
    text[cut..].to_string()
}

fn failure_text(run: &TestRun) -> String {
    let messages: Vec<&str> = run
        .failures()
        .filter_map(|t| t.message.as_deref())
        .collect();
    if messages.is_empty() {
        run.output.clone()
    } else {
        messages.join("\n")
    }
}

/// The first line worth showing a user for what the run is stuck on. A run killed at its time
/// or memory limit says so first: its output is only the progress marks printed so far.
pub fn headline(run: &TestRun) -> String {
    let killed = match run.status {
        crate::schema::test_run::RunStatus::MemoryLimit => Some("killed at the memory limit"),
        crate::schema::test_run::RunStatus::Timeout => Some("killed at the time limit"),
        _ => None,
    };
    if let Some(killed) = killed {
        let first = run
            .failures()
            .find_map(|t| t.message.as_deref())
            .and_then(|m| m.lines().find(|l| !l.trim().is_empty()))
            .map(|l| format!(": {}", l.trim()))
            .unwrap_or_default();
        return format!("the tests were {killed}{first}")
            .chars()
            .take(300)
            .collect();
    }
    let interesting = |l: &&str| {
        let l = l.trim();
        !l.is_empty()
            && [
                "Error", "error", "FAIL", "assert", "Assert", "expected", "Expected", "panicked",
                "not ok",
            ]
            .iter()
            .any(|k| l.contains(k))
    };
    let text = failure_text(run);
    let line = text
        .lines()
        .find(interesting)
        .or_else(|| text.lines().find(|l| !l.trim().is_empty()));
    let line = line.unwrap_or("(no output)").trim();
    line.chars().take(300).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::test_run::{Category, ResultSource, RunStatus, Totals};

    /// Found with a real small model: "last failure: FFFFF" after a memory-limit kill.
    #[test]
    fn a_killed_run_s_headline_says_it_was_killed_not_its_progress_marks() {
        let mut killed = run("test_median.py FFFFF");
        killed.status = RunStatus::MemoryLimit;
        killed.tests.clear();
        assert_eq!(
            headline(&killed),
            "the tests were killed at the memory limit"
        );
        killed.status = RunStatus::Timeout;
        assert_eq!(headline(&killed), "the tests were killed at the time limit");
    }

    fn run(output: &str) -> TestRun {
        TestRun {
            exit_code: Some(1),
            duration_ms: 10,
            source: ResultSource::Text,
            totals: Totals::default(),
            tests: vec![TestCase {
                id: "tests/test_a.py::test_x".into(),
                status: CaseStatus::Fail,
                ..TestCase::default()
            }],
            output: output.into(),
            ..TestRun::new("pytest", RunStatus::Failed)
        }
    }

    #[test]
    fn volatile_details_do_not_change_the_fingerprint() {
        let a = run(
            "2026-11-22T07:05:07Z /tmp/abc123/src/m.py:12:5 AssertionError at 0x7f00aa in 0.12s",
        );
        let b = run(
            "2026-11-23 09:00:01 /home/u/proj/src/m.py:40:1 AssertionError at 0x7fff01 in 3.5s",
        );
        assert_eq!(fingerprint(&a), fingerprint(&b));
    }

    #[test]
    fn different_failures_differ() {
        let a = run("AssertionError: assert 2 == 3");
        let b = run("TypeError: unsupported operand");
        assert_ne!(fingerprint(&a), fingerprint(&b));
        let mut c = run("AssertionError: assert 2 == 3");
        c.tests[0].id = "tests/test_a.py::test_y".into();
        assert_ne!(fingerprint(&a), fingerprint(&c));
    }

    #[test]
    fn flaky_tests_take_no_part() {
        let a = run("AssertionError: assert 2 == 3");
        let mut b = a.clone();
        b.tests.push(TestCase {
            id: "tests/test_a.py::test_sometimes".into(),
            status: CaseStatus::Pass,
            category: Some(Category::Flaky),
            message: Some("ConnectionResetError".into()),
            ..TestCase::default()
        });
        assert_eq!(fingerprint(&a), fingerprint(&b));
    }

    #[test]
    fn a_test_keeps_its_fingerprint_across_runs() {
        let mut a = run("x");
        a.tests[0].message = Some("AssertionError at /tmp/a1/m.py:3:1 after 12ms".into());
        a.tests[0].category = Some(Category::Logic);
        let mut b = a.clone();
        b.tests[0].message = Some("AssertionError at /home/u/m.py:9:4 after 40ms".into());
        mark_fingerprints(&mut a);
        mark_fingerprints(&mut b);
        assert!(a.tests[0].fingerprint.is_some());
        assert_eq!(a.tests[0].fingerprint, b.tests[0].fingerprint);
        b.tests[0].category = Some(Category::Syntax);
        assert_ne!(case_fingerprint(&a.tests[0]), case_fingerprint(&b.tests[0]));
    }

    #[test]
    fn normalise_keeps_file_names() {
        assert_eq!(
            normalise("at /work/x/median.ts:3:14"),
            "at <PATH>/median.ts:<L>:<C>"
        );
        assert_eq!(
            normalise("File \"/tmp/p/m.py\", line 7"),
            "File \"<PATH>/m.py\", line <L>"
        );
    }

    #[test]
    fn headline_finds_the_error_line() {
        let r = run("collected 2 items\n\nE   AssertionError: assert 2 == 3\n");
        assert_eq!(headline(&r), "E   AssertionError: assert 2 == 3");
    }
}
