//! Byte-level helpers the personal-data detectors share: character classes, the runs of digits
//! most detectors start from, calendar dates, and the keyword a scheme
//! that collides with ordinary numbers needs before its value.

use crate::kind::{Finding, Kind};

/// How far before a value its keyword (`bsn`, `aadhaar`, ...) may stand, in bytes.
const KEYWORD_WINDOW: usize = 40;

/// A byte of an identifier or a number: what a value must not be glued to.
pub(super) fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// The byte at `i`, if any.
pub(super) fn at(b: &[u8], i: usize) -> Option<u8> {
    b.get(i).copied()
}

/// The byte just before `i`, if any.
pub(super) fn before(b: &[u8], i: usize) -> Option<u8> {
    i.checked_sub(1).and_then(|j| at(b, j))
}

/// The number of ASCII digits from `i` on.
pub(super) fn digit_run(b: &[u8], i: usize) -> usize {
    b.get(i..)
        .map_or(0, |s| s.iter().take_while(|c| c.is_ascii_digit()).count())
}

/// Whether the byte at `i` is a digit.
pub(super) fn digit_at(b: &[u8], i: usize) -> bool {
    at(b, i).is_some_and(|c| c.is_ascii_digit())
}

/// Whether a value ending at `end` stops there: no identifier byte follows, nor a separator
/// followed by a digit (which would make it the head of a longer number, `1.2.3.4.5`).
pub(super) fn ends_clean(b: &[u8], end: usize, separators: &[u8]) -> bool {
    match at(b, end) {
        None => true,
        Some(c) if is_word(c) => false,
        Some(c) if separators.contains(&c) => !digit_at(b, end + 1),
        Some(_) => true,
    }
}

/// The maximal runs of ASCII digits of a text, as `start..end`, left to right.
pub(super) struct DigitRuns<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> DigitRuns<'a> {
    pub(super) fn new(bytes: &'a [u8]) -> Self {
        Self { bytes, pos: 0 }
    }
}

impl Iterator for DigitRuns<'_> {
    type Item = (usize, usize);

    fn next(&mut self) -> Option<(usize, usize)> {
        let start = next_digit(self.bytes, self.pos)?;
        let end = start + digit_run(self.bytes, start);
        self.pos = end;
        Some((start, end))
    }
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// The high bit of each byte of `word` that is below `n` (at most 128), exact for the lowest
/// one: a byte below `n` borrows in `x - n` and sets its high bit, which `!x` keeps only for
/// bytes below 0x80; borrows only carry upwards, so flags above the lowest may be spurious.
fn below(x: u64, n: u64) -> u64 {
    x.wrapping_sub(n * ONES) & !x & HIGHS
}

/// The first digit at or after `from`, eight bytes at a time: most of a text has none, and
/// five detectors skip it this way.
pub(super) fn next_digit(b: &[u8], from: usize) -> Option<usize> {
    next_flagged(
        b,
        from,
        |w| below(w ^ (0x30 * ONES), 10),
        |c| c.is_ascii_digit(),
    )
}

/// The first digit or `extra` byte at or after `from`, eight bytes at a time.
pub(super) fn next_digit_or(b: &[u8], from: usize, extra: u8) -> Option<usize> {
    let x = u64::from(extra) * ONES;
    next_flagged(
        b,
        from,
        |w| below(w ^ (0x30 * ONES), 10) | below(w ^ x, 1),
        |c| c.is_ascii_digit() || c == extra,
    )
}

/// The first byte at or after `from` that `flags` marks in its 8-byte word (the lowest flag
/// exact), or that `is` accepts in the last few bytes.
fn next_flagged(
    b: &[u8],
    from: usize,
    flags: impl Fn(u64) -> u64,
    is: impl Fn(u8) -> bool,
) -> Option<usize> {
    let rest = b.get(from..)?;
    let mut chunks = rest.chunks_exact(8);
    let mut offset = from;
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let f = flags(u64::from_le_bytes(word));
        if f != 0 {
            return Some(offset + (f.trailing_zeros() / 8) as usize);
        }
        offset += 8;
    }
    let tail = chunks.remainder();
    tail.iter().position(|&c| is(c)).map(|p| offset + p)
}

/// The decimal digits of `s` as numbers 0-9, separators skipped, at most `N` of them.
pub(super) fn digits<const N: usize>(s: &[u8]) -> ([u8; N], usize) {
    let mut out = [0u8; N];
    let mut n = 0;
    for &c in s {
        if c.is_ascii_digit() && n < N {
            out[n] = c - b'0';
            n += 1;
        }
    }
    (out, n)
}

/// The number the digits `d` spell.
pub(super) fn number(d: &[u8]) -> u64 {
    d.iter()
        .fold(0u64, |n, &x| n.wrapping_mul(10).wrapping_add(u64::from(x)))
}

/// All digits the same (`0000 0000`, `1111111111`): test data, not a value.
pub(super) fn all_same(d: &[u8]) -> bool {
    d.windows(2).all(|w| w[0] == w[1])
}

/// A calendar date that exists (years 1800-2199).
pub(super) fn valid_date(year: u32, month: u32, day: u32) -> bool {
    if !(1800..2200).contains(&year) || !(1..=12).contains(&month) || day == 0 {
        return false;
    }
    let leap = (year.is_multiple_of(4) && !year.is_multiple_of(100)) || year.is_multiple_of(400);
    let days = match month {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    };
    day <= days
}

/// Whether one of `keywords` (lower-case ASCII, or UTF-8 compared byte for byte) stands on the
/// same line within [`KEYWORD_WINDOW`] bytes before `start`, in any ASCII case.
pub(super) fn keyword_before(b: &[u8], start: usize, keywords: &[&str]) -> bool {
    let from = start.saturating_sub(KEYWORD_WINDOW);
    let Some(window) = b.get(from..start) else {
        return false;
    };
    let window = match memchr::memrchr(b'\n', window) {
        Some(nl) => window.get(nl + 1..).unwrap_or_default(),
        None => window,
    };
    keywords.iter().any(|k| {
        let k = k.as_bytes();
        !k.is_empty() && window.windows(k.len()).any(|w| w.eq_ignore_ascii_case(k))
    })
}

/// Pushes a finding of `Kind::pii(label)` at `start..end`.
pub(super) fn push(out: &mut Vec<Finding>, start: usize, end: usize, label: &str, rule: &str) {
    out.push(Finding::new(start, end, Kind::pii(label), rule));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digit_runs_are_maximal() {
        let runs: Vec<_> = DigitRuns::new(b"a12 345b6").collect();
        assert_eq!(runs, vec![(1, 3), (4, 7), (8, 9)]);
        assert_eq!(DigitRuns::new(b"").count(), 0);
        let text = "abcdefgh/:\u{e9}\u{ff}xyzabcdefghijk9 \u{2030}0123456789 ~~~~~~~~~~~~~~~7";
        let runs: Vec<_> = DigitRuns::new(text.as_bytes()).collect();
        let expected: Vec<_> = (0..text.len())
            .filter(|&i| {
                text.as_bytes()[i].is_ascii_digit()
                    && !before(text.as_bytes(), i).is_some_and(|c| c.is_ascii_digit())
            })
            .map(|i| (i, i + digit_run(text.as_bytes(), i)))
            .collect();
        assert_eq!(runs, expected);
        assert_eq!(runs.len(), 3);
    }

    #[test]
    fn next_digit_or_finds_the_extra_byte() {
        let t = b"abc::def ghijklmnopq7 rstuv:";
        assert_eq!(next_digit_or(t, 0, b':'), Some(3));
        assert_eq!(next_digit_or(t, 5, b':'), Some(20));
        assert_eq!(next_digit_or(t, 21, b':'), Some(27));
        assert_eq!(next_digit_or(t, 28, b':'), None);
        assert_eq!(next_digit(t, 0), Some(20));
    }

    #[test]
    fn dates_exist() {
        assert!(valid_date(2000, 2, 29));
        assert!(!valid_date(1900, 2, 29));
        assert!(!valid_date(2026, 4, 31));
    }

    #[test]
    fn keywords_stay_on_their_line() {
        let t = b"BSN: 123";
        assert!(keyword_before(t, 5, &["bsn"]));
        let t = b"bsn\n 123";
        assert!(!keyword_before(t, 5, &["bsn"]));
        let far = format!("bsn{}123", " ".repeat(50));
        assert!(!keyword_before(far.as_bytes(), far.len() - 3, &["bsn"]));
    }
}
