//! What the plain-text parsers ([`super::parse`]) and the report readers ([`super::report`])
//! share: their result ([`Parsed`]), the text helpers both apply to a tool's output ([`text`]:
//! ANSI stripping, failure messages cut to size, the tools' words for a timeout), stack traces
//! ([`trace`]) and pytest's node ids ([`pytest_ids`]).
//!
//! Kept apart from both so that neither depends on the other: a run read from its report or
//! from its text goes through the same helpers, and so gives the same ids, messages and places.

pub(crate) mod pytest_ids;
pub(crate) mod text;
pub(crate) mod trace;

use ralph_actors::schema::test_run::{TestCase, Totals};

pub use text::strip_ansi;

/// What a parser or report reader recognised.
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed {
    /// `jest`, `vitest`, `mocha`, `node`, `tap`, `pytest`, `unittest`, `junit`, `cargo`,
    /// `nextest`.
    pub framework: &'static str,
    /// What was read: a report format (`jest-json`, `junit-xml`, ...; see
    /// [`super::report::ReportFormat::as_str`]) or a text parser (`pytest-text`, ...).
    pub format: &'static str,
    /// `failed` does not include `timed_out`: a tool's "3 failed" with one timeout is 2 + 1.
    pub totals: Totals,
    /// From a text parser, the failing and timed-out tests, in output order, without
    /// duplicates; from a report, every test.
    pub tests: Vec<TestCase>,
}
