//! Error categories: what kind of failure a test (or a run that named no test) shows, read from
//! each language's messages and traces.
//!
//! - SYNTAX: the code does not parse or compile (`SyntaxError`, `IndentationError`, `TabError`,
//!   `error TS2322`, `Unexpected token`, rustc's diagnostics, `could not compile`).
//! - ENVIRONMENT: the project cannot run as set up (a missing module, package or crate, a
//!   missing command, `ENOENT`/`EACCES`/`ECONNREFUSED`, `PermissionError`, a missing
//!   `Cargo.toml`).
//! - PERFORMANCE: a time or memory limit (a test timeout, out of memory, a stack overflow,
//!   `RecursionError`).
//! - LOGIC: everything else: assertions, `TypeError`, panics.
//!
//! FLAKY is not decided here: the retry logic sets it on a test that failed and then passed.
//!
//! Patterns that name an error class are anchored at the start of a line (after pytest's `E`,
//! an outer error's `Error: ` and the like), so a message that merely mentions one (`DID NOT
//! RAISE <class 'SyntaxError'>`) is not taken for it.

use std::sync::LazyLock;

use ralph_actors::schema::test_run::{CaseStatus, Category, TestCase};
use regex::Regex;

use super::language::Language;
use super::reading::trace;

/// Which languages' tools print a pattern.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Family {
    Any,
    Node,
    Python,
    Rust,
}

impl Family {
    fn applies(self, language: Option<Language>) -> bool {
        match (self, language) {
            (Family::Any, _) | (_, None) => true,
            (Family::Node, Some(l)) => l.is_node(),
            (Family::Python, Some(l)) => l == Language::Python,
            (Family::Rust, Some(l)) => l == Language::Rust,
        }
    }
}

struct Rule {
    category: Category,
    family: Family,
    re: Regex,
    /// The matched line is not this rule's when it holds this text (a `SyntaxError` from
    /// `JSON.parse` is bad data, not bad code).
    unless: Option<&'static str>,
}

/// The start of a line that names an error class: indentation, pytest's `E`, mocha's
/// `Exception during run: `, jest's `thrown: "`, and one outer class (`Error [CODE]: `).
const LINE: &str = r#"(?m)^[ \t]*(?:E[ \t]+)?(?:Exception during run: )?(?:thrown: "?)?(?:[A-Za-z_][\w.]*(?: \[[A-Z_]+\])?: )?"#;

static RULES: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    use Category::{Environment, Performance, Syntax};
    use Family::{Any, Node, Python, Rust};
    let at_line = |p: &str| format!("{LINE}{p}");
    let specs: Vec<(Category, Family, String, Option<&'static str>)> = vec![
        // SYNTAX
        (Syntax, Any, at_line(r"(?:SyntaxError|IndentationError|TabError)\b"), Some("JSON")),
        (Syntax, Node, r"(?m)\berror TS\d+:".into(), None),
        (Syntax, Node, at_line(r"Unexpected token\b"), Some("JSON")),
        (Syntax, Node, r"\[PARSE_ERROR\]|Jest encountered an unexpected token".into(), None),
        // ENVIRONMENT
        (Environment, Python, at_line(r"(?:ModuleNotFoundError\b|No module named )"), None),
        (Environment, Python, at_line(r"(?:PermissionError|ConnectionRefusedError)\b"), None),
        (Environment, Node, at_line(r"Cannot find (?:module|package) "), None),
        (Environment, Node, r"\bERR_MODULE_NOT_FOUND\b|Failed to load url ".into(), None),
        (Environment, Any, r"(?m)command not found|^\S*sh: (?:line )?\d+: .+: not found\s*$".into(), None),
        (Environment, Any, r"\b(?:ENOENT|EACCES|ECONNREFUSED)\b".into(), None),
        (Environment, Rust, r"no matching package named|could not find `Cargo\.toml`".into(), None),
        // PERFORMANCE
        (Performance, Any, r"(?i)exceeded timeout of|timeout of \d+ ?ms exceeded|\btest timed out\b|time limit exceeded".into(), None),
        (Performance, Any, at_line(r"Failed: Timeout\b"), None),
        (Performance, Node, r"JavaScript heap out of memory|Maximum call stack size exceeded".into(), None),
        (Performance, Python, at_line(r"(?:MemoryError|RecursionError)\b"), None),
        (Performance, Rust, r"memory allocation of \d+ bytes failed|has overflowed its stack".into(), None),
    ];
    specs
        .into_iter()
        .filter_map(|(category, family, pattern, unless)| {
            Regex::new(&pattern).ok().map(|re| Rule {
                category,
                family,
                re,
                unless,
            })
        })
        .collect()
});

/// Sets the category of a failing or timed-out test (a FLAKY one is left alone), and its error
/// type and location when still unknown and the message or trace shows them.
/// Compiles the rules now (on the caller's thread), so that the first classification, right
/// after the baseline test run, does not: a run calls this beside that test run.
pub fn warm() {
    LazyLock::force(&RULES);
}

pub fn classify_case(case: &mut TestCase, language: Option<Language>) {
    if !matches!(case.status, CaseStatus::Fail | CaseStatus::Timeout)
        || case.category == Some(Category::Flaky)
    {
        return;
    }
    let text = match (case.message.as_deref(), case.stack.as_deref()) {
        (Some(m), Some(s)) => format!("{m}\n{s}"),
        (m, s) => m.or(s).unwrap_or("").to_string(),
    };
    if case.error_type.is_none() {
        case.error_type = error_type(&text, language);
    }
    if case.location.is_none() {
        case.location = trace::location(&text, None);
    }
    let assertion = case
        .error_type
        .as_deref()
        .is_some_and(|t| t.contains("Assertion"));
    case.category = Some(if case.status == CaseStatus::Timeout {
        Category::Performance
    } else if assertion {
        // An assertion failed: the code ran and gave a wrong answer, whatever its message
        // quotes (`expected 'ENOENT' to be 'EACCES'`).
        Category::Logic
    } else {
        classify_text(&text, language).unwrap_or(Category::Logic)
    });
}

/// The category of a failed run's output when no test was named (a syntax error at import, a
/// missing module, a missing command); `None` when nothing in it is recognised.
pub fn classify_output(output: &str, language: Option<Language>) -> Option<Category> {
    classify_text(output, language)
}

/// The most common category among the failing and timed-out tests; ties go to SYNTAX, then
/// ENVIRONMENT, PERFORMANCE, LOGIC: the kinds that block everything else come first.
pub fn dominant(tests: &[TestCase]) -> Option<Category> {
    const ORDER: [Category; 5] = [
        Category::Syntax,
        Category::Environment,
        Category::Performance,
        Category::Logic,
        Category::Flaky,
    ];
    let mut counts = [0usize; ORDER.len()];
    for t in tests {
        if !matches!(t.status, CaseStatus::Fail | CaseStatus::Timeout) {
            continue;
        }
        if let Some(i) = t.category.and_then(|c| ORDER.iter().position(|o| *o == c)) {
            counts[i] += 1;
        }
    }
    let mut best: Option<(usize, Category)> = None;
    for (i, c) in ORDER.iter().enumerate() {
        if counts[i] > 0 && best.is_none_or(|(n, _)| counts[i] > n) {
            best = Some((counts[i], *c));
        }
    }
    best.map(|(_, c)| c)
}

/// SYNTAX, then ENVIRONMENT, then PERFORMANCE, whichever the text shows first in that order;
/// `could not compile` alone (every build failure says it) counts as SYNTAX last.
fn classify_text(text: &str, language: Option<Language>) -> Option<Category> {
    let mut found = [false; 3];
    let slot = |c: Category| match c {
        Category::Syntax => Some(0),
        Category::Environment => Some(1),
        Category::Performance => Some(2),
        _ => None,
    };
    for rule in RULES.iter().filter(|r| r.family.applies(language)) {
        let Some(i) = slot(rule.category) else {
            continue;
        };
        if found[i] {
            continue;
        }
        found[i] = rule.re.find_iter(text).any(|m| match rule.unless {
            Some(word) => !line_of(text, m.start(), m.end()).contains(word),
            None => true,
        });
    }
    if Family::Python.applies(language) && tool_missing(text) {
        found[1] = true;
    }
    let mut compile_failed = false;
    if Family::Rust.applies(language) {
        let rust = rustc(text);
        for c in rust.categories {
            if let Some(i) = slot(c) {
                found[i] = true;
            }
        }
        compile_failed = rust.could_not_compile;
    }
    let categories = [
        Category::Syntax,
        Category::Environment,
        Category::Performance,
    ];
    (0..3)
        .find(|&i| found[i])
        .map(|i| categories[i])
        .or(compile_failed.then_some(Category::Syntax))
}

fn line_of(text: &str, start: usize, end: usize) -> &str {
    let from = text[..start].rfind('\n').map_or(0, |p| p + 1);
    let to = text[end..].find('\n').map_or(text.len(), |p| end + p);
    &text[from..to]
}

/// A `FileNotFoundError` raised while starting a process: the command is missing. One raised
/// by `open()` in the project's code is a wrong path, a LOGIC error.
fn tool_missing(text: &str) -> bool {
    static RE: LazyLock<Option<Regex>> =
        LazyLock::new(|| Regex::new(&format!("{LINE}FileNotFoundError\\b")).ok());
    RE.as_ref().is_some_and(|re| re.is_match(text))
        && (text.contains("subprocess.py") || text.contains("_execute_child"))
}

struct Rustc {
    categories: Vec<Category>,
    could_not_compile: bool,
}

/// rustc's and cargo's errors. A diagnostic (`error[E0308]: ...` or `error: expected ...`,
/// followed by its ` --> file:line:col`) is SYNTAX, except those for a crate that is not there:
/// an unresolved import of a path outside the crate (E0432), an unlinked crate (E0433), a crate
/// not found (E0463).
fn rustc(text: &str) -> Rustc {
    static IMPORT: LazyLock<Option<Regex>> =
        LazyLock::new(|| Regex::new(r"^error\[E0432\]: unresolved imports? `([^`:]+)").ok());
    let mut out = Rustc {
        categories: Vec::new(),
        could_not_compile: false,
    };
    let lines: Vec<&str> = text.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        if line.starts_with("error: could not compile") {
            out.could_not_compile = true;
            continue;
        }
        if !line.starts_with("error") {
            continue;
        }
        let diagnostic = lines
            .get(i + 1)
            .is_some_and(|next| next.trim_start().starts_with("--> "));
        let category = if line.starts_with("error[E0463]")
            || (line.starts_with("error[E0433]")
                && (line.contains("unlinked crate") || line.contains("undeclared crate")))
        {
            Some(Category::Environment)
        } else if let Some(c) = IMPORT.as_ref().and_then(|re| re.captures(line)) {
            match &c[1] {
                "crate" | "self" | "super" => Some(Category::Syntax),
                _ => Some(Category::Environment),
            }
        } else if diagnostic || line.starts_with("error: expected ") {
            Some(Category::Syntax)
        } else {
            None
        };
        out.categories.extend(category);
    }
    out
}

/// The error class the text names, by the conventions of its language.
fn error_type(text: &str, language: Option<Language>) -> Option<String> {
    if text.starts_with("panicked at ") {
        return Some("panic".into());
    }
    let python = language == Some(Language::Python) || text.contains("Traceback (most recent");
    if python {
        trace::python_error_type(text).or_else(|| trace::js_error_type(text))
    } else {
        trace::js_error_type(text).or_else(|| trace::python_error_type(text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ralph_actors::schema::test_run::Location;
    use Category::{Environment, Logic, Performance, Syntax};

    /// Real output, recorded from the tools (see `testdata/classify/`).
    fn sample(name: &str) -> &'static str {
        match name {
            "js_connrefused" => include_str!("testdata/classify/js_connrefused.txt"),
            "js_eacces" => include_str!("testdata/classify/js_eacces.txt"),
            "js_enoent" => include_str!("testdata/classify/js_enoent.txt"),
            "js_esm_module" => include_str!("testdata/classify/js_esm_module.txt"),
            "js_heap" => include_str!("testdata/classify/js_heap.txt"),
            "js_module" => include_str!("testdata/classify/js_module.txt"),
            "js_stack" => include_str!("testdata/classify/js_stack.txt"),
            "js_syntax" => include_str!("testdata/classify/js_syntax.txt"),
            "js_typeerror" => include_str!("testdata/classify/js_typeerror.txt"),
            "mocha_imp" => include_str!("testdata/classify/mocha_imp.txt"),
            "mocha_syn" => include_str!("testdata/classify/mocha_syn.txt"),
            "py_assert" => include_str!("testdata/classify/py_assert.txt"),
            "py_connrefused" => include_str!("testdata/classify/py_connrefused.txt"),
            "py_importerror" => include_str!("testdata/classify/py_importerror.txt"),
            "py_indentation" => include_str!("testdata/classify/py_indentation.txt"),
            "py_memory" => include_str!("testdata/classify/py_memory.txt"),
            "py_module" => include_str!("testdata/classify/py_module.txt"),
            "py_permission" => include_str!("testdata/classify/py_permission.txt"),
            "py_recursion" => include_str!("testdata/classify/py_recursion.txt"),
            "py_syntax" => include_str!("testdata/classify/py_syntax.txt"),
            "py_taberror" => include_str!("testdata/classify/py_taberror.txt"),
            "py_tool_missing" => include_str!("testdata/classify/py_tool_missing.txt"),
            "rs_cant_find_crate" => include_str!("testdata/classify/rs_cant_find_crate.txt"),
            "rs_internal_import" => include_str!("testdata/classify/rs_internal_import.txt"),
            "rs_no_manifest" => include_str!("testdata/classify/rs_no_manifest.txt"),
            "rs_no_matching" => include_str!("testdata/classify/rs_no_matching.txt"),
            "rs_type_error" => include_str!("testdata/classify/rs_type_error.txt"),
            "rs_unresolved" => include_str!("testdata/classify/rs_unresolved.txt"),
            "sh_bash_notfound" => include_str!("testdata/classify/sh_bash_notfound.txt"),
            "sh_notfound" => include_str!("testdata/classify/sh_notfound.txt"),
            "ts_error" => include_str!("testdata/classify/ts_error.txt"),
            "libtest_build" => include_str!("report/testdata/libtest_build.txt"),
            "nextest_build" => include_str!("report/testdata/nextest_build.txt"),
            _ => panic!("no sample {name}"),
        }
    }

    fn output(name: &str, language: Language) -> Option<Category> {
        classify_output(sample(name), Some(language))
    }

    fn failing(message: &str, stack: Option<&str>) -> TestCase {
        TestCase {
            id: "t".into(),
            status: CaseStatus::Fail,
            message: Some(message.into()),
            stack: stack.map(String::from),
            ..TestCase::default()
        }
    }

    fn case_category(message: &str, stack: Option<&str>, language: Language) -> Option<Category> {
        let mut case = failing(message, stack);
        classify_case(&mut case, Some(language));
        case.category
    }

    #[test]
    fn every_pattern_compiles() {
        assert_eq!(RULES.len(), 16);
        assert_eq!(
            rustc("error[E0432]: unresolved import `x`").categories,
            [Environment]
        );
    }

    #[test]
    fn python_syntax_errors() {
        for name in ["py_syntax", "py_indentation", "py_taberror"] {
            assert_eq!(output(name, Language::Python), Some(Syntax), "{name}");
        }
    }

    #[test]
    fn javascript_and_typescript_syntax_errors() {
        assert_eq!(output("js_syntax", Language::JavaScript), Some(Syntax));
        assert_eq!(output("mocha_syn", Language::JavaScript), Some(Syntax));
        assert_eq!(output("ts_error", Language::TypeScript), Some(Syntax));
    }

    #[test]
    fn rust_compile_errors_are_syntax_unless_a_crate_is_missing() {
        assert_eq!(output("rs_type_error", Language::Rust), Some(Syntax));
        assert_eq!(output("rs_internal_import", Language::Rust), Some(Syntax));
        // A syntax error and a missing crate: the syntax error comes first.
        assert_eq!(output("libtest_build", Language::Rust), Some(Syntax));
        for name in [
            "rs_unresolved",
            "nextest_build",
            "rs_cant_find_crate",
            "rs_no_matching",
            "rs_no_manifest",
        ] {
            assert_eq!(output(name, Language::Rust), Some(Environment), "{name}");
        }
        // Only `could not compile`: still a build failure.
        assert_eq!(
            classify_output(
                "error: could not compile `x` (lib) due to 1 previous error",
                None
            ),
            Some(Syntax)
        );
    }

    #[test]
    fn missing_modules_commands_and_resources() {
        for name in [
            "py_module",
            "py_permission",
            "py_connrefused",
            "py_tool_missing",
        ] {
            assert_eq!(output(name, Language::Python), Some(Environment), "{name}");
        }
        for name in [
            "js_module",
            "js_esm_module",
            "mocha_imp",
            "js_enoent",
            "js_eacces",
            "js_connrefused",
        ] {
            assert_eq!(
                output(name, Language::JavaScript),
                Some(Environment),
                "{name}"
            );
        }
        for name in ["sh_notfound", "sh_bash_notfound"] {
            assert_eq!(output(name, Language::Python), Some(Environment), "{name}");
        }
        assert_eq!(
            classify_output("Error: Failed to load url ./nosuch (resolved id: ./nosuch) in /p/a.test.ts. Does the file exist?", Some(Language::TypeScript)),
            Some(Environment)
        );
    }

    #[test]
    fn limits_of_time_memory_and_stack() {
        assert_eq!(output("js_heap", Language::JavaScript), Some(Performance));
        assert_eq!(output("js_stack", Language::JavaScript), Some(Performance));
        assert_eq!(output("py_memory", Language::Python), Some(Performance));
        assert_eq!(output("py_recursion", Language::Python), Some(Performance));
        let libtest = include_str!("report/testdata/libtest_crash.txt");
        assert_eq!(
            classify_output(libtest, Some(Language::Rust)),
            Some(Performance)
        );
        for timeout in [
            "thrown: \"Exceeded timeout of 50 ms for a test.",
            "TestTimeoutError: Test timed out in 50ms.",
            "Error: Timeout of 50ms exceeded. For async tests and hooks, ensure \"done()\" is called",
            "time limit exceeded",
            "E   Failed: Timeout >1.0s",
        ] {
            assert_eq!(classify_output(timeout, None), Some(Performance), "{timeout}");
        }
    }

    #[test]
    fn plain_errors_are_not_recognised_in_output_but_are_logic_in_a_case() {
        assert_eq!(output("js_typeerror", Language::JavaScript), None);
        assert_eq!(output("py_assert", Language::Python), None);
        assert_eq!(output("py_importerror", Language::Python), None);
        assert_eq!(
            case_category(
                "TypeError: Cannot read properties of undefined (reading 'x')",
                None,
                Language::JavaScript
            ),
            Some(Logic)
        );
    }

    #[test]
    fn mentions_are_not_errors() {
        // pytest.raises(SyntaxError) that did not raise; a JSON parse error; a wrong path.
        assert_eq!(
            case_category(
                "Failed: DID NOT RAISE <class 'SyntaxError'>",
                None,
                Language::Python
            ),
            Some(Logic)
        );
        assert_eq!(
            case_category(
                "SyntaxError: Unexpected token } in JSON at position 5",
                None,
                Language::JavaScript
            ),
            Some(Logic)
        );
        let open_failed =
            "FileNotFoundError: [Errno 2] No such file or directory: '/nonexistent/data.txt'";
        assert_eq!(
            case_category(
                open_failed,
                Some("src/pkg/stats.py:7: FileNotFoundError"),
                Language::Python
            ),
            Some(Logic)
        );
        // An assertion about an error code is still an assertion.
        let mut case = failing(
            "expect(received).toBe(expected)\n\nExpected: \"EACCES\"\nReceived: \"ENOENT\"",
            None,
        );
        case.error_type = Some("AssertionError".into());
        classify_case(&mut case, Some(Language::JavaScript));
        assert_eq!(case.category, Some(Logic));
    }

    #[test]
    fn cases_get_category_error_type_and_location() {
        let mut case = failing(
            "ModuleNotFoundError: No module named 'requests_nosuch'",
            Some(sample("py_module")),
        );
        classify_case(&mut case, Some(Language::Python));
        assert_eq!(case.category, Some(Environment));
        assert_eq!(case.error_type.as_deref(), Some("ModuleNotFoundError"));
        assert_eq!(
            case.location,
            Some(Location {
                file: "/tmp/rls/cls/imp.py".into(),
                line: Some(1),
                column: None
            })
        );

        let mut case = failing("panicked at src/lib.rs:35:9:\nassertion failed", None);
        classify_case(&mut case, Some(Language::Rust));
        assert_eq!(case.category, Some(Logic));
        assert_eq!(case.error_type.as_deref(), Some("panic"));
        assert_eq!(
            case.location.map(|l| (l.file, l.line)),
            Some(("src/lib.rs".into(), Some(35)))
        );

        let mut timeout = TestCase {
            status: CaseStatus::Timeout,
            ..failing("still running", None)
        };
        classify_case(&mut timeout, None);
        assert_eq!(timeout.category, Some(Performance));

        // Passing tests and FLAKY ones are left alone.
        let mut pass = TestCase::default();
        classify_case(&mut pass, None);
        assert_eq!(pass.category, None);
        let mut flaky = TestCase {
            category: Some(Category::Flaky),
            ..failing("SyntaxError: x", None)
        };
        classify_case(&mut flaky, None);
        assert_eq!(flaky.category, Some(Category::Flaky));
    }

    #[test]
    fn language_limits_the_rules() {
        // A Rust project's output is not read for node's messages, and the other way round.
        assert_eq!(
            classify_output("Maximum call stack size exceeded", Some(Language::Rust)),
            None
        );
        assert_eq!(
            classify_output("Maximum call stack size exceeded", None),
            Some(Performance)
        );
        assert_eq!(
            classify_output("has overflowed its stack", Some(Language::Python)),
            None
        );
    }

    #[test]
    fn dominant_counts_failures_and_breaks_ties_by_severity() {
        let with = |status, category| TestCase {
            status,
            category,
            ..TestCase::default()
        };
        let tests = vec![
            with(CaseStatus::Fail, Some(Logic)),
            with(CaseStatus::Fail, Some(Logic)),
            with(CaseStatus::Timeout, Some(Performance)),
            // Not failures: not counted.
            with(CaseStatus::Pass, Some(Category::Flaky)),
            with(CaseStatus::Pass, Some(Category::Flaky)),
            with(CaseStatus::Pass, Some(Category::Flaky)),
        ];
        assert_eq!(dominant(&tests), Some(Logic));
        let tie = vec![
            with(CaseStatus::Fail, Some(Logic)),
            with(CaseStatus::Timeout, Some(Performance)),
            with(CaseStatus::Fail, Some(Environment)),
        ];
        assert_eq!(dominant(&tie), Some(Environment));
        let tie = vec![
            with(CaseStatus::Fail, Some(Environment)),
            with(CaseStatus::Fail, Some(Syntax)),
        ];
        assert_eq!(dominant(&tie), Some(Syntax));
        assert_eq!(dominant(&[with(CaseStatus::Fail, None)]), None);
        assert_eq!(dominant(&[]), None);
    }
}
