//! jest's and vitest's default reporters: vitest's output copies jest's closely enough to share
//! how a source excerpt is told from a message.

use std::path::Path;

use super::cases::{join_id, last_summary, Bucket, Cases};
use crate::runner::reading::text::clip;
use crate::runner::reading::trace::regex;
use crate::runner::reading::Parsed;

// ---------------------------------------------------------------------------------------------
// vitest

/// `      Tests  2 failed | 2 passed | 1 skipped (5)`; each failure is a block headed
/// ` FAIL  src/a.test.ts > suite > name` (or ` FAIL  src/a.test.ts [ src/a.test.ts ]` for a file
/// that did not load).
pub(crate) fn vitest(out: &str, cwd: &Path) -> Option<Parsed> {
    let summary = regex!(r"^\s*Tests\s{2,}(.*\d+ [a-z]+.*?)\s*\(\d+\)\s*$")?;
    let fail = regex!(r"^\s*FAIL\s+(?:\|[^|]+\|\s+)?(.+?)\s*$")?;
    let lines: Vec<&str> = out.lines().collect();
    let (last, mut totals) = last_summary(&lines, summary, |w| match w {
        "passed" => Some(Bucket::Passed),
        "failed" => Some(Bucket::Failed),
        "skipped" | "todo" => Some(Bucket::Skipped),
        _ => None,
    })?;

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
        let ends = |l: &str| fail.is_match(l) || l.trim_start().starts_with('⎯');
        cases.locate_in_block(n, &lines[..last], i, ends, cwd);
    }
    // A file that failed to load counts no tests; count it so a failed run never shows 0 failed.
    totals.failed += suites_failed;
    Some(cases.into_parsed("vitest", "vitest-text", totals))
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
pub(crate) fn jest(out: &str, cwd: &Path) -> Option<Parsed> {
    let summary = regex!(r"^Tests:\s+(.*\d+ total)\s*$")?;
    let file_line = regex!(r"^\s*(?:FAIL|PASS)\s+(.+?)(?:\s+\(\d+(?:\.\d+)?\s*m?s\))?\s*$")?;
    let lines: Vec<&str> = out.lines().collect();
    let (last, mut totals) = last_summary(&lines, summary, |w| match w {
        "passed" => Some(Bucket::Passed),
        "failed" => Some(Bucket::Failed),
        "skipped" | "todo" | "pending" => Some(Bucket::Skipped),
        _ => None,
    })?;

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
        cases.locate_in_block(n, &lines[..last], i, ends, cwd);
    }
    // A suite that failed to run counts no tests; count it so a failed run never shows 0 failed.
    totals.failed += suites_failed;
    Some(cases.into_parsed("jest", "jest-text", totals))
}

#[cfg(test)]
mod tests {
    use crate::runner::parse::samples::as_expected;

    #[test]
    fn jest_failures_and_totals() {
        let p = as_expected("jest");
        // The frame after the message: where it failed.
        let t = &p.tests[0];
        assert_eq!(
            t.location.as_ref().map(|l| (l.file.as_str(), l.line)),
            Some(("src/sum.test.js", Some(3)))
        );
    }

    #[test]
    fn jest_suites_that_fail_to_run_count_as_failures() {
        let p = as_expected("jest_bad");
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
        as_expected("vitest");
    }
}
