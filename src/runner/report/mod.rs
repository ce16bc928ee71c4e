//! Machine-readable test reports: jest `--json`, vitest's JSON reporter, mocha's JSON reporter,
//! pytest's JUnit XML and libtest's JSON lines (cargo test and nextest), read into the unified
//! result schema.
//!
//! Layout: one reader per format ([`jest`] also reads vitest, whose report is jest-shaped;
//! [`libtest`] also reads nextest's libtest-json), each building its ids with [`ids`]; what the
//! readers share with the plain-text parsers (stack traces and error lines, message clipping,
//! pytest's node ids, the [`Parsed`] result) is in [`crate::runner::reading`], so that neither
//! depends on the other. The formats, the error and [`parse_report`] stay here: they call the
//! readers, and the readers never use them.
//!
//! Unlike the plain-text parsers, a reader returns every test the tool reported, passing and
//! skipped ones too, and computes the totals from them; each reader's tests check those totals
//! against the tool's own counts. Categories are not set here: see
//! [`crate::runner::classify`].

mod ids;
mod jest;
mod junit;
mod libtest;
mod mocha;

use std::path::Path;

use ralph_actors::schema::test_run::{CaseStatus, TestCase, Totals};

use super::reading::Parsed;

/// A report format a test tool can be asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReportFormat {
    /// `jest --json --outputFile=<file>`.
    JestJson,
    /// `vitest run --reporter=json --outputFile=<file>` (jest-shaped, with vitest's extras).
    VitestJson,
    /// `mocha --reporter json --reporter-option output=<file>`.
    MochaJson,
    /// `pytest --junitxml=<file>` (and any other JUnit XML).
    JunitXml,
    /// libtest's JSON lines on stdout (`-Z unstable-options --format json`, or nextest's
    /// `--message-format libtest-json`).
    LibtestJson,
}

impl ReportFormat {
    /// The name saved in results' `format`.
    pub fn as_str(self) -> &'static str {
        match self {
            ReportFormat::JestJson => "jest-json",
            ReportFormat::VitestJson => "vitest-json",
            ReportFormat::MochaJson => "mocha-json",
            ReportFormat::JunitXml => "junit-xml",
            ReportFormat::LibtestJson => "libtest-json",
        }
    }
}

/// Why a report could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{format} report unreadable: {reason}")]
pub struct ReportError {
    pub format: &'static str,
    pub reason: String,
}

/// Reads a report. `cwd` is the directory the command ran in: absolute paths under it are made
/// relative in ids, files and locations.
///
/// An empty report, one cut short, or one that is not in `format` is an error that says why; the
/// caller then falls back to the plain-text parsers.
pub fn parse_report(format: ReportFormat, data: &str, cwd: &Path) -> Result<Parsed, ReportError> {
    let error = |reason: String| ReportError {
        format: format.as_str(),
        reason,
    };
    if data.trim().is_empty() {
        return Err(error("the report is empty".into()));
    }
    let (framework, tests) = match format {
        ReportFormat::JestJson => jest::parse(data, cwd, jest::Flavor::Jest),
        ReportFormat::VitestJson => jest::parse(data, cwd, jest::Flavor::Vitest),
        ReportFormat::MochaJson => mocha::parse(data, cwd),
        ReportFormat::JunitXml => junit::parse(data, cwd),
        ReportFormat::LibtestJson => libtest::parse(data, cwd),
    }
    .map_err(error)?;
    Ok(Parsed {
        framework,
        format: format.as_str(),
        totals: totals_of(&tests),
        tests,
    })
}

/// Counts the tests by status.
pub(crate) fn totals_of(tests: &[TestCase]) -> Totals {
    let mut totals = Totals::default();
    for t in tests {
        match t.status {
            CaseStatus::Pass => totals.passed += 1,
            CaseStatus::Fail => totals.failed += 1,
            CaseStatus::Skip => totals.skipped += 1,
            CaseStatus::Timeout => totals.timed_out += 1,
        }
    }
    totals
}

#[cfg(test)]
mod tests;
