//! mocha's JSON reporter: `stats`, then `tests` (every test run or skipped), `passes`,
//! `failures` (which also holds failing hooks, absent from `tests`) and `pending`.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::path::Path;

use ralph_actors::schema::test_run::{CaseStatus, TestCase};
use serde::Deserialize;

use super::ids::{join_id, unique_ids};
use crate::runner::reading::strip_ansi;
use crate::runner::reading::text::{clip, is_timeout_message};
use crate::runner::reading::trace::{self, STACK_MAX_BYTES};

// Strings are borrowed from the report where they hold no escapes (see jest.rs).
#[derive(Deserialize)]
struct Report<'a> {
    /// Required, though not read: it tells this report from other JSON.
    #[serde(rename = "stats")]
    _stats: serde::de::IgnoredAny,
    #[serde(borrow)]
    tests: Vec<Test<'a>>,
    #[serde(default, borrow)]
    failures: Vec<Test<'a>>,
    #[serde(default, borrow)]
    pending: Vec<Test<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Test<'a> {
    #[serde(borrow)]
    title: Cow<'a, str>,
    #[serde(borrow)]
    full_title: Cow<'a, str>,
    #[serde(default, borrow)]
    file: Option<Cow<'a, str>>,
    #[serde(default)]
    duration: Option<f64>,
    #[serde(default)]
    timed_out: Option<bool>,
    #[serde(default)]
    err: Err,
}

#[derive(Deserialize, Default)]
struct Err {
    message: Option<String>,
    stack: Option<String>,
    name: Option<String>,
    code: Option<String>,
}

impl Test<'_> {
    fn key(&self) -> (&str, Option<&str>) {
        (&self.full_title, self.file.as_deref())
    }

    fn failed(&self) -> bool {
        self.err.message.is_some() || self.err.stack.is_some()
    }

    /// The suites' full title: `fullTitle` is `<suite full title> <title>`.
    fn suite_title(&self) -> &str {
        self.full_title
            .strip_suffix(self.title.as_ref())
            .map_or("", str::trim_end)
    }
}

pub(crate) fn parse(data: &str, cwd: &Path) -> Result<(&'static str, Vec<TestCase>), String> {
    let report: Report = serde_json::from_str(data).map_err(|e| {
        if e.is_eof() {
            format!("the JSON ends early (truncated?): {e}")
        } else {
            format!("not a mocha JSON report: {e}")
        }
    })?;
    let pending: HashSet<(&str, Option<&str>)> = report.pending.iter().map(Test::key).collect();
    let listed: HashSet<(&str, Option<&str>)> = report.tests.iter().map(Test::key).collect();
    // A failing hook is only in `failures`.
    let hooks = report
        .failures
        .iter()
        .filter(|f| !listed.contains(&f.key()));
    let all: Vec<&Test<'_>> = report.tests.iter().chain(hooks).collect();
    let suites = Suites::new(all.iter().map(|t| t.suite_title()));

    let mut tests = Vec::with_capacity(all.len());
    for t in all {
        let file = t.file.as_deref().map(|f| trace::relative(f, cwd));
        let mut path = suites.split(t.suite_title());
        path.push(&t.title);
        let name = path.join(" > ");
        let mut case = TestCase {
            id: join_id(file.as_deref(), &name),
            name,
            file,
            duration_ms: t.duration,
            status: if pending.contains(&t.key()) {
                CaseStatus::Skip
            } else if t.failed() {
                CaseStatus::Fail
            } else {
                CaseStatus::Pass
            },
            ..TestCase::default()
        };
        if case.status == CaseStatus::Fail {
            fill_failure(&mut case, t, cwd);
        }
        tests.push(case);
    }
    unique_ids(&mut tests);
    Ok(("mocha", tests))
}

fn fill_failure(case: &mut TestCase, t: &Test<'_>, cwd: &Path) {
    let stack = t.err.stack.as_deref().map(strip_ansi);
    let (head, frames) = match stack.as_deref() {
        Some(s) => trace::split_js_stack(s),
        None => ("", None),
    };
    // The stack's head is the message with its class (`AssertionError [ERR_ASSERTION]: ...`),
    // as mocha prints it.
    let message = if head.is_empty() {
        t.err.message.as_deref().unwrap_or("")
    } else {
        head
    };
    let timed_out = t.timed_out == Some(true)
        || t.err.code.as_deref() == Some("ERR_MOCHA_TIMEOUT")
        || t.err.message.as_deref().is_some_and(is_timeout_message);
    if timed_out {
        case.status = CaseStatus::Timeout;
    }
    case.message = clip(message.lines());
    case.error_type = t.err.name.clone().or_else(|| trace::js_error_type(message));
    case.stack = frames.map(|f| trace::cap(f, STACK_MAX_BYTES));
    case.location = stack.as_deref().and_then(|s| trace::location(s, Some(cwd)));
}

/// mocha's JSON gives no suite path, only full titles joined by spaces. The suites that hold
/// tests are known by their full titles; a suite's path is rebuilt by finding the longest other
/// such suite its title starts with. A suite holding only suites stays merged into its child's
/// title (`outer inner > test`), which is still stable.
struct Suites<'a> {
    paths: HashMap<&'a str, Vec<&'a str>>,
}

impl<'a> Suites<'a> {
    fn new(titles: impl Iterator<Item = &'a str>) -> Self {
        let mut titles: Vec<&str> = titles.filter(|t| !t.is_empty()).collect();
        titles.sort_unstable_by(|a, b| a.len().cmp(&b.len()).then(a.cmp(b)));
        titles.dedup();
        let mut suites = Self {
            paths: HashMap::new(),
        };
        // The lengths of the titles seen: only a prefix of one of them can be a parent, so
        // each title looks up a few of its prefixes, not every title before it.
        let mut lengths = HashSet::new();
        // Shortest first, so each parent's path is known before its children's.
        for title in titles {
            let parent = title
                .match_indices(' ')
                .rev()
                .map(|(at, _)| at)
                .filter(|at| at + 1 < title.len() && lengths.contains(at))
                .map(|at| &title[..at])
                .find(|p| suites.paths.contains_key(p));
            let path = match parent {
                Some(p) => {
                    let mut path = suites.paths.get(p).cloned().unwrap_or_default();
                    path.push(&title[p.len() + 1..]);
                    path
                }
                None => vec![title],
            };
            suites.paths.insert(title, path);
            lengths.insert(title.len());
        }
        suites
    }

    fn split(&self, title: &'a str) -> Vec<&'a str> {
        if title.is_empty() {
            return Vec::new();
        }
        self.paths
            .get(title)
            .cloned()
            .unwrap_or_else(|| vec![title])
    }
}
