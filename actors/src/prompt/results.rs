//! The last test run as the prompts show it: its failures, most relevant first, within a size.

use serde::{Deserialize, Serialize};

use crate::policy::pace::Shown;
use crate::schema::test_run::{Category, TestCase, TestRun};

/// The last test run as the prompts show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResultsView {
    pub summary: String,
    pub passed: bool,
    pub failing: Vec<String>,
    /// The failing tests, most relevant first, within the configured size.
    #[serde(default)]
    pub failures: Vec<FailureView>,
    /// Failing tests left out of `failures` for size.
    #[serde(default)]
    pub omitted: usize,
    /// Success criteria not met (coverage, linter), when the tests passed.
    #[serde(default)]
    pub unmet: Option<String>,
    /// The tail of the output, within what the failures left of the configured size.
    pub output: String,
}

impl ResultsView {
    /// What the view shows, for `librarian.analyze: auto`.
    pub fn shown(&self) -> Shown {
        Shown {
            passed: self.passed,
            failing: self.failing.len(),
            omitted: self.omitted,
            undetailed: self.failures.is_empty()
                || self
                    .failures
                    .iter()
                    .any(|f| f.message.is_none() && f.stack.is_none()),
        }
    }
}

/// One failing test as the prompts show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailureView {
    pub id: String,
    pub category: Option<String>,
    pub error_type: Option<String>,
    /// `file:line` where the failure was raised.
    pub location: Option<String>,
    pub message: Option<String>,
    pub stack: Option<String>,
}

/// A failure's message and stack are each cut to this much, so one long diff does not crowd out
/// the other failures.
const MESSAGE_MAX: usize = 2000;
const STACK_MAX: usize = 1200;

/// The run as the Artisan sees it: its failures, most relevant first, then the tail of its
/// output, all within `max_bytes`. Most relevant: failures that stop everything (SYNTAX, then
/// ENVIRONMENT) before wrong answers (LOGIC) and limits (PERFORMANCE); within a category, those
/// raised in the target or its test file (`relevant` paths) first; then the tool's order.
pub fn view(run: &TestRun, max_bytes: usize, relevant: &[Option<&str>]) -> ResultsView {
    let rank = |c: Option<Category>| match c {
        Some(Category::Syntax) => 0,
        Some(Category::Environment) => 1,
        Some(Category::Logic) => 2,
        Some(Category::Performance) => 3,
        Some(Category::Flaky) | None => 4,
    };
    let names: Vec<&str> = relevant
        .iter()
        .flatten()
        .map(|p| p.rsplit('/').next().unwrap_or(p))
        .collect();
    let mentions = |t: &TestCase| {
        let text = [
            t.location.as_ref().map(|l| l.file.as_str()),
            t.file.as_deref(),
            t.stack.as_deref(),
            Some(t.id.as_str()),
        ];
        names
            .iter()
            .any(|n| text.iter().flatten().any(|s| s.contains(n)))
    };
    let mut failing: Vec<(usize, &TestCase)> = run.failures().enumerate().collect();
    failing.sort_by_key(|(i, t)| (rank(t.category), !mentions(t), *i));

    let mut budget = max_bytes;
    let mut failures = Vec::new();
    let mut omitted = 0;
    for (_, t) in failing {
        let message = t.message.as_deref().map(|m| cut(m, MESSAGE_MAX));
        let stack = t.stack.as_deref().map(|m| cut(m, STACK_MAX));
        let size = t.id.len()
            + message.as_ref().map_or(0, String::len)
            + stack.as_ref().map_or(0, String::len)
            + 64;
        if size > budget && !failures.is_empty() {
            omitted += 1;
            continue;
        }
        budget = budget.saturating_sub(size);
        failures.push(FailureView {
            id: t.id.clone(),
            category: t.category.map(|c| c.as_str().to_string()),
            error_type: t.error_type.clone(),
            location: t.location.as_ref().map(|l| match l.line {
                Some(line) => format!("{}:{line}", l.file),
                None => l.file.clone(),
            }),
            message,
            stack,
        });
    }
    // With the failures read from a report, the output adds little: it gets what is left, at
    // most a quarter of the allowance.
    let output_bytes = if failures.is_empty() {
        max_bytes
    } else {
        budget.min(max_bytes / 4)
    };
    ResultsView {
        summary: run.summary(),
        passed: run.passed(),
        failing: run.failing_ids().into_iter().map(String::from).collect(),
        failures,
        omitted,
        unmet: run.unmet_criteria(),
        output: tail(&run.output, output_bytes),
    }
}

/// `text` cut to about `max` bytes on a char boundary, marked when cut.
fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}\n[... {} more bytes]", &text[..end], text.len() - end)
}

/// The last `max_bytes` of a run's output, cut on a line boundary.
fn tail(out: &str, max_bytes: usize) -> String {
    let mut start = out.len().saturating_sub(max_bytes);
    while !out.is_char_boundary(start) {
        start += 1;
    }
    // Start on a whole line: at `start` if a line begins there, else after the next newline.
    if start > 0 && out.as_bytes()[start - 1] != b'\n' {
        start = out[start..].find('\n').map_or(start, |i| start + i + 1);
    }
    let mut output = out[start..].to_string();
    if start > 0 {
        output.insert_str(
            0,
            &format!("[... {start} earlier bytes of output cut ...]\n"),
        );
    }
    output
}
