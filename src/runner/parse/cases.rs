//! What every parser builds its result with: the failing cases, one per id, the totals read
//! from a summary line's `N word` counts, and `file::name` ids.

use std::collections::HashMap;
use std::path::Path;

use ralph_actors::schema::test_run::{CaseStatus, Location, TestCase, Totals};

use crate::runner::reading::text::is_timeout_message;
use crate::runner::reading::trace::{self, regex};
use crate::runner::reading::Parsed;

/// Builds the result list: one case per id (the first one seen wins, later repeats fill a
/// missing message).
#[derive(Default)]
pub(crate) struct Cases {
    pub(crate) tests: Vec<TestCase>,
    pub(crate) index: HashMap<String, usize>,
}

impl Cases {
    /// Adds a failure (a timeout when the message says so); returns its index.
    pub(crate) fn add(&mut self, id: String, message: Option<String>) -> usize {
        let status = if message.as_deref().is_some_and(is_timeout_message) {
            CaseStatus::Timeout
        } else {
            CaseStatus::Fail
        };
        self.add_with(id, status, message)
    }

    pub(crate) fn add_with(
        &mut self,
        id: String,
        status: CaseStatus,
        message: Option<String>,
    ) -> usize {
        if let Some(&i) = self.index.get(&id) {
            if self.tests[i].message.is_none() {
                self.tests[i].message = message;
            }
            return i;
        }
        let i = self.tests.len();
        self.index.insert(id.clone(), i);
        self.tests.push(TestCase {
            id,
            status,
            message,
            ..TestCase::default()
        });
        i
    }

    /// Sets where the failure was raised, unless already known.
    pub(crate) fn locate(&mut self, i: usize, location: Option<Location>) {
        if let Some(t) = self.tests.get_mut(i) {
            if t.location.is_none() {
                t.location = location;
            }
        }
    }

    /// Sets where failure `n` was raised from the stack frames of its block: the lines after
    /// line `i` of `lines` up to the first that `ends` the block, paths read from `cwd`.
    pub(crate) fn locate_in_block(
        &mut self,
        n: usize,
        lines: &[&str],
        i: usize,
        ends: impl Fn(&str) -> bool,
        cwd: &Path,
    ) {
        let rest = &lines[i + 1..];
        let end = rest.iter().position(|l| ends(l)).unwrap_or(rest.len());
        self.locate(n, trace::location(&rest[..end].join("\n"), Some(cwd)));
    }

    /// The parser's result: these cases, by `framework`, read as `format`, with `totals`.
    pub(crate) fn into_parsed(
        self,
        framework: &'static str,
        format: &'static str,
        totals: Totals,
    ) -> Parsed {
        Parsed {
            framework,
            format,
            totals,
            tests: self.tests,
        }
    }

    pub(crate) fn len(&self) -> u32 {
        u32::try_from(self.tests.len()).unwrap_or(u32::MAX)
    }
}

/// Where a tool's report ends: the last of `lines` that `summary` matches, and the totals of
/// its first group's counts (see [`add_counts`]); `None` when no line matches.
pub(crate) fn last_summary(
    lines: &[&str],
    summary: &regex::Regex,
    map: fn(&str) -> Option<Bucket>,
) -> Option<(usize, Totals)> {
    let last = lines.iter().rposition(|l| summary.is_match(l))?;
    let mut totals = Totals::default();
    if let Some(c) = summary.captures(lines[last]) {
        add_counts(&mut totals, &c[1], map);
    }
    Some((last, totals))
}

/// Adds `N word` counts (`3 passed`, `1 failed`, ...) to totals; `map` names the bucket of a word.
pub(crate) fn add_counts(totals: &mut Totals, text: &str, map: fn(&str) -> Option<Bucket>) {
    let Some(re) = regex!(r"(\d+) ([a-z]+)") else {
        return;
    };
    for c in re.captures_iter(text) {
        let n: u32 = c[1].parse().unwrap_or(0);
        match map(&c[2]) {
            Some(Bucket::Passed) => totals.passed = totals.passed.saturating_add(n),
            Some(Bucket::Failed) => totals.failed = totals.failed.saturating_add(n),
            Some(Bucket::Skipped) => totals.skipped = totals.skipped.saturating_add(n),
            None => {}
        }
    }
}

pub(crate) enum Bucket {
    Passed,
    Failed,
    Skipped,
}

pub(crate) fn join_id(file: Option<&str>, name: &str) -> String {
    match file {
        Some(f) if !f.is_empty() && f != name => format!("{f}::{name}"),
        _ => name.to_string(),
    }
}
