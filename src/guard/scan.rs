//! What LocalGuard would mask in a set of files: the walk (as git sees the tree, hidden files
//! included, `.git` itself left out) and each finding's place and redacted preview. The values
//! themselves are never printed.

use std::path::{Path, PathBuf};

use ralph_guard::scan::Detector;
use serde::Serialize;

/// Files larger than this are not read (bundles, datasets): 8 MiB.
const MAX_FILE: u64 = 8 * 1024 * 1024;

/// One value the guard would mask.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Hit {
    pub path: String,
    /// 1-based.
    pub line: usize,
    /// 1-based, in characters.
    pub column: usize,
    pub kind: String,
    pub rule: String,
    /// The line, shortened around the value, with the value redacted.
    pub preview: String,
}

/// What a scan read and found.
#[derive(Debug, Default, Serialize)]
pub struct Outcome {
    pub files: usize,
    /// Files left unread: binary, too large, unreadable.
    pub skipped: usize,
    pub hits: Vec<Hit>,
    pub allowlisted: usize,
}

/// Scans `paths` (files, or directories walked) with `detector`; paths are shown relative to
/// `cwd` when they are under it.
pub fn scan(detector: &Detector, paths: &[PathBuf], cwd: &Path) -> Outcome {
    let mut out = Outcome::default();
    for root in paths {
        let walk = ignore::WalkBuilder::new(root)
            .hidden(false)
            .filter_entry(|e| e.file_name() != ".git")
            .build();
        for entry in walk.flatten() {
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            let path = entry.path();
            match read(path) {
                Some(text) => {
                    out.files += 1;
                    let shown = path
                        .strip_prefix(cwd)
                        .or_else(|_| path.strip_prefix("."))
                        .unwrap_or(path)
                        .display()
                        .to_string();
                    let scan = detector.scan(&text);
                    out.allowlisted += scan.allowlisted.len();
                    let all = &scan.findings;
                    out.hits
                        .extend(all.iter().map(|f| hit(&shown, &text, f, all)));
                }
                None => out.skipped += 1,
            }
        }
    }
    out
}

/// A file's text, unless it is binary (a NUL in its first 8 KiB), too large or unreadable.
fn read(path: &Path) -> Option<String> {
    let len = std::fs::metadata(path).ok()?.len();
    if len > MAX_FILE {
        return None;
    }
    let bytes = std::fs::read(path).ok()?;
    if bytes[..bytes.len().min(8192)].contains(&0) {
        return None;
    }
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

fn hit(path: &str, text: &str, f: &ralph_guard::Finding, all: &[ralph_guard::Finding]) -> Hit {
    let line_start = text[..f.start].rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[f.end..].find('\n').map_or(text.len(), |i| f.end + i);
    Hit {
        path: path.to_string(),
        line: text[..f.start].matches('\n').count() + 1,
        column: text[line_start..f.start].chars().count() + 1,
        kind: f.kind.to_string(),
        rule: f.rule.clone(),
        preview: preview(text, line_start..line_end, f, all),
    }
}

/// The line cut to 40 characters either side of the value, with every value in it redacted
/// to its first three characters and its length: enough to find it, not enough to use it.
fn preview(
    text: &str,
    line: std::ops::Range<usize>,
    f: &ralph_guard::Finding,
    all: &[ralph_guard::Finding],
) -> String {
    let floor = |mut i: usize| {
        while !text.is_char_boundary(i) {
            i -= 1;
        }
        i
    };
    let ceil = |mut i: usize| {
        while i < text.len() && !text.is_char_boundary(i) {
            i += 1;
        }
        i
    };
    let from = floor(f.start.saturating_sub(40).max(line.start));
    let to = ceil((f.end + 40).min(line.end));
    let mut out = String::new();
    if from > line.start {
        out.push('…');
    }
    let mut at = from;
    for other in all.iter().filter(|o| o.start < to && from < o.end) {
        let (start, end) = (other.start.max(at), other.end.min(to));
        out.push_str(&text[at..start]);
        let value = &text[other.start..other.end];
        let head: String = value.chars().take(3).collect();
        out.push_str(&format!("{head}…({} chars)", value.chars().count()));
        at = end;
    }
    out.push_str(&text[at..to]);
    if to < line.end {
        out.push('…');
    }
    out.trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    use ralph_guard::{Finding, Kind};

    fn found(text: &str, value: &str) -> Finding {
        let start = text.find(value).expect("planted");
        Finding::new(start, start + value.len(), Kind::secret("t"), "t")
    }

    #[test]
    fn a_preview_keeps_three_characters_of_each_value_on_the_line() {
        let text = "x = 1\naws_key = \"AKIAZ4Q7XW2PLM3NB5VC\"; mail = \"ada@example.org\"\n";
        let all = [
            found(text, "AKIAZ4Q7XW2PLM3NB5VC"),
            found(text, "ada@example.org"),
        ];
        let h = hit("a.py", text, &all[0], &all);
        assert_eq!((h.line, h.column), (2, 12));
        assert_eq!(
            h.preview,
            "aws_key = \"AKI…(20 chars)\"; mail = \"ada…(15 chars)\""
        );
        let long = format!("{}secretvalue{}", "x".repeat(100), "y".repeat(100));
        let all = [found(&long, "secretvalue")];
        let p = hit("a", &long, &all[0], &all).preview;
        assert!(p.starts_with('…') && p.ends_with('…'), "{p}");
        assert!(!p.contains("secretvalue"), "{p}");
    }
}
