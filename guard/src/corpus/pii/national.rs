//! National identity numbers, each from its scheme's published layout and check: birth dates
//! between 1940 and 2015 (days 1-28, valid in every month), random serials, the check digits or
//! letters computed here.

use rand::seq::IndexedRandom;
use rand::Rng;

use super::super::{chars, UPPER};
use super::{date, digit_vec, padded, text};
use crate::pii::luhn;

/// Brazil's CPF: two mod-11 check digits, `123.456.789-09` or bare.
pub(super) fn cpf<R: Rng + ?Sized>(rng: &mut R) -> String {
    let mut d = digit_vec(rng, 9);
    for len in [9usize, 10] {
        let sum: usize = d
            .iter()
            .enumerate()
            .map(|(i, &x)| usize::from(x) * (len + 1 - i))
            .sum();
        d.push(if sum % 11 < 2 {
            0
        } else {
            (11 - sum % 11) as u8
        });
    }
    let s = text(&d);
    if rng.random_bool(0.5) {
        format!("{}.{}.{}-{}", &s[..3], &s[3..6], &s[6..9], &s[9..])
    } else {
        s
    }
}

/// The Netherlands' BSN: the 11-proof (weights 9..2 and -1), bare or `1234.56.789`.
pub(super) fn bsn<R: Rng + ?Sized>(rng: &mut R) -> String {
    loop {
        let mut d = digit_vec(rng, 8);
        d[0] = rng.random_range(1..10);
        let sum: u32 = d
            .iter()
            .enumerate()
            .map(|(i, &x)| u32::from(x) * (9 - i as u32))
            .sum();
        let last = sum % 11;
        if last == 10 {
            continue;
        }
        d.push(last as u8);
        let s = text(&d);
        return if rng.random_bool(0.5) {
            s
        } else {
            format!("{}.{}.{}", &s[..4], &s[4..6], &s[6..])
        };
    }
}

/// Spain's DNI (`12345678Z`, `12345678-Z`) or NIE (`X1234567L`): the number mod 23 picks the
/// letter.
pub(super) fn dni<R: Rng + ?Sized>(rng: &mut R) -> String {
    const LETTERS: &[u8] = b"TRWAGMYFPDXBNJZSQVHLCKE";
    let letter = |n: u32| char::from(LETTERS[(n % 23) as usize]);
    if rng.random_bool(0.3) {
        let lead = rng.random_range(0..3u32);
        let n = rng.random_range(0..10_000_000u32);
        let prefix = ["X", "Y", "Z"][lead as usize];
        return format!("{prefix}{}{}", padded(n, 7), letter(lead * 10_000_000 + n));
    }
    let n = rng.random_range(10_000_000..100_000_000u32);
    let sep = if rng.random_bool(0.3) { "-" } else { "" };
    format!("{n}{sep}{}", letter(n))
}

/// France's NIR: sex, year, month, department (Corsica `2A`/`2B` now and then), commune, order,
/// and a key of 97 minus the number mod 97; spaced or bare.
pub(super) fn nir<R: Rng + ?Sized>(rng: &mut R) -> String {
    let sex = rng.random_range(1..=2u64);
    let (yy, mm) = (rng.random_range(0..100u64), rng.random_range(1..=12u64));
    let corsica = rng.random_bool(0.1);
    let dep = rng.random_range(1..=95u64);
    let (commune, order) = (rng.random_range(1..=990u64), rng.random_range(1..=999u64));
    let dep_text = if corsica {
        ["2A", "2B"][rng.random_range(0..2)].to_string()
    } else {
        format!("{dep:02}")
    };
    let dep_value = match dep_text.as_str() {
        "2A" => 19,
        "2B" => 18,
        _ => dep,
    };
    let body =
        (((sex * 100 + yy) * 100 + mm) * 100 + dep_value) * 1_000_000 + commune * 1000 + order;
    let key = 97 - body % 97;
    let parts = [
        sex.to_string(),
        format!("{yy:02}"),
        format!("{mm:02}"),
        dep_text,
        format!("{commune:03}"),
        format!("{order:03}"),
        format!("{key:02}"),
    ];
    parts.join(if rng.random_bool(0.5) { " " } else { "" })
}

/// China's resident identity number: region, birth date, sequence, ISO 7064 MOD 11-2 check.
pub(super) fn cn_ric<R: Rng + ?Sized>(rng: &mut R) -> String {
    let (y, m, d) = date(rng, 1950, 2010);
    let region = rng.random_range(110_000..660_000u32);
    let body = format!(
        "{region}{y}{m:02}{d:02}{}",
        padded(rng.random_range(0..1000), 3)
    );
    let sum: u32 = body
        .bytes()
        .enumerate()
        .map(|(i, c)| u32::from(c - b'0') * ((1u32 << (17 - i)) % 11))
        .sum();
    let check = b"10X98765432"[(sum % 11) as usize];
    format!("{body}{}", char::from(check))
}

/// India's Aadhaar: 11 digits (the first 2-9) and a Verhoeff check digit; spaced, dashed or
/// bare.
pub(super) fn aadhaar<R: Rng + ?Sized>(rng: &mut R) -> String {
    let mut d = digit_vec(rng, 11);
    d[0] = rng.random_range(2..10);
    d.push(crate::pii::verhoeff::check_digit(&d));
    let s = text(&d);
    match rng.random_range(0..3) {
        0 => s,
        1 => format!("{} {} {}", &s[..4], &s[4..8], &s[8..]),
        _ => format!("{}-{}-{}", &s[..4], &s[4..8], &s[8..]),
    }
}

/// Sweden's personnummer: `YYMMDD-NNNC`, `YYYYMMDD-NNNC` or `YYYYMMDDNNNC`, Luhn over the ten
/// digits without the century.
pub(super) fn se_pnr<R: Rng + ?Sized>(rng: &mut R) -> String {
    let (y, m, d) = date(rng, 1940, 2010);
    let ten = format!(
        "{:02}{m:02}{d:02}{}",
        y % 100,
        padded(rng.random_range(0..1000), 3)
    );
    let digits: Vec<u8> = ten.bytes().map(|c| c - b'0').collect();
    let check = luhn::check_digit(&digits);
    let (date_part, rest) = ten.split_at(6);
    match rng.random_range(0..3) {
        0 => format!("{date_part}-{rest}{check}"),
        1 => format!("{}{date_part}-{rest}{check}", y / 100),
        _ => format!("{}{date_part}{rest}{check}", y / 100),
    }
}

/// Poland's PESEL: a birth date whose month carries the century (+20 from 2000), weights
/// 1-3-7-9.
pub(super) fn pesel<R: Rng + ?Sized>(rng: &mut R) -> String {
    let (y, m, d) = date(rng, 1940, 2015);
    let month = if y >= 2000 { m + 20 } else { m };
    let body = format!(
        "{:02}{month:02}{d:02}{}",
        y % 100,
        padded(rng.random_range(0..10_000), 4)
    );
    let sum: u32 = body
        .bytes()
        .zip([1, 3, 7, 9, 1, 3, 7, 9, 1, 3])
        .map(|(c, w)| u32::from(c - b'0') * w)
        .sum();
    format!("{body}{}", (10 - sum % 10) % 10)
}

/// Italy's codice fiscale: surname and name letters, year, month letter, day (+40 for women),
/// place code, check letter.
pub(super) fn codice_fiscale<R: Rng + ?Sized>(rng: &mut R) -> String {
    const MONTHS: &[u8] = b"ABCDEHLMPRST";
    const ODD: [u32; 36] = [
        1, 0, 5, 7, 9, 13, 15, 17, 19, 21, 1, 0, 5, 7, 9, 13, 15, 17, 19, 21, 2, 4, 18, 20, 11, 3,
        6, 8, 12, 14, 16, 10, 22, 25, 24, 23,
    ];
    let (y, m, d) = date(rng, 1940, 2005);
    let day = if rng.random_bool(0.5) { d + 40 } else { d };
    let place = format!(
        "{}{}",
        chars(rng, "ABCDEFGHILM", 1),
        padded(rng.random_range(1..1000), 3)
    );
    let body = format!(
        "{}{:02}{}{day:02}{place}",
        chars(rng, UPPER, 6),
        y % 100,
        char::from(MONTHS[m as usize - 1])
    );
    let sum: u32 = body
        .bytes()
        .enumerate()
        .map(|(i, c)| {
            let v = if c.is_ascii_digit() {
                u32::from(c - b'0')
            } else {
                u32::from(c - b'A') + 10
            };
            let even = if c.is_ascii_digit() { v } else { v - 10 };
            if i % 2 == 0 {
                ODD[v as usize]
            } else {
                even
            }
        })
        .sum();
    format!("{body}{}", char::from(b'A' + (sum % 26) as u8))
}

/// Germany's tax id: ten digits (the first not 0) where one digit appears twice and another is
/// missing, then the ISO 7064 MOD 11,10 check digit; bare or `12 345 678 901`.
pub(super) fn de_idnr<R: Rng + ?Sized>(rng: &mut R) -> String {
    let mut d: Vec<u8> = (0..10).collect();
    loop {
        // Shuffle, drop the last digit, repeat one of the others at a random place.
        for i in (1..d.len()).rev() {
            d.swap(i, rng.random_range(0..=i));
        }
        let mut ten: Vec<u8> = d[..9].to_vec();
        let twin = ten[rng.random_range(0..9)];
        ten.insert(rng.random_range(0..=9), twin);
        if ten[0] == 0 {
            continue;
        }
        let mut product = 10u8;
        for &x in &ten {
            let sum = match (x + product) % 10 {
                0 => 10,
                s => s,
            };
            product = (sum * 2) % 11;
        }
        ten.push((11 - product) % 10);
        let s = text(&ten);
        return if rng.random_bool(0.5) {
            s
        } else {
            format!("{} {} {} {}", &s[..2], &s[2..5], &s[5..8], &s[8..])
        };
    }
}

/// Canada's SIN: first digit 1-7 or 9, Luhn; `123 456 782` or `123-456-782`.
pub(super) fn ca_sin<R: Rng + ?Sized>(rng: &mut R) -> String {
    let mut d = digit_vec(rng, 8);
    d[0] = [1, 2, 3, 4, 5, 6, 7, 9].choose(rng).copied().unwrap_or(1);
    d.push(luhn::check_digit(&d));
    let s = text(&d);
    let sep = if rng.random_bool(0.5) { " " } else { "-" };
    format!("{}{sep}{}{sep}{}", &s[..3], &s[3..6], &s[6..])
}

/// The US SSN, dashed: area 001-899 but 666, group 01-99, serial 0001-9999.
pub(super) fn us_ssn<R: Rng + ?Sized>(rng: &mut R) -> String {
    let area = loop {
        let a = rng.random_range(1..900u32);
        if a != 666 {
            break a;
        }
    };
    format!(
        "{}-{}-{}",
        padded(area, 3),
        padded(rng.random_range(1..100), 2),
        padded(rng.random_range(1..10_000), 4)
    )
}

/// Finland's HETU: `DDMMYY`, the century sign (`-` or `Y` for the 1900s, `A` or `B` from
/// 2000), an individual number 002-899, and the number mod 31 as a check character.
pub(super) fn hetu<R: Rng + ?Sized>(rng: &mut R) -> String {
    const CHECK: &[u8] = b"0123456789ABCDEFHJKLMNPRSTUVWXY";
    let (y, m, d) = date(rng, 1940, 2015);
    let sign = if y >= 2000 { ["A", "B"] } else { ["-", "Y"] }[rng.random_range(0..2)];
    let individual = rng.random_range(2..900u32);
    let n = ((d * 100 + m) * 100 + y % 100) * 1000 + individual;
    format!(
        "{d:02}{m:02}{:02}{sign}{}{}",
        y % 100,
        padded(individual, 3),
        char::from(CHECK[(n % 31) as usize])
    )
}

/// Norway's fødselsnummer: `DDMMYY`, an individual number, two mod-11 check digits; bare or
/// `DDMMYY IIIKK`.
pub(super) fn no_fnr<R: Rng + ?Sized>(rng: &mut R) -> String {
    loop {
        let (y, m, d) = date(rng, 1940, 1999);
        let body = format!(
            "{d:02}{m:02}{:02}{}",
            y % 100,
            padded(rng.random_range(0..500), 3)
        );
        let mut digits: Vec<u32> = body.bytes().map(|c| u32::from(c - b'0')).collect();
        let k = |ds: &[u32], w: &[u32]| match 11
            - ds.iter().zip(w).map(|(a, b)| a * b).sum::<u32>() % 11
        {
            11 => Some(0),
            10 => None,
            k => Some(k),
        };
        let Some(k1) = k(&digits, &[3, 7, 6, 1, 8, 9, 4, 5, 2]) else {
            continue;
        };
        digits.push(k1);
        let Some(k2) = k(&digits, &[5, 4, 3, 2, 7, 6, 5, 4, 3, 2]) else {
            continue;
        };
        let sep = if rng.random_bool(0.5) { " " } else { "" };
        return format!("{}{sep}{}{k1}{k2}", &body[..6], &body[6..]);
    }
}

/// Belgium's national number `YY.MM.DD-SSS.CC` (or bare): 97 minus the first nine digits mod
/// 97, with a 2 before them for people born from 2000.
pub(super) fn be_nrn<R: Rng + ?Sized>(rng: &mut R) -> String {
    let (y, m, d) = date(rng, 1940, 2015);
    let serial = rng.random_range(1..=998u64);
    let nine = ((u64::from(y % 100) * 100 + u64::from(m)) * 100 + u64::from(d)) * 1000 + serial;
    let base = if y >= 2000 {
        2_000_000_000 + nine
    } else {
        nine
    };
    let key = 97 - base % 97;
    let s = format!("{nine:09}{key:02}");
    if rng.random_bool(0.5) {
        s
    } else {
        format!(
            "{}.{}.{}-{}.{}",
            &s[..2],
            &s[2..4],
            &s[4..6],
            &s[6..9],
            &s[9..]
        )
    }
}
