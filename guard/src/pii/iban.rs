//! IBANs: a country code of the IBAN registry, two check digits, and the country's BBAN, bare
//! (`DE89370400440532013000`) or in groups of four separated by single spaces
//! (`DE89 3704 0044 0532 0130 00`); upper case only. The length and the BBAN's layout (which
//! positions are digits, letters, or either) must be the country's, and the ISO 7064 mod-97
//! check must give 1. Candidates are found from runs of digits: the check digits follow two
//! capital letters at the start of a word.
//!
//! Left: values glued to an identifier byte before or after (a longer run), lower-case ones,
//! and codes of countries that do not issue IBANs.

use super::scan;
use crate::kind::Finding;

const RULE: &str = "pii-iban";
const LABEL: &str = "iban";

/// The longest IBAN (Russia's is 33).
const MAX_LEN: usize = 34;

/// The SWIFT IBAN registry (release of December 2024): each country and its BBAN's layout, as
/// counts of `n` (digits), `a` (capital letters) and `c` (either). The IBAN's length is the
/// BBAN's plus 4. Sorted by country code.
const REGISTRY: &[(&str, &str)] = &[
    ("AD", "4n4n12c"),
    ("AE", "3n16n"),
    ("AL", "8n16c"),
    ("AT", "5n11n"),
    ("AZ", "4a20c"),
    ("BA", "3n3n8n2n"),
    ("BE", "3n7n2n"),
    ("BG", "4a4n2n8c"),
    ("BH", "4a14c"),
    ("BI", "5n5n11n2n"),
    ("BR", "8n5n10n1a1c"),
    ("BY", "4c4n16c"),
    ("CH", "5n12c"),
    ("CR", "4n14n"),
    ("CY", "3n5n16c"),
    ("CZ", "4n6n10n"),
    ("DE", "8n10n"),
    ("DJ", "5n5n11n2n"),
    ("DK", "4n9n1n"),
    ("DO", "4c20n"),
    ("EE", "2n14n"),
    ("EG", "4n4n17n"),
    ("ES", "4n4n1n1n10n"),
    ("FI", "3n11n"),
    ("FK", "2a12n"),
    ("FO", "4n9n1n"),
    ("FR", "5n5n11c2n"),
    ("GB", "4a6n8n"),
    ("GE", "2a16n"),
    ("GI", "4a15c"),
    ("GL", "4n9n1n"),
    ("GR", "3n4n16c"),
    ("GT", "4c20c"),
    ("HN", "4a20n"),
    ("HR", "7n10n"),
    ("HU", "3n4n1n15n1n"),
    ("IE", "4a6n8n"),
    ("IL", "3n3n13n"),
    ("IQ", "4a3n12n"),
    ("IS", "4n2n6n10n"),
    ("IT", "1a5n5n12c"),
    ("JO", "4a4n18c"),
    ("KW", "4a22c"),
    ("KZ", "3n13c"),
    ("LB", "4n20c"),
    ("LC", "4a24c"),
    ("LI", "5n12c"),
    ("LT", "5n11n"),
    ("LU", "3n13c"),
    ("LV", "4a13c"),
    ("LY", "3n3n15n"),
    ("MC", "5n5n11c2n"),
    ("MD", "2c18c"),
    ("ME", "3n13n2n"),
    ("MK", "3n10c2n"),
    ("MN", "4n12n"),
    ("MR", "5n5n11n2n"),
    ("MT", "4a5n18c"),
    ("MU", "4a2n2n12n3n3a"),
    ("NI", "4a20n"),
    ("NL", "4a10n"),
    ("NO", "4n6n1n"),
    ("OM", "3n16c"),
    ("PK", "4a16c"),
    ("PL", "8n16n"),
    ("PS", "4a21c"),
    ("PT", "4n4n11n2n"),
    ("QA", "4a21c"),
    ("RO", "4a16c"),
    ("RS", "3n13n2n"),
    ("RU", "9n5n15c"),
    ("SA", "2n18c"),
    ("SC", "4a2n2n16n3a"),
    ("SD", "2n12n"),
    ("SE", "3n16n1n"),
    ("SI", "5n8n2n"),
    ("SK", "4n6n10n"),
    ("SM", "1a5n5n12c"),
    ("SO", "4n3n12n"),
    ("ST", "4n4n11n2n"),
    ("SV", "4a20n"),
    ("TL", "3n14n2n"),
    ("TN", "2n3n13n2n"),
    ("TR", "5n1n16c"),
    ("UA", "6n19c"),
    ("VA", "3n15n"),
    ("VG", "4a16n"),
    ("XK", "4n10n2n"),
    ("YE", "4a4n18c"),
];

/// Pushes every IBAN of `text`.
pub(super) fn find(text: &str, runs: &[(usize, usize)], out: &mut Vec<Finding>) {
    let b = text.as_bytes();
    let mut resume = 0;
    for (digits, _) in runs.iter().copied() {
        let Some(start) = digits.checked_sub(2) else {
            continue;
        };
        if start < resume || !starts_word(b, start) {
            continue;
        }
        if let Some(end) = iban_at(b, start) {
            scan::push(out, start, end, LABEL, RULE);
            resume = end;
        }
    }
}

/// Two capital letters at the start of a word.
fn starts_word(b: &[u8], start: usize) -> bool {
    let caps = b
        .get(start..start + 2)
        .is_some_and(|cc| cc.iter().all(u8::is_ascii_uppercase));
    caps && !scan::before(b, start).is_some_and(scan::is_word)
}

/// The BBAN layout of a country code.
fn layout(country: &[u8]) -> Option<&'static str> {
    REGISTRY
        .binary_search_by(|(cc, _)| cc.as_bytes().cmp(country))
        .ok()
        .and_then(|i| REGISTRY.get(i))
        .map(|(_, l)| *l)
}

/// The fields of a layout: `(count, class)`.
fn fields(layout: &str) -> impl Iterator<Item = (usize, u8)> + '_ {
    layout
        .split_inclusive(|c: char| c.is_ascii_alphabetic())
        .filter_map(|f| {
            let (count, class) = f.split_at(f.len().checked_sub(1)?);
            Some((count.parse().ok()?, *class.as_bytes().first()?))
        })
}

/// The end of the IBAN starting at `start`, if one does.
fn iban_at(b: &[u8], start: usize) -> Option<usize> {
    let cc = b.get(start..start + 2)?;
    let layout = layout(cc)?;
    let len = 4 + fields(layout).map(|(n, _)| n).sum::<usize>();
    let grouped = scan::at(b, start + 4) == Some(b' ');
    let mut chars = [0u8; MAX_LEN];
    let mut i = start;
    for (n, slot) in chars.iter_mut().enumerate().take(len) {
        if grouped && n > 0 && n % 4 == 0 {
            if scan::at(b, i) != Some(b' ') {
                return None;
            }
            i += 1;
        }
        let c = scan::at(b, i).filter(|c| c.is_ascii_uppercase() || c.is_ascii_digit())?;
        *slot = c;
        i += 1;
    }
    let chars = chars.get(..len)?;
    let ok = !scan::at(b, i).is_some_and(scan::is_word)
        && follows(chars.get(4..)?, layout)
        && check_digits(chars);
    ok.then_some(i)
}

/// Whether the BBAN `bban` follows `layout`.
fn follows(bban: &[u8], layout: &str) -> bool {
    let mut rest = bban;
    for (n, class) in fields(layout) {
        let Some((field, tail)) = rest.split_at_checked(n) else {
            return false;
        };
        let ok = match class {
            b'n' => field.iter().all(u8::is_ascii_digit),
            b'a' => field.iter().all(u8::is_ascii_uppercase),
            _ => true,
        };
        if !ok {
            return false;
        }
        rest = tail;
    }
    rest.is_empty()
}

/// ISO 7064 MOD 97-10 over the BBAN then the first four characters, letters as 10-35.
fn check_digits(iban: &[u8]) -> bool {
    let (head, bban) = iban.split_at(4.min(iban.len()));
    let in_range = head
        .get(2..4)
        .is_some_and(|d| !matches!(d, b"00" | b"01" | b"99"));
    let rem = bban.iter().chain(head).fold(0u32, |r, &c| {
        if c.is_ascii_digit() {
            (r * 10 + u32::from(c - b'0')) % 97
        } else {
            (r * 100 + u32::from(c - b'A') + 10) % 97
        }
    });
    in_range && rem == 1
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pii::expect::{self, Find};

    const FIND: Find = Find::Runs(super::find);

    #[test]
    fn registry_is_sorted_and_complete() {
        assert!(REGISTRY.windows(2).all(|w| w[0].0 < w[1].0));
        assert_eq!(REGISTRY.len(), 89);
        let len = |cc: &str| {
            4 + fields(layout(cc.as_bytes()).unwrap_or(""))
                .map(|f| f.0)
                .sum::<usize>()
        };
        assert_eq!(
            (len("DE"), len("GB"), len("NO"), len("RU"), len("LC")),
            (22, 22, 15, 33, 32)
        );
    }

    #[test]
    fn finds_registry_examples() {
        let ibans = [
            "DE89370400440532013000",
            "DE89 3704 0044 0532 0130 00",
            "GB29NWBK60161331926819",
            "GB29 NWBK 6016 1331 9268 19",
            "FR1420041010050500013M02606",
            "NL91ABNA0417164300",
            "BE68539007547034",
            "NO9386011117947",
            "CH9300762011623852957",
            "BR9700360305000010009795493P1",
            "MU17BOMM0101101030300200000MUR",
            "ES9121000418450200051332",
        ];
        expect::each(FIND, &ibans, |iban| format!("iban: \"{iban}\","));
        expect::first(FIND, "to DE89370400440532013000.", (3, 25), "PII_IBAN");
    }

    #[test]
    fn leaves_near_misses() {
        let texts = [
            "DE88370400440532013000",
            "DE8937040044053201300",
            "DE893704004405320130001",
            "XDE89370400440532013000 DE89370400440532013000X",
            "de89370400440532013000",
            "DE89 3704 0044 0532 0130 00X",
            "DE89 37040044 0532 0130 00",
            "US64SVBKUS6S3300958879",
            "NL91ABNA041716430A",
            "GB29NWBK6016133192681",
        ];
        expect::none(FIND, &texts);
    }
}
