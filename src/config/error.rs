//! Config errors, each naming the file and, where it can, the line, column and key.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// `--config PATH` names no file.
    #[error("{}: config file not found", path.display())]
    NotFound { path: PathBuf },
    #[error("{}: cannot read: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A syntax error, an unknown key or a bad value:
    /// `ralph.config.yaml:12:5: budgets.max_cost_usd: invalid type: string "lots", expected f64`.
    #[error("{}", located(file, *line, *column, key.as_deref(), message))]
    Invalid {
        file: PathBuf,
        /// 1-based.
        line: Option<usize>,
        /// 1-based.
        column: Option<usize>,
        /// The dotted key path (`budgets.max_cost_usd`).
        key: Option<String>,
        message: String,
    },
}

fn located(
    file: &Path,
    line: Option<usize>,
    column: Option<usize>,
    key: Option<&str>,
    message: &str,
) -> String {
    let mut s = file.display().to_string();
    if let Some(line) = line {
        let _ = write!(s, ":{line}");
        if let Some(column) = column {
            let _ = write!(s, ":{column}");
        }
    }
    if let Some(key) = key {
        let _ = write!(s, ": {key}");
    }
    let _ = write!(s, ": {message}");
    s
}

impl ConfigError {
    /// An error from deserialising `file`, with the key path `serde_path_to_error` tracked.
    pub(crate) fn from_yaml(
        file: &Path,
        err: serde_path_to_error::Error<serde_yaml::Error>,
    ) -> Self {
        let path = err.path().to_string();
        let inner = err.inner();
        let location = inner.location();
        let mut message = inner.to_string();
        // The YAML error's text repeats the position and (part of) the key path; both get their
        // own place in our format.
        if let Some(l) = &location {
            message = message.replacen(
                &format!(" at line {} column {}", l.line(), l.column()),
                "",
                1,
            );
        }
        let message = rename_unknown_field(strip_path_prefix(&message, &path));
        let key = (path != ".").then_some(path);
        ConfigError::Invalid {
            file: file.to_path_buf(),
            line: location.as_ref().map(|l| l.line()),
            column: location.as_ref().map(|l| l.column()),
            key,
            message,
        }
    }

    /// The same error, its line moved down by `lines`: for YAML read out of a larger file (a
    /// spec's front matter).
    pub(crate) fn shifted(self, lines: usize) -> Self {
        match self {
            ConfigError::Invalid {
                file,
                line,
                column,
                key,
                message,
            } => ConfigError::Invalid {
                file,
                line: line.map(|l| l + lines),
                column,
                key,
                message,
            },
            other => other,
        }
    }

    /// An error found after parsing, placed at the line of `key` (dotted) in `source` if found.
    pub(crate) fn at_key(file: &Path, source: &str, key: &str, message: String) -> Self {
        let segments: Vec<&str> = key.split('.').collect();
        let location = find_key(source, &segments);
        ConfigError::Invalid {
            file: file.to_path_buf(),
            line: location.map(|(l, _)| l),
            column: location.map(|(_, c)| c),
            key: Some(key.to_string()),
            message,
        }
    }
}

/// yaml_serde prefixes its message with its own idea of the path, which for an unknown key is
/// the parent's: try the full path, then each parent.
fn strip_path_prefix<'a>(message: &'a str, path: &str) -> &'a str {
    let mut candidate = path;
    loop {
        if let Some(rest) = message
            .strip_prefix(candidate)
            .and_then(|r| r.strip_prefix(": "))
        {
            return rest;
        }
        match candidate.rsplit_once('.') {
            Some((parent, _)) => candidate = parent,
            None => return message,
        }
    }
}

/// "unknown field `x`, expected one of ..." → "unknown key, expected one of ...": the key is
/// already named by the path, and "field" is serde's word, not the user's.
fn rename_unknown_field(message: &str) -> String {
    if let Some((_, tail)) = message
        .strip_prefix("unknown field `")
        .and_then(|r| r.split_once('`'))
    {
        return format!("unknown key{tail}");
    }
    message.to_string()
}

/// The 1-based line and column of the nested block-style key `keys` in `source`; when only a
/// prefix of the path is found (flow style, `prompts: {artisan: x}`), the deepest one found.
/// A plain scan is enough here: it only places errors found after a successful parse.
fn find_key(source: &str, keys: &[&str]) -> Option<(usize, usize)> {
    let mut lines = source.lines().enumerate().filter(|(_, l)| {
        let body = l.trim_start();
        !(body.is_empty() || body.starts_with('#') || body.starts_with("---"))
    });
    let mut found = None;
    let mut parent_indent: Option<usize> = None;
    for key in keys {
        let mut child_indent = None;
        let mut hit = None;
        for (n, line) in lines.by_ref() {
            let indent = line.len() - line.trim_start().len();
            if parent_indent.is_some_and(|p| indent <= p) {
                break;
            }
            // Siblings share the indent of the first child; deeper lines are their values.
            let level = *child_indent.get_or_insert(indent);
            if indent < level {
                break;
            }
            let body = line.trim_start();
            if indent == level && body.strip_prefix(key).is_some_and(|r| r.starts_with(':')) {
                hit = Some((n + 1, indent + 1));
                parent_indent = Some(indent);
                break;
            }
        }
        match hit {
            Some(h) => found = Some(h),
            None => break,
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_nested_keys_by_indent() {
        let src = "models:\n  critic: x\n# c\ncritic:\n  enabled: true\n  max_rejections: 2\nprompts: {artisan: a}\n";
        assert_eq!(find_key(src, &["critic", "max_rejections"]), Some((6, 3)));
        assert_eq!(find_key(src, &["models", "critic"]), Some((2, 3)));
        assert_eq!(find_key(src, &["prompts", "artisan"]), Some((7, 1)));
        assert_eq!(find_key(src, &["testing"]), None);
    }

    #[test]
    fn cleans_messages() {
        assert_eq!(
            strip_path_prefix("budgets: unknown field `x`", "budgets.x"),
            "unknown field `x`"
        );
        assert_eq!(
            rename_unknown_field("unknown field `x`, expected `a` or `b`"),
            "unknown key, expected `a` or `b`"
        );
    }
}
