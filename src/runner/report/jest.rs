//! jest's `--json` report and vitest's JSON reporter, which copies jest's shape:
//! `testResults[]` per file, each with `assertionResults[]` per test and a `message` that holds
//! the error of a file that failed to run (a syntax error, a missing module).

use std::borrow::Cow;
use std::path::Path;

use ralph_actors::schema::test_run::{CaseStatus, Location, TestCase};
use serde::Deserialize;

use super::ids::{join_id, unique_ids};
use crate::runner::reading::strip_ansi;
use crate::runner::reading::text::{clip, is_timeout_message};
use crate::runner::reading::trace::{self, STACK_MAX_BYTES};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flavor {
    Jest,
    Vitest,
}

// Strings are borrowed from the report where they hold no escapes: a 10,000-test report is
// otherwise mostly spent in allocating them.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Report<'a> {
    #[serde(borrow)]
    test_results: Vec<FileResult<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FileResult<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(default, borrow)]
    message: Cow<'a, str>,
    #[serde(default, borrow)]
    status: Cow<'a, str>,
    #[serde(default, borrow)]
    assertion_results: Vec<Assertion<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Assertion<'a> {
    #[serde(default, borrow)]
    ancestor_titles: Vec<Cow<'a, str>>,
    #[serde(borrow)]
    title: Cow<'a, str>,
    #[serde(borrow)]
    status: Cow<'a, str>,
    #[serde(default)]
    duration: Option<f64>,
    #[serde(default)]
    failure_messages: Vec<String>,
    /// jest: one entry per failure; an `expect` failure carries a `matcherResult`.
    #[serde(default)]
    failure_details: Vec<serde_json::Value>,
    /// Set with jest's `--testLocationInResults` or vitest's `includeTaskLocation`.
    #[serde(default)]
    location: Option<TestLocation>,
}

#[derive(Deserialize)]
struct TestLocation {
    line: Option<u32>,
    column: Option<u32>,
}

pub(crate) fn parse(
    data: &str,
    cwd: &Path,
    flavor: Flavor,
) -> Result<(&'static str, Vec<TestCase>), String> {
    let report: Report = serde_json::from_str(data).map_err(|e| {
        if e.is_eof() {
            format!("the JSON ends early (truncated?): {e}")
        } else {
            format!("not a jest-style JSON report: {e}")
        }
    })?;
    let mut tests = Vec::with_capacity(
        report
            .test_results
            .iter()
            .map(|f| f.assertion_results.len() + 1)
            .sum(),
    );
    for file in &report.test_results {
        let path = trace::relative(&file.name, cwd);
        let mut any_failed = false;
        for a in &file.assertion_results {
            let case = assertion_case(a, &path, cwd);
            any_failed |= matches!(case.status, CaseStatus::Fail | CaseStatus::Timeout);
            tests.push(case);
        }
        // A file that failed with no failing test: it did not load (syntax error, missing
        // module), or a hook outside any test threw. Its message is all there is.
        if file.status == "failed" && !any_failed && !file.message.trim().is_empty() {
            tests.push(file_failure(&file.message, &path, cwd));
        }
    }
    unique_ids(&mut tests);
    let framework = match flavor {
        Flavor::Jest => "jest",
        Flavor::Vitest => "vitest",
    };
    Ok((framework, tests))
}

fn assertion_case(a: &Assertion<'_>, file: &str, cwd: &Path) -> TestCase {
    let mut path: Vec<&str> = a.ancestor_titles.iter().map(|t| t.as_ref()).collect();
    path.push(&a.title);
    let name = path.join(" > ");
    let mut case = TestCase {
        id: join_id(Some(file), &name),
        name,
        file: Some(file.to_string()),
        duration_ms: a.duration,
        status: match a.status.as_ref() {
            "passed" => CaseStatus::Pass,
            "failed" => CaseStatus::Fail,
            // pending, skipped, todo, disabled
            _ => CaseStatus::Skip,
        },
        ..TestCase::default()
    };
    if case.status != CaseStatus::Fail {
        return case;
    }
    let Some(first) = a.failure_messages.first() else {
        return case;
    };
    let text = strip_ansi(first);
    let (head, frames) = trace::split_js_stack(&text);
    let is_expect = a
        .failure_details
        .first()
        .is_some_and(|d| d.get("matcherResult").is_some());
    // jest prints an `expect` failure as a plain `Error`; its class is an assertion error.
    let (head, error_type) = if is_expect {
        (
            head.strip_prefix("Error: ").unwrap_or(head),
            Some("AssertionError".to_string()),
        )
    } else {
        (head, trace::js_error_type(head))
    };
    if is_timeout_message(head) {
        case.status = CaseStatus::Timeout;
    }
    case.message = clip(head.lines());
    case.error_type = error_type;
    case.stack = frames.map(|f| trace::cap(f, STACK_MAX_BYTES));
    case.location = trace::location(&text, Some(cwd)).or_else(|| {
        a.location.as_ref().map(|l| Location {
            file: file.to_string(),
            line: l.line,
            column: l.column,
        })
    });
    case
}

/// The one case standing for a file that failed to run: id = the file.
fn file_failure(message: &str, file: &str, cwd: &Path) -> TestCase {
    let text = strip_ansi(message);
    let lines: Vec<&str> = text.lines().collect();
    // jest heads it `● Test suite failed to run`, and for a parse error explains jest's
    // configuration at length before `Details:`, then gives the error itself.
    let start = lines
        .iter()
        .position(|l| l.trim() == "Details:")
        .or_else(|| lines.iter().position(|l| l.trim_start().starts_with("● ")))
        .map_or(0, |i| i + 1);
    let body = lines[start..].iter().copied().take_while(|l| {
        let t = l.trim_start();
        !(t.starts_with("at ") || is_code_frame(t))
    });
    let message = clip(body);
    let error_type = message
        .as_deref()
        .and_then(trace::js_error_type)
        .filter(|t| t != "Error");
    TestCase {
        id: file.to_string(),
        file: Some(file.to_string()),
        status: CaseStatus::Fail,
        error_type,
        message,
        stack: Some(trace::cap(text.trim(), STACK_MAX_BYTES)),
        location: trace::location(&text, Some(cwd)),
        ..TestCase::default()
    }
}

/// A source excerpt line: `> 1 | code`, `  2 | code` (jest), `1 │ code`, `╭─[`, `│` (vitest).
fn is_code_frame(trimmed: &str) -> bool {
    if trimmed.starts_with('╭') || trimmed.starts_with('│') || trimmed.starts_with('─') {
        return true;
    }
    let t = trimmed.strip_prefix('>').unwrap_or(trimmed).trim_start();
    let digits = t.chars().take_while(char::is_ascii_digit).count();
    digits > 0 && {
        let rest = t[digits..].trim_start();
        rest.starts_with('|') || rest.starts_with('│')
    }
}
