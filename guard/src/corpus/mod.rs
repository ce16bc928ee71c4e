//! Generated corpora (feature `corpus`), for the tests and benchmarks that measure the guard:
//! planted secrets of every bundled rule ([`secrets`]) and personal data of every kind
//! ([`pii`]), valid-looking and never real (random, from a seeded generator), and ordinary code
//! that holds nothing to mask ([`ordinary`]): hashes in tests, UUIDs, base64 images, minified
//! JavaScript, lockfiles; and the near misses around the planted secrets ([`near_miss`]):
//! credentials in each language's assignment syntax, vendor values one character off their
//! format, passwords in connection strings.
//!
//! Each generator takes the caller's random source, so a seed gives the same corpus.

pub mod near_miss;
pub mod ordinary;
pub mod pii;
pub mod secrets;

use rand::seq::IndexedRandom;
use rand::Rng;

/// A value planted in a corpus.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Planted {
    /// The kind the guard must report it as (`SECRET_AWS_ACCESS_KEY_ID`, `PII_EMAIL`); a
    /// value may be caught by a more general rule, which still counts for recall.
    pub kind: String,
    /// The exact value that must not survive masking.
    pub value: String,
    /// The name a program would give it (`AWS_ACCESS_KEY_ID`, `stripe_key`, `email`): the
    /// assignment contexts use it, and a rule may need it (a keyword before the value).
    pub name: String,
    /// The value spans lines or holds quotes (a PEM key, a JSON credential file): it is only
    /// planted as it is, in a file of its own kind, never inside a quoted string.
    pub raw: bool,
}

/// `planted` in one of the contexts code, configuration and logs put values in, as one or
/// more lines; the value appears in it verbatim.
pub fn embed<R: Rng + ?Sized>(rng: &mut R, planted: &Planted) -> String {
    let (n, v) = (planted.name.as_str(), planted.value.as_str());
    if planted.raw {
        return format!("{v}\n");
    }
    let lower = n.to_ascii_lowercase();
    let upper = n.to_ascii_uppercase();
    let templates: [&dyn Fn() -> String; 12] = [
        &|| format!("{upper}={v}\n"),
        &|| format!("export {upper}=\"{v}\"\n"),
        &|| format!("{lower} = \"{v}\"\n"),
        &|| format!("const {lower} = '{v}';\n"),
        &|| format!("    \"{lower}\": \"{v}\",\n"),
        &|| format!("{lower}: {v}\n"),
        &|| format!("let {lower} = \"{v}\"; // {n}\n"),
        &|| format!("os.environ[\"{upper}\"] = \"{v}\"\n"),
        &|| format!("ENV {upper}={v}\n"),
        &|| format!("config.set(\"{lower}\", \"{v}\")\n"),
        &|| format!("<add key=\"{n}\" value=\"{v}\" />\n"),
        &|| format!("2026-11-26T10:00:00Z INFO using {lower}={v} for the request\n"),
    ];
    templates.choose(rng).map_or_else(String::new, |t| t())
}

/// `count` characters drawn from `alphabet`.
pub fn chars<R: Rng + ?Sized>(rng: &mut R, alphabet: &str, count: usize) -> String {
    let alphabet: Vec<char> = alphabet.chars().collect();
    (0..count)
        .filter_map(|_| alphabet.choose(rng).copied())
        .collect()
}

pub const UPPER: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
pub const LOWER: &str = "abcdefghijklmnopqrstuvwxyz";
pub const DIGITS: &str = "0123456789";
pub const HEX: &str = "0123456789abcdef";
pub const ALNUM: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
pub const BASE64: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
pub const BASE64URL: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
