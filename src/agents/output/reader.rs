//! [`Reader`]: what every format's reader does; and the one-line summaries they share.

use ralph_actors::schema::agent::AgentEvent;
use serde_json::Value;

/// Reads one agent's stdout, line by line (without the line break).
pub trait Reader: Send {
    fn line(&mut self, line: &str, out: &mut Vec<AgentEvent>);

    /// Called once the output has ended: what the format says only at its end.
    fn finish(&mut self, _out: &mut Vec<AgentEvent>) {}
}

/// Every event a new `R` reads from `lines`, its output then ended: for the readers' tests.
#[cfg(test)]
pub(crate) fn read_all<R: Reader + Default>(lines: &[&str]) -> Vec<AgentEvent> {
    let mut reader = R::default();
    let mut out = Vec::new();
    for line in lines {
        reader.line(line, &mut out);
    }
    reader.finish(&mut out);
    out
}

/// The first of `keys` that a tool call's `input` holds as text: what the call is about (its
/// command, its file), as every format names it in its own way.
pub(crate) fn first_text<'a>(input: &'a Value, keys: &[&str]) -> Option<&'a str> {
    keys.iter()
        .find_map(|k| input.get(*k).and_then(Value::as_str))
}

/// A one-line summary of at most `max` characters.
pub(crate) fn summary(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or("").trim();
    if line.chars().count() <= max && !text.trim().contains('\n') {
        return line.to_string();
    }
    let mut short: String = line.chars().take(max.saturating_sub(1)).collect();
    short.push('…');
    short
}
