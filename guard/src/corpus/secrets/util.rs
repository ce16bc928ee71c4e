//! Random pieces the value generators are built from: charsets, UUIDs, base64.

use rand::seq::IndexedRandom;
use rand::Rng;

use super::super::{chars, ALNUM, BASE64URL, DIGITS, HEX, LOWER};

/// Base32 as AWS key ids use it (RFC 4648 alphabet).
pub(super) const BASE32: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
/// Bech32's data alphabet, upper-case (age secret keys).
pub(super) const BECH32_UPPER: &str = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L";
/// Upper-case letters and digits.
pub(super) const UPPER_ALNUM: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
/// Lower-case letters and digits.
pub(super) const LOWER_ALNUM: &str = "abcdefghijklmnopqrstuvwxyz0123456789";
/// Upper-case hexadecimal digits.
pub(super) const UPPER_HEX: &str = "0123456789ABCDEF";
/// Letters only.
pub(super) const LETTERS: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

const STD: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const URL: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// A generated value, with the name a program would give it.
pub(super) struct V {
    pub name: String,
    pub value: String,
    pub raw: bool,
}

/// `value` under one of `names`.
pub(super) fn v<R: Rng + ?Sized>(value: String, rng: &mut R, names: &[&str]) -> V {
    V {
        name: pick(rng, names).to_string(),
        value,
        raw: false,
    }
}

/// A rule whose value is a fixed prefix and a run of one charset, as its module's table lists
/// it: `(rule id, prefix, charset, length, names)`.
pub(super) type Prefixed = (
    &'static str,
    &'static str,
    &'static str,
    usize,
    &'static [&'static str],
);

/// The value of rule `id` when `table` lists it: the prefix, then the run, under one of the
/// names.
pub(super) fn prefixed<R: Rng + ?Sized>(rng: &mut R, table: &[Prefixed], id: &str) -> Option<V> {
    let &(_, prefix, charset, n, names) = table.iter().find(|rule| rule.0 == id)?;
    let value = format!("{prefix}{}", chars(rng, charset, n));
    Some(v(value, rng, names))
}

/// A value that spans lines: it is planted as it is.
pub(super) fn raw(name: &str, value: String) -> V {
    V {
        name: name.to_string(),
        value,
        raw: true,
    }
}

pub(super) fn pick<'a, R: Rng + ?Sized>(rng: &mut R, options: &[&'a str]) -> &'a str {
    options.choose(rng).copied().unwrap_or_default()
}

/// A length in `lo..=hi`.
pub(super) fn len<R: Rng + ?Sized>(rng: &mut R, lo: usize, hi: usize) -> usize {
    rng.random_range(lo..=hi)
}

pub(super) fn hex<R: Rng + ?Sized>(rng: &mut R, n: usize) -> String {
    chars(rng, HEX, n)
}

pub(super) fn alnum<R: Rng + ?Sized>(rng: &mut R, n: usize) -> String {
    chars(rng, ALNUM, n)
}

pub(super) fn b64url<R: Rng + ?Sized>(rng: &mut R, n: usize) -> String {
    chars(rng, BASE64URL, n)
}

pub(super) fn lower<R: Rng + ?Sized>(rng: &mut R, n: usize) -> String {
    chars(rng, LOWER, n)
}

/// `n` decimal digits, the first not zero.
pub(super) fn digits<R: Rng + ?Sized>(rng: &mut R, n: usize) -> String {
    let mut s = chars(rng, "123456789", 1);
    s.push_str(&chars(rng, DIGITS, n.saturating_sub(1)));
    s
}

/// A random (version 4) UUID, lower-case.
pub(super) fn uuid<R: Rng + ?Sized>(rng: &mut R) -> String {
    let variant = pick(rng, &["8", "9", "a", "b"]);
    format!(
        "{}-{}-4{}-{variant}{}-{}",
        hex(rng, 8),
        hex(rng, 4),
        hex(rng, 3),
        hex(rng, 3),
        hex(rng, 12)
    )
}

pub(super) fn bytes<R: Rng + ?Sized>(rng: &mut R, n: usize) -> Vec<u8> {
    (0..n).map(|_| rng.random::<u8>()).collect()
}

fn encode(data: &[u8], alphabet: &[u8; 64], pad: bool) -> String {
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        let sextets = [n >> 18, n >> 12, n >> 6, n];
        for (i, s) in sextets.iter().enumerate() {
            if i <= chunk.len() {
                out.push(char::from(alphabet[(s & 63) as usize]));
            } else if pad {
                out.push('=');
            }
        }
    }
    out
}

/// Standard base64, padded.
pub(super) fn base64(data: &[u8]) -> String {
    encode(data, STD, true)
}

/// URL-safe base64 without padding.
pub(super) fn base64url(data: &[u8]) -> String {
    encode(data, URL, false)
}

/// `+`, `/` and `=` percent-encoded, as in a URL's query.
pub(super) fn url_encode(s: &str) -> String {
    s.replace('+', "%2B")
        .replace('/', "%2F")
        .replace('=', "%3D")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_rfc_4648_vectors() {
        let cases = [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ];
        for (plain, encoded) in cases {
            assert_eq!(base64(plain.as_bytes()), encoded);
        }
        assert_eq!(base64url(&[0xfb, 0xff]), "-_8");
    }
}
