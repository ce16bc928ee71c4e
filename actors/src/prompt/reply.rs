//! The roles' replies: the Artisan's fenced code block (a [`Proposal`]), the Critic's
//! [`Verdict`] and its [`Judgement`] of Chaos's failing tests. (Chaos's reply is one fenced
//! block too, read with [`extract_code`].)

use std::sync::LazyLock;

use regex::Regex;

/// The Artisan's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proposal {
    /// The new file; `None` when the reply had no fenced code block.
    pub code: Option<String>,
    pub reply: String,
}

/// The whole new file from an Artisan reply: the one fenced block, or the longest when there are
/// several. `None` when the reply has no fenced block.
pub fn extract_code(reply: &str) -> Option<String> {
    let mut blocks = Vec::new();
    let mut current: Option<(usize, Vec<&str>)> = None;
    for line in reply.lines() {
        let trimmed = line.trim_start();
        let fence = trimmed.chars().take_while(|&c| c == '`').count();
        match &mut current {
            None if fence >= 3 => current = Some((fence, Vec::new())),
            Some((open, body)) => {
                if fence >= *open && trimmed[fence..].trim().is_empty() {
                    blocks.push(body.join("\n"));
                    current = None;
                } else {
                    body.push(line);
                }
            }
            None => {}
        }
    }
    // An unclosed block at the end of a reply (a cut stream) is not trusted as a whole file.
    blocks.into_iter().max_by_key(|b| b.len()).map(|mut b| {
        b.push('\n');
        b
    })
}

/// The Critic's decision on a proposal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    pub approved: bool,
    pub reasons: String,
    /// False when the reply had no VERDICT line and was taken as APPROVE.
    pub explicit: bool,
}

// A constant pattern, exercised by the tests below.
#[allow(clippy::expect_used)]
static VERDICT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?mi)^[\s*#>_-]*VERDICT[\s*_]*:[\s*_]*(APPROVE|REJECT)\b").expect("static regex")
});

/// Compiles the patterns replies are read with now, so that the first reply is not kept
/// waiting for them; see [`crate::warm`].
pub fn warm() {
    LazyLock::force(&VERDICT);
    LazyLock::force(&NAMED_TEST);
    LazyLock::force(&JUDGED);
}

pub fn parse_verdict(reply: &str) -> Verdict {
    // The last verdict line wins: a critic that thinks aloud may quote the format first.
    match VERDICT.captures_iter(reply).last() {
        Some(c) => {
            let approved = c[1].eq_ignore_ascii_case("APPROVE");
            let end = c.get(0).map_or(0, |m| m.end());
            let after = reply[end..].trim();
            let before = reply[..c.get(0).map_or(0, |m| m.start())].trim();
            let reasons = if after.is_empty() { before } else { after };
            Verdict {
                approved,
                reasons: reasons.to_string(),
                explicit: true,
            }
        }
        None => Verdict {
            approved: true,
            reasons: reply.trim().to_string(),
            explicit: false,
        },
    }
}

/// The Critic's judgement of Chaos's failing tests: which it dropped, and why. A test the reply
/// does not name is kept: it failed, and nobody said it was wrong.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Judgement {
    /// `(test, reason)` of each test the Critic dropped.
    pub dropped: Vec<(String, String)>,
    /// Tests the reply named on neither a KEEP nor a DROP line.
    pub unjudged: Vec<String>,
}

// A constant pattern, exercised by the tests below.
#[allow(clippy::expect_used)]
static NAMED_TEST: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"\b(?:test|it)\s*\(\s*(['"`])(.+?)['"`]\s*,|#\[test\]\s*(?:#\[[^\]]*\]\s*)*fn\s+(\w+)"#,
    )
    .expect("static regex")
});

/// The name of the first test a JavaScript, TypeScript or Rust snippet declares
/// (`test('regression: x', ...)`, `it("...", ...)`, `#[test] fn regression_x()`).
pub fn test_name(snippet: &str) -> Option<String> {
    NAMED_TEST
        .captures(snippet)
        .and_then(|c| c.get(2).or_else(|| c.get(3)))
        .map(|m| m.as_str().to_string())
}

// A constant pattern, exercised by the tests below.
#[allow(clippy::expect_used)]
static JUDGED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^[\s*#>_`-]*(KEEP|DROP)[\s*_`]*:\s*(.*)$").expect("static regex")
});

/// Reads `KEEP: <test>` and `DROP: <test>: <reason>` lines for each of `tests`. A line names the
/// test whose id it holds, or else whose own name (the id's last part, after `::`, `.` or ` > `);
/// the longest match wins, when one name holds another; the reason is what follows the name.
pub fn parse_judgement(reply: &str, tests: &[String]) -> Judgement {
    let mut judged = std::collections::BTreeMap::<&str, Option<String>>::new();
    for line in reply.lines() {
        let Some(c) = JUDGED.captures(line.trim()) else {
            continue;
        };
        let rest = c.get(2).map_or("", |m| m.as_str());
        let named = |name: fn(&str) -> &str| {
            tests
                .iter()
                .filter_map(|t| rest.find(name(t)).map(|at| (t.as_str(), at, name(t).len())))
                .max_by_key(|(_, _, len)| *len)
        };
        let Some((test, at, len)) = named(|t| t).or_else(|| named(short_name)) else {
            continue;
        };
        let reason = rest[at + len..]
            .trim_start_matches(|c: char| c.is_whitespace() || "`:-—–".contains(c))
            .trim();
        let drop = c[1].eq_ignore_ascii_case("DROP");
        judged.insert(test, drop.then(|| reason.to_string()));
    }
    let mut out = Judgement::default();
    for test in tests {
        match judged.get(test.as_str()) {
            Some(Some(reason)) => out.dropped.push((
                test.clone(),
                if reason.is_empty() {
                    "no reason given".to_string()
                } else {
                    reason.clone()
                },
            )),
            Some(None) => {}
            None => out.unjudged.push(test.clone()),
        }
    }
    out
}

/// A test id's own name: `test_empty` of `chaos.py::test_empty` or `chaos.TestX.test_empty`,
/// `rejects NaN` of `median > rejects NaN`.
fn short_name(id: &str) -> &str {
    [" > ", "::", "."]
        .iter()
        .find_map(|sep| id.rsplit_once(sep).map(|(_, name)| name))
        .filter(|name| !name.is_empty())
        .unwrap_or(id)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_snippet_s_first_test_is_named() {
        assert_eq!(
            super::test_name("test('regression: huge values', () => {\n  assert.ok(1);\n});"),
            Some("regression: huge values".into())
        );
        assert_eq!(
            super::test_name("it(\"keeps order\", () => {});"),
            Some("keeps order".into())
        );
        assert_eq!(super::test_name("const x = 1;"), None);
        assert_eq!(
            super::test_name("#[test]\n#[should_panic]\nfn regression_huge_values() {}"),
            Some("regression_huge_values".into())
        );
    }

    use super::*;

    #[test]
    fn judgements_name_each_test_and_keep_the_unnamed() {
        let tests = vec![
            "test_chaos.py::test_empty".to_string(),
            "test_chaos.py::test_empty_string".to_string(),
            "test_chaos.py::test_nan".to_string(),
        ];
        let reply = "Thinking...\n- KEEP: test_chaos.py::test_empty\n**DROP**: `test_chaos.py::test_empty_string`: strings are not numbers the contract accepts\n";
        let j = parse_judgement(reply, &tests);
        assert_eq!(
            j.dropped,
            vec![(
                "test_chaos.py::test_empty_string".to_string(),
                "strings are not numbers the contract accepts".to_string()
            )]
        );
        assert_eq!(j.unjudged, vec!["test_chaos.py::test_nan".to_string()]);
        let j = parse_judgement("drop: test_chaos.py::test_nan", &tests);
        assert_eq!(j.dropped[0].1, "no reason given");
        // A test named by its own name alone.
        let j = parse_judgement(
            "DROP: test_empty_string — not numbers\nKEEP: test_nan",
            &tests,
        );
        assert_eq!(
            j.dropped,
            vec![(tests[1].clone(), "not numbers".to_string())]
        );
        assert_eq!(j.unjudged, vec![tests[0].clone()]);
    }

    #[test]
    fn extracts_the_single_block() {
        let r = "Here is the fix:\n```python\ndef f():\n    return 1\n```\nDone.";
        assert_eq!(extract_code(r).as_deref(), Some("def f():\n    return 1\n"));
    }

    #[test]
    fn takes_the_longest_of_several_blocks() {
        let r = "```\nshort\n```\n```ts\nexport const a = 1;\nexport const b = 2;\n```";
        assert_eq!(
            extract_code(r).as_deref(),
            Some("export const a = 1;\nexport const b = 2;\n")
        );
    }

    #[test]
    fn nested_fences_need_a_longer_fence() {
        let r = "````md\n```js\nx\n```\n````";
        assert_eq!(extract_code(r).as_deref(), Some("```js\nx\n```\n"));
    }

    #[test]
    fn no_block_or_unclosed_block_is_none() {
        assert_eq!(extract_code("just prose"), None);
        assert_eq!(extract_code("```py\ncut off"), None);
    }

    #[test]
    fn verdicts() {
        let v = parse_verdict("VERDICT: REJECT\nThe median of an even list is wrong.");
        assert!(!v.approved && v.explicit);
        assert_eq!(v.reasons, "The median of an even list is wrong.");
        let v = parse_verdict("Looks fine.\n**VERDICT: APPROVE**");
        assert!(v.approved && v.explicit);
        let v = parse_verdict("I have no opinion");
        assert!(v.approved && !v.explicit);
        let v = parse_verdict("verdict: reject - off by one");
        assert!(!v.approved);
    }
}
