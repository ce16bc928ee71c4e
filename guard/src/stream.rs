//! Unmasking a reply as it streams: a model's reply comes in deltas, and a placeholder may be
//! cut between two of them (`…<<SECRET_AWS_` then `ACCESS_KEY_ID_1>>…`). [`StreamUnmask`]
//! gives out each delta's text at once, restored, except a tail that may still become a
//! placeholder, which it holds until the next delta says (or the stream ends).

use crate::mask::Guard;

/// The longest placeholder body [`crate::placeholder::find_all`] reads: no held tail is longer.
const MAX_BODY: usize = 96;

/// One stream's held tail. One per streamed text (a reply's text, a tool call's arguments):
/// interleaved streams each need their own.
#[derive(Debug, Clone)]
pub struct StreamUnmask {
    held: String,
    /// How a restored value is written into the stream's text.
    escape: fn(&str) -> String,
}

impl Default for StreamUnmask {
    fn default() -> Self {
        Self::new()
    }
}

impl StreamUnmask {
    /// For plain text: values are written as they are.
    pub fn new() -> Self {
        Self::escaped(str::to_string)
    }

    /// For text inside a string of a larger syntax (JSON that a tool call's arguments stream
    /// as): each value written as `escape` writes it.
    pub fn escaped(escape: fn(&str) -> String) -> Self {
        Self {
            held: String::new(),
            escape,
        }
    }

    /// What of `delta` (after the tail held from before) can be given out now, with the run's
    /// placeholders restored; a tail that may be the start of a placeholder is held.
    pub fn push(&mut self, guard: &Guard, delta: &str) -> String {
        self.held.push_str(delta);
        let cut = open_tail(&self.held);
        let ready: String = self.held.drain(..cut).collect();
        guard.restore_with(&ready, &self.escape)
    }

    /// The held tail, restored as far as it goes: the stream has ended.
    pub fn finish(&mut self, guard: &Guard) -> String {
        let rest = std::mem::take(&mut self.held);
        guard.restore_with(&rest, &self.escape)
    }

    /// Whether a tail is held.
    pub fn holds(&self) -> bool {
        !self.held.is_empty()
    }
}

/// Where the tail of `text` that may still grow into a placeholder starts (`text.len()` when
/// none may): a lone `<` at the end, or a `<<` followed only by what a placeholder's body
/// starts with (`SECRET_`, `PII_`, then its letters, digits and underscores, and at most one
/// `>` of its end).
fn open_tail(text: &str) -> usize {
    let b = text.as_bytes();
    let from = b.len().saturating_sub(MAX_BODY + 4);
    let Some(i) = memchr::memmem::rfind(&b[from..], b"<<").map(|i| from + i) else {
        return if b.last() == Some(&b'<') {
            b.len() - 1
        } else {
            b.len()
        };
    };
    // `<<<` ends in a `<<` that may still open one: look at the last.
    let i = if b.get(i + 2) == Some(&b'<') {
        i + 1
    } else {
        i
    };
    let tail = &b[i + 2..];
    if could_open(tail) {
        return i;
    }
    if b.last() == Some(&b'<') {
        b.len() - 1
    } else {
        b.len()
    }
}

/// Whether `tail` (what follows a `<<` to the end of the text so far) may still become a
/// placeholder's body and end.
fn could_open(tail: &[u8]) -> bool {
    let body = tail.strip_suffix(b">").unwrap_or(tail);
    if body.contains(&b'>') || body.len() > MAX_BODY {
        return false;
    }
    let starts = |word: &[u8]| {
        if body.len() <= word.len() {
            word.starts_with(body)
        } else {
            body.starts_with(word)
        }
    };
    let shaped = body
        .iter()
        .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == b'_');
    shaped && (starts(b"SECRET_") || starts(b"PII_"))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::GuardConfig;
    use proptest::prelude::*;

    fn guard() -> Guard {
        Guard::new(&GuardConfig::all()).expect("bundled rules")
    }

    const FILE: &str = "AWS_ACCESS_KEY_ID=AKIAZ2QXLW6HKJH7TRBQ\nemail = \"ann.lee@corp.io\"\nlet x = a << 2; // SECRET_ and <<not one>>\n";

    fn through(g: &Guard, masked: &str, cuts: &[usize]) -> String {
        let mut s = StreamUnmask::new();
        let mut out = String::new();
        let mut at = 0;
        for &c in cuts {
            let c = c.min(masked.len()).max(at);
            if !masked.is_char_boundary(c) {
                continue;
            }
            out.push_str(&s.push(g, &masked[at..c]));
            at = c;
        }
        out.push_str(&s.push(g, &masked[at..]));
        out.push_str(&s.finish(g));
        out
    }

    #[test]
    fn a_placeholder_cut_anywhere_comes_back_whole() {
        let g = guard();
        let masked = g.mask(FILE, None).text;
        assert!(
            masked.contains("<<SECRET_AWS_ACCESS_KEY_ID_1>>"),
            "{masked}"
        );
        for cut in 0..=masked.len() {
            assert_eq!(through(&g, &masked, &[cut]), FILE, "cut at {cut}");
        }
    }

    #[test]
    fn text_is_given_out_at_once_unless_it_may_open_a_placeholder() {
        let g = guard();
        let mut s = StreamUnmask::new();
        assert_eq!(s.push(&g, "a << b"), "a << b");
        assert_eq!(s.push(&g, " then <"), " then ");
        assert!(s.holds());
        assert_eq!(s.push(&g, "<SEC"), "");
        assert_eq!(s.push(&g, "OND>> done"), "<<SECOND>> done");
        assert_eq!(s.push(&g, "<<PII_EMAIL_9>"), "");
        // Not a placeholder of the run: given back as it was.
        assert_eq!(s.push(&g, "> end"), "<<PII_EMAIL_9>> end");
        assert!(!s.holds());
        assert_eq!(s.push(&g, "<<SECRET_X"), "");
        assert_eq!(s.finish(&g), "<<SECRET_X");
    }

    proptest! {
        #[test]
        fn any_cuts_give_what_unmasking_the_whole_gives(
            cuts in proptest::collection::vec(0usize..200, 0..12),
        ) {
            let g = guard();
            let masked = g.mask(FILE, None).text;
            let mut cuts = cuts;
            cuts.sort_unstable();
            prop_assert_eq!(through(&g, &masked, &cuts), FILE);
        }
    }
}
