//! What the MemoryVault keeps and how it ranks what it recalls.
//!
//! A fix attempt is recorded when an iteration ends: the failure it was trying to fix (its
//! normalised *signature*), what the Artisan changed (a diff) and whether the tests then passed.
//! The vault stores each attempt with an embedding of its signature; when tests fail, the
//! attempts whose signatures are most similar are recalled and shown to the Artisan.
//!
//! The storage ([`VectorStore`]) and the embedding model ([`Embedder`]) are traits, so the
//! ranking here is tested with mocks; the binary crate implements them over LanceDB and over
//! offline or provider embeddings.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::entropy::normalise;
use crate::runner::{CaseStatus, Category, RunStatus, TestRun};

/// At most this many failing tests make up a signature: the first few say what is wrong, and a
/// run with fifty failures is recalled by its first ones.
const SIGNATURE_FAILURES: usize = 5;
/// Lines of each failure's message kept in a signature.
const SIGNATURE_MESSAGE_LINES: usize = 3;
/// A signature is at most this many bytes: embedders have input limits, and the first lines
/// carry the meaning.
const SIGNATURE_BYTES: usize = 2_000;

/// One fix attempt: the failure, the change, and whether it worked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FixAttempt {
    /// Unique per attempt (a UUID).
    pub id: String,
    /// Which project it came from (a hash of the project root; `shared` for imported patterns).
    pub project_id: String,
    /// The normalised failure it tried to fix (see [`signature`]).
    pub signature: String,
    /// The failure's category (`LOGIC`, `SYNTAX`, ...), when the run had one.
    pub category: Option<Category>,
    /// The failing tests' ids.
    pub test_ids: Vec<String>,
    /// What the Artisan said it was doing: its reply without the code.
    pub hypothesis: String,
    /// The change, as a unified diff of the target.
    pub diff: String,
    /// Whether the tests passed (every success criterion met) after the change.
    pub success: bool,
    /// When the attempt ended, in milliseconds since the Unix epoch.
    pub timestamp_ms: i64,
    /// Tokens the iteration used (input + output, every role).
    pub tokens: u64,
    /// What the iteration cost, in USD.
    pub cost_usd: f64,
    /// The Artisan's model (`provider/model`).
    pub model: String,
    /// The target's language (`python`, `typescript`, ...).
    pub language: String,
}

/// A stored attempt found near a query, with its cosine similarity (1 = the same signature).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Scored {
    pub attempt: FixAttempt,
    pub similarity: f32,
}

/// Where a recalled attempt came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// This project's vault.
    Project,
    /// The opt-in shared store (`memory.global_uri`), anonymised.
    Shared,
}

/// An attempt recalled for the Artisan, with what ranked it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecalledFix {
    pub attempt: FixAttempt,
    pub similarity: f32,
    /// Successful attempts over all attempts recalled for the same signature.
    pub success_rate: f64,
    /// How many attempts were recalled for that signature.
    pub pattern_attempts: u32,
    pub origin: Origin,
}

/// Stores attempts with their vectors and finds the nearest. One store holds the vectors of
/// one embedding model only (see [`Embedder::id`]).
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait::async_trait]
pub trait VectorStore: Send + Sync {
    /// Appends attempts, each with its signature's vector.
    async fn insert(&self, rows: Vec<(FixAttempt, Vec<f32>)>) -> Result<(), String>;
    /// Up to `limit` attempts whose cosine similarity to `vector` is at least `min_similarity`,
    /// most similar first.
    async fn nearest(
        &self,
        vector: Vec<f32>,
        limit: usize,
        min_similarity: f32,
    ) -> Result<Vec<Scored>, String>;
}

/// Turns signatures into vectors.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait::async_trait]
pub trait Embedder: Send + Sync {
    /// Names the model and its dimension (`hashed-ngrams-v1/256`, `openai/text-embedding-3-small/1536`):
    /// vectors of different ids are never stored together.
    fn id(&self) -> String;
    /// The length of every vector it returns.
    fn dims(&self) -> usize;
    /// One vector per text, in order.
    async fn embed(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>, String>;
}

/// What a failing run is recalled and recorded by: its category, the failing tests' ids, and
/// the signature text. `None` for a run with no failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub signature: String,
    pub category: Option<Category>,
    pub test_ids: Vec<String>,
}

/// The signature of a failing run: for each of its first failing tests (by id), its category,
/// name, error type and the first lines of its message, normalised as the entropy breaker does
/// (timestamps, durations, addresses, absolute paths and line numbers taken out). A run that
/// named no test is signed by its status and the end of its output.
pub fn failure(run: &TestRun) -> Option<Failure> {
    if run.criteria_met() {
        return None;
    }
    let mut failing: Vec<_> = run
        .tests
        .iter()
        .filter(|t| matches!(t.status, CaseStatus::Fail | CaseStatus::Timeout))
        .collect();
    failing.sort_by(|a, b| a.id.cmp(&b.id));
    let mut lines = Vec::new();
    for case in failing.iter().take(SIGNATURE_FAILURES) {
        let message: Vec<&str> = case
            .message
            .as_deref()
            .unwrap_or_default()
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .take(SIGNATURE_MESSAGE_LINES)
            .collect();
        let category = case.category.or(run.category).map(|c| c.as_str());
        let mut line = String::new();
        if let Some(category) = category {
            line.push_str(category);
            line.push(' ');
        }
        line.push_str(&case.name);
        line.push_str(": ");
        if let Some(kind) = case.error_type.as_deref().filter(|k| !k.is_empty()) {
            line.push_str(kind);
            line.push_str(": ");
        }
        line.push_str(&message.join(" "));
        lines.push(normalise(&line));
    }
    if lines.is_empty() {
        if run.status == RunStatus::Passed {
            // The tests pass but a criterion (coverage, lint) does not: that is the failure.
            let unmet = crate::criteria::unmet(run).unwrap_or_default();
            lines.push(normalise(&format!("UNMET {unmet}")));
        } else {
            // No test named (a syntax error, a missing module): the end of the output says
            // what is wrong.
            let tail: Vec<&str> = run
                .output
                .lines()
                .rev()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .take(SIGNATURE_MESSAGE_LINES * 2)
                .collect();
            let category = run.category.map_or("", |c| c.as_str());
            let text = format!(
                "{category} {:?}: {}",
                run.status,
                tail.into_iter().rev().collect::<Vec<_>>().join(" ")
            );
            lines.push(normalise(text.trim()));
        }
    }
    let mut signature = lines.join("\n");
    cut_to(&mut signature, SIGNATURE_BYTES);
    Some(Failure {
        signature,
        category: run
            .category
            .or_else(|| failing.first().and_then(|c| c.category)),
        test_ids: failing.iter().map(|c| c.id.clone()).collect(),
    })
}

/// Ranks recalled attempts: by their signature's success rate among the candidates, then
/// successful before failed, then the most recent, then the most similar; at most `limit`.
pub fn rank(candidates: Vec<(Scored, Origin)>, limit: usize) -> Vec<RecalledFix> {
    let mut patterns: HashMap<&str, (u32, u32)> = HashMap::new();
    for (scored, _) in &candidates {
        let entry = patterns
            .entry(scored.attempt.signature.as_str())
            .or_default();
        entry.0 += u32::from(scored.attempt.success);
        entry.1 += 1;
    }
    let rates: HashMap<String, (f64, u32)> = patterns
        .into_iter()
        .map(|(sig, (ok, all))| (sig.to_string(), (f64::from(ok) / f64::from(all), all)))
        .collect();
    let mut recalled: Vec<RecalledFix> = candidates
        .into_iter()
        .map(|(scored, origin)| {
            let (success_rate, pattern_attempts) = rates
                .get(&scored.attempt.signature)
                .copied()
                .unwrap_or((0.0, 1));
            RecalledFix {
                attempt: scored.attempt,
                similarity: scored.similarity,
                success_rate,
                pattern_attempts,
                origin,
            }
        })
        .collect();
    recalled.sort_by(|a, b| {
        b.success_rate
            .total_cmp(&a.success_rate)
            .then(b.attempt.success.cmp(&a.attempt.success))
            .then(b.attempt.timestamp_ms.cmp(&a.attempt.timestamp_ms))
            .then(b.similarity.total_cmp(&a.similarity))
            .then(a.attempt.id.cmp(&b.attempt.id))
    });
    recalled.truncate(limit);
    recalled
}

/// What the Artisan's prompt shows of a recalled attempt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryView {
    pub signature: String,
    pub worked: bool,
    /// Cosine similarity to this failure, two decimals.
    pub similarity: String,
    /// `2 of 3 attempts worked` for the attempt's signature.
    pub record: String,
    pub hypothesis: String,
    pub diff: String,
    /// When it was tried (UTC date).
    pub when: String,
    pub model: String,
    pub shared: bool,
}

/// The most of an attempt's diff a prompt shows.
const VIEW_DIFF_BYTES: usize = 3_000;
/// The most of an attempt's hypothesis a prompt shows.
const VIEW_HYPOTHESIS_BYTES: usize = 600;
/// The most of a diff the vault keeps.
const DIFF_BYTES: usize = 16_000;
/// The most of a hypothesis the vault keeps.
const HYPOTHESIS_BYTES: usize = 2_000;

impl From<&RecalledFix> for MemoryView {
    fn from(r: &RecalledFix) -> Self {
        let a = &r.attempt;
        let worked = (r.success_rate * f64::from(r.pattern_attempts)).round() as u32;
        let mut diff = a.diff.clone();
        cut_to(&mut diff, VIEW_DIFF_BYTES);
        let mut hypothesis = a.hypothesis.clone();
        cut_to(&mut hypothesis, VIEW_HYPOTHESIS_BYTES);
        MemoryView {
            signature: a.signature.clone(),
            worked: a.success,
            similarity: format!("{:.2}", r.similarity),
            record: format!(
                "{worked} of {} attempt{} at this failure worked",
                r.pattern_attempts,
                if r.pattern_attempts == 1 { "" } else { "s" }
            ),
            hypothesis,
            diff,
            when: chrono::DateTime::from_timestamp_millis(a.timestamp_ms)
                .map(|t| t.format("%Y-%m-%d").to_string())
                .unwrap_or_default(),
            model: a.model.clone(),
            shared: r.origin == Origin::Shared,
        }
    }
}

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

/// Cuts `text` to at most `max` bytes on a character boundary, marking the cut.
pub fn cut_to(text: &mut String, max: usize) {
    if text.len() <= max {
        return;
    }
    let mut end = max.saturating_sub(4);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    text.push_str(" ...");
}

/// Cosine similarity of two vectors of the same length (0 when either is all zeros).
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let (mut dot, mut na, mut nb) = (0.0f32, 0.0f32, 0.0f32);
    for (x, y) in a.iter().zip(b) {
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 {
        return 0.0;
    }
    dot / (na.sqrt() * nb.sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::TestCase;

    pub(crate) fn attempt(id: &str, signature: &str, success: bool, at: i64) -> FixAttempt {
        FixAttempt {
            id: id.into(),
            project_id: "p".into(),
            signature: signature.into(),
            category: Some(Category::Logic),
            test_ids: vec!["t".into()],
            hypothesis: format!("hypothesis {id}"),
            diff: format!("-old {id}\n+new {id}\n"),
            success,
            timestamp_ms: at,
            tokens: 100,
            cost_usd: 0.01,
            model: "openai/gpt-4.1".into(),
            language: "python".into(),
        }
    }

    fn scored(a: FixAttempt, similarity: f32) -> (Scored, Origin) {
        (
            Scored {
                attempt: a,
                similarity,
            },
            Origin::Project,
        )
    }

    #[test]
    fn ranking_is_success_rate_then_success_then_recency() {
        let candidates = vec![
            // Pattern A: 1 of 3 worked.
            scored(attempt("a1", "A", false, 10), 1.0),
            scored(attempt("a2", "A", true, 5), 1.0),
            scored(attempt("a3", "A", false, 30), 1.0),
            // Pattern B: 2 of 2 worked, less similar.
            scored(attempt("b1", "B", true, 1), 0.9),
            scored(attempt("b2", "B", true, 2), 0.9),
            // Pattern C: never worked, most recent.
            scored(attempt("c1", "C", false, 99), 0.95),
        ];
        let ranked = rank(candidates, 5);
        let ids: Vec<&str> = ranked.iter().map(|r| r.attempt.id.as_str()).collect();
        assert_eq!(ids, ["b2", "b1", "a2", "a3", "a1"]);
        assert_eq!(ranked[0].success_rate, 1.0);
        assert_eq!(ranked[0].pattern_attempts, 2);
        assert!((ranked[2].success_rate - 1.0 / 3.0).abs() < 1e-9);
        assert_eq!(ranked[2].pattern_attempts, 3);
    }

    #[test]
    fn a_signature_is_normalised_ordered_and_bounded() {
        let case = |id: &str, message: &str| TestCase {
            id: id.into(),
            name: id.rsplit("::").next().unwrap_or(id).into(),
            status: CaseStatus::Fail,
            category: Some(Category::Logic),
            error_type: Some("AssertionError".into()),
            message: Some(message.into()),
            ..TestCase::default()
        };
        let mut run = TestRun::new("pytest", RunStatus::Failed);
        run.status = RunStatus::Failed;
        run.tests = vec![
            case(
                "t.py::test_b",
                "assert 3 == 2.5\n at /home/u/p/stats.py:12:4",
            ),
            case("t.py::test_a", "expected 1 at 2026-11-22T07:05:07Z"),
        ];
        let first = failure(&run).unwrap();
        assert_eq!(first.test_ids, ["t.py::test_a", "t.py::test_b"]);
        let lines: Vec<&str> = first.signature.lines().collect();
        assert_eq!(lines.len(), 2);
        assert!(
            lines[0].starts_with("LOGIC test_a: AssertionError: expected 1 at <TS>"),
            "{lines:?}"
        );
        assert!(lines[1].contains("<PATH>/stats.py"), "{lines:?}");
        assert!(!lines[1].contains("/home/u"), "{lines:?}");

        // Another run of the same failure at another time, from another checkout: same signature.
        run.tests[1].message = Some("expected 1 at 2026-12-01T10:00:00Z".into());
        run.tests[0].message = Some("assert 3 == 2.5\n at /tmp/other/stats.py:12:4".into());
        assert_eq!(failure(&run).unwrap().signature, first.signature);

        run.tests[0].message = Some("x".repeat(10_000));
        assert!(failure(&run).unwrap().signature.len() <= SIGNATURE_BYTES);
    }

    #[test]
    fn a_passing_run_has_no_failure_and_a_crash_is_signed_by_its_output() {
        let mut run = TestRun::new("cargo test", RunStatus::Passed);
        run.status = RunStatus::Passed;
        assert!(failure(&run).is_none());
        run.status = RunStatus::Error;
        run.category = Some(Category::Syntax);
        run.output = "compiling\nerror[E0425]: cannot find value `x` in this scope\n".into();
        let f = failure(&run).unwrap();
        assert!(f.signature.starts_with("SYNTAX Error: "), "{}", f.signature);
        assert!(f.signature.contains("cannot find value"), "{}", f.signature);
        assert!(f.test_ids.is_empty());
    }

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

    #[test]
    fn cosine_of_equal_opposite_and_zero_vectors() {
        assert!((cosine(&[1.0, 2.0], &[2.0, 4.0]) - 1.0).abs() < 1e-6);
        assert!((cosine(&[1.0, 0.0], &[-1.0, 0.0]) + 1.0).abs() < 1e-6);
        assert_eq!(cosine(&[0.0, 0.0], &[1.0, 0.0]), 0.0);
    }
}
