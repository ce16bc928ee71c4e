//! National identity numbers whose scheme has a check digit (and the US SSN, in its dashed
//! form only), one label per scheme (`national-id-br-cpf`, ...).
//!
//! Each scheme is written in one or more shapes (`ddd.ddd.ddd-dd`: `d` a digit, other bytes
//! literal; see [`fits`] for the classes). Candidates start at a run of digits that is not glued
//! to an identifier byte, `.`, `-` or `+` before it, nor after a number and a space, and must
//! not run on after (an identifier byte, or a separator or space and a digit: a list of
//! numbers). A shape whose value is a plain run of digits that ordinary numbers often are
//! (BSN's 9, Aadhaar's 12, every 11-digit scheme) is taken only after one of the scheme's
//! keywords (`bsn`, `aadhaar`, `pesel`, ...) on the same line, at most 40 bytes before it;
//! separated shapes are taken alone. A value valid in two schemes (a Swedish `YYMMDD-NNNC`
//! that is also a Finnish `DDMMYY-NNNQ`) is reported once, under the first of the table.
//!
//! | label | shapes alone | shapes after a keyword |
//! |---|---|---|
//! | `br-cpf` | `123.456.789-09` | 11 digits (`cpf`) |
//! | `nl-bsn` | | 9 digits, `1234.56.782` (`bsn`, `burgerservicenummer`, `sofinummer`) |
//! | `es-dni` | `12345678Z`, `12345678-Z`, NIE `X1234567L` | |
//! | `fr-nir` | `1 85 05 78 006 084 91` (Corsica `2A`/`2B`) | 15 characters (`nir`, `insee`, `secu`, `sociale`) |
//! | `cn-ric` | 17 digits and a digit or `X` (with a valid birth date) | |
//! | `in-aadhaar` | `2345 6789 0124`, `2345-6789-0124` | 12 digits (`aadhaar`, `aadhar`, `uidai`) |
//! | `se-pnr` | `811218-9876`, `811218+9876` | 10 or 12 digits, `19811218-9876` (`personnummer`, `personnr`, `pnr`) |
//! | `pl-pesel` | | 11 digits (`pesel`) |
//! | `it-cf` | `RSSMRA85T10A562S` (omocodic ones when a digit run still starts the year, day or place) | |
//! | `de-idnr` | `86 095 742 719` | 11 digits (`steuer`, `idnr`, `identifikationsnummer`) |
//! | `ca-sin` | `123 456 782`, `123-456-782` | |
//! | `us-ssn` | `536-90-4399`, not areas 000, 666, 9xx, group 00, serial 0000, nor published examples | |
//! | `fi-hetu` | `131052-308T` (every century sign) | |
//! | `no-fnr` | `DDMMYY IIIKK` (`010107 50160`) | 11 digits (`fnr`, `fodselsnummer`, `fødselsnummer`, `personnummer`) |
//! | `be-nrn` | `85.07.30-033.28` | 11 digits (`rijksregister`, `registre national`, `nrn`, `insz`, `niss`, `national number`) |

mod checks;

use super::scan;
use crate::kind::Finding;

const RULE: &str = "pii-national-id";

/// A way a scheme's values are written.
struct Shape {
    pattern: &'static [u8],
    /// Taken only after one of the scheme's keywords.
    keyed: bool,
    /// The pattern's leading `d`s, and whether the run of digits must be exactly that long.
    lead: usize,
    exact: bool,
}

const fn shape(pattern: &'static [u8], keyed: bool) -> Shape {
    let mut lead = 0;
    while lead < pattern.len() && pattern[lead] == b'd' {
        lead += 1;
    }
    let exact = lead == pattern.len() || !matches!(pattern[lead], b'x' | b'c' | b'q');
    Shape {
        pattern,
        keyed,
        lead,
        exact,
    }
}

/// A national scheme: its label, shapes, keywords and check.
struct Scheme {
    label: &'static str,
    shapes: &'static [Shape],
    keywords: &'static [&'static str],
    /// The scheme's own validation of a matched value (separators included).
    check: fn(&[u8]) -> bool,
}

const SCHEMES: &[Scheme] = &[
    Scheme {
        label: "national-id-br-cpf",
        shapes: &[shape(b"ddd.ddd.ddd-dd", false), shape(b"ddddddddddd", true)],
        keywords: &["cpf"],
        check: checks::cpf,
    },
    Scheme {
        label: "national-id-nl-bsn",
        shapes: &[shape(b"ddddddddd", true), shape(b"dddd.dd.ddd", true)],
        keywords: &["bsn", "burgerservicenummer", "sofinummer"],
        check: checks::bsn,
    },
    Scheme {
        label: "national-id-es-dni",
        shapes: &[shape(b"ddddddddA", false), shape(b"dddddddd-A", false)],
        keywords: &[],
        check: checks::dni,
    },
    Scheme {
        label: "national-id-fr-nir",
        shapes: &[
            shape(b"d dd dd dc ddd ddd dd", false),
            shape(b"ddddddcdddddddd", true),
        ],
        keywords: &["nir", "insee", "secu", "sociale"],
        check: checks::nir,
    },
    Scheme {
        label: "national-id-cn-ric",
        shapes: &[shape(b"dddddddddddddddddx", false)],
        keywords: &[],
        check: checks::cn_ric,
    },
    Scheme {
        label: "national-id-in-aadhaar",
        shapes: &[
            shape(b"dddd dddd dddd", false),
            shape(b"dddd-dddd-dddd", false),
            shape(b"dddddddddddd", true),
        ],
        keywords: &["aadhaar", "aadhar", "uidai"],
        check: checks::aadhaar,
    },
    Scheme {
        label: "national-id-fi-hetu",
        shapes: &[shape(b"ddddddsdddq", false)],
        keywords: &[],
        check: checks::hetu,
    },
    Scheme {
        label: "national-id-se-pnr",
        shapes: &[
            shape(b"dddddd-dddd", false),
            shape(b"dddddd+dddd", false),
            shape(b"dddddddd-dddd", true),
            shape(b"dddddddddd", true),
            shape(b"dddddddddddd", true),
        ],
        keywords: &["personnummer", "personnr", "pnr"],
        check: checks::se_pnr,
    },
    Scheme {
        label: "national-id-pl-pesel",
        shapes: &[shape(b"ddddddddddd", true)],
        keywords: &["pesel"],
        check: checks::pesel,
    },
    Scheme {
        label: "national-id-de-idnr",
        shapes: &[shape(b"dd ddd ddd ddd", false), shape(b"ddddddddddd", true)],
        keywords: &["steuer", "idnr", "identifikationsnummer"],
        check: checks::de_idnr,
    },
    Scheme {
        label: "national-id-ca-sin",
        shapes: &[shape(b"ddd ddd ddd", false), shape(b"ddd-ddd-ddd", false)],
        keywords: &[],
        check: checks::ca_sin,
    },
    Scheme {
        label: "national-id-us-ssn",
        shapes: &[shape(b"ddd-dd-dddd", false)],
        keywords: &[],
        check: checks::us_ssn,
    },
    Scheme {
        label: "national-id-no-fnr",
        shapes: &[shape(b"dddddd ddddd", false), shape(b"ddddddddddd", true)],
        keywords: &[
            "fnr",
            "fodselsnummer",
            "f\u{f8}dselsnummer",
            "fodselsnr",
            "personnummer",
        ],
        check: checks::no_fnr,
    },
    Scheme {
        label: "national-id-be-nrn",
        shapes: &[
            shape(b"dd.dd.dd-ddd.dd", false),
            shape(b"ddddddddddd", true),
        ],
        keywords: &[
            "rijksregister",
            "registre national",
            "registre_national",
            "nrn",
            "insz",
            "niss",
            "national number",
            "national_number",
        ],
        check: checks::be_nrn,
    },
];

/// Shapes that start with fewer digits than this continue with a separator and a digit.
const SHORT_LEAD: usize = 6;

const DNI_LABEL: &str = "national-id-es-dni";
const CF_LABEL: &str = "national-id-it-cf";

/// Every label this detector reports.
#[cfg(test)]
pub(super) fn labels() -> Vec<&'static str> {
    let mut v: Vec<_> = SCHEMES.iter().map(|s| s.label).collect();
    v.push(CF_LABEL);
    v
}

/// Pushes every national identity number of `text`.
pub(super) fn find(text: &str, runs: &[(usize, usize)], out: &mut Vec<Finding>) {
    let b = text.as_bytes();
    let mut resume = 0;
    for (start, end) in runs.iter().copied() {
        if start < resume {
            continue;
        }
        if let Some((s, e, label)) = value_at(b, start, end - start) {
            scan::push(out, s, e, label, RULE);
            resume = e;
        }
    }
}

/// The value whose first digit run is `start..start + run`, as `start..end` and label.
fn value_at(b: &[u8], start: usize, run: usize) -> Option<(usize, usize, &'static str)> {
    if let Some(found) = letter_led(b, start, run) {
        return Some(found);
    }
    // Every shape whose first group is shorter than 6 digits goes on with a space, dot or dash
    // and a digit (a test checks it): most runs of digits in code stop here.
    let separated = matches!(scan::at(b, start + run), Some(b' ' | b'.' | b'-'))
        && scan::digit_at(b, start + run + 1);
    if (run < SHORT_LEAD && !separated) || !starts_clean(b, start) {
        return None;
    }
    for scheme in SCHEMES {
        for shape in scheme.shapes {
            let fits_run = if shape.exact {
                run == shape.lead
            } else {
                run >= shape.lead
            };
            if !fits_run {
                continue;
            }
            let Some(end) = fits(b, start, shape.pattern) else {
                continue;
            };
            let value = b.get(start..end)?;
            let ok = scan::ends_clean(b, end, b".-+/ ")
                && (scheme.check)(value)
                && (!shape.keyed || scan::keyword_before(b, start, scheme.keywords));
            if ok {
                return Some((start, end, scheme.label));
            }
        }
    }
    None
}

/// Not glued to an identifier byte, nor to a dot, dash or plus (a longer number, a phone), nor
/// after a number and a space (a list of numbers: `224 256 384 512 768`, `094D 3099 1039`).
fn starts_clean(b: &[u8], start: usize) -> bool {
    let glued = scan::before(b, start).is_some_and(|c| scan::is_word(c) || b".-+".contains(&c));
    !glued && !listed(b, start)
}

/// Whether a space and a word holding a digit stand just before `start` (`147 `, `094D `, an
/// SVG path's `q147 `).
fn listed(b: &[u8], start: usize) -> bool {
    if scan::before(b, start) != Some(b' ') {
        return false;
    }
    let head = b.get(..start - 1).unwrap_or_default();
    head.iter()
        .rev()
        .take(16)
        .take_while(|c| scan::is_word(**c))
        .any(u8::is_ascii_digit)
}

/// The end of `pattern` matched from `i`: `d` a digit, `A` a capital letter, `x` a digit or
/// `X`/`x` (Chinese check), `c` a digit or `A`/`B` (Corsica's departments `2A`, `2B`), `s` a
/// Finnish century sign, `q` a digit or capital letter; any other byte itself.
fn fits(b: &[u8], i: usize, pattern: &[u8]) -> Option<usize> {
    let text = b.get(i..i + pattern.len())?;
    let ok = pattern.iter().zip(text).all(|(&p, &c)| match p {
        b'd' => c.is_ascii_digit(),
        b'A' => c.is_ascii_uppercase(),
        b'x' => c.is_ascii_digit() || c == b'X' || c == b'x',
        b'c' => c.is_ascii_digit() || c == b'A' || c == b'B',
        b's' => b"+-ABCDEFUVWXY".contains(&c),
        b'q' => c.is_ascii_digit() || c.is_ascii_uppercase(),
        _ => c == p,
    });
    ok.then_some(i + pattern.len())
}

/// Values that start with capital letters before the digit run at `start`: a Spanish NIE
/// (`X1234567L`) or an Italian codice fiscale, whose first digits come after 6 letters (9 or
/// 12 when omocodia replaced the year's or the day's digits with letters).
fn letter_led(b: &[u8], start: usize, run: usize) -> Option<(usize, usize, &'static str)> {
    let before = scan::before(b, start)?;
    if !before.is_ascii_uppercase() {
        return None;
    }
    if run == 7 && b"XYZ".contains(&before) {
        let s = start - 1;
        let clean = !scan::before(b, s).is_some_and(scan::is_word);
        let end = fits(b, start + 7, b"A").or_else(|| fits(b, start + 7, b"-A"));
        if let Some(e) = end.filter(|&e| clean && scan::ends_clean(b, e, b".-+/")) {
            if checks::dni(b.get(s..e)?) {
                return Some((s, e, DNI_LABEL));
            }
        }
    }
    [6, 9, 12].into_iter().find_map(|back| {
        let s = start.checked_sub(back)?;
        let e = s + 16;
        let value = b.get(s..e)?;
        let clean = !scan::before(b, s).is_some_and(scan::is_word)
            && !scan::at(b, e).is_some_and(scan::is_word);
        (clean && checks::codice_fiscale(value)).then_some((s, e, CF_LABEL))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pii::expect::{self, Find};

    const FIND: Find = Find::Runs(super::find);

    fn found(text: &str) -> Vec<(&str, &'static str)> {
        let labels = labels();
        FIND.findings(text)
            .iter()
            .map(|f| {
                let label = labels
                    .iter()
                    .find(|l| crate::kind::Kind::pii(l) == f.kind)
                    .copied()
                    .unwrap_or("?");
                (&text[f.start..f.end], label)
            })
            .collect()
    }

    fn one(text: &str, value: &str, label: &str) {
        let got = found(text);
        assert_eq!(got, [(value, label)], "{text}");
    }

    #[test]
    fn finds_separated_shapes_alone() {
        let cases = [
            ("111.444.777-35", "br-cpf"),
            ("12345678Z", "es-dni"),
            ("12345678-Z", "es-dni"),
            ("X1234567L", "es-dni"),
            ("2 55 08 2B 000 001 47", "fr-nir"),
            ("1 85 05 78 006 084 91", "fr-nir"),
            ("11010519491231002X", "cn-ric"),
            ("2345 6789 0124", "in-aadhaar"),
            ("811218-9876", "se-pnr"),
            ("RSSMRA85T10A562S", "it-cf"),
            ("86 095 742 719", "de-idnr"),
            ("123 456 782", "ca-sin"),
            ("123-456-782", "ca-sin"),
            ("536-90-4399", "us-ssn"),
            ("131052-308T", "fi-hetu"),
            ("010594Y9032", "fi-hetu"),
            ("85.07.30-033.28", "be-nrn"),
            ("010107 50160", "no-fnr"),
        ];
        for (value, label) in cases {
            let label = format!("national-id-{label}");
            one(&format!("id: \"{value}\","), value, &label);
        }
    }

    #[test]
    fn keyed_shapes_need_their_keyword() {
        let cases = [
            ("cpf", "11144477735", "br-cpf"),
            ("BSN", "111222333", "nl-bsn"),
            ("bsn", "1112.22.333", "nl-bsn"),
            ("numero_insee", "185057800608491", "fr-nir"),
            ("aadhaar", "234567890124", "in-aadhaar"),
            ("personnummer", "198112189876", "se-pnr"),
            ("personnummer", "19811218-9876", "se-pnr"),
            ("pesel", "44051401359", "pl-pesel"),
            ("steuer_id", "86095742719", "de-idnr"),
            ("fodselsnummer", "01010750160", "no-fnr"),
            ("rijksregisternummer", "85073003328", "be-nrn"),
        ];
        for (key, value, label) in cases {
            let label = format!("national-id-{label}");
            one(&format!("{key} = \"{value}\""), value, &label);
            assert!(
                found(&format!("id = \"{value}\"")).is_empty(),
                "{value} alone"
            );
        }
    }

    #[test]
    fn short_leads_continue_with_a_separator_and_a_digit() {
        for scheme in SCHEMES {
            for shape in scheme.shapes.iter().filter(|s| s.lead < SHORT_LEAD) {
                let p = shape.pattern;
                assert!(shape.exact, "{}", scheme.label);
                assert!(b" .-".contains(&p[shape.lead]), "{}", scheme.label);
                assert_eq!(p.get(shape.lead + 1), Some(&b'd'), "{}", scheme.label);
            }
        }
    }

    #[test]
    fn positions_are_exact() {
        let f = expect::first(FIND, "ssn=536-90-4399;", (4, 15), "PII_NATIONAL_ID_US_SSN");
        assert_eq!(f.rule, "pii-national-id");
    }

    #[test]
    fn leaves_near_misses() {
        let texts = [
            "111.444.777-36 111.111.111-11",
            "12345678A X1234567A",
            "11010519491231002Y 11010519491331002X",
            "2345 6789 0123 1345 6789 0124",
            "811218-9875 811318-9876",
            "RSSMRA85T10A562T RSSMRA85T10A562SX",
            "86 095 742 718",
            "123 456 783 046 454 286 255 255 255",
            "000-12-3456 666-12-3456 900-12-3456 536-00-4399 536-90-0000 123-45-6789",
            "131052-308U",
            "85.07.30-033.29",
            "a536-90-4399 536-90-4399-1 1.536-90-4399",
            "2026-11-26 12:30:45 1234567890 0000-0000",
            "160 192 200 224 256 384 512 768 1024",
            "0061 05B0 094D 3099 1039 0062;0061",
            "q147 129 336 129 q137",
            "1 123 456 782 and 123 456 782 1",
        ];
        expect::none(FIND, &texts);
    }
}
