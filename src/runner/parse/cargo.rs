//! cargo test's output (libtest's human format): one `test result:` line per test binary, the
//! failures' `---- name stdout ----` sections holding their panics.

use std::collections::HashMap;

use ralph_actors::schema::test_run::Totals;

use super::cases::{join_id, Cases};
use crate::runner::reading::text::clip;
use crate::runner::reading::trace::regex;
use crate::runner::reading::Parsed;

pub(crate) fn cargo(out: &str) -> Option<Parsed> {
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
            totals.passed = totals.passed.saturating_add(c[1].parse().unwrap_or(0));
            totals.failed = totals.failed.saturating_add(c[2].parse().unwrap_or(0));
            totals.skipped = totals.skipped.saturating_add(c[3].parse().unwrap_or(0));
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
    Some(cases.into_parsed("cargo", "cargo-text", totals))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::runner::parse::parse;
    use crate::runner::parse::samples::{as_expected, message, parsed, sample, totals};

    #[test]
    fn cargo_failures_with_panic_messages() {
        as_expected("cargo");
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
}
