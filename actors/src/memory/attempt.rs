//! The parts of an attempt made from the Artisan's reply and its change: what it said it was
//! doing, and the diff.

use crate::memory::text::cut_to;

/// The most of a diff the vault keeps.
const DIFF_BYTES: usize = 16_000;
/// The most of a hypothesis the vault keeps.
const HYPOTHESIS_BYTES: usize = 2_000;

/// What the Artisan said besides the code: its reply with fenced blocks taken out, bounded.
pub fn hypothesis(reply: &str) -> String {
    let mut out = String::new();
    let mut in_fence = false;
    for line in reply.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if !in_fence {
            out.push_str(line);
            out.push('\n');
        }
    }
    let mut out = out.trim().to_string();
    cut_to(&mut out, HYPOTHESIS_BYTES);
    out
}

/// The change from `before` to `after` as a unified diff of `path`, bounded.
pub fn diff(path: &str, before: &str, after: &str) -> String {
    let mut out = similar::TextDiff::from_lines(before, after)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{path}"), &format!("b/{path}"))
        .to_string();
    cut_to(&mut out, DIFF_BYTES);
    out
}
