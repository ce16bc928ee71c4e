//! mocha's spec reporter, its default.

use std::path::Path;

use ralph_actors::schema::test_run::Totals;

use super::cases::Cases;
use crate::runner::reading::text::clip;
use crate::runner::reading::trace::{self, regex};
use crate::runner::reading::Parsed;

/// `  2 passing (9ms)`, `  1 pending`, `  2 failing`, then each failure as `  1) suite` with the
/// title continued on indented lines up to one ending in `:`, and the error below it.
pub(crate) fn mocha(out: &str, cwd: &Path) -> Option<Parsed> {
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
    Some(cases.into_parsed("mocha", "mocha-text", totals))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::runner::parse::parse;
    use crate::runner::parse::samples::{as_expected, parsed, sample, totals};

    #[test]
    fn mocha_failures_and_totals() {
        as_expected("mocha");
        let p = parsed("mocha_pass", "/");
        assert_eq!((p.totals, p.tests.len()), (totals(1, 0, 0), 0));
        assert_eq!(parse(&sample("mocha_syn"), Path::new("/")), None);
    }
}
