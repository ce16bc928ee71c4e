//! Telephone numbers, in the two shapes that a run of digits alone never has:
//!
//! - international, from each `+` (found by `memchr`): a country code of 1-3 digits not starting
//!   with 0, then groups of digits separated by one space, dash or dot, with at most one group
//!   in parentheses (`+44 (0)20 7946 0958`, `+1-415-555-0132`, `+33 1 23 45 67 89`), or all
//!   digits at once (E.164, `+14155550132`); 7 to 15 digits in all, a `(0)` trunk prefix not
//!   counted; after `+1`, North America's ten digits (area code and exchange from 2-9);
//! - North American: `(415) 555-0132`, `415-555-0132`, `415.555.0132`, `1-415-555-0132`, with
//!   the area code and exchange starting with 2-9 and not of the form N11.
//!
//! Left: a `+` glued to what comes before it (`a+1234567`, `1e+10`, semver build metadata
//! `1.0.0+20130313144700`), time zones (`+05:30`, `+0000`), signed decimals (`+123.234000`),
//! dotted quads (`+192.168.100.200`), signed timestamps (`+1441497364`: not ten digits after
//! `+1`), bare digit runs, dates and times (groups too long or separated by `:`), numbers that
//! run on (`+44 20 7946 0958.5`), and filler: ascending or descending digits (`+1234567890`,
//! or `+44 1234567` after the country code), five equal digits in a row (`+1000000`).
//! Space-separated national forms other than North America's are left: without a `+` they
//! cannot be told from lists of numbers.

use memchr::memchr_iter;

use super::scan;
use crate::kind::Finding;

const RULE: &str = "pii-phone";
const LABEL: &str = "phone";

const MIN_DIGITS: usize = 7;
const MAX_DIGITS: usize = 15;
/// A number is a country code and at most this many further groups.
const MAX_GROUPS: usize = 8;
/// The longest group after the country code (`+44 2079460958`).
const MAX_GROUP: usize = 12;

/// Pushes every telephone number of `text`.
pub(super) fn find(text: &str, runs: &[(usize, usize)], out: &mut Vec<Finding>) {
    let b = text.as_bytes();
    let mut taken: Vec<(usize, usize)> = Vec::new();
    for plus in memchr_iter(b'+', b) {
        if taken.last().is_some_and(|&(_, e)| plus < e) {
            continue;
        }
        if let Some(end) = international(b, plus) {
            taken.push((plus, end));
        }
    }
    let mut next_taken = 0;
    let mut resume = 0;
    for (start, end) in runs.iter().copied() {
        if start < resume {
            continue;
        }
        while taken.get(next_taken).is_some_and(|&(_, e)| e <= start) {
            next_taken += 1;
        }
        if taken.get(next_taken).is_some_and(|&(s, _)| s <= start) {
            continue;
        }
        if let Some((s, e)) = north_american(b, start, end - start) {
            scan::push(out, s, e, LABEL, RULE);
            resume = e;
        }
    }
    for (s, e) in taken {
        scan::push(out, s, e, LABEL, RULE);
    }
}

/// The end of the international number whose `+` is at `plus`.
fn international(b: &[u8], plus: usize) -> Option<usize> {
    // `a+1`, `x)+1`, `1e+10`, `1.0.0+build`: arithmetic, exponents and version metadata.
    if scan::before(b, plus).is_some_and(|c| scan::is_word(c) || b").]+".contains(&c)) {
        return None;
    }
    if !matches!(scan::at(b, plus + 1), Some(b'1'..=b'9')) {
        return None;
    }
    let number = Groups::read(b, plus + 1)?;
    let end = number.end;
    if !scan::ends_clean(b, end, b" -.:/") || !number.plausible() {
        return None;
    }
    Some(end)
}

/// The digit groups of an international number, as read.
struct Groups {
    digits: [u8; MAX_DIGITS],
    count: usize,
    lens: [usize; MAX_GROUPS + 1],
    groups: usize,
    dotted_only: bool,
    end: usize,
}

impl Groups {
    /// Reads groups from `i` (a digit): plain groups need a separator between them; a group in
    /// parentheses may follow a group directly (`+44(0)20`).
    fn read(b: &[u8], mut i: usize) -> Option<Groups> {
        let mut g = Groups {
            digits: [0; MAX_DIGITS],
            count: 0,
            lens: [0; MAX_GROUPS + 1],
            groups: 0,
            dotted_only: true,
            end: i,
        };
        let mut parens = 0;
        loop {
            let paren = scan::at(b, i) == Some(b'(');
            let first = i + usize::from(paren);
            let n = scan::digit_run(b, first);
            if n == 0 {
                return None;
            }
            let mut after = first + n;
            if paren {
                parens += 1;
                if parens > 1 || g.groups == 0 || n > 4 || scan::at(b, after) != Some(b')') {
                    return None;
                }
                after += 1;
            }
            // A `(0)` trunk prefix is dialled at home only: not one of the number's digits.
            let trunk = paren && b.get(first..first + n) == Some(b"0".as_slice());
            if !trunk {
                g.add(b.get(first..first + n)?)?;
            }
            g.end = after;
            match Self::separator(b, after) {
                Some(sep) => {
                    g.dotted_only &= sep == b'.';
                    i = after + 1;
                }
                None if scan::at(b, after) == Some(b'(') && !paren => i = after,
                None if paren && scan::digit_at(b, after) => {
                    i = after;
                }
                None => return Some(g),
            }
        }
    }

    /// A single space, dash or dot followed by a digit or `(`.
    fn separator(b: &[u8], i: usize) -> Option<u8> {
        let sep = scan::at(b, i).filter(|c| b" -.".contains(c))?;
        let next = scan::at(b, i + 1)?;
        (next.is_ascii_digit() || next == b'(').then_some(sep)
    }

    fn add(&mut self, group: &[u8]) -> Option<()> {
        if self.count + group.len() > MAX_DIGITS || self.groups >= self.lens.len() {
            return None;
        }
        for (k, &c) in group.iter().enumerate() {
            self.digits[self.count + k] = c - b'0';
        }
        self.count += group.len();
        self.lens[self.groups] = group.len();
        self.groups += 1;
        Some(())
    }

    /// A country code and groups of plausible sizes, enough digits, not a dotted number
    /// (`+123.234000`, `+192.168.100.200`), North America's fixed length after `+1`, and no
    /// filler after the country code.
    fn plausible(&self) -> bool {
        let lens = &self.lens[..self.groups];
        let shape = match lens {
            [] => false,
            [_] => true,
            [cc, rest @ ..] => (1..=3).contains(cc) && rest.iter().all(|&n| n <= MAX_GROUP),
        };
        let digits = &self.digits[..self.count];
        let dotted_quad = self.dotted_only && lens.len() == 4 && lens.iter().all(|&n| n <= 3);
        let decimal = self.dotted_only && lens.len() == 2;
        // Country codes starting with 1 are all North America's: ten digits follow, the area
        // code and the exchange starting with 2-9.
        let nanp =
            digits.first() != Some(&1) || (digits.len() == 11 && digits[1] >= 2 && digits[4] >= 2);
        // Filler after the country code, when the rest is one group (`+44 1234567`); a number
        // written in groups is meant (`+33 1 23 45 67 89`, France's example). The country
        // code's length is known only when a separator follows it.
        let filled = match lens {
            [cc, _] => filler(digits.get(*cc..).unwrap_or_default()),
            [_] => (1..=3).any(|cc| filler(digits.get(cc..).unwrap_or_default())),
            _ => false,
        };
        shape
            && (MIN_DIGITS..=MAX_DIGITS).contains(&digits.len())
            && !dotted_quad
            && !decimal
            && nanp
            && !filler(digits)
            && !filled
    }
}

/// Digits that count up or down (`1234567890`), or hold five equal digits in a row.
fn filler(d: &[u8]) -> bool {
    let up = d.windows(2).all(|w| (w[0] + 1) % 10 == w[1]);
    let down = d.windows(2).all(|w| (w[1] + 1) % 10 == w[0]);
    let repeated = d.windows(5).any(scan::all_same);
    up || down || repeated
}

/// A North American number whose first digit run starts at `start` and is `len` long.
fn north_american(b: &[u8], start: usize, len: usize) -> Option<(usize, usize)> {
    let prev = scan::before(b, start);
    let (s, area) = match (len, prev) {
        // `(415) 555-0132`, `(415)555-0132`.
        (3, Some(b'(')) => {
            let open = start - 1;
            if scan::before(b, open).is_some_and(|c| scan::is_word(c) || c == b'+') {
                return None;
            }
            if scan::at(b, start + 3) != Some(b')') {
                return None;
            }
            let mut i = start + 4;
            if scan::at(b, i) == Some(b' ') {
                i += 1;
            }
            let end = exchange_and_line(b, i, None)?;
            return valid_nanp(b, start, i, end).then_some((open, end));
        }
        // `1-415-555-0132`.
        (1, _) if b.get(start) == Some(&b'1') => (start, start + 2),
        (3, _) => (start, start),
        _ => return None,
    };
    if prev.is_some_and(|c| scan::is_word(c) || b"+-./".contains(&c)) {
        return None;
    }
    let sep = if area > s {
        let sep = scan::at(b, start + 1).filter(|c| b"-. ".contains(c))?;
        if scan::digit_run(b, area) != 3 {
            return None;
        }
        Some(sep)
    } else {
        None
    };
    let sep = match sep {
        Some(sep) if scan::at(b, area + 3) == Some(sep) => sep,
        Some(_) => return None,
        None => scan::at(b, area + 3).filter(|c| b"-.".contains(c))?,
    };
    let end = exchange_and_line(b, area + 4, Some(sep))?;
    valid_nanp(b, area, area + 4, end).then_some((s, end))
}

/// `555-0132` from `i`: three digits, the separator (`sep`, or any of space, dash or dot when
/// none was set), four digits, and a clean end. Returns the end.
fn exchange_and_line(b: &[u8], i: usize, sep: Option<u8>) -> Option<usize> {
    if scan::digit_run(b, i) != 3 {
        return None;
    }
    let got = scan::at(b, i + 3)?;
    let ok = match sep {
        Some(s) => got == s,
        None => b"-. ".contains(&got),
    };
    let end = i + 8;
    (ok && scan::digit_run(b, i + 4) == 4 && scan::ends_clean(b, end, b"-./:,")).then_some(end)
}

/// The area code at `area` and exchange at `exchange` start with 2-9 and are not N11; the
/// digits are not filler.
fn valid_nanp(b: &[u8], area: usize, exchange: usize, end: usize) -> bool {
    let nxx = |i: usize| {
        b.get(i..i + 3)
            .is_some_and(|d| d[0] >= b'2' && !(d[1] == b'1' && d[2] == b'1'))
    };
    let (d, n) = scan::digits::<11>(b.get(area..end).unwrap_or_default());
    nxx(area) && nxx(exchange) && !filler(&d[..n])
}

#[cfg(test)]
mod tests {
    use crate::pii::expect::{self, Find};

    const FIND: Find = Find::Runs(super::find);

    #[test]
    fn finds_international_numbers() {
        let numbers = [
            "+44 20 7946 0958",
            "+1-415-555-0132",
            "+33 1 23 45 67 89",
            "+49 30 123456",
            "+14155550132",
            "+44 (0)20 7946 0958",
            "+1 (415) 555-0132",
            "+55 11 91234-5678",
            "+81 3-1234-5678",
            "+1.415.555.0132",
        ];
        expect::each(FIND, &numbers, |n| format!("tel: {n}, ok"));
        expect::each(FIND, &numbers, |n| format!("\"{n}\""));
        expect::first(FIND, "call +44 20 7946 0958.", (5, 21), "PII_PHONE");
    }

    #[test]
    fn finds_north_american_numbers() {
        let numbers = [
            "(415) 555-0132",
            "(415)555-0132",
            "415-555-0132",
            "415.555.0132",
            "1-800-555-0199",
        ];
        expect::each(FIND, &numbers, |n| format!("phone={n};"));
    }

    #[test]
    fn leaves_numbers_that_are_not_phones() {
        let texts = [
            "x = a+1234567;",
            "1e+10 2.5e+123456789",
            "version 1.0.0+20130313144700",
            "Tue, 26 Nov 2026 10:00:00 +0000",
            "tz +05:30",
            "+192.168.100.200",
            "date 2026-11-26 and 2026-11-26T10:00:00Z",
            "id 4155550132 ts 1732617600",
            "+1234567890 +1000000 +9876543",
            "123-456-7890 055-555-0132 415-155-0132 411-555-0132",
            "foo(415) 555-0132",
            "v415.555.0132 415-555-01320 415-555-0132-1",
            "+44 20 7946 0958 1234 5678 9012 3456",
            "@@ -12,7 +12,8 @@",
            "+12:30:45",
            "Some(\"+123.234000\") \"+1441497364\" +1 055 555 0132",
            "\"+44 1234567\", \"+44 2345678\"",
        ];
        expect::none(FIND, &texts);
    }

    #[test]
    fn a_plus_number_is_found_once() {
        assert_eq!(FIND.spans("+1 (415) 555-0132"), ["+1 (415) 555-0132"]);
        assert_eq!(FIND.spans("+1-415-555-0132"), ["+1-415-555-0132"]);
    }
}
