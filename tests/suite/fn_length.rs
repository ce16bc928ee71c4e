//! A length budget for functions: no function of the three crates' library code is over
//! [`MAX_FN_LINES`] lines, but those of [`ALLOWED`], each held to its length today. The list
//! only shrinks: a listed function that grows fails, and one brought within the budget fails
//! until it is struck from the list.
//!
//! Read as text, not with `syn` (whose spans carry no line numbers without a feature that
//! would rebuild the dependency tree): strings, characters and comments are blanked, test
//! modules dropped, and each `fn` measured from its line to the line of its closing brace.

use std::collections::BTreeMap;

use super::architecture::{is_test_file, root, rust_files};

const MAX_FN_LINES: usize = 120;

/// `(file, function, lines)`: the functions over the budget, each at most as long as this.
const ALLOWED: &[(&str, &str, usize)] = &[
    // Data: a table of secret formats per provider, one entry per line.
    ("guard/src/corpus/secrets/saas.rs", "make", 423),
    ("guard/src/corpus/secrets/cloud.rs", "make", 369),
    ("guard/src/corpus/secrets/keys.rs", "make", 151),
    ("guard/src/corpus/secrets/blocks.rs", "context", 144),
    // Data: the built-in coding agents, one definition each.
];

#[test]
fn no_function_is_over_the_budget_but_those_listed_and_none_grows() {
    let mut found: BTreeMap<(String, String), usize> = BTreeMap::new();
    for src in ["src", "actors/src", "guard/src"] {
        for file in rust_files(&root().join(src)) {
            if file.components().any(|c| c.as_os_str() == "tests") || is_test_file(&file) {
                continue;
            }
            let text = std::fs::read_to_string(&file).unwrap();
            let shown = file.strip_prefix(root()).unwrap().display().to_string();
            for (name, lines) in functions(&text) {
                if lines > MAX_FN_LINES {
                    let longest = found.entry((shown.clone(), name)).or_default();
                    *longest = (*longest).max(lines);
                }
            }
        }
    }
    let mut wrong = Vec::new();
    for ((file, name), lines) in &found {
        match ALLOWED.iter().find(|(f, n, _)| f == file && n == name) {
            None => wrong.push(format!(
                "{file}: fn {name} is {lines} lines (the budget is {MAX_FN_LINES})"
            )),
            Some((.., allowed)) if lines > allowed => wrong.push(format!(
                "{file}: fn {name} grew to {lines} lines (listed at {allowed})"
            )),
            Some(_) => {}
        }
    }
    for (file, name, allowed) in ALLOWED {
        if !found.contains_key(&(file.to_string(), name.to_string())) {
            wrong.push(format!(
                "{file}: fn {name} (listed at {allowed}) is within the budget now: strike it from ALLOWED"
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The check finds a long function past strings and comments that hold braces, and leaves
/// out a test module.
#[test]
fn the_count_reads_past_strings_comments_and_test_modules() {
    let body = "    let _x = 1;\n".repeat(5);
    let text = format!(
        "fn short() {{ let s = \"}}\"; let c = '}}'; }}\n/* {{ */ // }}\nfn long<'a>(x: &'a str) -> &'a str {{\n{body}    let r = r#\"{{\"#;\n    x\n}}\n#[cfg(test)]\nmod tests {{\n    fn hidden() {{\n{body}    }}\n}}\n"
    );
    let mut got = functions(&text);
    got.sort();
    assert_eq!(got, [("long".to_string(), 9), ("short".to_string(), 1)]);
}

/// Each function of `text` outside test modules, with its length in lines.
fn functions(text: &str) -> Vec<(String, usize)> {
    let code = without_test_modules(&blanked(text));
    let bytes = code.as_bytes();
    let line_of = |at: usize| code[..at].matches('\n').count();
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(found) = code[at..].find("fn ") {
        let start = at + found;
        at = start + 3;
        let word_before =
            start > 0 && (bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'_');
        if word_before {
            continue;
        }
        let name: String = code[at..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if name.is_empty() {
            continue;
        }
        let Some(open) = code[at..].find(['{', ';']).map(|i| at + i) else {
            break;
        };
        if bytes[open] == b';' {
            continue;
        }
        let mut depth = 0usize;
        let mut end = open;
        for (i, b) in bytes.iter().enumerate().skip(open) {
            match b {
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = i;
                        break;
                    }
                }
                _ => {}
            }
        }
        out.push((name, line_of(end) - line_of(start) + 1));
    }
    out
}

/// `text` with its comments, strings and character literals blanked (spaces; line breaks
/// kept), so that only code's braces are left.
fn blanked(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |out: &mut String, part: &[char]| {
        out.extend(part.iter().map(|&c| if c == '\n' { '\n' } else { ' ' }));
    };
    let mut i = 0;
    while i < chars.len() {
        let rest = &chars[i..];
        let ident_before = i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_');
        let end = if rest.starts_with(&['/', '/']) {
            rest.iter().position(|&c| c == '\n').unwrap_or(rest.len())
        } else if rest.starts_with(&['/', '*']) {
            let mut depth = 0;
            let mut j = 0;
            loop {
                if j + 1 >= rest.len() {
                    break rest.len();
                }
                if rest[j] == '/' && rest[j + 1] == '*' {
                    depth += 1;
                    j += 2;
                } else if rest[j] == '*' && rest[j + 1] == '/' {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break j;
                    }
                } else {
                    j += 1;
                }
            }
        } else if !ident_before && raw_string(rest).is_some() {
            raw_string(rest).unwrap_or(1)
        } else if rest[0] == '"' {
            let mut j = 1;
            while j < rest.len() && rest[j] != '"' {
                j += if rest[j] == '\\' { 2 } else { 1 };
            }
            (j + 1).min(rest.len())
        } else if rest[0] == '\'' && rest.get(1) == Some(&'\\') {
            rest[2..]
                .iter()
                .position(|&c| c == '\'')
                .map_or(1, |p| p + 3)
        } else if rest[0] == '\'' && rest.get(2) == Some(&'\'') {
            3
        } else {
            out.push(rest[0]);
            i += 1;
            continue;
        };
        blank(&mut out, &rest[..end]);
        i += end;
    }
    out
}

/// The length of the raw string `rest` starts with (`r"…"`, `r#"…"#`, `br"…"`), if it does.
fn raw_string(rest: &[char]) -> Option<usize> {
    let from = match rest {
        ['b', 'r', ..] => 2,
        ['r', ..] => 1,
        _ => return None,
    };
    let hashes = rest[from..].iter().take_while(|&&c| c == '#').count();
    if rest.get(from + hashes) != Some(&'"') {
        return None;
    }
    let body = from + hashes + 1;
    let closing: Vec<char> = std::iter::once('"')
        .chain(std::iter::repeat_n('#', hashes))
        .collect();
    let end = (body..rest.len()).find(|&j| rest[j..].starts_with(&closing))?;
    Some(end + closing.len())
}

/// `code` (blanked) with each `#[cfg(test)] mod … { … }` blanked too.
fn without_test_modules(code: &str) -> String {
    let mut out = code.to_string();
    while let Some(at) = out.find("#[cfg(test)]") {
        let after = &out[at..];
        let is_mod = after["#[cfg(test)]".len()..]
            .split_whitespace()
            .take(2)
            .any(|w| w == "mod");
        let end = match (is_mod, after.find('{'), after.find(';')) {
            (true, Some(open), semi) if semi.is_none_or(|s| s > open) => {
                let mut depth = 0usize;
                let mut end = after.len();
                for (i, c) in after.char_indices().skip_while(|&(i, _)| i < open) {
                    match c {
                        '{' => depth += 1,
                        '}' => {
                            depth -= 1;
                            if depth == 0 {
                                end = i + 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                end
            }
            _ => "#[cfg(test)]".len(),
        };
        let blanked: String = after[..end]
            .chars()
            .map(|c| if c == '\n' { '\n' } else { ' ' })
            .collect();
        out.replace_range(at..at + end, &blanked);
    }
    out
}
