//! Reading stack traces and error lines: where a failure was raised (the innermost frame in the
//! project's own files), the error's type, and caps on messages and traces. Shared by the report
//! readers, the plain-text parsers and the classifier, so all three agree on what a trace says.

use std::path::Path;

use ralph_actors::schema::test_run::Location;

/// A compiled static regex; `None` only if the pattern is broken, which the unit tests catch.
macro_rules! regex {
    ($re:literal) => {{
        static RE: std::sync::LazyLock<Option<regex::Regex>> =
            std::sync::LazyLock::new(|| regex::Regex::new($re).ok());
        RE.as_ref()
    }};
}
pub(crate) use regex;

/// A stack trace is cut to this many bytes: enough for the frames that matter, small enough
/// that 10,000 failures stay a reasonable file.
pub(crate) const STACK_MAX_BYTES: usize = 8 * 1024;
/// Captured stdout and stderr of one test are cut to this many bytes.
pub(crate) const OUTPUT_MAX_BYTES: usize = 8 * 1024;

/// Cuts `text` to at most `max` bytes (at a character boundary), marking the cut.
pub(crate) fn cap(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut cut = max;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}\n... [{} bytes cut]", &text[..cut], text.len() - cut)
}

/// Paths in these places are not the project's own code: dependencies, the language's runtime,
/// generated doctest wrappers.
const LIBRARY_MARKERS: &[&str] = &[
    "node_modules/",
    "site-packages/",
    "dist-packages/",
    "/rustc/",
    ".cargo/registry/",
    ".cargo/git/",
    ".rustup/",
    "/lib/python",
    "/rustdoctest",
    "/.pyenv/",
];

/// The project-relative form of a path in a trace, or `None` when it is not the project's own
/// file. With no `cwd`, any path that is not plainly a library's counts as the project's.
pub(crate) fn own_path(path: &str, cwd: Option<&Path>) -> Option<String> {
    let p = path.strip_prefix("file://").unwrap_or(path);
    let p = p.strip_prefix("./").unwrap_or(p);
    if p.is_empty()
        || p.starts_with("node:")
        || p.starts_with('<')
        || p.starts_with("../")
        || p.starts_with("internal/")
        || LIBRARY_MARKERS.iter().any(|m| p.contains(m))
    {
        return None;
    }
    // A file name has an extension; this skips `native`, `anonymous` and the like.
    let name = p.rsplit('/').next().unwrap_or(p);
    if !name.contains('.') {
        return None;
    }
    if p.starts_with('/') {
        return match cwd {
            Some(cwd) => Path::new(p)
                .strip_prefix(cwd)
                .ok()
                .map(|r| r.to_string_lossy().into_owned()),
            None => Some(p.to_string()),
        };
    }
    Some(p.to_string())
}

/// Makes an absolute path under `cwd` relative to it (`file://` URLs too); others are kept.
pub(crate) fn relative(path: &str, cwd: &Path) -> String {
    let p = path.strip_prefix("file://").unwrap_or(path);
    Path::new(p)
        .strip_prefix(cwd)
        .map_or_else(|_| p.to_string(), |r| r.to_string_lossy().into_owned())
}

fn located(
    path: &str,
    line: Option<&str>,
    column: Option<&str>,
    cwd: Option<&Path>,
) -> Option<Location> {
    let file = own_path(path, cwd)?;
    Some(Location {
        file,
        line: line.and_then(|l| l.parse().ok()),
        column: column.and_then(|c| c.parse().ok()),
    })
}

/// Where a failure was raised, from its message and trace: the innermost frame in the project's
/// own files. Python tracebacks list the innermost frame last; V8 and Rust backtraces list it
/// first; a Rust panic names its place outright.
pub(crate) fn location(text: &str, cwd: Option<&Path>) -> Option<Location> {
    python_location(text, cwd)
        .or_else(|| panic_location(text, cwd))
        .or_else(|| frame_location(text, cwd))
}

/// `File "/abs/x.py", line 7, in f` (tracebacks) and `tests/test_x.py:13: AssertionError` (pytest's
/// long format): the last one in the project.
fn python_location(text: &str, cwd: Option<&Path>) -> Option<Location> {
    if !text.contains(".py") {
        return None;
    }
    let tb = regex!(r#"^\s*(?:E\s+)?File "([^"]+\.pyw?)", line (\d+)"#)?;
    let long = regex!(r"^(\S+\.py):(\d+): ")?;
    let mut found = None;
    for line in text.lines() {
        let c = tb.captures(line).or_else(|| long.captures(line));
        if let Some(c) = c {
            if let Some(l) = located(&c[1], Some(&c[2]), None, cwd) {
                found = Some(l);
            }
        }
    }
    found
}

/// `thread 'x' panicked at src/lib.rs:35:9:` (or the shortened `panicked at ...`).
fn panic_location(text: &str, cwd: Option<&Path>) -> Option<Location> {
    let re = regex!(r"panicked at ([^\s:]+):(\d+):(\d+)")?;
    let c = re.captures(text)?;
    located(&c[1], Some(&c[2]), Some(&c[3]), cwd)
}

/// The first project frame of a V8 stack (`at f (/abs/a.js:8:34)`, `at /abs/a.ts:9:3`), a Rust
/// backtrace (`at ./src/lib.rs:35:9`), rustc (`--> src/lib.rs:5:1`), tsc (`a.ts(4,7): error`),
/// vitest (`❯ src/a.test.ts:9:34`, `╭─[ src/a.ts:1:11 ]`), babel (`SyntaxError: /abs/a.js:
/// Unexpected token (1:10)`) and node's own header for a file that failed to load (`/abs/a.js:1`).
fn frame_location(text: &str, cwd: Option<&Path>) -> Option<Location> {
    let v8 = regex!(r"^\s*at (?:.*? \()?((?:file://)?[^()\s]+?):(\d+):(\d+)\)?\s*$")?;
    let arrow = regex!(r"^\s*(?:-->|❯|╭─\[)\s*([^\s\]]+?):(\d+):(\d+)")?;
    let tsc = regex!(r"^([^\s(]+\.[cm]?tsx?)\((\d+),(\d+)\): error TS\d+")?;
    let babel = regex!(r"^\s*SyntaxError: (/[^:]+): .*\((\d+):(\d+)\)\s*$")?;
    let header = regex!(r"^(/\S+\.[cm]?[jt]sx?):(\d+)$")?;
    for line in text.lines() {
        let c = v8
            .captures(line)
            .or_else(|| arrow.captures(line))
            .or_else(|| tsc.captures(line))
            .or_else(|| babel.captures(line))
            .or_else(|| header.captures(line));
        if let Some(c) = c {
            let column = c.get(3).map(|m| m.as_str());
            if let Some(l) = located(&c[1], Some(&c[2]), column, cwd) {
                return Some(l);
            }
        }
    }
    None
}

/// The error class a line names: `TypeError: x` → `TypeError`, `AssertionError [ERR_ASSERTION]:
/// x` → `AssertionError`, `requests.exceptions.HTTPError: x`, a bare `MemoryError`.
pub(crate) fn error_type_of_line(line: &str) -> Option<&str> {
    let re = regex!(
        r"^\s*(?:E\s+)?((?:[A-Za-z_]\w*\.)*(?:[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Warning)|Error|Exception|Failed))(?: \[[A-Z0-9_]+\])?(?::\s|:$|$)"
    )?;
    re.captures(line).and_then(|c| c.get(1)).map(|m| m.as_str())
}

/// The error class of a JavaScript error text: its first line's.
pub(crate) fn js_error_type(text: &str) -> Option<String> {
    text.lines()
        .find(|l| !l.trim().is_empty())
        .and_then(error_type_of_line)
        .map(String::from)
}

/// The error class of a Python traceback: the last exception line (`E   KeyError: 'x'`), or the
/// class pytest names after the crash place (`tests/test_x.py:13: AssertionError`).
pub(crate) fn python_error_type(text: &str) -> Option<String> {
    let crash = regex!(r"^\S+\.py:\d+: ((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*)$")?;
    for line in text.lines().rev() {
        if let Some(c) = crash.captures(line) {
            return Some(c[1].to_string());
        }
        if line.starts_with(char::is_whitespace) && !line.trim_start().starts_with("E ") {
            continue;
        }
        if let Some(t) = error_type_of_line(line) {
            return Some(t.to_string());
        }
    }
    None
}

/// Splits a V8 error text (`TypeError: x\n    at f (a.js:1:2)\n...`) into the message (the
/// lines before the first frame) and the frames.
pub(crate) fn split_js_stack(text: &str) -> (&str, Option<&str>) {
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        if line.trim_start().starts_with("at ") {
            let frames = text[offset..].trim_end();
            return (text[..offset].trim_end(), Some(frames));
        }
        offset += line.len();
    }
    (text.trim_end(), None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loc(text: &str, cwd: Option<&str>) -> Option<(String, Option<u32>, Option<u32>)> {
        location(text, cwd.map(Path::new)).map(|l| (l.file, l.line, l.column))
    }

    /// Asserts that `text`, its paths read from `cwd`, is located at `(file, line, column)`.
    fn assert_loc(
        text: &str,
        cwd: Option<&str>,
        (file, line, column): (&str, Option<u32>, Option<u32>),
    ) {
        assert_eq!(
            loc(text, cwd),
            Some((file.to_string(), line, column)),
            "{text}"
        );
    }

    #[test]
    fn patterns_compile() {
        assert!(regex!(r"x").is_some());
        assert!(error_type_of_line("TypeError: x").is_some());
        assert!(python_error_type("KeyError: 'a'").is_some());
        assert!(loc("    at f (/p/a.js:1:2)", Some("/p")).is_some());
    }

    #[test]
    fn v8_frames_skip_libraries_and_runtime() {
        let stack = "TypeError: cannot read the list\n    at boom (/tmp/p/src/math.js:9:9)\n    at Object.boom (/tmp/p/src/math.test.js:12:7)";
        assert_loc(stack, Some("/tmp/p"), ("src/math.js", Some(9), Some(9)));
        let lib_first = "Error: x\n    at _getError (/w/node_modules/jest-circus/build/a.js:1985:12)\n    at new Promise (<anonymous>)\n    at node:internal/timers:483:21\n    at file:///tmp/p/src/a.test.ts:3:5";
        assert_loc(
            lib_first,
            Some("/tmp/p"),
            ("src/a.test.ts", Some(3), Some(5)),
        );
        // Outside the project: not its own.
        assert_eq!(loc("    at f (/elsewhere/a.js:1:2)", Some("/tmp/p")), None);
        assert_eq!(
            loc("    at Context.<anonymous> (test/m.test.js:9:12)", None).map(|l| l.0),
            Some("test/m.test.js".into())
        );
    }

    #[test]
    fn python_takes_the_innermost_project_frame() {
        let tb = "Traceback (most recent call last):\n  File \"/tmp/p/tests/test_calc.py\", line 17, in test_empty\n    median([])\n  File \"/tmp/p/tests/test_calc.py\", line 6, in median\n    return s[len(s) // 2]\n  File \"/root/.pyenv/versions/3.11.7/lib/python3.11/subprocess.py\", line 1950, in _execute_child\nIndexError: list index out of range";
        assert_loc(tb, Some("/tmp/p"), ("tests/test_calc.py", Some(6), None));
        let long = "    def load(path):\n>       with open(path) as f:\nE       FileNotFoundError: x\n\nsrc/pkg/stats.py:7: FileNotFoundError";
        assert_loc(long, Some("/tmp/p"), ("src/pkg/stats.py", Some(7), None));
        assert_eq!(
            python_error_type(long).as_deref(),
            Some("FileNotFoundError")
        );
    }

    #[test]
    fn rust_panics_and_backtraces() {
        let p = "panicked at src/lib.rs:35:9:\nassertion failed";
        assert_loc(p, Some("/x"), ("src/lib.rs", Some(35), Some(9)));
        // A panic inside std: the first project frame of the backtrace.
        let bt = "thread 'a' panicked at /rustc/abc/library/core/src/x.rs:1:1:\nboom\nstack backtrace:\n   0: core::x\n             at /rustc/abc/library/core/src/x.rs:1:1\n   9: it::t\n             at ./tests/it.rs:9:5";
        assert_loc(bt, Some("/x"), ("tests/it.rs", Some(9), Some(5)));
        assert_loc(
            "error[E0432]: unresolved import\n --> src/lib.rs:1:5",
            None,
            ("src/lib.rs", Some(1), Some(5)),
        );
    }

    #[test]
    fn error_types() {
        assert_eq!(
            js_error_type("TypeError: x\n at y").as_deref(),
            Some("TypeError")
        );
        assert_eq!(
            js_error_type("AssertionError [ERR_ASSERTION]: Expected").as_deref(),
            Some("AssertionError")
        );
        assert_eq!(js_error_type("thrown: \"Exceeded timeout\""), None);
        assert_eq!(
            python_error_type("x\nMemoryError").as_deref(),
            Some("MemoryError")
        );
        assert_eq!(
            python_error_type("E   ModuleNotFoundError: No module named 'x'").as_deref(),
            Some("ModuleNotFoundError")
        );
        assert_eq!(error_type_of_line("expected 3 to be 2"), None);
    }

    #[test]
    fn splits_messages_from_frames_and_caps() {
        let (m, s) = split_js_stack("Error: a\nb\n    at f (x.js:1:1)\n    at g (y.js:2:2)\n");
        assert_eq!(m, "Error: a\nb");
        assert_eq!(s, Some("    at f (x.js:1:1)\n    at g (y.js:2:2)"));
        assert_eq!(split_js_stack("plain"), ("plain", None));
        let c = cap(&"é".repeat(10), 5);
        assert!(
            c.starts_with("éé\n... [") && c.ends_with("bytes cut]"),
            "{c}"
        );
    }
}
