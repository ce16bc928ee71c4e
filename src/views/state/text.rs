//! Text from outside made safe to draw ([`clean`]), and the bounded line lists a view keeps.

use std::collections::VecDeque;

/// The most lines of the thought stream and of the log a view keeps.
pub const KEEP_LINES: usize = 2000;

/// `text` ending with a newline.
pub(super) fn ended(text: &str) -> String {
    if text.ends_with('\n') {
        text.to_string()
    } else {
        format!("{text}\n")
    }
}

pub(super) fn push(lines: &mut VecDeque<String>, line: String) {
    if lines.len() == KEEP_LINES {
        lines.pop_front();
    }
    lines.push_back(line);
}

/// `text` safe to draw: escape sequences removed, tabs as spaces, every other control
/// character (newlines too) as a space.
pub fn clean(text: &str) -> String {
    clean_keep_lines(text).replace('\n', " ")
}

/// As [`clean`], keeping the newlines.
pub fn clean_keep_lines(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => skip_escape(&mut chars),
            '\n' => out.push('\n'),
            '\t' => out.push_str("    "),
            '\r' => {}
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// Skips the rest of an escape sequence: CSI (`ESC [ … final`), OSC (`ESC ] … BEL or ST`), or
/// a two-character one.
fn skip_escape(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    match chars.next() {
        Some('[') => {
            for c in chars.by_ref() {
                if ('@'..='~').contains(&c) {
                    break;
                }
            }
        }
        Some(']') | Some('P') | Some('_') | Some('^') => {
            while let Some(c) = chars.next() {
                if c == '\u{7}' {
                    break;
                }
                if c == '\u{1b}' && chars.peek() == Some(&'\\') {
                    chars.next();
                    break;
                }
            }
        }
        _ => {}
    }
}
