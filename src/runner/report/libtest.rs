//! libtest's JSON lines (`cargo test -- -Z unstable-options --format json --report-time`) and
//! nextest's copy of them (`--message-format libtest-json`), picked out of a run's output,
//! where cargo's own lines (compiling, `Running unittests src/lib.rs (...)`, errors) and
//! nextest's human-readable report are mixed in.
//!
//! There is one suite per test binary (and one for the doctests); the tests of all are read.
//! A binary that crashed (a stack overflow, a failed allocation) leaves tests started but never
//! finished: they fail, with the crash text cargo printed after them. A run whose output ends
//! with tests still running was killed: they timed out.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use ralph_actors::schema::test_run::{CaseStatus, Location, TestCase};
use serde::Deserialize;

use super::ids::join_id;
use crate::runner::reading::text::clip;
use crate::runner::reading::trace::{self, regex, OUTPUT_MAX_BYTES, STACK_MAX_BYTES};

#[derive(Deserialize)]
struct Event<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow)]
    event: Cow<'a, str>,
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(default)]
    exec_time: Option<f64>,
    #[serde(default, borrow)]
    stdout: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    message: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    reason: Option<Cow<'a, str>>,
}

/// The tests in one binary's run, by name, with the file its `Running` line named.
struct Suite {
    file: Option<String>,
    doctests: bool,
    /// Started and not yet finished, in start order.
    running: Running,
    /// The output lines after the suite's last event: a crash prints there.
    after: Vec<String>,
}

/// The tests started and not yet finished, in start order: finishing one costs the same however
/// many run at once (a `Vec` searched on each finish cost the square of 100,000 at once).
#[derive(Default)]
struct Running {
    order: BTreeMap<u64, String>,
    by_name: HashMap<String, Vec<u64>>,
    next: u64,
}

impl Running {
    fn start(&mut self, name: &str) {
        self.order.insert(self.next, name.to_string());
        self.by_name
            .entry(name.to_string())
            .or_default()
            .push(self.next);
        self.next += 1;
    }

    /// Every start of `name` is over.
    fn finish(&mut self, name: &str) {
        for n in self.by_name.remove(name).unwrap_or_default() {
            self.order.remove(&n);
        }
    }

    fn clear(&mut self) {
        self.order.clear();
        self.by_name.clear();
    }

    fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    fn values(&self) -> impl Iterator<Item = &String> {
        self.order.values()
    }
}

struct State<'c> {
    cwd: &'c Path,
    tests: Vec<TestCase>,
    index: HashMap<String, usize>,
    suite: Option<Suite>,
    /// The file of the next suite, from cargo's `Running` line.
    next_file: Option<String>,
    next_doctests: bool,
    suites_seen: usize,
    nextest: bool,
}

pub(crate) fn parse(data: &str, cwd: &Path) -> Result<(&'static str, Vec<TestCase>), String> {
    let running = regex!(r"^\s*Running (?:unittests |tests? |benches )?(\S+)")
        .ok_or("a pattern did not compile")?;
    let cut = regex!(r"^\.\.\. \[(\d+) bytes cut\] \.\.\.$").ok_or("a pattern did not compile")?;
    let mut st = State {
        cwd,
        tests: Vec::new(),
        index: HashMap::new(),
        suite: None,
        next_file: None,
        next_doctests: false,
        suites_seen: 0,
        nextest: false,
    };
    for line in data.lines() {
        let t = line.trim();
        if t.starts_with('{') && t.ends_with('}') && t.contains("\"type\"") {
            if let Ok(event) = serde_json::from_str::<Event<'_>>(t) {
                st.event(event);
                continue;
            }
        }
        if let Some(c) = cut.captures(line) {
            return Err(format!(
                "the output was cut in the middle ({} bytes), so test events are missing",
                &c[1]
            ));
        }
        if let Some(c) = running.captures(line) {
            st.close_suite(false);
            // `Running unittests src/lib.rs (target/...)`; an old cargo names only the binary,
            // whose hash changes with every build: no file then.
            let f = &c[1];
            st.next_file =
                (!f.starts_with("target/") && !f.contains("/deps/")).then(|| f.to_string());
            st.next_doctests = false;
        } else if t.starts_with("Doc-tests ") {
            st.close_suite(false);
            st.next_file = None;
            st.next_doctests = true;
        } else if let Some(s) = st.suite.as_mut() {
            if !s.running.is_empty() {
                s.after.push(line.to_string());
            }
        }
    }
    st.close_suite(true);
    if st.suites_seen == 0 {
        return Err(
            "no libtest JSON events in the output: the tests did not run (a build error?)".into(),
        );
    }
    Ok((if st.nextest { "nextest" } else { "cargo" }, st.tests))
}

impl State<'_> {
    fn event(&mut self, e: Event<'_>) {
        match (e.kind.as_ref(), e.event.as_ref()) {
            ("suite", "started") => {
                self.close_suite(false);
                self.suites_seen += 1;
                self.suite = Some(Suite {
                    file: self.next_file.take(),
                    doctests: std::mem::take(&mut self.next_doctests),
                    running: Running::default(),
                    after: Vec::new(),
                });
            }
            ("suite", _) => {
                if let Some(s) = self.suite.as_mut() {
                    // Every test has ended by now; any left is a libtest quirk, not a crash.
                    s.running.clear();
                }
            }
            ("test", "started") => {
                if let (Some(s), Some(name)) = (self.suite.as_mut(), e.name.as_deref()) {
                    s.running.start(name);
                    s.after.clear();
                }
            }
            ("test", "ok" | "failed" | "ignored") => self.finished(&e),
            _ => {}
        }
    }

    fn finished(&mut self, e: &Event<'_>) {
        let Some(name) = e.name.as_deref() else {
            return;
        };
        let (file, doctests) = match self.suite.as_mut() {
            Some(s) => {
                s.running.finish(name);
                s.after.clear();
                (s.file.clone(), s.doctests)
            }
            None => (None, false),
        };
        let mut case = self.new_case(name, file.as_deref(), doctests);
        case.duration_ms = e.exec_time.map(|s| s * 1000.0);
        match e.event.as_ref() {
            "ok" => case.status = CaseStatus::Pass,
            "ignored" => case.status = CaseStatus::Skip,
            _ => {
                case.status = CaseStatus::Fail;
                let stdout = e.stdout.as_deref().unwrap_or("");
                fill_failure(&mut case, stdout, self.cwd);
                if let Some(reason) = e.reason.as_deref() {
                    // `time limit exceeded`: `--ensure-time`, or nextest's slow-timeout.
                    if reason.contains("time limit") {
                        case.status = CaseStatus::Timeout;
                    }
                    case.message = Some(match case.message.take() {
                        Some(m) if !m.is_empty() => format!("{reason}\n{m}"),
                        _ => reason.to_string(),
                    });
                } else if case.message.is_none() {
                    case.message = e.message.as_deref().map(String::from);
                }
            }
        }
        self.push(case);
    }

    fn new_case(&mut self, name: &str, file: Option<&str>, doctests: bool) -> TestCase {
        // nextest: `crate::binary$module::test`; the name is the part after `$`.
        let short = match name.split_once('$') {
            Some((_, test)) => {
                self.nextest = true;
                test
            }
            None => name,
        };
        let (id, file) = if self.nextest {
            (name.to_string(), None)
        } else if doctests {
            // `src/lib.rs - median (line 9)`: the id as printed, the file from it.
            (
                name.to_string(),
                name.split_once(" - ").map(|(f, _)| f.to_string()),
            )
        } else {
            (join_id(file, name), file.map(String::from))
        };
        TestCase {
            id,
            name: short.to_string(),
            file,
            ..TestCase::default()
        }
    }

    fn push(&mut self, case: TestCase) {
        // nextest may repeat a binary's suite; the last word on a test wins.
        match self.index.get(&case.id) {
            Some(&i) => self.tests[i] = case,
            None => {
                self.index.insert(case.id.clone(), self.tests.len());
                self.tests.push(case);
            }
        }
    }

    /// Ends the current suite. Tests it started and never finished crashed with the binary, or,
    /// at the end of the output with nothing printed after them, were still running when the
    /// run was stopped.
    fn close_suite(&mut self, at_end: bool) {
        let Some(suite) = self.suite.take() else {
            return;
        };
        if suite.running.is_empty() {
            return;
        }
        let crash: Vec<&str> = suite
            .after
            .iter()
            .map(String::as_str)
            .take_while(|l| {
                !(l.starts_with("error: test failed") || l.starts_with("error: doctest failed"))
            })
            .collect();
        let killed = at_end
            && crash
                .iter()
                .all(|l| l.trim().is_empty() || l.starts_with("[ralph-loop]"));
        let crash = read_failure(&crash.join("\n"), self.cwd);
        for name in suite.running.values() {
            let mut case = self.new_case(name, suite.file.as_deref(), suite.doctests);
            if killed {
                case.status = CaseStatus::Timeout;
                case.message = Some("still running when the test run was stopped".into());
            } else {
                case.status = CaseStatus::Fail;
                crash.apply(&mut case);
                case.error_type = Some("crash".into());
                if case.message.is_none() {
                    case.message = Some("the test binary exited before this test finished".into());
                }
            }
            self.push(case);
        }
    }
}

/// Reads a failed test's output into `case`.
fn fill_failure(case: &mut TestCase, output: &str, cwd: &Path) {
    read_failure(output, cwd).apply(case);
}

/// What a failure's output says, read once however many tests it ended (a crash ends every
/// test still running: reading it again for each cost the square of a long crash).
struct Failure {
    message: Option<String>,
    error_type: Option<String>,
    stdout: Option<String>,
    stack: Option<String>,
    location: Option<Location>,
}

impl Failure {
    fn apply(&self, case: &mut TestCase) {
        case.message = self.message.clone();
        case.error_type = self.error_type.clone();
        if self.stdout.is_some() {
            case.stdout = self.stdout.clone();
        }
        if self.stack.is_some() {
            case.stack = self.stack.clone();
        }
        case.location = self.location.clone().or_else(|| {
            // A doctest's panic is in a generated file; its name gives the block's place.
            let re = regex!(r"^(\S+) - .*\(line (\d+)\)$")?;
            let c = re.captures(&case.id)?;
            Some(Location {
                file: c[1].to_string(),
                line: c[2].parse().ok(),
                column: None,
            })
        });
    }
}

/// Reads a failed test's output: the captured stdout, then `thread '...' panicked at
/// file:line:col:` with the message, then maybe `stack backtrace:`.
fn read_failure(output: &str, cwd: &Path) -> Failure {
    let output = output.trim_matches('\n');
    let lines: Vec<&str> = output.lines().collect();
    let thread = regex!(r"^thread '.*?'(?: \(\d+\))? (panicked at |has overflowed its stack)");
    let panic_at = lines
        .iter()
        .position(|l| thread.is_some_and(|re| re.is_match(l)));
    let crash_at = lines.iter().position(|l| {
        l.starts_with("memory allocation of ") || l.starts_with("fatal runtime error")
    });
    let start = match (panic_at, crash_at) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    let trace_at = lines
        .iter()
        .position(|l| l.starts_with("stack backtrace:"))
        .filter(|&b| start.is_none_or(|s| b > s));
    let (captured, message_lines) = match start {
        Some(s) => (&lines[..s], &lines[s..trace_at.unwrap_or(lines.len())]),
        None => (&lines[..0], &lines[..trace_at.unwrap_or(lines.len())]),
    };
    let message_lines: Vec<String> = message_lines
        .iter()
        .take_while(|l| !l.starts_with("note: "))
        .map(|l| match thread.and_then(|re| re.captures(l)) {
            // As the text parser words it: no thread name or id, which change between runs.
            Some(c) if &c[1] == "panicked at " => {
                let at = c.get(0).map_or(0, |m| m.end());
                format!("panicked at {}", &l[at..])
            }
            Some(c) => format!("thread {}", &c[1]),
            None => (*l).to_string(),
        })
        .collect();
    let panicked = start
        .and_then(|s| lines.get(s))
        .is_some_and(|l| l.contains("panicked at "));
    let captured = captured.join("\n");
    Failure {
        message: clip(message_lines.iter().map(String::as_str)),
        error_type: match start {
            Some(_) if panicked => Some("panic".into()),
            // A stack overflow or a failed allocation aborts the binary.
            Some(_) => Some("crash".into()),
            None => None,
        },
        stdout: (!captured.trim().is_empty())
            .then(|| trace::cap(captured.trim_matches('\n'), OUTPUT_MAX_BYTES)),
        stack: trace_at.map(|b| trace::cap(&lines[b..].join("\n"), STACK_MAX_BYTES)),
        location: trace::location(output, Some(cwd)),
    }
}
