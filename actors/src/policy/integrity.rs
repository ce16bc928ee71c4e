//! Test integrity: the tests define correct behaviour, so a proposal may not pass them by
//! weakening them. A proposal is checked against the file it replaces for skip markers it adds
//! (`.skip`, `.only`, `xit`, `xfail`, `@unittest.skip`, `#[ignore]`, ...), tests it deletes, and
//! tests it edits where the target holds tests itself (a Rust `#[cfg(test)]` module, Python
//! `test_` functions). `testing.allow_test_edits: true` turns the check off.

use std::sync::LazyLock;

use regex::Regex;

/// (pattern, what adding it does). Counted before and after: only additions are violations.
static MARKERS: LazyLock<Vec<(Option<Regex>, &'static str)>> = LazyLock::new(|| {
    [
        (
            r"\b(?:it|test|describe|suite|context|bench)\s*\.\s*(?:skip|todo|only|fails)\b",
            "a `.skip`/`.only`/`.todo`/`.fails` test modifier",
        ),
        (
            r"\bx(?:it|test|describe|context)\s*\(",
            "an `xit`/`xdescribe`-style skipped test",
        ),
        (r"\bthis\s*\.\s*skip\s*\(", "a `this.skip()` call"),
        (
            r"@pytest\.mark\.(?:skip|skipif|xfail)\b",
            "a `@pytest.mark.skip`/`xfail` marker",
        ),
        (
            r"\bpytest\s*\.\s*(?:skip|xfail)\s*\(",
            "a `pytest.skip()`/`pytest.xfail()` call",
        ),
        (
            r"@unittest\.(?:skip|skipIf|skipUnless|expectedFailure)\b",
            "a `@unittest.skip`/`expectedFailure` decorator",
        ),
        (r"\.skipTest\s*\(", "a `skipTest()` call"),
        (r"#\[\s*ignore\b", "an `#[ignore]` attribute"),
        (r"#\[\s*should_panic\b", "a `#[should_panic]` attribute"),
    ]
    .into_iter()
    .map(|(re, what)| (Regex::new(re).ok(), what))
    .collect()
});

/// Test definitions, counted before and after.
static TEST_DEFS: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r"(?m)^\s*(?:(?:it|test)\s*\(|(?:async\s+)?def\s+test_\w*\s*\(|#\[\s*(?:\w+::)?test\b)",
    )
    .ok()
});

/// What a proposal does to the tests, one sentence each; empty when it keeps them intact.
/// Compiles the markers now, so that the first check does not; see [`crate::warm`].
pub fn warm() {
    LazyLock::force(&MARKERS);
    LazyLock::force(&TEST_DEFS);
}

pub fn check(path: &str, before: &str, after: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (re, what) in MARKERS.iter() {
        let Some(re) = re else { continue };
        let (was, now) = (re.find_iter(before).count(), re.find_iter(after).count());
        if now > was {
            found.push(format!("adds {what}"));
        }
    }
    if let Some(re) = TEST_DEFS.as_ref() {
        let (was, now) = (re.find_iter(before).count(), re.find_iter(after).count());
        if now < was {
            let n = was - now;
            found.push(format!("deletes {n} test{}", if n == 1 { "" } else { "s" }));
        }
    }
    if path.ends_with(".rs") {
        if let (Some(a), Some(b)) = (rust_test_module(before), rust_test_module(after)) {
            if squash(a) != squash(b) {
                found.push("edits the `#[cfg(test)]` tests".into());
            }
        }
    }
    if path.ends_with(".py") {
        let after_tests = python_tests(after);
        for (name, body) in python_tests(before) {
            match after_tests.iter().find(|(n, _)| *n == name) {
                Some((_, new)) if squash(new) != squash(&body) => {
                    found.push(format!("edits the test `{name}`"));
                }
                _ => {}
            }
        }
    }
    found
}

/// Everything from the first `#[cfg(test)]` to the end of the file: the test module, by the
/// usual layout.
fn rust_test_module(text: &str) -> Option<&str> {
    text.find("#[cfg(test)]").map(|i| &text[i..])
}

/// The `def test_*` functions of a Python file: (name, body with the `def` line).
fn python_tests(text: &str) -> Vec<(String, String)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let trimmed = line.trim_start();
        let def = trimmed
            .strip_prefix("async ")
            .unwrap_or(trimmed)
            .strip_prefix("def test");
        let Some(rest) = def else {
            i += 1;
            continue;
        };
        let indent = line.len() - trimmed.len();
        let name: String = format!(
            "test{}",
            rest.chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect::<String>()
        );
        let mut body = vec![line];
        i += 1;
        while i < lines.len() {
            let l = lines[i];
            let t = l.trim_start();
            if !t.is_empty() && l.len() - t.len() <= indent {
                break;
            }
            body.push(l);
            i += 1;
        }
        out.push((name, body.join("\n")));
    }
    out
}

/// Text with whitespace differences taken out, so reformatting is not an edit.
fn squash(text: &str) -> String {
    text.split_whitespace().collect()
}

/// Whether a path looks like a test file by the common conventions.
pub fn is_test_path(path: &str) -> bool {
    let name = path.rsplit(['/', '\\']).next().unwrap_or(path);
    let in_test_dir = path
        .split(['/', '\\'])
        .any(|part| matches!(part, "tests" | "test" | "__tests__" | "spec"));
    name.contains(".test.")
        || name.contains(".spec.")
        || name.starts_with("test_")
        || name.ends_with("_test.py")
        || name.ends_with("_test.go")
        || (in_test_dir && !name.starts_with("conftest"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn added_skip_markers_are_found_in_every_language() {
        let cases = [
            ("a.test.ts", "it('x', () => {})", "it.skip('x', () => {})"),
            ("a.test.js", "test('x', f)", "test.only('x', f)"),
            ("a.spec.js", "it('x', f)", "xit('x', f)"),
            (
                "t.py",
                "def test_x():\n    pass",
                "@pytest.mark.xfail\ndef test_x():\n    pass",
            ),
            (
                "t.py",
                "def f(): pass",
                "def f():\n    pytest.skip('later')",
            ),
            (
                "t.py",
                "class T:\n  pass",
                "@unittest.skip('no')\nclass T:\n  pass",
            ),
            (
                "lib.rs",
                "#[test]\nfn t() {}",
                "#[test]\n#[ignore]\nfn t() {}",
            ),
        ];
        for (path, before, after) in cases {
            let found = check(path, before, after);
            assert!(!found.is_empty(), "{path}: {after:?} passed");
            assert!(found[0].starts_with("adds "), "{found:?}");
            assert!(check(path, after, after).is_empty(), "unchanged {path}");
        }
    }

    #[test]
    fn deleted_tests_are_found() {
        let before = "#[test]\nfn a() {}\n#[test]\nfn b() {}\n";
        let after = "#[test]\nfn a() {}\n";
        assert!(check("x.rs", before, after).contains(&"deletes 1 test".to_string()));
        let py = "def test_a():\n    assert 1\n\ndef test_b():\n    assert 2\n";
        assert_eq!(
            check("m.py", py, "def test_a():\n    assert 1\n"),
            vec!["deletes 1 test"]
        );
    }

    #[test]
    fn edits_to_inline_tests_are_found_but_code_edits_are_not() {
        let before = "pub fn median() -> i32 { 1 }\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn m() { assert_eq!(super::median(), 2); }\n}\n";
        let fixed = before.replace("{ 1 }", "{ 2 }");
        assert!(check("src/lib.rs", before, &fixed).is_empty());
        let weakened = before.replace("assert_eq!(super::median(), 2)", "assert!(true)");
        assert_eq!(
            check("src/lib.rs", before, &weakened),
            vec!["edits the `#[cfg(test)]` tests"]
        );
        let py = "def f():\n    return 1\n\ndef test_f():\n    assert f() == 2\n";
        assert!(check("m.py", py, &py.replace("return 1", "return 2")).is_empty());
        assert_eq!(
            check("m.py", py, &py.replace("== 2", "== 1")),
            vec!["edits the test `test_f`"]
        );
        // Reformatting is not an edit.
        assert!(check("m.py", py, &py.replace("f() == 2", "f()  ==  2")).is_empty());
    }

    #[test]
    fn test_paths_follow_the_conventions() {
        for p in [
            "src/a.test.ts",
            "a.spec.js",
            "tests/test_m.py",
            "m_test.py",
            "tests/median.rs",
            "src/__tests__/a.js",
        ] {
            assert!(is_test_path(p), "{p}");
        }
        for p in [
            "src/median.ts",
            "median.py",
            "src/lib.rs",
            "tests/conftest.py",
            "src/testing.rs",
        ] {
            assert!(!is_test_path(p), "{p}");
        }
    }
}
