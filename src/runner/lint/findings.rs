//! Reading a linter's report into findings: eslint's and ruff's JSON arrays, cargo's JSON
//! message lines, and a configured command's output when it is one of these. Each finding is one
//! `file:line:col: message (rule)` line, errors kept before warnings.

use std::path::Path;

use serde_json::Value;

/// How many findings a [`Lint`](ralph_actors::schema::test_run::Lint) keeps.
pub const MAX_FINDINGS: usize = 20;

/// ruff rules counted as warnings, not errors: the style-only families (import order `I`,
/// pycodestyle's warnings `W`, docstrings `D`, quotes `Q`, trailing commas `COM`) and long lines
/// (`E501`). Every other finding, syntax errors included, is an error, as ruff itself reports
/// them (`severity: error`). A family matches its letters followed by a digit, so `I001` is a
/// warning but `INP001` is not.
const RUFF_WARNING_FAMILIES: &[&str] = &["I", "W", "D", "Q", "COM"];
const RUFF_WARNING_CODES: &[&str] = &["E501"];

/// Findings read from a linter's report.
#[derive(Debug, Default)]
pub(crate) struct Found {
    /// The tool recognised, when the format says (a configured command).
    pub tool: Option<&'static str>,
    pub errors: u32,
    pub warnings: u32,
    error_lines: Vec<String>,
    warning_lines: Vec<String>,
}

impl Found {
    fn with_tool(tool: &'static str) -> Self {
        Self {
            tool: Some(tool),
            ..Self::default()
        }
    }

    /// The first [`MAX_FINDINGS`], errors before warnings.
    pub fn findings(self) -> Vec<String> {
        self.error_lines
            .into_iter()
            .chain(self.warning_lines)
            .take(MAX_FINDINGS)
            .collect()
    }

    fn push(&mut self, error: bool, line: String) {
        if error {
            self.errors += 1;
            self.error_lines.push(line);
        } else {
            self.warnings += 1;
            self.warning_lines.push(line);
        }
    }
}

/// A configured command's output, read as eslint, ruff or clippy JSON when it is one.
pub(crate) fn detect(output: &str, cwd: &Path) -> Option<Found> {
    if let Some(found) = clippy(output, cwd) {
        return Some(found);
    }
    let array = find_array(output)?;
    eslint(&array, cwd).or_else(|| ruff(&array, cwd))
}

/// The first JSON array in the output that starts a line (npm and cargo may print lines before
/// it; ruff's spans several lines).
pub(super) fn find_array(output: &str) -> Option<Vec<Value>> {
    let mut offset = 0;
    for line in output.split_inclusive('\n') {
        let start = offset + (line.len() - line.trim_start().len());
        offset += line.len();
        if !line.trim_start().starts_with('[') {
            continue;
        }
        let mut values = serde_json::Deserializer::from_str(&output[start..]).into_iter::<Value>();
        if let Some(Ok(Value::Array(items))) = values.next() {
            return Some(items);
        }
    }
    None
}

/// eslint's `--format json`: per file `errorCount`, `warningCount` and `messages`.
pub(super) fn eslint(files: &[Value], cwd: &Path) -> Option<Found> {
    let looks_like = |f: &Value| f.get("filePath").is_some() && f.get("messages").is_some();
    if !files.iter().all(looks_like) {
        return None;
    }
    let mut found = Found::with_tool("eslint");
    let count = |v: &Value, key: &str| {
        v.get(key)
            .and_then(Value::as_u64)
            .and_then(|n| u32::try_from(n).ok())
            .unwrap_or(0)
    };
    for file in files {
        let path = display_path(file.get("filePath").and_then(Value::as_str)?, cwd);
        for message in file.get("messages").and_then(Value::as_array)? {
            let line = finding(
                &path,
                message.get("line").and_then(Value::as_u64),
                message.get("column").and_then(Value::as_u64),
                message.get("message").and_then(Value::as_str).unwrap_or(""),
                message.get("ruleId").and_then(Value::as_str),
            );
            // Severity 2 is an error, 1 a warning; the counts below are eslint's own.
            if message.get("severity").and_then(Value::as_u64) == Some(2) {
                found.error_lines.push(line);
            } else {
                found.warning_lines.push(line);
            }
        }
        found.errors += count(file, "errorCount");
        found.warnings += count(file, "warningCount");
    }
    Some(found)
}

/// ruff's `--output-format json`: one entry per finding; see [`RUFF_WARNING_FAMILIES`].
pub(super) fn ruff(findings: &[Value], cwd: &Path) -> Option<Found> {
    let looks_like = |f: &Value| f.get("filename").is_some() && f.get("location").is_some();
    if !findings.iter().all(looks_like) {
        return None;
    }
    let mut found = Found::with_tool("ruff");
    for f in findings {
        let code = f.get("code").and_then(Value::as_str);
        let severity = f.get("severity").and_then(Value::as_str);
        let location = f.get("location");
        let line = finding(
            &display_path(f.get("filename").and_then(Value::as_str)?, cwd),
            location.and_then(|l| l.get("row")).and_then(Value::as_u64),
            location
                .and_then(|l| l.get("column"))
                .and_then(Value::as_u64),
            f.get("message").and_then(Value::as_str).unwrap_or(""),
            code,
        );
        found.push(!ruff_is_warning(code, severity), line);
    }
    Some(found)
}

/// Whether a ruff finding counts as a warning; see [`RUFF_WARNING_FAMILIES`].
fn ruff_is_warning(code: Option<&str>, severity: Option<&str>) -> bool {
    if matches!(severity, Some("warning" | "info")) {
        return true;
    }
    let Some(code) = code else {
        return false;
    };
    RUFF_WARNING_CODES.contains(&code)
        || RUFF_WARNING_FAMILIES.iter().any(|family| {
            code.strip_prefix(family)
                .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()))
        })
}

/// cargo's `--message-format json` lines: `compiler-message` entries of level `error` or
/// `warning` whose primary span is in the project (not in a dependency or the standard
/// library). `--all-targets` checks a library twice (as itself and its tests), so the same
/// diagnostic is counted once. `None` when no line is a cargo message.
pub(super) fn clippy(output: &str, cwd: &Path) -> Option<Found> {
    let mut found = Found::with_tool("clippy");
    let mut any = false;
    let mut seen = std::collections::HashSet::new();
    for line in output.lines() {
        let line = line.trim();
        if !line.starts_with("{\"reason\"") {
            continue;
        }
        let Ok(value) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        any = true;
        if value.get("reason").and_then(Value::as_str) != Some("compiler-message") {
            continue;
        }
        let Some(message) = value.get("message") else {
            continue;
        };
        let level = message.get("level").and_then(Value::as_str).unwrap_or("");
        let error = level.starts_with("error");
        if !error && level != "warning" {
            continue;
        }
        let Some(span) = message
            .get("spans")
            .and_then(Value::as_array)
            .and_then(|spans| {
                spans
                    .iter()
                    .find(|s| s.get("is_primary").and_then(Value::as_bool) == Some(true))
            })
        else {
            // No place: a summary such as "aborting due to 2 previous errors".
            continue;
        };
        let Some(file) = span.get("file_name").and_then(Value::as_str) else {
            continue;
        };
        if !in_project(file, cwd) {
            continue;
        }
        let text = finding(
            file,
            span.get("line_start").and_then(Value::as_u64),
            span.get("column_start").and_then(Value::as_u64),
            message.get("message").and_then(Value::as_str).unwrap_or(""),
            message
                .get("code")
                .and_then(|c| c.get("code"))
                .and_then(Value::as_str),
        );
        if seen.insert((error, text.clone())) {
            found.push(error, text);
        }
    }
    any.then_some(found)
}

/// Whether a diagnostic's file is the project's: rustc names the workspace's files relative to
/// its root, and others (the standard library, registry crates) absolute.
fn in_project(file: &str, cwd: &Path) -> bool {
    let path = Path::new(file);
    if path.is_absolute() {
        let cwd = std::path::absolute(cwd).unwrap_or_else(|_| cwd.to_path_buf());
        return path.starts_with(cwd);
    }
    !path.starts_with("..") && !file.starts_with('<')
}

/// `path` relative to `cwd` when under it. Node and ruff name files by the real path of their
/// working directory, which differs from `cwd` when a link is on the way.
fn display_path(path: &str, cwd: &Path) -> String {
    let candidates = [std::path::absolute(cwd).ok(), cwd.canonicalize().ok()];
    candidates
        .iter()
        .flatten()
        .find_map(|dir| Path::new(path).strip_prefix(dir).ok())
        .map_or_else(|| path.to_string(), |p| p.display().to_string())
}

/// `file:line:col: message (rule)`.
fn finding(
    file: &str,
    line: Option<u64>,
    column: Option<u64>,
    message: &str,
    rule: Option<&str>,
) -> String {
    let mut text = format!(
        "{file}:{}:{}: {}",
        line.unwrap_or(0),
        column.unwrap_or(0),
        message.trim()
    );
    if let Some(rule) = rule {
        text.push_str(&format!(" ({rule})"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ruff_warning_set() {
        for code in ["I001", "W291", "W605", "D100", "Q000", "COM812", "E501"] {
            assert!(ruff_is_warning(Some(code), Some("error")), "{code}");
        }
        for code in ["F401", "E711", "INP001", "DTZ005", "invalid-syntax", "B006"] {
            assert!(!ruff_is_warning(Some(code), Some("error")), "{code}");
        }
        assert!(!ruff_is_warning(None, None));
        assert!(ruff_is_warning(Some("F401"), Some("warning")));
    }

    #[test]
    fn json_arrays_are_found_among_other_lines() {
        let output = "npm warn Unknown user config\n[{\"a\":\n  1}]\ntrailing text\n";
        assert_eq!(
            find_array(output).map(|a| a.len()),
            Some(1),
            "a pretty-printed array after a warning"
        );
        assert_eq!(find_array("[not json\n[]\n").map(|a| a.len()), Some(0));
        assert!(find_array("no json here\n").is_none());
    }

    #[test]
    fn project_files_and_others() {
        let cwd = Path::new("/work/p");
        assert!(in_project("src/lib.rs", cwd));
        assert!(in_project("/work/p/src/lib.rs", cwd));
        assert!(!in_project("../dep/src/lib.rs", cwd));
        assert!(!in_project("/rustc/abc/library/core/src/macros.rs", cwd));
        assert!(!in_project("<anon>", cwd));
    }
}
