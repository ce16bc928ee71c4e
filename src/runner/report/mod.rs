//! Machine-readable test reports: jest `--json`, vitest's JSON reporter, mocha's JSON reporter,
//! pytest's JUnit XML and libtest's JSON lines (cargo test and nextest), read into the unified
//! result schema.
//!
//! Layout: one reader per format ([`jest`] also reads vitest, whose report is jest-shaped;
//! [`libtest`] also reads nextest's libtest-json); [`trace`] reads stack traces and error lines
//! for all of them, the plain-text parsers and the classifier.
//!
//! Unlike the plain-text parsers, a reader returns every test the tool reported, passing and
//! skipped ones too, and computes the totals from them; each reader's tests check those totals
//! against the tool's own counts. Categories are not set here: see
//! [`crate::runner::classify`].

mod jest;
pub(crate) mod junit;
mod libtest;
mod mocha;
pub(crate) mod trace;

use std::collections::HashMap;
use std::path::Path;

use ralph_actors::schema::test_run::{CaseStatus, TestCase, Totals};

use super::Parsed;

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

/// Makes ids unique without losing any test: a second test of the same id (jest allows two
/// tests of one name in one block) gets ` #2`, a third ` #3`. Stable as long as the order is.
pub(crate) fn unique_ids(tests: &mut [TestCase]) {
    // Counted on borrowed ids, renamed after: duplicates are rare, copies of every id are not.
    let mut renames: Vec<(usize, u32)> = Vec::new();
    {
        let mut seen: HashMap<&str, u32> = HashMap::with_capacity(tests.len());
        for (i, t) in tests.iter().enumerate() {
            let n = seen.entry(t.id.as_str()).or_insert(0);
            *n += 1;
            if *n > 1 {
                renames.push((i, *n));
            }
        }
    }
    for (i, n) in renames {
        if let Some(t) = tests.get_mut(i) {
            t.id = format!("{} #{n}", t.id);
        }
    }
}

/// `file::name`, or whichever of the two is known.
pub(crate) fn join_id(file: Option<&str>, name: &str) -> String {
    match file {
        Some(f) if !f.is_empty() && !name.is_empty() && f != name => format!("{f}::{name}"),
        Some(f) if !f.is_empty() => f.to_string(),
        _ => name.to_string(),
    }
}

#[cfg(test)]
mod tests;
