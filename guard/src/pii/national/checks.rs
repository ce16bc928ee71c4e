//! The check of each national scheme, on a matched value with its separators: check digits or
//! letters as each scheme publishes them, and the birth date where the number holds one.

use crate::pii::luhn;
use crate::pii::scan::{all_same, digits, number, valid_date};

/// Brazil's CPF: two mod-11 check digits (weights 10..2, then 11..2), remainder < 2 giving 0.
pub(super) fn cpf(v: &[u8]) -> bool {
    let (d, n) = digits::<11>(v);
    if n != 11 || all_same(&d) {
        return false;
    }
    let check = |len: usize| {
        let sum: usize = d
            .iter()
            .take(len)
            .enumerate()
            .map(|(i, &x)| usize::from(x) * (len + 1 - i))
            .sum();
        let r = sum % 11;
        if r < 2 {
            0
        } else {
            11 - r
        }
    };
    check(9) == usize::from(d[9]) && check(10) == usize::from(d[10])
}

/// The Netherlands' BSN: the "11-proof", weights 9..2 and -1.
pub(super) fn bsn(v: &[u8]) -> bool {
    let (d, n) = digits::<9>(v);
    if n != 9 || all_same(&d) {
        return false;
    }
    let sum: i32 = d
        .iter()
        .enumerate()
        .map(|(i, &x)| {
            let w = if i == 8 { -1 } else { 9 - i as i32 };
            i32::from(x) * w
        })
        .sum();
    sum % 11 == 0
}

/// Spain's DNI (8 digits) and NIE (`X`, `Y` or `Z` for 0, 1, 2, and 7 digits): the letter is
/// the number mod 23 in `TRWAGMYFPDXBNJZSQVHLCKE`.
pub(super) fn dni(v: &[u8]) -> bool {
    const LETTERS: &[u8; 23] = b"TRWAGMYFPDXBNJZSQVHLCKE";
    let (Some(&first), Some(&letter)) = (v.first(), v.last()) else {
        return false;
    };
    let lead = match first {
        b'X' => 0,
        b'Y' => 1,
        b'Z' => 2,
        _ => 0,
    };
    let (d, n) = digits::<8>(v);
    let expected_digits = if first.is_ascii_digit() { 8 } else { 7 };
    if n != expected_digits {
        return false;
    }
    let num = lead * 10_000_000 + number(&d[..n]);
    usize::try_from(num % 23)
        .ok()
        .and_then(|i| LETTERS.get(i))
        .is_some_and(|&l| l == letter)
}

/// France's NIR: sex, year, month, department (Corsica's `2A`/`2B` counted as 19 and 18),
/// commune, order, and a key of 97 minus the first 13 digits mod 97.
pub(super) fn nir(v: &[u8]) -> bool {
    let mut c = [0u8; 15];
    let mut n = 0;
    for &x in v.iter().filter(|&&x| x != b' ') {
        if n == c.len() {
            return false;
        }
        c[n] = x;
        n += 1;
    }
    if n != 15 || !b"123478".contains(&c[0]) || !c[1..5].iter().all(u8::is_ascii_digit) {
        return false;
    }
    let month = (c[3] - b'0') * 10 + (c[4] - b'0');
    let month_ok = (1..=12).contains(&month) || (20..=42).contains(&month) || month >= 50;
    let corsica = match &c[5..7] {
        b"2A" => Some(19),
        b"2B" => Some(18),
        _ => None,
    };
    let mut body = 0u64;
    for (i, &x) in c[..13].iter().enumerate() {
        if (i == 5 || i == 6) && corsica.is_some() {
            continue;
        }
        if !x.is_ascii_digit() {
            return false;
        }
        body = body * 10 + u64::from(x - b'0');
        if i == 4 {
            if let Some(dep) = corsica {
                body = body * 100 + dep;
            }
        }
    }
    let key = number(&[c[13].wrapping_sub(b'0'), c[14].wrapping_sub(b'0')]);
    month_ok && c[13].is_ascii_digit() && c[14].is_ascii_digit() && 97 - body % 97 == key
}

/// China's resident identity number: a region (first digit 1-8), a birth date, and an
/// ISO 7064 MOD 11-2 check character (`X` for 10).
pub(super) fn cn_ric(v: &[u8]) -> bool {
    const WEIGHTS: [u32; 17] = [7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2];
    const CHECK: &[u8; 11] = b"10X98765432";
    let (d, n) = digits::<17>(v);
    if n != 17 || !(1..=8).contains(&d[0]) {
        return false;
    }
    let year = number(&d[6..10]);
    let date_ok = (1900..2100).contains(&year)
        && valid_date(
            year as u32,
            number(&d[10..12]) as u32,
            number(&d[12..14]) as u32,
        );
    let sum: u32 = d.iter().zip(WEIGHTS).map(|(&x, w)| u32::from(x) * w).sum();
    let last = v.last().map(u8::to_ascii_uppercase);
    date_ok && last == CHECK.get(sum as usize % 11).copied()
}

/// India's Aadhaar: 12 digits, not starting with 0 or 1, Verhoeff-checked.
pub(super) fn aadhaar(v: &[u8]) -> bool {
    let (d, n) = digits::<12>(v);
    n == 12 && d[0] >= 2 && !all_same(&d) && crate::pii::verhoeff::valid(&d)
}

/// Sweden's personnummer: a birth date (day + 60 for a coordination number) and a Luhn check
/// over the 10 digits `YYMMDDNNNC` (a 12-digit form's century dropped).
pub(super) fn se_pnr(v: &[u8]) -> bool {
    let (d, n) = digits::<12>(v);
    let (century, d) = match n {
        10 => (None, &d[..10]),
        12 => (Some(number(&d[..2]) as u32), &d[2..12]),
        _ => return false,
    };
    let (yy, mm, mut dd) = (
        number(&d[..2]) as u32,
        number(&d[2..4]) as u32,
        number(&d[4..6]) as u32,
    );
    if dd > 60 {
        dd -= 60;
    }
    let date_ok = match century {
        Some(c @ 18..=20) => valid_date(c * 100 + yy, mm, dd),
        Some(_) => false,
        None => valid_date(1900 + yy, mm, dd) || valid_date(2000 + yy, mm, dd),
    };
    date_ok && !all_same(d) && luhn::valid(d)
}

/// Poland's PESEL: a birth date whose month carries the century, and a check digit of weights
/// 1, 3, 7, 9 repeated.
pub(super) fn pesel(v: &[u8]) -> bool {
    const WEIGHTS: [u32; 10] = [1, 3, 7, 9, 1, 3, 7, 9, 1, 3];
    let (d, n) = digits::<11>(v);
    if n != 11 || all_same(&d) {
        return false;
    }
    let (yy, mm, dd) = (
        number(&d[..2]) as u32,
        number(&d[2..4]) as u32,
        number(&d[4..6]) as u32,
    );
    let (century, month) = match mm {
        81..=92 => (1800, mm - 80),
        1..=12 => (1900, mm),
        21..=32 => (2000, mm - 20),
        41..=52 => (2100, mm - 40),
        _ => return false,
    };
    let sum: u32 = d.iter().zip(WEIGHTS).map(|(&x, w)| u32::from(x) * w).sum();
    valid_date(century + yy, month, dd) && (10 - sum % 10) % 10 == u32::from(d[10])
}

/// Germany's tax id (Steuer-ID): no leading 0; in the first ten digits one digit appears twice
/// or three times (never three in a row) and the others at most once; ISO 7064 MOD 11,10 check.
pub(super) fn de_idnr(v: &[u8]) -> bool {
    let (d, n) = digits::<11>(v);
    if n != 11 || d[0] == 0 {
        return false;
    }
    let mut counts = [0u8; 10];
    for &x in &d[..10] {
        counts[usize::from(x)] += 1;
    }
    let mut repeated = (0..10u8).filter(|&x| counts[usize::from(x)] > 1);
    let digits_ok = match (repeated.next(), repeated.next()) {
        (Some(x), None) => {
            let triple_in_a_row = d[..10].windows(3).any(|w| w.iter().all(|&y| y == x));
            counts[usize::from(x)] <= 3 && !triple_in_a_row
        }
        _ => false,
    };
    let mut product = 10u8;
    for &x in &d[..10] {
        let mut sum = (x + product) % 10;
        if sum == 0 {
            sum = 10;
        }
        product = (sum * 2) % 11;
    }
    let check = (11 - product) % 10;
    digits_ok && check == d[10]
}

/// Canada's SIN: Luhn; the first digit is not 0 (unassigned) or 8 (business numbers).
pub(super) fn ca_sin(v: &[u8]) -> bool {
    let (d, n) = digits::<9>(v);
    n == 9 && d[0] != 0 && d[0] != 8 && luhn::valid(&d)
}

/// The US SSN, dashed: area not 000, 666 or 9xx, group not 00, serial not 0000, and not one of
/// the numbers published in advertising and examples.
pub(super) fn us_ssn(v: &[u8]) -> bool {
    const PUBLISHED: [&[u8]; 3] = [b"078-05-1120", b"219-09-9999", b"123-45-6789"];
    let (d, n) = digits::<9>(v);
    let area = number(&d[..3]);
    let ok = n == 9
        && area != 0
        && area != 666
        && area < 900
        && number(&d[3..5]) != 0
        && number(&d[5..9]) != 0;
    ok && !PUBLISHED.contains(&v)
}

/// Finland's HETU `DDMMYYCZZZQ`: a date whose century the sign `C` gives, an individual number
/// from 002, and `Q` the number `DDMMYYZZZ` mod 31 in `0123456789ABCDEFHJKLMNPRSTUVWXY`.
pub(super) fn hetu(v: &[u8]) -> bool {
    const CHECK: &[u8; 31] = b"0123456789ABCDEFHJKLMNPRSTUVWXY";
    let (Some(&sign), Some(&q)) = (v.get(6), v.get(10)) else {
        return false;
    };
    let century = match sign {
        b'+' => 1800,
        b'-' | b'U'..=b'Y' => 1900,
        b'A'..=b'F' => 2000,
        _ => return false,
    };
    let (d, n) = digits::<10>(v.get(..10).unwrap_or_default());
    if n != 9 {
        return false;
    }
    let (dd, mm, yy) = (
        number(&d[..2]) as u32,
        number(&d[2..4]) as u32,
        number(&d[4..6]) as u32,
    );
    let individual = number(&d[6..9]);
    let expected = CHECK.get((number(&d[..9]) % 31) as usize).copied();
    valid_date(century + yy, mm, dd) && individual >= 2 && expected == Some(q)
}

/// Norway's fødselsnummer: a birth date (day + 40 for a D-number, month + 40 for an H-number)
/// and two mod-11 check digits.
pub(super) fn no_fnr(v: &[u8]) -> bool {
    const K1: [u32; 9] = [3, 7, 6, 1, 8, 9, 4, 5, 2];
    const K2: [u32; 10] = [5, 4, 3, 2, 7, 6, 5, 4, 3, 2];
    let (d, n) = digits::<11>(v);
    if n != 11 || all_same(&d) {
        return false;
    }
    let mut dd = number(&d[..2]) as u32;
    let mut mm = number(&d[2..4]) as u32;
    let yy = number(&d[4..6]) as u32;
    if dd > 40 {
        dd -= 40;
    }
    if mm > 40 {
        mm -= 40;
    }
    let date_ok = valid_date(1900 + yy, mm, dd) || valid_date(2000 + yy, mm, dd);
    let check = |weights: &[u32]| {
        let sum: u32 = d.iter().zip(weights).map(|(&x, w)| u32::from(x) * w).sum();
        match 11 - sum % 11 {
            11 => Some(0),
            10 => None,
            k => Some(k),
        }
    };
    date_ok && check(&K1) == Some(u32::from(d[9])) && check(&K2) == Some(u32::from(d[10]))
}

/// Belgium's national number `YYMMDDSSSCC`: a date (month or day 0 when unknown; the month
/// plus 20 or 40 for a bis number) and `CC` 97 minus the first nine digits mod 97 (with a 2
/// before them for people born from 2000).
pub(super) fn be_nrn(v: &[u8]) -> bool {
    let (d, n) = digits::<11>(v);
    if n != 11 || all_same(&d) {
        return false;
    }
    let mm = number(&d[2..4]) % 20;
    let dd = number(&d[4..6]);
    let serial = number(&d[6..9]);
    let base = number(&d[..9]);
    let key = number(&d[9..11]);
    let fields_ok = mm <= 12 && dd <= 31 && (1..=998).contains(&serial);
    fields_ok && (97 - base % 97 == key || 97 - (2_000_000_000 + base) % 97 == key)
}

/// Italy's codice fiscale: 6 letters, the year, a month letter, the day (+ 40 for women), a
/// place code, and a check letter; omocodia may replace any of the 7 digits by `LMNPQRSTUV`.
pub(super) fn codice_fiscale(v: &[u8]) -> bool {
    const MONTHS: &[u8] = b"ABCDEHLMPRST";
    const OMOCODES: &[u8; 10] = b"LMNPQRSTUV";
    const ODD: [u32; 26] = [
        1, 0, 5, 7, 9, 13, 15, 17, 19, 21, 2, 4, 18, 20, 11, 3, 6, 8, 12, 14, 16, 10, 22, 25, 24,
        23,
    ];
    if v.len() != 16 {
        return false;
    }
    let letter = |i: usize| v[i].is_ascii_uppercase();
    let digit = |i: usize| v[i].is_ascii_digit() || OMOCODES.contains(&v[i]);
    let value = |i: usize| match OMOCODES.iter().position(|&o| o == v[i]) {
        Some(p) => p as u32,
        None => u32::from(v[i].wrapping_sub(b'0')),
    };
    let shape = (0..6).all(letter)
        && [6, 7, 9, 10, 12, 13, 14].into_iter().all(digit)
        && MONTHS.contains(&v[8])
        && letter(11)
        && letter(15);
    if !shape {
        return false;
    }
    let day = value(9) * 10 + value(10);
    if !((1..=31).contains(&day) || (41..=71).contains(&day)) {
        return false;
    }
    let sum: u32 = v[..15]
        .iter()
        .enumerate()
        .map(|(i, &c)| {
            let k = if c.is_ascii_digit() {
                c - b'0'
            } else {
                c - b'A'
            };
            if i % 2 == 0 {
                ODD[usize::from(k)]
            } else {
                u32::from(k)
            }
        })
        .sum();
    u32::from(v[15] - b'A') == sum % 26
}
