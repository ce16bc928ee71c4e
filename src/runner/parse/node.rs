//! node's built-in test runner (`node --test`): its TAP reporter, which also reads plain TAP
//! from other tools, and its spec reporter.

use std::path::Path;

use ralph_actors::schema::test_run::{CaseStatus, Totals};

use super::cases::{join_id, Cases};
use crate::runner::reading::text::clip;
use crate::runner::reading::trace::regex;
use crate::runner::reading::Parsed;

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

impl TapResult {
    /// The failed test this result is, as its id, status and message; `None` when it passed,
    /// was skipped, or is a suite (or a test) failing only because its subtests did.
    fn failure(&self, cwd: &Path) -> Option<(String, CaseStatus, Option<String>)> {
        let get = |k: &str| {
            self.yaml
                .iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.as_str())
        };
        // A suite, or a test failing only because its subtests did, is not a failure itself.
        if self.ok || self.directive || get("type") == Some("suite") {
            return None;
        }
        if get("failureType") == Some("subtestsFailed") {
            return None;
        }
        let file = get("location").map(|loc| relative(strip_line_col(loc), cwd));
        let mut path = self.ancestors.clone();
        path.push(self.name.clone());
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
                self.comments
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
        Some((id, status, message))
    }
}

pub(crate) fn node_tap(out: &str, cwd: &Path) -> Option<Parsed> {
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
                "pass" => totals.passed = totals.passed.saturating_add(n),
                "fail" | "cancelled" => totals.failed = totals.failed.saturating_add(n),
                "skipped" | "todo" => totals.skipped = totals.skipped.saturating_add(n),
                _ => {}
            }
        } else if let Some(c) = text.strip_prefix('#') {
            // Diagnostics: node prints a file's load error (a SyntaxError...) this way.
            comments.push(c.strip_prefix(' ').unwrap_or(c).to_string());
        }
    }

    let mut cases = Cases::default();
    for r in &results {
        if !have_counts && r.ancestors.is_empty() {
            match (r.ok, r.directive) {
                (_, true) => totals.skipped = totals.skipped.saturating_add(1),
                (true, false) => totals.passed = totals.passed.saturating_add(1),
                (false, false) => totals.failed = totals.failed.saturating_add(1),
            }
        }
        if let Some((id, status, message)) = r.failure(cwd) {
            cases.add_with(id, status, message);
        }
    }
    if !have_counts && totals.failed < cases.len() {
        totals.failed = cases.len();
    }
    let (framework, format) = if node {
        ("node", "node-tap")
    } else {
        ("tap", "tap")
    };
    Some(cases.into_parsed(framework, format, totals))
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
pub(crate) fn node_spec(out: &str, cwd: &Path) -> Option<Parsed> {
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
            "pass" => totals.passed = totals.passed.saturating_add(n),
            "fail" | "cancelled" => totals.failed = totals.failed.saturating_add(n),
            "skipped" | "todo" => totals.skipped = totals.skipped.saturating_add(n),
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
        let ends = |l: &str| location.is_match(l) || failure.is_match(l);
        cases.locate_in_block(n, &lines, i, ends, cwd);
        file = None;
    }
    Some(cases.into_parsed("node", "node-spec", totals))
}

#[cfg(test)]
mod tests {
    use ralph_actors::schema::test_run::{CaseStatus, Totals};

    use crate::runner::parse::samples::Says::*;
    use crate::runner::parse::samples::{as_expected, assert_failures, message, parsed, totals};

    /// One test passed and one timed out: node counts the timeout as failed; the schema apart.
    fn one_passed_one_timed_out() -> Totals {
        Totals {
            timed_out: 1,
            ..totals(1, 1, 0)
        }
    }

    #[test]
    fn node_tap_nested_tests_yaml_errors_and_totals() {
        as_expected("node_tap");
    }

    #[test]
    fn node_tap_timeouts_and_files_that_fail_to_load() {
        let p = parsed("node_tap2", "/tmp/samp/node2");
        assert_eq!(p.totals, one_passed_one_timed_out());
        // The load error comes from the diagnostics printed before the result.
        assert_failures(
            "node_tap2",
            &p,
            &[
                ("test/slow.test.js::slow", Is("test timed out after 50ms")),
                (
                    "test/syn.test.js",
                    Ends("SyntaxError: Unexpected token ';'"),
                ),
            ],
        );
        assert_eq!(p.tests[0].status, CaseStatus::Timeout);
    }

    #[test]
    fn node_spec_reporter() {
        as_expected("node_spec");
        let p = parsed("node_spec2", "/");
        assert_eq!(p.totals, one_passed_one_timed_out());
        assert_eq!(p.tests[0].id, "test/slow.test.js::slow");
        assert_eq!(p.tests[0].status, CaseStatus::Timeout);
        assert_eq!(
            message(&p, "test/slow.test.js::slow"),
            "test timed out after 50ms"
        );
    }
}
