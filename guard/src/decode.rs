//! Encoded values: runs of base64, hex or URL-encoded text that decode to readable text, so a
//! key hidden in a Kubernetes secret or an encoded query string is looked at as it reads
//! decoded. Runs that decode to binary (lockfile hashes, images) are set aside after their
//! first bytes.

use std::ops::Range;

use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use base64::Engine;

/// How a run was encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Base64,
    Hex,
    Url,
}

impl Encoding {
    pub fn name(self) -> &'static str {
        match self {
            Encoding::Base64 => "base64",
            Encoding::Hex => "hex",
            Encoding::Url => "url",
        }
    }
}

/// The shortest base64 run looked at: 15 bytes decoded, shorter than any key worth finding
/// inside.
const MIN_BASE64: usize = 20;
/// The shortest hex run: 16 bytes decoded.
const MIN_HEX: usize = 32;
/// Runs longer than this are not decoded (images, bundles): 64 KiB.
const MAX_RUN: usize = 64 * 1024;

/// The encoded runs of `text` and what each decodes to, when that is readable text.
pub fn decoded(text: &str) -> Vec<(Range<usize>, Encoding, String)> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let (base64, hex) = runs(bytes);
    for run in base64 {
        if let Some(s) = base64_text(&text[run.clone()]) {
            out.push((run, Encoding::Base64, s));
        }
    }
    for run in hex {
        if let Some(s) = hex_text(&text[run.clone()]) {
            out.push((run, Encoding::Hex, s));
        }
    }
    for run in url_runs(bytes) {
        if let Some(s) = url_text(&text[run.clone()]) {
            out.push((run, Encoding::Url, s));
        }
    }
    out
}

/// Bytes of the base64 alphabets (standard and URL-safe) and its `=` padding.
static BASE64: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        t[b] = c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'-' | b'_' | b'=');
        b += 1;
    }
    t
};

/// The maximal base64 runs of at least [`MIN_BASE64`] bytes, and the maximal hex runs of at
/// least [`MIN_HEX`] (even lengths) inside them, none over [`MAX_RUN`].
///
/// Most of a text is short runs, so the scan skips: it looks at the last byte of the
/// [`MIN_BASE64`] bytes from where a run could start, and back from there only as far as the
/// nearest byte outside the alphabet, which no run of that length can cross. A text of
/// identifiers and punctuation is read a byte in five or so; only the long runs are read whole.
fn runs(bytes: &[u8]) -> (Vec<Range<usize>>, Vec<Range<usize>>) {
    let (mut base64, mut hex) = (Vec::new(), Vec::new());
    let class = |i: usize| BASE64[usize::from(bytes[i])];
    let mut i = 0;
    while i + MIN_BASE64 <= bytes.len() {
        if let Some(j) = (i..i + MIN_BASE64).rev().find(|&j| !class(j)) {
            i = j + 1;
            continue;
        }
        // `i` follows a byte outside the alphabet (or starts the text): the run starts here.
        let tail = bytes[i + MIN_BASE64..]
            .iter()
            .position(|&c| !BASE64[usize::from(c)])
            .unwrap_or(bytes.len() - i - MIN_BASE64);
        let end = i + MIN_BASE64 + tail;
        if end - i <= MAX_RUN {
            base64.push(i..end);
            if end - i >= MIN_HEX {
                hex_runs(bytes, i..end, &mut hex);
            }
        }
        i = end + 1;
    }
    (base64, hex)
}

/// The maximal runs of hex digits in `within`, at least [`MIN_HEX`] long and of even length.
fn hex_runs(bytes: &[u8], within: Range<usize>, out: &mut Vec<Range<usize>>) {
    let mut start = within.start;
    let run = &bytes[within.clone()];
    for (k, c) in run.iter().map(Some).chain([None]).enumerate() {
        if !c.is_some_and(u8::is_ascii_hexdigit) {
            let i = within.start + k;
            let n = i - start;
            if n >= MIN_HEX && n.is_multiple_of(2) {
                out.push(start..i);
            }
            start = i + 1;
        }
    }
}

/// Whether `bytes` read as text: valid UTF-8, with few control characters.
fn readable(bytes: &[u8]) -> Option<String> {
    let s = std::str::from_utf8(bytes).ok()?;
    let total = s.chars().count().max(1);
    let control = s
        .chars()
        .filter(|c| c.is_control() && !matches!(c, '\n' | '\r' | '\t'))
        .count();
    (control * 20 <= total).then(|| s.to_string())
}

fn base64_text(run: &str) -> Option<String> {
    // A run of `=` signs or an assignment (`a=b`) is not base64: `=` only pads the end.
    let body = run.trim_end_matches('=');
    if body.contains('=') || body.len() < MIN_BASE64 {
        return None;
    }
    // Base64 of text mixes upper and lower case; identifiers in one case (`snake_case_names`,
    // `CONSTANT_NAMES`) are set aside without decoding.
    let b = body.as_bytes();
    if !b.iter().any(u8::is_ascii_uppercase) || !b.iter().any(u8::is_ascii_lowercase) {
        return None;
    }
    // Most runs are identifiers or binary: decode a prefix first.
    let prefix = &body[..body.len().min(64) / 4 * 4];
    let engines = [&STANDARD_NO_PAD, &URL_SAFE_NO_PAD];
    let engine = engines
        .into_iter()
        .find(|e| e.decode(prefix).ok().and_then(|b| readable(&b)).is_some())?;
    let whole = [engine, &STANDARD, &URL_SAFE]
        .into_iter()
        .find_map(|e| e.decode(body).ok().or_else(|| e.decode(run).ok()))?;
    readable(&whole)
}

fn hex_text(run: &str) -> Option<String> {
    let bytes = run.as_bytes();
    let decode = |pair: &[u8]| -> Option<u8> {
        let hi = (pair[0] as char).to_digit(16)?;
        let lo = (pair[1] as char).to_digit(16)?;
        u8::try_from(hi * 16 + lo).ok()
    };
    let head: Vec<u8> = bytes.chunks(2).take(16).filter_map(decode).collect();
    readable(&head)?;
    let all: Vec<u8> = bytes.chunks(2).filter_map(decode).collect();
    readable(&all)
}

/// Runs of URL text that hold at least one `%XX` escape: from the escape, back and forward to
/// a space, a quote or a bracket.
fn url_runs(bytes: &[u8]) -> Vec<Range<usize>> {
    let stop = |b: u8| {
        b.is_ascii_whitespace() || matches!(b, b'"' | b'\'' | b'`' | b'<' | b'>' | b'(' | b')')
    };
    let mut out: Vec<Range<usize>> = Vec::new();
    for i in memchr::memchr_iter(b'%', bytes) {
        if out.last().is_some_and(|r| r.contains(&i)) {
            continue;
        }
        let escape = bytes
            .get(i + 1..i + 3)
            .is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit));
        if !escape {
            continue;
        }
        let start = bytes[..i]
            .iter()
            .rposition(|&b| stop(b))
            .map_or(0, |p| p + 1);
        let end = bytes[i..]
            .iter()
            .position(|&b| stop(b))
            .map_or(bytes.len(), |p| i + p);
        if end - start <= MAX_RUN {
            out.push(start..end);
        }
    }
    out
}

fn url_text(run: &str) -> Option<String> {
    let bytes = run.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes.get(i + 1..i + 3).and_then(|h| {
            let h = std::str::from_utf8(h).ok()?;
            u8::from_str_radix(h, 16).ok()
        });
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b'+', _) => {
                out.push(b' ');
                i += 1;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    readable(&out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_hex_and_url_runs_decode_to_their_text() {
        let secret = "AKIAZ4Q7XW2PLM3NB5VC";
        let b64 = STANDARD.encode(format!("aws_access_key_id={secret}"));
        let hex: String = format!("token {secret}")
            .bytes()
            .map(|b| format!("{b:02x}"))
            .collect();
        let text = format!(
            "data: {b64}\nblob = \"{hex}\"\nq=https://x.test/?k=%41KIA%5A4Q7XW2PLM3NB5VC&a=1\n"
        );
        let found = decoded(&text);
        let encodings: Vec<Encoding> = found.iter().map(|f| f.1).collect();
        assert_eq!(encodings, [Encoding::Base64, Encoding::Hex, Encoding::Url]);
        assert!(found.iter().all(|f| f.2.contains(secret)), "{found:?}");
        assert_eq!(&text[found[0].0.clone()], b64);
    }

    #[test]
    fn binary_and_identifiers_are_set_aside() {
        let integrity = "\"integrity\": \"sha512-z8Jw1Yb8c+vQ2mnq0bC8aK0bN2xPp4F3c8J5m7Qw9xYz1a2B3c4D5e6F7g8H9i0J1k2L3m4N5o6P7q8R9s0T1u==\"";
        assert!(decoded(integrity).is_empty());
        assert!(decoded("fn test_the_seed_s_completion_promise_config_loads() {}").is_empty());
        assert!(decoded(
            "sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
        )
        .is_empty());
        assert!(decoded("width: 100%; a%b").is_empty());
    }
}
