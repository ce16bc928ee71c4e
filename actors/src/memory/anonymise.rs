//! Anonymising an attempt before it leaves the project for the shared store.

use std::collections::HashMap;

use crate::schema::attempt::FixAttempt;

/// Words kept by [`anonymise`]: keywords and builtins of the four languages, and the standard
/// error names, which say what went wrong without saying whose code it was.
const KEPT_WORDS: &[&str] = &[
    // JS / TS
    "as",
    "async",
    "await",
    "break",
    "case",
    "catch",
    "class",
    "const",
    "continue",
    "default",
    "delete",
    "do",
    "else",
    "export",
    "extends",
    "false",
    "finally",
    "for",
    "from",
    "function",
    "if",
    "import",
    "in",
    "instanceof",
    "interface",
    "let",
    "new",
    "null",
    "of",
    "return",
    "static",
    "super",
    "switch",
    "this",
    "throw",
    "true",
    "try",
    "type",
    "typeof",
    "undefined",
    "var",
    "void",
    "while",
    "yield",
    "number",
    "string",
    "boolean",
    "any",
    "unknown",
    "never",
    "Math",
    "Array",
    "Object",
    "String",
    "Number",
    "Boolean",
    "Promise",
    "Map",
    "Set",
    "JSON",
    "console",
    "length",
    "push",
    "pop",
    "slice",
    "sort",
    "map",
    "filter",
    "reduce",
    "floor",
    "ceil",
    "abs",
    "max",
    "min",
    "expect",
    "toBe",
    "toEqual",
    "toThrow",
    "describe",
    "it",
    "test",
    // Python
    "and",
    "def",
    "elif",
    "except",
    "global",
    "is",
    "lambda",
    "nonlocal",
    "not",
    "or",
    "pass",
    "raise",
    "with",
    "None",
    "True",
    "False",
    "self",
    "len",
    "sum",
    "sorted",
    "range",
    "print",
    "list",
    "dict",
    "set",
    "tuple",
    "int",
    "float",
    "str",
    "bool",
    "isinstance",
    "enumerate",
    "zip",
    "assert",
    // Rust
    "fn",
    "let",
    "mut",
    "pub",
    "impl",
    "struct",
    "enum",
    "trait",
    "match",
    "loop",
    "mod",
    "use",
    "crate",
    "where",
    "Self",
    "Some",
    "Ok",
    "Err",
    "Option",
    "Result",
    "Vec",
    "usize",
    "isize",
    "u8",
    "u32",
    "u64",
    "i32",
    "i64",
    "f32",
    "f64",
    "panic",
    "unwrap",
    "iter",
    "collect",
    "len",
    // Standard errors
    "Error",
    "Exception",
    "AssertionError",
    "TypeError",
    "ValueError",
    "KeyError",
    "IndexError",
    "AttributeError",
    "NameError",
    "ZeroDivisionError",
    "RuntimeError",
    "SyntaxError",
    "ReferenceError",
    "RangeError",
    "ModuleNotFoundError",
    "ImportError",
    "RecursionError",
    "OverflowError",
    "StopIteration",
    "NotImplementedError",
    "TimeoutError",
];

// The patterns are constants, exercised by the tests below: a bad one fails every test run.
#[allow(clippy::expect_used)]
static ANONYMISE: std::sync::LazyLock<[(regex::Regex, &'static str); 4]> = std::sync::LazyLock::new(
    || {
        let re = |p: &str| regex::Regex::new(p).expect("static regex");
        [
            // Keys and tokens: provider prefixes, long hex or base64-looking runs.
            (
                re(
                    r"\b(?:sk|pk|rk|ghp|gho|xox[abp]|AKIA|AIza)[-_A-Za-z0-9]{8,}|\b[A-Za-z0-9+/=_-]{32,}\b",
                ),
                "<SECRET>",
            ),
            // String literals, on one line.
            (
                re(r#""(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|`[^`\n]*`"#),
                "<STR>",
            ),
            // Paths, relative or absolute, with a file name.
            (
                re(r"(?:[A-Za-z]:\\|\.{0,2}/)?(?:[\w.-]+[/\\])+[\w.-]+"),
                "<PATH>",
            ),
            // Long numbers (ids, account numbers).
            (re(r"\b\d{8,}\b"), "<NUM>"),
        ]
    },
);

/// A copy of `attempt` fit to leave the machine: secrets, string literals and paths replaced,
/// and every identifier of the project's code replaced by `id1`, `id2`, ... (the same name the
/// same placeholder across the signature, the hypothesis and the diff, so the change still
/// reads). Identifiers are the names in the diff's code and any word shaped like one
/// (`snake_case`, `camelCase`, letters with digits); keywords, builtins and standard error names
/// stay. Test ids and the project id go; the model and language stay.
pub fn anonymise(attempt: &FixAttempt) -> FixAttempt {
    let mut names: HashMap<String, String> = HashMap::new();
    let code_words: std::collections::HashSet<String> = attempt
        .diff
        .lines()
        .filter(|l| !l.starts_with("---") && !l.starts_with("+++") && !l.starts_with("@@"))
        .flat_map(words)
        .map(|(_, w)| w.to_string())
        .collect();
    // The signature is cleaned on its own (`in_code: false`), so that the same failure gives
    // the same anonymised signature with or without a diff, which is how the shared store is
    // searched ([`anonymised_signature`]).
    let mut clean = |text: &str, in_code: bool| -> String {
        let mut text = text.to_string();
        for (re, with) in ANONYMISE.iter() {
            text = re.replace_all(&text, *with).into_owned();
        }
        let mut out = String::with_capacity(text.len());
        let mut last = 0;
        for (at, word) in words(&text) {
            let placeholder = matches!(word, "STR" | "PATH" | "SECRET" | "NUM");
            // A called name (`median(`) or a member (`.median`) is an identifier wherever it is.
            let called = text[at + word.len()..].starts_with('(') || text[..at].ends_with('.');
            let code_like =
                (in_code && code_words.contains(word)) || called || looks_like_identifier(word);
            if placeholder || KEPT_WORDS.contains(&word) || !code_like {
                continue;
            }
            out.push_str(&text[last..at]);
            let next = names.len() + 1;
            out.push_str(
                names
                    .entry(word.to_string())
                    .or_insert_with(|| format!("id{next}")),
            );
            last = at + word.len();
        }
        out.push_str(&text[last..]);
        out
    };
    FixAttempt {
        id: attempt.id.clone(),
        project_id: "shared".into(),
        signature: clean(&attempt.signature, false),
        category: attempt.category,
        test_ids: Vec::new(),
        hypothesis: clean(&attempt.hypothesis, true),
        diff: clean(&attempt.diff, true),
        success: attempt.success,
        timestamp_ms: attempt.timestamp_ms,
        tokens: attempt.tokens,
        cost_usd: attempt.cost_usd,
        model: attempt.model.clone(),
        language: attempt.language.clone(),
    }
}

/// A failure signature as [`anonymise`] would store it, to search the shared store with: the
/// shared attempts' signatures are anonymised, and a raw query would match them less well.
pub fn anonymised_signature(signature: &str) -> String {
    anonymise(&FixAttempt {
        id: String::new(),
        project_id: String::new(),
        signature: signature.to_string(),
        category: None,
        test_ids: Vec::new(),
        hypothesis: String::new(),
        diff: String::new(),
        success: false,
        timestamp_ms: 0,
        tokens: 0,
        cost_usd: 0.0,
        model: String::new(),
        language: String::new(),
    })
    .signature
}

/// The words of `text` (`[A-Za-z_][A-Za-z0-9_]*`) with their byte offsets.
fn words(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let bytes = text.as_bytes();
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < bytes.len() {
            let c = bytes[i];
            let starts = c.is_ascii_alphabetic() || c == b'_';
            let after_word =
                i > 0 && (bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_');
            if starts && !after_word {
                let start = i;
                while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                    i += 1;
                }
                return Some((start, &text[start..i]));
            }
            i += 1;
        }
        None
    })
}

/// `snake_case`, `camelCase`, `PascalCase` with an inner capital, or letters mixed with digits.
fn looks_like_identifier(word: &str) -> bool {
    let has_inner_upper = word
        .char_indices()
        .skip(1)
        .any(|(i, c)| c.is_ascii_uppercase() && word[..i].chars().any(|p| p.is_ascii_lowercase()));
    word.contains('_') || has_inner_upper || word.chars().any(|c| c.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::rank::tests::attempt;

    #[test]
    fn anonymised_attempts_keep_the_shape_and_lose_the_names() {
        let mut a = attempt("x", "LOGIC test_median_even: AssertionError: median_of([1, 2]) returned 1, expected 1.5 in /home/ann/acme/stats.py", true, 1);
        a.hypothesis = "Sort the values before taking the middle of median_of; key sk-abcdefghijklmnopqrstuvwx".into();
        a.diff = "--- a/src/acme/stats.py\n+++ b/src/acme/stats.py\n@@ -1,2 +1,3 @@\n def median_of(values):\n-    mid = len(values) // 2\n+    ordered = sorted(values)\n+    label = \"acme-internal\"\n".into();
        a.test_ids = vec!["tests/test_stats.py::test_median_even".into()];
        let shared = anonymise(&a);
        let all = format!(
            "{}\n{}\n{}",
            shared.signature, shared.hypothesis, shared.diff
        );
        for leaked in [
            "median_of",
            "values",
            "ordered",
            "acme",
            "ann",
            "stats.py",
            "sk-abc",
            "test_median_even",
            "label",
        ] {
            assert!(!all.contains(leaked), "{leaked} leaked:\n{all}");
        }
        // Keywords, builtins, error names and prose stay; names map consistently.
        assert!(shared.diff.contains("def id"), "{}", shared.diff);
        assert!(shared.diff.contains("sorted("), "{}", shared.diff);
        assert!(shared.diff.contains("<STR>"), "{}", shared.diff);
        assert!(
            shared.signature.contains("AssertionError"),
            "{}",
            shared.signature
        );
        assert!(
            shared.hypothesis.starts_with("Sort the"),
            "{}",
            shared.hypothesis
        );
        let name = |text: &str| {
            text.split("def ")
                .nth(1)
                .and_then(|r| r.split('(').next())
                .map(str::to_string)
        };
        let median = name(&shared.diff).unwrap();
        assert!(
            shared.hypothesis.contains(&median),
            "{median} in {}",
            shared.hypothesis
        );
        assert!(shared.test_ids.is_empty());
        assert_eq!(shared.project_id, "shared");
        assert!(
            shared.hypothesis.contains("<SECRET>"),
            "{}",
            shared.hypothesis
        );
        // The shared store is searched with the signature anonymised alone: the same text.
        assert_eq!(anonymised_signature(&a.signature), shared.signature);
    }
}
