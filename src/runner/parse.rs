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

use std::collections::HashMap;
use std::path::Path;
use std::sync::LazyLock;

use ralph_actors::schema::test_run::{CaseStatus, Location, TestCase, Totals};
use regex::Regex;

use super::report::junit::python_node_id;
use super::report::trace;

/// A compiled static regex. A pattern that does not compile (a bug the unit tests catch) yields
/// `None`, and the parser using it then declines the output instead of panicking.
macro_rules! regex {
    ($re:literal) => {{
        static RE: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new($re).ok());
        RE.as_ref()
    }};
}

/// A failure message is cut to this many lines and bytes: enough for an assertion and its diff.
const MESSAGE_MAX_LINES: usize = 40;
const MESSAGE_MAX_BYTES: usize = 4000;

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

/// Parses a test run's output (with ANSI escapes already removed). `cwd` is the directory the
/// command ran in; absolute paths under it are shortened in test ids.
pub fn parse(output: &str, cwd: &Path) -> Option<Parsed> {
    // The summary lines are distinct enough that the order only matters for tools that print
    // several summaries (e.g. `npm test` running two tools): the first recognised wins.
    let mut parsed = pytest(output, cwd)
        .or_else(|| unittest(output, cwd))
        .or_else(|| cargo(output))
        .or_else(|| vitest(output, cwd))
        .or_else(|| jest(output, cwd))
        .or_else(|| node_tap(output, cwd))
        .or_else(|| node_spec(output, cwd))
        .or_else(|| mocha(output, cwd))?;
    finish(&mut parsed, cwd);
    Some(parsed)
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

/// Removes ANSI colour and cursor sequences (some tools colour their output even with `NO_COLOR`).
pub fn strip_ansi(text: &str) -> std::borrow::Cow<'_, str> {
    match regex!(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]") {
        Some(re) if text.contains('\x1b') => re.replace_all(text, ""),
        _ => std::borrow::Cow::Borrowed(text),
    }
}

// ---------------------------------------------------------------------------------------------
// Shared helpers

/// Builds the result list: one case per id (the first one seen wins, later repeats fill a
/// missing message).
#[derive(Default)]
struct Cases {
    tests: Vec<TestCase>,
    index: HashMap<String, usize>,
}

impl Cases {
    /// Adds a failure (a timeout when the message says so); returns its index.
    fn add(&mut self, id: String, message: Option<String>) -> usize {
        let status = if message.as_deref().is_some_and(is_timeout_message) {
            CaseStatus::Timeout
        } else {
            CaseStatus::Fail
        };
        self.add_with(id, status, message)
    }

    fn add_with(&mut self, id: String, status: CaseStatus, message: Option<String>) -> usize {
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
    fn locate(&mut self, i: usize, location: Option<Location>) {
        if let Some(t) = self.tests.get_mut(i) {
            if t.location.is_none() {
                t.location = location;
            }
        }
    }

    fn len(&self) -> u32 {
        u32::try_from(self.tests.len()).unwrap_or(u32::MAX)
    }
}

/// The tools' own words for a test that ran out of time.
pub(crate) fn is_timeout_message(message: &str) -> bool {
    let first = message.lines().next().unwrap_or("").to_ascii_lowercase();
    first.contains("timed out")
        || first.contains("timeout of")
        || first.contains("exceeded timeout")
        || first.starts_with("failed: timeout")
}

/// Joins message lines: blank lines at both ends dropped, the common indentation removed, and
/// the result capped.
pub(crate) fn clip<'a>(lines: impl IntoIterator<Item = &'a str>) -> Option<String> {
    let lines: Vec<&str> = lines.into_iter().map(str::trim_end).collect();
    let start = lines.iter().position(|l| !l.is_empty())?;
    let end = lines.iter().rposition(|l| !l.is_empty())? + 1;
    let lines = &lines[start..end];
    let indent = lines
        .iter()
        .filter(|l| !l.is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    let mut out = String::new();
    for (n, line) in lines.iter().enumerate() {
        if n == MESSAGE_MAX_LINES {
            out.push_str("\n...");
            break;
        }
        if n > 0 {
            out.push('\n');
        }
        out.push_str(line.get(indent..).unwrap_or(line.trim_start()));
    }
    if out.len() > MESSAGE_MAX_BYTES {
        let mut cut = MESSAGE_MAX_BYTES;
        while !out.is_char_boundary(cut) {
            cut -= 1;
        }
        out.truncate(cut);
        out.push_str("...");
    }
    Some(out)
}

/// Adds `N word` counts (`3 passed`, `1 failed`, ...) to totals; `map` names the bucket of a word.
fn add_counts(totals: &mut Totals, text: &str, map: fn(&str) -> Option<Bucket>) {
    let Some(re) = regex!(r"(\d+) ([a-z]+)") else {
        return;
    };
    for c in re.captures_iter(text) {
        let n: u32 = c[1].parse().unwrap_or(0);
        match map(&c[2]) {
            Some(Bucket::Passed) => totals.passed += n,
            Some(Bucket::Failed) => totals.failed += n,
            Some(Bucket::Skipped) => totals.skipped += n,
            None => {}
        }
    }
}

enum Bucket {
    Passed,
    Failed,
    Skipped,
}

fn join_id(file: Option<&str>, name: &str) -> String {
    match file {
        Some(f) if !f.is_empty() && f != name => format!("{f}::{name}"),
        _ => name.to_string(),
    }
}

// ---------------------------------------------------------------------------------------------
// pytest

/// pytest's final line, with or without `-q`:
/// `=== 3 failed, 3 passed, 1 skipped, 1 error in 0.07s ===`, `no tests ran in 0.00s`.
fn pytest(out: &str, cwd: &Path) -> Option<Parsed> {
    let summary = regex!(
        r"^=*\s*(no tests ran|\d+ [a-z]+(?:, \d+ [a-z]+)*) in \d+(?:\.\d+)?s(?: \([\d:.]+\))?\s*=*$"
    )?;
    let entry = regex!(r"^(FAILED|ERROR) (.+?)(?: - (.*))?$")?;
    let section = regex!(r"^_{3,} (.+?) _{3,}$")?;

    let lines: Vec<&str> = out.lines().collect();
    let last = lines.iter().rposition(|l| summary.is_match(l))?;
    let mut totals = Totals::default();
    if let Some(c) = summary.captures(lines[last]) {
        add_counts(&mut totals, &c[1], |w| match w {
            "passed" | "xpassed" => Some(Bucket::Passed),
            "failed" | "error" | "errors" => Some(Bucket::Failed),
            "skipped" | "xfailed" => Some(Bucket::Skipped),
            _ => None,
        });
    }

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
    Some(Parsed {
        framework: "pytest",
        format: "pytest-text",
        totals,
        tests: cases.tests,
    })
}

// ---------------------------------------------------------------------------------------------
// python -m unittest

/// `Ran 7 tests in 0.006s`, then `OK` or `FAILED (failures=1, errors=2, skipped=1)`; each
/// failure is a block headed `FAIL: test_x (module.Class.test_x)` between `====` rules.
fn unittest(out: &str, cwd: &Path) -> Option<Parsed> {
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
                "failures" | "errors" => totals.failed += n,
                "skipped" | "expected failures" => totals.skipped += n,
                // Unexpected successes ran and passed.
                _ => {}
            }
        }
    }
    totals.passed = total.saturating_sub(totals.failed + totals.skipped);

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
        // The body runs from the `----` rule to the next `====` rule or the closing rule.
        let from = lines[i..at]
            .iter()
            .position(|l| l.starts_with("----"))
            .map_or(i, |p| i + p + 1);
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
    Some(Parsed {
        framework: "unittest",
        format: "unittest-text",
        totals,
        tests: cases.tests,
    })
}

// ---------------------------------------------------------------------------------------------
// cargo test (libtest)

fn cargo(out: &str) -> Option<Parsed> {
    let result = regex!(
        r"^test result: (?:ok|FAILED)\. (\d+) passed; (\d+) failed; (\d+) ignored(?:; (\d+) measured)?"
    )?;
    let running = regex!(r"^\s*Running (?:unittests |tests? |benches )?(\S+)")?;
    let case = regex!(r"^test (.+?) \.\.\. (FAILED|ok|ignored)\b")?;
    let stdout_header = regex!(r"^---- (.+?) stdout ----$")?;
    let thread = regex!(r"^thread '.*?'(?: \(\d+\))? panicked at ")?;

    if !out.lines().any(|l| result.is_match(l)) {
        return None;
    }
    let mut totals = Totals::default();
    // (binary source file, test name) of each failure, and the messages by the same key.
    let mut failed: Vec<(Option<String>, String)> = Vec::new();
    let mut messages: HashMap<(Option<String>, String), Vec<String>> = HashMap::new();
    let mut file: Option<String> = None;
    // The failure whose `---- name stdout ----` section is being read, if still collecting.
    let mut section: Option<(Option<String>, String)> = None;

    for line in out.lines() {
        if let Some(c) = result.captures(line) {
            totals.passed += c[1].parse().unwrap_or(0);
            totals.failed += c[2].parse().unwrap_or(0);
            totals.skipped += c[3].parse().unwrap_or(0);
            section = None;
        } else if let Some(c) = running.captures(line) {
            // `Running unittests src/lib.rs (target/...)` names the source; an old cargo prints
            // only the binary, whose hash changes with every build: no file then.
            let f = &c[1];
            file = (!f.starts_with("target/") && !f.contains("/deps/")).then(|| f.to_string());
            section = None;
        } else if line.trim_start().starts_with("Doc-tests ") {
            file = None;
            section = None;
        } else if let Some(c) = case.captures(line) {
            if &c[2] == "FAILED" {
                failed.push((file.clone(), c[1].to_string()));
            }
        } else if let Some(c) = stdout_header.captures(line) {
            section = Some((file.clone(), c[1].to_string()));
        } else if line == "failures:"
            || line.starts_with("stack backtrace:")
            || line.starts_with("note: ")
        {
            section = None;
        } else if let Some(key) = &section {
            let text = thread.replace(line, "panicked at ").into_owned();
            messages.entry(key.clone()).or_default().push(text);
        }
    }

    let mut cases = Cases::default();
    for key in failed {
        let message = messages
            .get(&key)
            .and_then(|m| clip(m.iter().map(String::as_str)));
        cases.add(join_id(key.0.as_deref(), &key.1), message);
    }
    Some(Parsed {
        framework: "cargo",
        format: "cargo-text",
        totals,
        tests: cases.tests,
    })
}

// ---------------------------------------------------------------------------------------------
// vitest

/// `      Tests  2 failed | 2 passed | 1 skipped (5)`; each failure is a block headed
/// ` FAIL  src/a.test.ts > suite > name` (or ` FAIL  src/a.test.ts [ src/a.test.ts ]` for a file
/// that did not load).
fn vitest(out: &str, cwd: &Path) -> Option<Parsed> {
    let summary = regex!(r"^\s*Tests\s{2,}(.*\d+ [a-z]+.*?)\s*\(\d+\)\s*$")?;
    let fail = regex!(r"^\s*FAIL\s+(?:\|[^|]+\|\s+)?(.+?)\s*$")?;
    let lines: Vec<&str> = out.lines().collect();
    let last = lines.iter().rposition(|l| summary.is_match(l))?;

    let mut totals = Totals::default();
    if let Some(c) = summary.captures(lines[last]) {
        add_counts(&mut totals, &c[1], |w| match w {
            "passed" => Some(Bucket::Passed),
            "failed" => Some(Bucket::Failed),
            "skipped" | "todo" => Some(Bucket::Skipped),
            _ => None,
        });
    }

    let mut cases = Cases::default();
    let mut suites_failed = 0;
    for (i, line) in lines[..last].iter().enumerate() {
        let Some(c) = fail.captures(line) else {
            continue;
        };
        let title = &c[1];
        let (id, suite) = match title.split_once(" > ") {
            Some((file, name)) => (join_id(Some(file), name), false),
            // `file [ file ]`: the file failed before its tests ran.
            None => (title.split(" [").next().unwrap_or(title).to_string(), true),
        };
        let body = lines[i + 1..last].iter().copied().take_while(|l| {
            let t = l.trim_start();
            !(t.starts_with('⎯')
                || t.starts_with("❯ ")
                || fail.is_match(l)
                || t.starts_with("Test Files ")
                || is_code_frame(t, '|'))
        });
        if suite && !cases.index.contains_key(&id) {
            suites_failed += 1;
        }
        let n = cases.add(id, clip(body));
        // The block's frames (`❯ src/a.test.ts:9:34`) run to the next failure or rule.
        let end = lines[i + 1..last]
            .iter()
            .position(|l| fail.is_match(l) || l.trim_start().starts_with('⎯'))
            .map_or(last, |p| i + 1 + p);
        cases.locate(n, trace::location(&lines[i + 1..end].join("\n"), Some(cwd)));
    }
    // A file that failed to load counts no tests; count it so a failed run never shows 0 failed.
    totals.failed += suites_failed;
    Some(Parsed {
        framework: "vitest",
        format: "vitest-text",
        totals,
        tests: cases.tests,
    })
}

/// A source excerpt line: `  3| code` (vitest) or `> 3 | code` (jest).
fn is_code_frame(trimmed: &str, bar: char) -> bool {
    let t = trimmed.strip_prefix('>').unwrap_or(trimmed).trim_start();
    let digits = t.chars().take_while(char::is_ascii_digit).count();
    digits > 0 && t[digits..].trim_start().starts_with(bar)
}

// ---------------------------------------------------------------------------------------------
// jest

/// `Tests:       2 failed, 1 skipped, 2 passed, 5 total`; failures are blocks headed
/// `  ● Suite › name` under a `FAIL path/to/file.test.js` line.
fn jest(out: &str, cwd: &Path) -> Option<Parsed> {
    let summary = regex!(r"^Tests:\s+(.*\d+ total)\s*$")?;
    let file_line = regex!(r"^\s*(?:FAIL|PASS)\s+(.+?)(?:\s+\(\d+(?:\.\d+)?\s*m?s\))?\s*$")?;
    let lines: Vec<&str> = out.lines().collect();
    let last = lines.iter().rposition(|l| summary.is_match(l))?;

    let mut totals = Totals::default();
    if let Some(c) = summary.captures(lines[last]) {
        add_counts(&mut totals, &c[1], |w| match w {
            "passed" => Some(Bucket::Passed),
            "failed" => Some(Bucket::Failed),
            "skipped" | "todo" | "pending" => Some(Bucket::Skipped),
            _ => None,
        });
    }

    let mut cases = Cases::default();
    let mut suites_failed = 0;
    let mut file: Option<&str> = None;
    for (i, line) in lines[..last].iter().enumerate() {
        if let Some(c) = file_line.captures(line) {
            // With projects, a display name comes first: the path is the last word.
            file = c.get(1).and_then(|m| m.as_str().split_whitespace().last());
            continue;
        }
        let Some(name) = line.strip_prefix("  ● ") else {
            continue;
        };
        if name.starts_with("Console") {
            continue;
        }
        let name = name.trim_end();
        let suite = name == "Test suite failed to run";
        // As in jest's JSON report: a file that did not run is its own id, and blocks are
        // joined by ` > ` rather than jest's ` › `.
        let id = if suite {
            file.unwrap_or(name).to_string()
        } else {
            join_id(file, &name.replace(" › ", " > "))
        };
        let ends = |l: &str| {
            l.starts_with("  ● ")
                || file_line.is_match(l)
                || l.starts_with("Test Suites:")
                || l.starts_with("Summary of all failing tests")
        };
        let body: Vec<&str> = lines[i + 1..last]
            .iter()
            .copied()
            .take_while(|l| {
                let t = l.trim_start();
                !(ends(l) || t.starts_with("at ") || is_code_frame(t, '|'))
            })
            .collect();
        // A parse error comes after a long explanation of jest's configuration.
        let body = match body.iter().position(|l| l.trim() == "Details:") {
            Some(d) => &body[d + 1..],
            None => &body[..],
        };
        if suite && !cases.index.contains_key(&id) {
            suites_failed += 1;
        }
        let n = cases.add(id, clip(body.iter().copied()));
        let end = lines[i + 1..last]
            .iter()
            .position(|l| ends(l))
            .map_or(last, |p| i + 1 + p);
        cases.locate(n, trace::location(&lines[i + 1..end].join("\n"), Some(cwd)));
    }
    // A suite that failed to run counts no tests; count it so a failed run never shows 0 failed.
    totals.failed += suites_failed;
    Some(Parsed {
        framework: "jest",
        format: "jest-text",
        totals,
        tests: cases.tests,
    })
}

// ---------------------------------------------------------------------------------------------
// node --test, TAP reporter (node 18-22 when stdout is not a terminal)

/// One `ok` / `not ok` line with its YAML diagnostics.
struct TapResult {
    ok: bool,
    directive: bool,
    name: String,
    yaml: Vec<(String, String)>,
    ancestors: Vec<String>,
    comments: Vec<String>,
}

fn node_tap(out: &str, cwd: &Path) -> Option<Parsed> {
    let result = regex!(r"^(\s*)(not ok|ok) \d+(?: - (.*?))?(?: # (SKIP|TODO|skip|todo)\b.*)?$")?;
    let plan = regex!(r"^\s*1\.\.\d+")?;
    let count = regex!(r"^# (tests|pass|fail|cancelled|skipped|todo|suites|duration_ms) [\d.]+$")?;

    let lines: Vec<&str> = out.lines().collect();
    let looks_tap = lines.iter().any(|l| l.starts_with("TAP version")) || {
        lines.iter().any(|l| plan.is_match(l)) && lines.iter().any(|l| result.is_match(l))
    };
    if !looks_tap {
        return None;
    }

    let mut results: Vec<TapResult> = Vec::new();
    let mut subtests: Vec<(usize, String)> = Vec::new();
    let mut comments: Vec<String> = Vec::new();
    let mut totals = Totals::default();
    let mut have_counts = false;
    let mut node = false;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        i += 1;
        let depth = line.len() - line.trim_start().len();
        let text = line.trim_start();
        if let Some(name) = text.strip_prefix("# Subtest: ") {
            node = true;
            subtests.retain(|(d, _)| *d < depth);
            subtests.push((depth, unescape_tap(name)));
        } else if let Some(c) = result.captures(line) {
            let ancestors = subtests
                .iter()
                .filter(|(d, _)| *d < depth)
                .map(|(_, n)| n.clone())
                .collect();
            let mut yaml = Vec::new();
            if lines.get(i).is_some_and(|l| l.trim() == "---") {
                let base = lines[i].len() - lines[i].trim_start().len();
                let end = lines[i + 1..]
                    .iter()
                    .position(|l| l.trim() == "...")
                    .map_or(lines.len(), |p| i + 1 + p);
                yaml = parse_yaml_map(&lines[i + 1..end], base);
                i = (end + 1).min(lines.len());
            }
            results.push(TapResult {
                ok: &c[2] == "ok",
                directive: c.get(4).is_some(),
                name: c.get(3).map_or(String::new(), |m| unescape_tap(m.as_str())),
                yaml,
                ancestors,
                comments: std::mem::take(&mut comments),
            });
        } else if depth == 0 && count.is_match(text) {
            have_counts = true;
            let (key, n) = text[2..].split_once(' ').unwrap_or(("", "0"));
            let n: u32 = n.parse().unwrap_or(0);
            match key {
                "pass" => totals.passed += n,
                "fail" | "cancelled" => totals.failed += n,
                "skipped" | "todo" => totals.skipped += n,
                _ => {}
            }
        } else if let Some(c) = text.strip_prefix('#') {
            // Diagnostics: node prints a file's load error (a SyntaxError...) this way.
            comments.push(c.strip_prefix(' ').unwrap_or(c).to_string());
        }
    }

    let mut cases = Cases::default();
    for r in &results {
        let get = |k: &str| {
            r.yaml
                .iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.as_str())
        };
        if !have_counts && r.ancestors.is_empty() {
            match (r.ok, r.directive) {
                (_, true) => totals.skipped += 1,
                (true, false) => totals.passed += 1,
                (false, false) => totals.failed += 1,
            }
        }
        // A suite, or a test failing only because its subtests did, is not a failure itself.
        if r.ok || r.directive || get("type") == Some("suite") {
            continue;
        }
        if get("failureType") == Some("subtestsFailed") {
            continue;
        }
        let file = get("location").map(|loc| relative(strip_line_col(loc), cwd));
        let mut path = r.ancestors.clone();
        path.push(r.name.clone());
        let name = path.join(" > ");
        // A file that failed to load is reported under its own (absolute) path.
        let id = if file.as_deref().is_some_and(|f| relative(&name, cwd) == f) {
            relative(&name, cwd)
        } else {
            join_id(file.as_deref(), &name)
        };
        let error = get("error").filter(|e| !e.is_empty() && *e != "test failed");
        let message = match error {
            Some(e) => clip(e.lines()),
            // The load error without its stack.
            None => clip(
                r.comments
                    .iter()
                    .map(String::as_str)
                    .take_while(|l| !l.trim_start().starts_with("at ")),
            )
            .or_else(|| get("error").map(String::from)),
        };
        let status = if get("failureType") == Some("testTimeoutFailure") {
            CaseStatus::Timeout
        } else {
            CaseStatus::Fail
        };
        cases.add_with(id, status, message);
    }
    if !have_counts && totals.failed < cases.len() {
        totals.failed = cases.len();
    }
    let (framework, format) = if node {
        ("node", "node-tap")
    } else {
        ("tap", "tap")
    };
    Some(Parsed {
        framework,
        format,
        totals,
        tests: cases.tests,
    })
}

fn unescape_tap(s: &str) -> String {
    s.replace("\\#", "#").replace("\\\\", "\\")
}

/// The top-level `key: value` pairs of a YAML block; enough YAML for node's diagnostics: plain,
/// single- and double-quoted scalars and `|` / `>` block scalars.
fn parse_yaml_map(lines: &[&str], base: usize) -> Vec<(String, String)> {
    let mut map = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        i += 1;
        let indent = line.len() - line.trim_start().len();
        if indent != base {
            continue;
        }
        let Some((key, value)) = line.trim().split_once(':') else {
            continue;
        };
        let value = value.trim();
        let value = if value.starts_with('|') || value.starts_with('>') {
            let block: Vec<&str> = lines[i..]
                .iter()
                .copied()
                .take_while(|l| l.trim().is_empty() || l.len() - l.trim_start().len() > base)
                .collect();
            i += block.len();
            clip(block).unwrap_or_default()
        } else if let Some(v) = value.strip_prefix('\'') {
            v.strip_suffix('\'').unwrap_or(v).replace("''", "'")
        } else if let Some(v) = value.strip_prefix('"') {
            let v = v.strip_suffix('"').unwrap_or(v);
            v.replace("\\n", "\n")
                .replace("\\\"", "\"")
                .replace("\\\\", "\\")
        } else {
            value.to_string()
        };
        map.push((key.trim().to_string(), value));
    }
    map
}

/// `/abs/file.js:4:1` → `/abs/file.js`.
fn strip_line_col(location: &str) -> &str {
    let mut s = location;
    for _ in 0..2 {
        match s.rsplit_once(':') {
            Some((head, tail)) if !tail.is_empty() && tail.bytes().all(|b| b.is_ascii_digit()) => {
                s = head
            }
            _ => break,
        }
    }
    s
}

fn relative(path: &str, cwd: &Path) -> String {
    Path::new(path)
        .strip_prefix(cwd)
        .map_or_else(|_| path.to_string(), |p| p.to_string_lossy().into_owned())
}

// ---------------------------------------------------------------------------------------------
// node --test, spec reporter (node 23+ by default, or `--test-reporter=spec`)

/// `ℹ pass 2` ... totals; the `✖ failing tests:` section lists each failure as
/// `test at file:line:col`, `✖ name (1.2ms)` and the indented error.
fn node_spec(out: &str, cwd: &Path) -> Option<Parsed> {
    let count = regex!(r"^ℹ (tests|pass|fail|cancelled|skipped|todo) (\d+)$")?;
    let location = regex!(r"^test at (.+?):\d+:\d+$")?;
    let failure = regex!(r"^✖ (.+?)(?: \(\d+(?:\.\d+)?m?s\))?(?: # .*)?$")?;
    let lines: Vec<&str> = out.lines().collect();
    if !lines.iter().any(|l| l.starts_with("ℹ pass ")) {
        return None;
    }
    let mut totals = Totals::default();
    for c in lines.iter().filter_map(|l| count.captures(l)) {
        let n: u32 = c[2].parse().unwrap_or(0);
        match &c[1] {
            "pass" => totals.passed += n,
            "fail" | "cancelled" => totals.failed += n,
            "skipped" | "todo" => totals.skipped += n,
            _ => {}
        }
    }
    let mut cases = Cases::default();
    let from = lines
        .iter()
        .rposition(|l| l.starts_with("✖ failing tests:"));
    let mut file: Option<&str> = None;
    for (i, line) in lines
        .iter()
        .enumerate()
        .skip(from.map_or(lines.len(), |f| f + 1))
    {
        if let Some(c) = location.captures(line) {
            file = c.get(1).map(|m| m.as_str());
            continue;
        }
        let Some(c) = failure.captures(line) else {
            continue;
        };
        let body = lines[i + 1..].iter().copied().take_while(|l| {
            !(l.trim_start().starts_with("at ") || location.is_match(l) || failure.is_match(l))
        });
        let message =
            clip(body).map(
                |m| match m.strip_prefix('\'').and_then(|m| m.strip_suffix('\'')) {
                    Some(inner) if !inner.contains('\n') => inner.to_string(),
                    _ => m,
                },
            );
        let n = cases.add(join_id(file, &c[1]), message);
        let end = lines[i + 1..]
            .iter()
            .position(|l| location.is_match(l) || failure.is_match(l))
            .map_or(lines.len(), |p| i + 1 + p);
        cases.locate(n, trace::location(&lines[i + 1..end].join("\n"), Some(cwd)));
        file = None;
    }
    Some(Parsed {
        framework: "node",
        format: "node-spec",
        totals,
        tests: cases.tests,
    })
}

// ---------------------------------------------------------------------------------------------
// mocha, spec reporter

/// `  2 passing (9ms)`, `  1 pending`, `  2 failing`, then each failure as `  1) suite` with the
/// title continued on indented lines up to one ending in `:`, and the error below it.
fn mocha(out: &str, cwd: &Path) -> Option<Parsed> {
    let passing = regex!(r"^\s+(\d+) passing(?: \(.*\))?\s*$")?;
    let other = regex!(r"^\s+(\d+) (failing|pending)\s*$")?;
    let entry = regex!(r"^  (\d+)\) (.*)$")?;
    let lines: Vec<&str> = out.lines().collect();
    let at = lines.iter().rposition(|l| passing.is_match(l))?;

    let passed = passing
        .captures(lines[at])
        .and_then(|c| c[1].parse().ok())
        .unwrap_or(0);
    let mut totals = Totals {
        passed,
        ..Totals::default()
    };
    let mut failing_from = None;
    for (i, line) in lines.iter().enumerate().skip(at + 1).take(3) {
        if let Some(c) = other.captures(line) {
            let n: u32 = c[1].parse().unwrap_or(0);
            if &c[2] == "failing" {
                totals.failed = n;
                failing_from = Some(i + 1);
            } else {
                totals.skipped = n;
            }
        }
    }

    let mut cases = Cases::default();
    let mut i = failing_from.unwrap_or(lines.len());
    while i < lines.len() {
        let Some(c) = entry.captures(lines[i]) else {
            i += 1;
            continue;
        };
        // The title runs over lines (one per suite level) until one ends with `:`.
        let mut parts = vec![c[2].trim().to_string()];
        i += 1;
        while !parts.last().is_some_and(|p| p.ends_with(':')) && i < lines.len() {
            if lines[i].trim().is_empty() || entry.is_match(lines[i]) {
                break;
            }
            parts.push(lines[i].trim().to_string());
            i += 1;
        }
        if let Some(p) = parts.last_mut() {
            if let Some(stripped) = p.strip_suffix(':') {
                *p = stripped.to_string();
            }
        }
        let body: Vec<&str> = lines[i..]
            .iter()
            .copied()
            .take_while(|l| !(l.trim_start().starts_with("at ") || entry.is_match(l)))
            .collect();
        i += body.len();
        let message = clip(
            body.iter()
                .copied()
                .filter(|l| !l.trim().is_empty())
                .map(str::trim),
        );
        let n = cases.add(parts.join(" > "), message);
        let frames: Vec<&str> = lines[i..]
            .iter()
            .copied()
            .take_while(|l| l.trim_start().starts_with("at "))
            .collect();
        cases.locate(n, trace::location(&frames.join("\n"), Some(cwd)));
    }
    Some(Parsed {
        framework: "mocha",
        format: "mocha-text",
        totals,
        tests: cases.tests,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(name: &str) -> String {
        let text = match name {
            "pytest" => include_str!("testdata/pytest.txt"),
            "pytest_collect" => include_str!("testdata/pytest_collect.txt"),
            "pytest_pass" => include_str!("testdata/pytest_pass.txt"),
            "pytest_none" => include_str!("testdata/pytest_none.txt"),
            "pytest_q" => include_str!("testdata/pytest_q.txt"),
            "cargo" => include_str!("testdata/cargo.txt"),
            "cargo_bt" => include_str!("testdata/cargo_bt.txt"),
            "cargo_build" => include_str!("testdata/cargo_build.txt"),
            "jest" => include_str!("testdata/jest.txt"),
            "jest_bad" => include_str!("testdata/jest_bad.txt"),
            "vitest" => include_str!("testdata/vitest.txt"),
            "node_tap" => include_str!("testdata/node_tap.txt"),
            "node_tap2" => include_str!("testdata/node_tap2.txt"),
            "node_spec" => include_str!("testdata/node_spec.txt"),
            "node_spec2" => include_str!("testdata/node_spec2.txt"),
            "mocha" => include_str!("testdata/mocha.txt"),
            "mocha_pass" => include_str!("testdata/mocha_pass.txt"),
            "mocha_syn" => include_str!("testdata/mocha_syn.txt"),
            "unittest" => include_str!("testdata/unittest.txt"),
            "unittest_v" => include_str!("testdata/unittest_v.txt"),
            "unittest_ok" => include_str!("testdata/unittest_ok.txt"),
            _ => "",
        };
        strip_ansi(text).into_owned()
    }

    fn parsed(name: &str, cwd: &str) -> Parsed {
        match parse(&sample(name), Path::new(cwd)) {
            Some(p) => p,
            None => panic!("{name} not recognised"),
        }
    }

    fn totals(passed: u32, failed: u32, skipped: u32) -> Totals {
        Totals {
            passed,
            failed,
            skipped,
            ..Totals::default()
        }
    }

    fn ids(p: &Parsed) -> Vec<&str> {
        p.tests.iter().map(|t| t.id.as_str()).collect()
    }

    fn message<'a>(p: &'a Parsed, id: &str) -> &'a str {
        p.tests
            .iter()
            .find(|t| t.id == id)
            .and_then(|t| t.message.as_deref())
            .unwrap_or("<none>")
    }

    #[test]
    fn pytest_failures_errors_and_totals() {
        let p = parsed("pytest", "/tmp/samp/py");
        assert_eq!(p.framework, "pytest");
        assert_eq!(p.totals, totals(3, 4, 1));
        assert_eq!(
            ids(&p),
            [
                "tests/test_m.py::test_bad",
                "tests/test_m.py::TestCls::test_in_class",
                "tests/test_m.py::test_param[2]",
                "tests/test_m.py::test_err",
            ]
        );
        assert_eq!(
            message(&p, "tests/test_m.py::test_bad"),
            "AssertionError: math is broken\nassert (1 + 1) == 3"
        );
        assert!(message(&p, "tests/test_m.py::TestCls::test_in_class").contains("At index 1 diff"));
        assert_eq!(
            message(&p, "tests/test_m.py::test_err"),
            "RuntimeError: fixture exploded"
        );
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
            assert_eq!(
                ids(&p),
                [
                    "tests/test_calc.py::TestMedian::test_empty",
                    "tests/test_imp.py",
                    "tests/test_calc.py::TestMedian::test_even",
                ],
                "{name}"
            );
            let t = &p.tests[0];
            assert_eq!(
                t.message.as_deref(),
                Some("IndexError: list index out of range")
            );
            assert_eq!(t.error_type.as_deref(), Some("IndexError"));
            // Raised in `median`, below the test.
            assert_eq!(
                t.location.as_ref().map(|l| (l.file.as_str(), l.line)),
                Some(("tests/test_calc.py", Some(6)))
            );
            assert!(t.stack.as_deref().unwrap_or("").starts_with("Traceback"));
            assert_eq!(
                message(&p, "tests/test_imp.py"),
                "ModuleNotFoundError: No module named 'nosuchmod'"
            );
            assert_eq!(
                message(&p, "tests/test_calc.py::TestMedian::test_even"),
                "AssertionError: 3 != 2.5"
            );
        }
        let p = parsed("unittest_ok", "/");
        assert_eq!((p.totals, p.tests.len()), (totals(1, 0, 0), 0));
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
    fn pytest_quiet_mode() {
        let p = parsed("pytest_q", "/");
        assert_eq!(p.totals, totals(3, 4, 1));
        assert_eq!(p.tests.len(), 4);
    }

    #[test]
    fn pytest_collection_errors_take_the_e_lines() {
        let p = parsed("pytest_collect", "/");
        assert_eq!(p.totals, totals(0, 2, 0));
        assert_eq!(ids(&p), ["tests/test_imp.py", "tests/test_syn.py"]);
        assert_eq!(
            message(&p, "tests/test_imp.py"),
            "ModuleNotFoundError: No module named 'nosuchmod'"
        );
        assert!(message(&p, "tests/test_syn.py").contains("SyntaxError: invalid syntax"));
    }

    #[test]
    fn pytest_passing_and_empty_runs() {
        let p = parsed("pytest_pass", "/");
        assert_eq!(p.totals, totals(2, 0, 1));
        assert!(p.tests.is_empty());
        let p = parsed("pytest_none", "/");
        assert_eq!((p.framework, p.totals), ("pytest", totals(0, 0, 0)));
    }

    #[test]
    fn cargo_failures_with_panic_messages() {
        let p = parsed("cargo", "/tmp/ct");
        assert_eq!(p.framework, "cargo");
        // Two binaries: the lib's unit tests and tests/it.rs.
        assert_eq!(p.totals, totals(2, 2, 1));
        assert_eq!(
            ids(&p),
            ["src/lib.rs::tests::bad", "src/lib.rs::tests::panics"]
        );
        assert_eq!(
            message(&p, "src/lib.rs::tests::bad"),
            "panicked at src/lib.rs:6:24:\nassertion `left == right` failed: math is broken\n  left: 2\n right: 3"
        );
        assert_eq!(
            message(&p, "src/lib.rs::tests::panics"),
            "panicked at src/lib.rs:8:27:\nboom"
        );
    }

    #[test]
    fn cargo_panics_give_type_and_place() {
        let p = parsed("cargo", "/tmp/ct");
        let t = &p.tests[0];
        assert_eq!(t.error_type.as_deref(), Some("panic"));
        assert_eq!(
            t.location
                .as_ref()
                .map(|l| (l.file.as_str(), l.line, l.column)),
            Some(("src/lib.rs", Some(6), Some(24)))
        );
    }

    #[test]
    fn cargo_messages_stop_at_the_backtrace() {
        let p = parsed("cargo_bt", "/tmp/ct");
        assert_eq!(p.totals, totals(2, 2, 1));
        assert_eq!(
            message(&p, "src/lib.rs::tests::panics"),
            "panicked at src/lib.rs:8:27:\nboom"
        );
    }

    #[test]
    fn cargo_build_error_is_not_parsed() {
        assert_eq!(parse(&sample("cargo_build"), Path::new("/")), None);
    }

    #[test]
    fn jest_failures_and_totals() {
        let p = parsed("jest", "/tmp/jsamp");
        assert_eq!(p.framework, "jest");
        assert_eq!(p.totals, totals(2, 2, 1));
        // Blocks joined by ` > `, as in jest's JSON report.
        assert_eq!(
            ids(&p),
            [
                "src/sum.test.js::Suite > name",
                "src/sum.test.js::Suite > inner > deep fails"
            ]
        );
        assert_eq!(
            message(&p, "src/sum.test.js::Suite > name"),
            "expect(received).toBe(expected) // Object.is equality\n\nExpected: 3\nReceived: 2"
        );
        assert_eq!(
            message(&p, "src/sum.test.js::Suite > inner > deep fails"),
            "deep boom"
        );
        // The frame after the message: where it failed.
        let t = &p.tests[0];
        assert_eq!(
            t.location.as_ref().map(|l| (l.file.as_str(), l.line)),
            Some(("src/sum.test.js", Some(3)))
        );
    }

    #[test]
    fn jest_suites_that_fail_to_run_count_as_failures() {
        let p = parsed("jest_bad", "/tmp/jsamp");
        assert_eq!(p.totals, totals(0, 2, 0));
        // As in jest's JSON report: a file that did not run is its own id, and a parse
        // error's message is the error after jest's long explanation.
        assert_eq!(ids(&p), ["bad/imp.test.js", "bad/syn.test.js"]);
        assert_eq!(
            message(&p, "bad/imp.test.js"),
            "Cannot find module 'nosuch' from 'bad/imp.test.js'"
        );
        assert_eq!(
            message(&p, "bad/syn.test.js"),
            "SyntaxError: /tmp/jsamp/bad/syn.test.js: Unexpected token (1:26)"
        );
        assert_eq!(p.tests[1].error_type.as_deref(), Some("SyntaxError"));
        assert_eq!(
            p.tests[1]
                .location
                .as_ref()
                .map(|l| (l.file.as_str(), l.line, l.column)),
            Some(("bad/syn.test.js", Some(1), Some(26)))
        );
    }

    #[test]
    fn vitest_failures_suites_and_totals() {
        let p = parsed("vitest", "/tmp/jsamp");
        assert_eq!(p.framework, "vitest");
        // 2 failed tests plus the file that did not load.
        assert_eq!(p.totals, totals(2, 3, 1));
        assert_eq!(
            ids(&p),
            [
                "vt/syn.test.ts",
                "vt/a.test.ts::suite > name",
                "vt/a.test.ts::suite > inner > deep"
            ]
        );
        assert_eq!(
            message(&p, "vt/a.test.ts::suite > name"),
            "AssertionError: expected 2 to be 3 // Object.is equality\n\n- Expected\n+ Received\n\n- 3\n+ 2"
        );
        assert_eq!(
            message(&p, "vt/a.test.ts::suite > inner > deep"),
            "Error: deep boom"
        );
        assert!(message(&p, "vt/syn.test.ts").contains("[PARSE_ERROR]"));
    }

    #[test]
    fn node_tap_nested_tests_yaml_errors_and_totals() {
        let p = parsed("node_tap", "/tmp/samp/node");
        assert_eq!(p.framework, "node");
        assert_eq!(p.totals, totals(2, 2, 2));
        assert_eq!(
            ids(&p),
            [
                "test/m.test.js::subtracts wrong",
                "test/m.test.js::math suite > nested fail"
            ]
        );
        assert_eq!(
            message(&p, "test/m.test.js::subtracts wrong"),
            "Expected values to be strictly equal:\n\n2 !== 1"
        );
        assert_eq!(
            message(&p, "test/m.test.js::math suite > nested fail"),
            "boom \"quoted\"\nsecond line"
        );
    }

    #[test]
    fn node_tap_timeouts_and_files_that_fail_to_load() {
        let p = parsed("node_tap2", "/tmp/samp/node2");
        // node counts the timeout as failed; the schema apart.
        assert_eq!(
            p.totals,
            Totals {
                timed_out: 1,
                ..totals(1, 1, 0)
            }
        );
        assert_eq!(ids(&p), ["test/slow.test.js::slow", "test/syn.test.js"]);
        assert_eq!(p.tests[0].status, CaseStatus::Timeout);
        assert_eq!(
            message(&p, "test/slow.test.js::slow"),
            "test timed out after 50ms"
        );
        // The load error comes from the diagnostics printed before the result.
        let m = message(&p, "test/syn.test.js");
        assert!(m.ends_with("SyntaxError: Unexpected token ';'"), "{m}");
    }

    #[test]
    fn node_spec_reporter() {
        let p = parsed("node_spec", "/");
        assert_eq!(p.framework, "node");
        assert_eq!(p.totals, totals(2, 2, 2));
        assert_eq!(
            ids(&p),
            [
                "test/m.test.js::subtracts wrong",
                "test/m.test.js::nested fail"
            ]
        );
        assert!(message(&p, "test/m.test.js::subtracts wrong")
            .starts_with("AssertionError [ERR_ASSERTION]: Expected values to be strictly equal:"));
        let p = parsed("node_spec2", "/");
        assert_eq!(
            p.totals,
            Totals {
                timed_out: 1,
                ..totals(1, 1, 0)
            }
        );
        assert_eq!(p.tests[0].id, "test/slow.test.js::slow");
        assert_eq!(p.tests[0].status, CaseStatus::Timeout);
        assert_eq!(
            message(&p, "test/slow.test.js::slow"),
            "test timed out after 50ms"
        );
    }

    #[test]
    fn mocha_failures_and_totals() {
        let p = parsed("mocha", "/");
        assert_eq!(p.framework, "mocha");
        assert_eq!(p.totals, totals(1, 2, 1));
        assert_eq!(ids(&p), ["suite > name", "suite > inner > deep"]);
        assert_eq!(
            message(&p, "suite > name"),
            "AssertionError [ERR_ASSERTION]: Expected values to be strictly equal:\n2 !== 3\n+ expected - actual\n-2\n+3"
        );
        assert_eq!(message(&p, "suite > inner > deep"), "Error: deep boom");
        let p = parsed("mocha_pass", "/");
        assert_eq!((p.totals, p.tests.len()), (totals(1, 0, 0), 0));
        assert_eq!(parse(&sample("mocha_syn"), Path::new("/")), None);
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

    #[test]
    fn strips_ansi() {
        assert_eq!(
            strip_ansi("\x1b[31mred\x1b[0m \x1b]8;;http://x\x07link\x1b]8;;\x07"),
            "red link"
        );
    }
}
