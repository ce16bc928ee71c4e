//! The roles' replies: the Artisan's fenced code block (a [`Proposal`]) and the Critic's
//! [`Verdict`].

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

#[cfg(test)]
mod tests {
    use super::*;

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
