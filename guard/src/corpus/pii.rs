//! Planted personal data: for every label the personal-data detectors report, values that are
//! valid (check digits right), realistic in format and varied (with and without separators,
//! several countries), and never a real person's: digits are random, e-mail addresses are
//! made-up words under real TLDs, IP addresses are random public ones.
//!
//! The generators are written from the published formats (numbering plans, the IBAN registry,
//! each national scheme's check), not from the detectors, so that testing one against the other
//! means something. Names that a scheme's keyword must precede (`bsn`, `aadhaar`, `pesel`, ...)
//! hold that keyword. Numbers that look like filler (five equal digits in a row) are not made:
//! real numbering plans avoid them and a detector may reasonably leave them.

use rand::seq::IndexedRandom;
use rand::{Rng, RngCore};

mod national;

use national::{
    aadhaar, be_nrn, bsn, ca_sin, cn_ric, codice_fiscale, cpf, de_idnr, dni, hetu, nir, no_fnr,
    pesel, se_pnr, us_ssn,
};

use super::{chars, Planted, DIGITS, UPPER};
use crate::kind::Kind;
use crate::pii::luhn;

/// A kind planted here: its label (`PII_<LABEL>`, one per detector output), the names a program
/// would give its values, and their generator.
type Row<R> = (&'static str, &'static [&'static str], fn(&mut R) -> String);

/// Every kind planted here, in the order planted.
#[rustfmt::skip]
fn kinds<R: Rng + ?Sized>() -> Vec<Row<R>> {
    vec![
        ("email", &["email", "customer_email", "contact_email", "user_email"], email),
        ("phone", &["phone", "customer_phone", "mobile", "phone_number"], phone),
        ("ipv4", &["ip", "client_ip", "remote_addr", "server_ip"], ipv4),
        ("ipv6", &["ipv6", "client_ipv6", "peer_address"], ipv6),
        ("credit-card", &["card_number", "credit_card", "cc_number", "pan"], card),
        ("iban", &["iban", "customer_iban", "payout_iban"], iban),
        ("national-id-br-cpf", &["cpf", "customer_cpf"], cpf),
        ("national-id-nl-bsn", &["bsn", "burgerservicenummer"], bsn),
        ("national-id-es-dni", &["dni", "nie", "documento"], dni),
        ("national-id-fr-nir", &["nir", "numero_insee"], nir),
        ("national-id-cn-ric", &["resident_id", "id_card"], cn_ric),
        ("national-id-in-aadhaar", &["aadhaar", "aadhaar_number"], aadhaar),
        ("national-id-se-pnr", &["personnummer"], se_pnr),
        ("national-id-pl-pesel", &["pesel", "numer_pesel"], pesel),
        ("national-id-it-cf", &["codice_fiscale", "cf"], codice_fiscale),
        ("national-id-de-idnr", &["steuer_id", "steuerid"], de_idnr),
        ("national-id-ca-sin", &["sin", "social_insurance_number"], ca_sin),
        ("national-id-us-ssn", &["ssn", "social_security_number"], us_ssn),
        ("national-id-fi-hetu", &["hetu", "henkilotunnus"], hetu),
        ("national-id-no-fnr", &["fodselsnummer", "fnr"], no_fnr),
        ("national-id-be-nrn", &["rijksregisternummer", "insz"], be_nrn),
    ]
}

/// The labels the personal-data detectors produce (`Kind::pii(label)`).
pub fn labels() -> Vec<&'static str> {
    // Any `Rng` serves: only the labels are read.
    kinds::<dyn RngCore>()
        .into_iter()
        .map(|(label, ..)| label)
        .collect()
}

/// `per_kind` values of every label, each under a name a program would give it.
pub fn planted<R: Rng + ?Sized>(rng: &mut R, per_kind: usize) -> Vec<Planted> {
    let kinds = kinds::<R>();
    let mut out = Vec::with_capacity(kinds.len() * per_kind);
    for (label, names, generate) in kinds {
        for _ in 0..per_kind {
            // A single name needs no draw; drawing one would shift every value after it.
            let name = match names {
                [only] => only,
                _ => names.choose(rng).copied().unwrap_or("value"),
            };
            out.push(Planted {
                kind: Kind::pii(label).to_string(),
                value: generate(rng),
                name: name.to_string(),
                raw: false,
            });
        }
    }
    out
}

// ---- Small helpers -------------------------------------------------------------------------

/// `n` random decimal digits as numbers 0-9.
fn digit_vec<R: Rng + ?Sized>(rng: &mut R, n: usize) -> Vec<u8> {
    (0..n).map(|_| rng.random_range(0..10u8)).collect()
}

fn text(d: &[u8]) -> String {
    d.iter().map(|&x| char::from(b'0' + x)).collect()
}

/// A zero-padded decimal number of `width` digits.
fn padded(n: u32, width: usize) -> String {
    format!("{n:0width$}")
}

/// Five equal digits in a row: filler, not made.
fn has_filler(s: &str) -> bool {
    let d: Vec<u8> = s.bytes().filter(u8::is_ascii_digit).collect();
    d.windows(5).any(|w| w.iter().all(|&x| x == w[0]))
}

/// A pronounceable made-up word of 2-4 syllables.
fn word<R: Rng + ?Sized>(rng: &mut R) -> String {
    const ONSETS: &[&str] = &[
        "b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br", "tr", "st",
    ];
    const VOWELS: &[&str] = &["a", "e", "i", "o", "u", "ai", "ou"];
    let n = rng.random_range(2..=4);
    let mut w = String::new();
    for _ in 0..n {
        w.push_str(ONSETS.choose(rng).copied().unwrap_or("b"));
        w.push_str(VOWELS.choose(rng).copied().unwrap_or("a"));
    }
    w
}

/// A random date (year, month, day) between `from` and `to` years, days valid in every month.
fn date<R: Rng + ?Sized>(rng: &mut R, from: u32, to: u32) -> (u32, u32, u32) {
    (
        rng.random_range(from..=to),
        rng.random_range(1..=12),
        rng.random_range(1..=28),
    )
}

// ---- Contact data --------------------------------------------------------------------------

fn email<R: Rng + ?Sized>(rng: &mut R) -> String {
    const TLDS: &[&str] = &[
        "com", "org", "net", "io", "dev", "de", "fr", "nl", "es", "it", "ch", "co.uk", "com.br",
        "se", "pl", "app",
    ];
    let (a, b) = (word(rng), word(rng));
    let local = match rng.random_range(0..5) {
        0 => format!("{a}.{b}"),
        1 => format!("{a}{}", rng.random_range(1..100)),
        2 => format!("{a}_{b}"),
        3 => format!("{a}+{b}"),
        _ => format!("{}{b}", &a[..1]),
    };
    let tld = TLDS.choose(rng).copied().unwrap_or("com");
    let host = match rng.random_range(0..3) {
        0 => word(rng),
        1 => format!("{}-{}", word(rng), word(rng)),
        _ => format!("mail.{}", word(rng)),
    };
    format!("{local}@{host}.{tld}")
}

/// A telephone number of one of several countries, in that country's usual print forms.
fn phone<R: Rng + ?Sized>(rng: &mut R) -> String {
    loop {
        let n = phone_once(rng);
        if !has_filler(&n) {
            return n;
        }
    }
}

fn phone_once<R: Rng + ?Sized>(rng: &mut R) -> String {
    let d = |rng: &mut R, n: usize| text(&digit_vec(rng, n));
    match rng.random_range(0..12) {
        0..=3 => north_american(rng),
        4 => format!("+44 20 {} {}", d(rng, 4), d(rng, 4)),
        5 => format!("+44 7{} {}", d(rng, 3), d(rng, 6)),
        6 => {
            let p: Vec<String> = (0..4).map(|_| d(rng, 2)).collect();
            format!("+33 {} {}", rng.random_range(1..=9), p.join(" "))
        }
        7 => format!(
            "+49 {} {}",
            ["30", "89", "40", "221"]
                .choose(rng)
                .copied()
                .unwrap_or("30"),
            d(rng, 7)
        ),
        8 => format!("+55 11 9{}-{}", d(rng, 4), d(rng, 4)),
        9 => format!("+91 {}{} {}", rng.random_range(6..=9), d(rng, 4), d(rng, 5)),
        10 => format!(
            "+81 {}-{}-{}",
            ["3", "6", "90"].choose(rng).copied().unwrap_or("3"),
            d(rng, 4),
            d(rng, 4)
        ),
        _ => format!("+61 2 {} {}", d(rng, 4), d(rng, 4)),
    }
}

/// A NANP number: area code and exchange start with 2-9 and are not N11.
fn north_american<R: Rng + ?Sized>(rng: &mut R) -> String {
    let nxx = |rng: &mut R| loop {
        let v = rng.random_range(200..1000u32);
        if v % 100 != 11 {
            return v;
        }
    };
    let (a, e, l) = (nxx(rng), nxx(rng), padded(rng.random_range(0..10_000), 4));
    match rng.random_range(0..8) {
        0 => format!("+1 {a} {e} {l}"),
        1 => format!("+1-{a}-{e}-{l}"),
        2 => format!("+1{a}{e}{l}"),
        3 => format!("+1 ({a}) {e}-{l}"),
        4 => format!("({a}) {e}-{l}"),
        5 => format!("{a}-{e}-{l}"),
        6 => format!("{a}.{e}.{l}"),
        _ => format!("1-{a}-{e}-{l}"),
    }
}

/// A public IPv4 address: first octet 11-223, none of the private, shared, link-local or
/// benchmarking ranges.
fn ipv4<R: Rng + ?Sized>(rng: &mut R) -> String {
    loop {
        let a = rng.random_range(11..=223u8);
        if [100, 127, 169, 172, 192, 198].contains(&a) {
            continue;
        }
        let (b, c, d) = (
            rng.random::<u8>(),
            rng.random::<u8>(),
            rng.random_range(1..=254u8),
        );
        return format!("{a}.{b}.{c}.{d}");
    }
}

/// A global unicast IPv6 address (2000::/3), written in full, compressed, or IPv4-mapped.
fn ipv6<R: Rng + ?Sized>(rng: &mut R) -> String {
    let mut g: [u16; 8] = std::array::from_fn(|_| rng.random());
    g[0] = rng.random_range(0x2000..=0x3fff);
    match rng.random_range(0..4) {
        0 => g
            .iter()
            .map(|x| format!("{x:x}"))
            .collect::<Vec<_>>()
            .join(":"),
        1 => g
            .iter()
            .map(|x| format!("{x:04X}"))
            .collect::<Vec<_>>()
            .join(":"),
        2 => {
            // A run of zero groups in the middle, written `::`.
            let at = rng.random_range(2..=5);
            let len = rng.random_range(2..=8 - at - 1);
            for x in &mut g[at..at + len] {
                *x = 0;
            }
            std::net::Ipv6Addr::from(g).to_string()
        }
        _ => format!("::ffff:{}", ipv4(rng)),
    }
}

// ---- Payment data --------------------------------------------------------------------------

/// A card number of a known network: its prefix and length, a Luhn check digit, printed bare or
/// in the network's groups (only grouped when 19 digits long).
fn card<R: Rng + ?Sized>(rng: &mut R) -> String {
    let (prefix, len, groups): (String, usize, &[usize]) = match rng.random_range(0..9) {
        0 | 1 => ("4".into(), 16, &[4, 4, 4, 4]),
        2 => (rng.random_range(51..=55u32).to_string(), 16, &[4, 4, 4, 4]),
        3 => (
            rng.random_range(2221..=2720u32).to_string(),
            16,
            &[4, 4, 4, 4],
        ),
        4 => (
            ["34", "37"].choose(rng).copied().unwrap_or("37").into(),
            15,
            &[4, 6, 5],
        ),
        5 => (
            ["6011", "65", "644"]
                .choose(rng)
                .copied()
                .unwrap_or("65")
                .into(),
            16,
            &[4, 4, 4, 4],
        ),
        6 => (
            rng.random_range(3528..=3589u32).to_string(),
            16,
            &[4, 4, 4, 4],
        ),
        7 => ("36".into(), 14, &[4, 6, 4]),
        _ => ("62".into(), 19, &[4, 4, 4, 4, 3]),
    };
    let mut d: Vec<u8> = prefix.bytes().map(|c| c - b'0').collect();
    d.extend(digit_vec(rng, len - 1 - d.len()));
    d.push(luhn::check_digit(&d));
    let number = text(&d);
    let sep = match rng.random_range(0..3) {
        0 if len < 19 => return number,
        1 => "-",
        _ => " ",
    };
    let mut parts = Vec::new();
    let mut at = 0;
    for &g in groups {
        parts.push(&number[at..at + g]);
        at += g;
    }
    parts.join(sep)
}

/// An IBAN of one of several countries: the BBAN in the registry's layout (`n` digits, `a`
/// capitals, `c` either), ISO 7064 mod-97 check digits, bare or in groups of four.
fn iban<R: Rng + ?Sized>(rng: &mut R) -> String {
    const LAYOUTS: &[(&str, &str)] = &[
        ("DE", "8n10n"),
        ("GB", "4a6n8n"),
        ("FR", "5n5n11c2n"),
        ("NL", "4a10n"),
        ("ES", "4n4n2n10n"),
        ("IT", "1a5n5n12c"),
        ("CH", "5n12c"),
        ("BE", "3n7n2n"),
        ("PL", "8n16n"),
        ("SE", "3n16n1n"),
        ("NO", "4n6n1n"),
        ("AT", "5n11n"),
        ("BR", "8n5n10n1a1c"),
        ("SA", "2n18c"),
        ("PT", "4n4n11n2n"),
        ("IE", "4a6n8n"),
        ("DK", "4n9n1n"),
        ("FI", "3n11n"),
        ("LU", "3n13c"),
    ];
    let (cc, layout) = LAYOUTS.choose(rng).copied().unwrap_or(("DE", "8n10n"));
    let mut bban = String::new();
    let mut count = 0;
    for c in layout.chars() {
        if let Some(d) = c.to_digit(10) {
            count = count * 10 + d as usize;
            continue;
        }
        let alphabet = match c {
            'n' => DIGITS,
            'a' => UPPER,
            _ => "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ",
        };
        bban.push_str(&chars(rng, alphabet, count));
        count = 0;
    }
    let rem = format!("{bban}{cc}00").chars().fold(0u32, |r, c| {
        let v = c.to_digit(36).unwrap_or(0);
        if v < 10 {
            (r * 10 + v) % 97
        } else {
            (r * 100 + v) % 97
        }
    });
    let value = format!("{cc}{:02}{bban}", 98 - rem);
    if rng.random_bool(0.5) {
        return value;
    }
    let groups: Vec<&str> = value
        .as_bytes()
        .chunks(4)
        .filter_map(|g| std::str::from_utf8(g).ok())
        .collect();
    groups.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pii::PiiKind;
    use rand::rngs::StdRng;
    use rand::SeedableRng;

    fn findings(line: &str) -> Vec<crate::kind::Finding> {
        let mut out = Vec::new();
        for kind in PiiKind::ALL {
            kind.find(line, &mut out);
        }
        out
    }

    #[test]
    fn every_label_is_planted_with_its_kind() {
        let mut rng = StdRng::seed_from_u64(7);
        let planted = planted(&mut rng, 3);
        assert_eq!(planted.len(), labels().len() * 3);
        for label in labels() {
            let kind = Kind::pii(label).to_string();
            assert_eq!(
                planted.iter().filter(|p| p.kind == kind).count(),
                3,
                "{label}"
            );
        }
        assert!(planted.iter().all(|p| !p.value.is_empty() && !p.raw));
    }

    /// Recall: every planted value, embedded in a line, is found exactly by the detectors.
    #[test]
    fn detectors_find_every_planted_value() {
        let mut rng = StdRng::seed_from_u64(2026);
        let mut missed = Vec::new();
        for p in planted(&mut rng, 60) {
            let line = super::super::embed(&mut rng, &p);
            let start = line.find(&p.value).unwrap_or(usize::MAX);
            let end = start.saturating_add(p.value.len());
            let found = findings(&line);
            // A value valid in two national schemes (`811218-9876` may be Swedish and Finnish)
            // is reported once, under the first.
            let national = |k: &str| k.starts_with("PII_NATIONAL_ID_");
            let same = |k: String| k == p.kind || (national(&k) && national(&p.kind));
            if !found
                .iter()
                .any(|f| f.start == start && f.end == end && same(f.kind.to_string()))
            {
                missed.push(format!(
                    "{}: {:?} in {line:?}, found {found:?}",
                    p.kind, p.value
                ));
            }
        }
        assert!(
            missed.is_empty(),
            "{} missed:\n{}",
            missed.len(),
            missed.join("\n")
        );
    }

    #[test]
    fn ordinary_code_yields_nothing() {
        let lines = [
            "id = \"3f2b8c1e-9a4d-4e7b-b1c2-5d6e7f8a9b0c\"",
            "commit 9fceb02d0ae598e95dc970b74767f19372d61af8",
            "sha256 = \"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\"",
            "\"integrity\": \"sha512-VCmKUh9T0yK8xvAkbjFtwi9NXFFcIV9yM1B3IbJXvIzl6kLvjbAhhcPFtXoPkh+Qa5b1n21pJHArjFt3bQk2Ag==\"",
            "<img src=\"data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==\">",
            "\"version\": \"1.2.3\", <Version>4.5.6.7</Version>, __version__ = \"10.0.1.2\"",
            "created_at: 2026-11-26T10:00:00Z, at 12:30:45, ts 1732617600 ms 1732617600123",
            "import { x } from '@types/node'; icon@2x.png",
            "use std::io::Result; fn f() -> std::io::Result<()> { Ok(()) }",
            "listen(8080); port: 5432; color: #ff8800; \"\\u00e9\\u00e8\"",
            "const a = 1234567890, b = 0000-0000, c = 3.14159265358979, big = 9007199254740991;",
            "!function(e,t){\"use strict\";var n=e.length>>>0,r=+new Date;for(;n--;)t(e[n],n*86400000)}",
        ];
        for line in lines {
            assert!(findings(line).is_empty(), "{line}: {:?}", findings(line));
        }
    }

    #[test]
    fn generators_pass_the_published_checks() {
        let mut rng = StdRng::seed_from_u64(1);
        for _ in 0..200 {
            let v = cn_ric(&mut rng);
            assert_eq!(v.len(), 18, "{v}");
            let v = codice_fiscale(&mut rng);
            assert_eq!(v.len(), 16, "{v}");
            let v = card(&mut rng);
            let d: Vec<u8> = v
                .bytes()
                .filter(u8::is_ascii_digit)
                .map(|c| c - b'0')
                .collect();
            assert_eq!(luhn::check_digit(&d[..d.len() - 1]), d[d.len() - 1], "{v}");
        }
        // Published examples of two checks.
        assert_eq!(
            luhn::check_digit(&[4, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]),
            1
        );
        let mut rng = StdRng::seed_from_u64(3);
        assert!(iban(&mut rng).starts_with(char::is_alphabetic));
    }
}
