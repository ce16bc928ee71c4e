//! The text of a tool's output, as both the plain-text parsers and the report readers handle
//! it: ANSI escapes removed, failure messages cut to size, and the tools' words for a test that
//! ran out of time.

use super::trace::regex;

/// A failure message is cut to this many lines and bytes: enough for an assertion and its diff.
const MESSAGE_MAX_LINES: usize = 40;
pub(crate) const MESSAGE_MAX_BYTES: usize = 4000;

/// Removes ANSI colour and cursor sequences (some tools colour their output even with `NO_COLOR`).
pub fn strip_ansi(text: &str) -> std::borrow::Cow<'_, str> {
    match regex!(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]") {
        Some(re) if text.contains('\x1b') => re.replace_all(text, ""),
        _ => std::borrow::Cow::Borrowed(text),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_ansi() {
        assert_eq!(
            strip_ansi("\x1b[31mred\x1b[0m \x1b]8;;http://x\x07link\x1b]8;;\x07"),
            "red link"
        );
    }
}
