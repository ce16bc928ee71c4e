//! Payment card numbers, from each run of digits: 13-16 digits written bare, or 13-19 in groups
//! of four separated by single spaces or single dashes, the same separator throughout (4-4-4-4,
//! 4-4-4-4-3, ...; Amex 4-6-5, Diners 4-6-4), with the prefix and a length of a known network and
//! a passing Luhn check.
//!
//! Networks (prefix: lengths): Visa (4: 13, 16, 19), Mastercard (51-55, 2221-2720: 16), Amex
//! (34, 37: 15), Discover (6011, 644-649, 65: 16-19), JCB (3528-3589: 16-19), Diners (36, 38,
//! 300-305: 14-19), UnionPay (62: 16-19), Maestro (50, 56-69: 13-19).
//!
//! Left: numbers glued to a letter, digit, `_` or `.` (hex strings, floats), the head or tail of
//! a longer grouped run (`0000 4111 1111 1111 1111`), numbers with all digits equal, numbers in
//! a table of other long numbers that are not cards (constants of crypto and float-parsing
//! code), the tail of a grouped IBAN (`GB06 ILVL 5634 3974 6009 07`), and bare runs of 17 to 19
//! digits: networks rarely issue cards that long, while 64-bit constants and ids (snowflakes)
//! have those lengths; written in groups (4-4-4-4-3) they are taken.

use super::{luhn, scan};
use crate::kind::Finding;

const RULE: &str = "pii-credit-card";
const LABEL: &str = "credit-card";

const MIN_DIGITS: usize = 13;
const MAX_DIGITS: usize = 19;

/// Pushes every payment card number of `text`.
pub(super) fn find(text: &str, runs: &[(usize, usize)], out: &mut Vec<Finding>) {
    let b = text.as_bytes();
    let mut resume = 0;
    for (start, end) in runs.iter().copied() {
        let len = end - start;
        let shaped = len == 4 || (MIN_DIGITS..=MAX_DIGITS).contains(&len);
        if start < resume || !shaped || !starts_clean(b, start) {
            continue;
        }
        let Some((stop, digits, count)) = candidate(b, start, end) else {
            continue;
        };
        resume = stop;
        let d = &digits[..count];
        let alone = !in_number_table(b, start, stop) && !ends_an_iban(b, start);
        if scan::ends_clean(b, stop, b" -.,") && card(d) && alone {
            scan::push(out, start, stop, LABEL, RULE);
        }
    }
}

/// A known network's prefix and length, a passing Luhn check, and not all one digit.
fn card(d: &[u8]) -> bool {
    network(d) && luhn::valid(d) && !scan::all_same(d)
}

/// Whether the number at `start..stop` stands in a table of long numbers (`1259582250014073,
/// 1422107436869536,`): a neighbour across commas and white space is a run of 10 or more digits
/// that is not itself a card. A list of test cards is still taken.
fn in_number_table(b: &[u8], start: usize, stop: usize) -> bool {
    let gap = |c: &u8| b" \t\r\n,;([{".contains(c);
    let before = b.get(..start).unwrap_or_default();
    let skip = before.iter().rev().take(16).take_while(|c| gap(c)).count();
    let prev_end = start - skip;
    let prev_len = before
        .get(..prev_end)
        .unwrap_or_default()
        .iter()
        .rev()
        .take(MAX_DIGITS + 1)
        .take_while(|c| c.is_ascii_digit())
        .count();
    let after = b.get(stop..).unwrap_or_default();
    let skip = after.iter().take(16).take_while(|c| gap(c)).count();
    let next_start = stop + skip;
    let next_len = scan::digit_run(b, next_start).min(MAX_DIGITS + 1);
    let table_number = |s: usize, n: usize| {
        let (d, count) = scan::digits::<MAX_DIGITS>(b.get(s..s + n).unwrap_or_default());
        n >= 10 && !(n <= MAX_DIGITS && card(&d[..count]))
    };
    table_number(prev_end - prev_len, prev_len) || table_number(next_start, next_len)
}

/// Whether the number at `start` continues a chain of space-separated groups of four capitals
/// or digits that starts like an IBAN (`GB06 ILVL 5634 3974 6009 07`).
fn ends_an_iban(b: &[u8], start: usize) -> bool {
    let mut at = start;
    for _ in 0..8 {
        if scan::before(b, at) != Some(b' ') || at < 5 {
            return false;
        }
        let Some(group) = b.get(at - 5..at - 1) else {
            return false;
        };
        let glued = scan::before(b, at - 5).is_some_and(scan::is_word);
        if group
            .iter()
            .any(|c| !(c.is_ascii_uppercase() || c.is_ascii_digit()))
            || glued
        {
            return false;
        }
        let iban_head = group[..2].iter().all(u8::is_ascii_uppercase)
            && group[2..].iter().all(u8::is_ascii_digit);
        if iban_head {
            return true;
        }
        at -= 5;
    }
    false
}

/// Not glued to an identifier or a decimal point, nor the continuation of a grouped run.
fn starts_clean(b: &[u8], start: usize) -> bool {
    match scan::before(b, start) {
        None => true,
        Some(c) if scan::is_word(c) || c == b'.' => false,
        Some(b' ' | b'-') => !start
            .checked_sub(1)
            .is_some_and(|i| scan::before(b, i).is_some_and(|c| c.is_ascii_digit())),
        Some(_) => true,
    }
}

/// The card-shaped number starting with the digit run `start..end`: its end, digits and count.
fn candidate(b: &[u8], start: usize, end: usize) -> Option<(usize, [u8; MAX_DIGITS], usize)> {
    let first = end - start;
    let sep = scan::at(b, end).filter(|&c| c == b' ' || c == b'-');
    let grouped = first == 4 && sep.is_some() && scan::digit_at(b, end + 1);
    if !grouped {
        // Bare: 13-16 digits (see the module's note on longer numbers).
        let bare = matches!(first, MIN_DIGITS..=16);
        let (d, n) = scan::digits::<MAX_DIGITS>(b.get(start..end)?);
        return bare.then_some((end, d, n));
    }
    let sep = sep?;
    let mut lens = [0usize; 5];
    let mut groups = 0;
    let mut i = start;
    loop {
        let n = scan::digit_run(b, i);
        if groups == lens.len() {
            return None;
        }
        lens[groups] = n;
        groups += 1;
        i += n;
        if scan::at(b, i) == Some(sep) && scan::digit_at(b, i + 1) {
            i += 1;
        } else {
            break;
        }
    }
    let total: usize = lens.iter().sum();
    if !grouping(&lens[..groups]) || total > MAX_DIGITS {
        return None;
    }
    let (d, n) = scan::digits::<MAX_DIGITS>(b.get(start..i)?);
    Some((i, d, n))
}

/// The groupings printed on cards: fours with a shorter last group, Amex's 4-6-5 and Diners'
/// 4-6-4.
fn grouping(lens: &[usize]) -> bool {
    match lens {
        [4, 6, 5] | [4, 6, 4] => true,
        [head @ .., last] if head.len() >= 3 => {
            head.iter().all(|&n| n == 4) && (1..=4).contains(last)
        }
        _ => false,
    }
}

/// Whether the digits `d` have the prefix and a length of a known network.
fn network(d: &[u8]) -> bool {
    let len = d.len();
    let prefix = |n: usize| scan::number(d.get(..n).unwrap_or_default());
    let (p1, p2, p3, p4) = (prefix(1), prefix(2), prefix(3), prefix(4));
    let any = (MIN_DIGITS..=MAX_DIGITS).contains(&len);
    let long = (16..=MAX_DIGITS).contains(&len);
    let visa = p1 == 4 && matches!(len, 13 | 16 | 19);
    let mastercard = ((51..=55).contains(&p2) || (2221..=2720).contains(&p4)) && len == 16;
    let amex = (p2 == 34 || p2 == 37) && len == 15;
    let discover = (p4 == 6011 || (644..=649).contains(&p3) || p2 == 65) && long;
    let jcb = (3528..=3589).contains(&p4) && long;
    let diners = (p2 == 36 || p2 == 38 || (300..=305).contains(&p3)) && len >= 14 && any;
    let unionpay = p2 == 62 && long;
    let maestro = (p2 == 50 || (56..=69).contains(&p2)) && any;
    visa || mastercard || amex || discover || jcb || diners || unionpay || maestro
}

#[cfg(test)]
mod tests {
    use crate::pii::expect::{self, Find};

    const FIND: Find = Find::Runs(super::find);

    #[test]
    fn finds_test_cards_of_each_network() {
        let cards = [
            "4111111111111111",
            "4111 1111 1111 1111",
            "4111-1111-1111-1111",
            "4222222222222",
            "5555555555554444",
            "2223003122003222",
            "378282246310005",
            "3782 822463 10005",
            "6011111111111117",
            "6011 0009 9013 9424",
            "3530111333300000",
            "36227206271667",
            "3056 930902 5904",
            "6200000000000005",
            "6759649826438453",
            "4242 4242 4242 4242 428",
        ];
        expect::each(FIND, &cards, |n| format!("card={n};"));
        assert_eq!(
            FIND.spans("cards = [4111111111111111, 5555555555554444]"),
            ["4111111111111111", "5555555555554444"]
        );
        expect::first(FIND, "pan: 4111111111111111.", (5, 21), "PII_CREDIT_CARD");
    }

    #[test]
    fn leaves_numbers_that_are_not_cards() {
        let texts = [
            "4111111111111112",
            "1732617600000 1732617600000000000",
            "a4111111111111111 4111111111111111b 0.4111111111111111",
            "4111111111111111.5 4111111111111111_x",
            "0000 4111 1111 1111 1111",
            "4111 1111 1111 1111 0000 0000",
            "4111 1111-1111 1111",
            "4111  1111 1111 1111",
            "9007199254740991 4294967295 1234567890",
            "0000-0000-0000-0000 4444444444444444",
            "418412306981191681 6364136223846793005",
            "411 1111 1111 1111 1",
            "4222222222222222224 6011000990139424009",
            "[1259582250014073, 5555555555554444, 1422107436869536]",
            "GB06 ILVL 5634 3974 6009 07",
        ];
        expect::none(FIND, &texts);
    }
}
