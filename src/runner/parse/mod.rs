//! Recognises the plain-text output of common test tools and pulls out the totals and the failing
//! tests: pytest, `python -m unittest`, cargo test (libtest), vitest, jest, node's built-in
//! runner (TAP and spec reporters) and mocha's spec reporter. This is the fallback when a tool
//! gave no machine-readable report (see [`super::report`]).
//!
//! Each parser first looks for the tool's own summary line; without it the output is not that
//! tool's, and the next parser is tried. Only failing (and timed-out) tests are listed: passing
//! tests are counted in the totals, which keeps a 10,000-test run small. Ids follow the report
//! readers' (`file::suite > test`, pytest's node ids), so a run read either way gives the same
//! ids.
//!
//! Layout: one module per tool family ([`python`]: pytest and unittest, [`cargo`], [`jest`]:
//! jest and vitest, [`node`]: node's TAP and spec reporters, [`mocha`]), each building its
//! result with [`cases`]; this module tries them in turn and finishes what they found. Each
//! regex is compiled once; a pattern that does not compile (a bug the unit tests catch) makes
//! its parser decline the output instead of panicking.

mod cargo;
mod cases;
mod jest;
mod mocha;
mod node;
mod python;
#[cfg(test)]
mod samples;

use std::path::Path;

use ralph_actors::schema::test_run::CaseStatus;

use crate::runner::reading::trace;
pub use crate::runner::reading::{strip_ansi, Parsed};

/// Parses a test run's output (with ANSI escapes already removed). `cwd` is the directory the
/// command ran in; absolute paths under it are shortened in test ids.
pub fn parse(output: &str, cwd: &Path) -> Option<Parsed> {
    // The summary lines are distinct enough that the order only matters for tools that print
    // several summaries (e.g. `npm test` running two tools): the first recognised wins.
    let mut parsed = python::pytest(output, cwd)
        .or_else(|| python::unittest(output, cwd))
        .or_else(|| cargo::cargo(output))
        .or_else(|| jest::vitest(output, cwd))
        .or_else(|| jest::jest(output, cwd))
        .or_else(|| node::node_tap(output, cwd))
        .or_else(|| node::node_spec(output, cwd))
        .or_else(|| mocha::mocha(output, cwd))?;
    finish(&mut parsed, cwd);
    Some(parsed)
}

/// One recorded failing run of each tool, oldest parser first: reading them compiles every
/// parser's patterns (each compiles at its first use). A run's output is read by each parser in
/// turn until one knows it, so the first output read compiled the patterns of every parser
/// before its own: 5 ms of a release build after the baseline test run (issue 18).
const WARM: [&str; 8] = [
    include_str!("../testdata/pytest.txt"),
    include_str!("../testdata/unittest.txt"),
    include_str!("../testdata/cargo.txt"),
    include_str!("../testdata/vitest.txt"),
    include_str!("../testdata/jest.txt"),
    include_str!("../testdata/node_tap.txt"),
    include_str!("../testdata/node_spec.txt"),
    include_str!("../testdata/mocha.txt"),
];

/// Compiles the parsers' patterns, by reading [`WARM`]; a run calls this beside its baseline
/// test run.
pub fn warm() {
    for output in WARM {
        let _ = parse(output, Path::new("/"));
    }
}

/// What every parser leaves to the end: the error type and place where the message shows
/// them, and timed-out tests counted apart from failed ones.
fn finish(parsed: &mut Parsed, cwd: &Path) {
    let python = matches!(parsed.framework, "pytest" | "unittest");
    let mut timed_out = 0;
    for t in &mut parsed.tests {
        if t.status == CaseStatus::Timeout {
            timed_out += 1;
        }
        let Some(message) = t.message.as_deref() else {
            continue;
        };
        if t.error_type.is_none() {
            t.error_type = if message.starts_with("panicked at ") {
                Some("panic".into())
            } else if python {
                trace::python_error_type(message)
            } else {
                trace::js_error_type(message)
            };
        }
        if t.location.is_none() {
            t.location = trace::location(message, Some(cwd));
        }
    }
    // The tools count a timed-out test as failed; the schema counts it apart.
    parsed.totals.failed = parsed.totals.failed.saturating_sub(timed_out);
    parsed.totals.timed_out += timed_out;
}

#[cfg(test)]
mod tests {
    use super::samples::parsed;
    use super::*;
    use crate::runner::reading::text::MESSAGE_MAX_BYTES;

    /// The warm-up's outputs are each read by their own parser (so every parser before it
    /// has been tried), each with a failure (so the failure paths' patterns compile too).
    #[test]
    fn the_warm_up_reads_one_failing_run_of_every_tool() {
        let read: Vec<(&str, bool)> = WARM
            .iter()
            .map(|output| {
                let parsed = parse(output, Path::new("/")).expect("a known output");
                let failed = parsed.tests.iter().any(|t| t.status == CaseStatus::Fail);
                (parsed.framework, failed)
            })
            .collect();
        let tools = [
            "pytest", "unittest", "cargo", "vitest", "jest", "node", "node", "mocha",
        ];
        assert_eq!(read, tools.map(|t| (t, true)));
        warm();
    }

    #[test]
    fn every_parser_names_its_format() {
        for (name, format) in [
            ("pytest", "pytest-text"),
            ("cargo", "cargo-text"),
            ("jest", "jest-text"),
            ("vitest", "vitest-text"),
            ("node_tap", "node-tap"),
            ("node_spec", "node-spec"),
            ("mocha", "mocha-text"),
            ("unittest", "unittest-text"),
        ] {
            assert_eq!(parsed(name, "/").format, format, "{name}");
        }
    }

    #[test]
    fn unknown_output_is_not_parsed() {
        assert_eq!(parse("hello\nworld\n", Path::new("/")), None);
        assert_eq!(parse("", Path::new("/")), None);
    }

    #[test]
    fn ids_carry_no_durations() {
        for (name, cwd) in [
            ("node_spec", "/"),
            ("vitest", "/"),
            ("jest", "/"),
            ("node_tap", "/"),
        ] {
            let p = parsed(name, cwd);
            for t in &p.tests {
                assert!(
                    !t.id.contains("ms)") && !t.id.ends_with("ms"),
                    "{name}: {}",
                    t.id
                );
            }
        }
    }

    #[test]
    fn messages_are_capped() {
        let long = format!(
            "==== short test summary info ====\nFAILED t.py::a - {}\n{}\n==== 1 failed in 0.1s ====\n",
            "x".repeat(10_000),
            "line\n".repeat(100)
        );
        let p = parse(&long, Path::new("/"))
            .map(|p| p.tests)
            .unwrap_or_default();
        let m = p[0].message.as_deref().unwrap_or("");
        assert!(m.len() <= MESSAGE_MAX_BYTES + 3, "{}", m.len());
    }
}
