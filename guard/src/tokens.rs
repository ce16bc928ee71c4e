//! Token counts under OpenAI's `o200k_base` encoding, read from a compact table the build writes
//! (`build.rs`: every token's bytes and the ranks in the order of their bytes, 3 MB in the
//! binary, read in place). The token-efficiency check only counts the tokens of short values, so
//! it needs neither the tokenizer's hash maps (about 50 MiB, 0.2 s to build) nor its encoder:
//! the text is split as the encoding splits it, and each piece is merged pair by pair, the
//! lowest rank first, as byte-pair encoding does. The counts are the tokenizer's own (the tests
//! compare them with `tiktoken-rs` on code, prose, keys and unicode).

use std::cmp::Ordering;
use std::sync::OnceLock;

use crate::efficiency::TokenLens;

static TABLE: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/o200k.bin"));

/// How `o200k_base` splits text before merging (tiktoken's pattern).
const SPLIT: &str = concat!(
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    "|",
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    "|",
    r"\p{N}{1,3}",
    "|",
    r" ?[^\s\p{L}\p{N}]+[\r\n/]*",
    "|",
    r"\s*[\r\n]+",
    "|",
    r"\s+(?!\S)",
    "|",
    r"\s+"
);

/// The `o200k_base` token counter of the compact table.
#[derive(Debug, Default, Clone, Copy)]
pub struct O200k;

impl TokenLens for O200k {
    fn tokens(&self, text: &str) -> usize {
        count(text)
    }
}

/// The number of `o200k_base` tokens of `text` (special tokens read as ordinary text).
pub fn count(text: &str) -> usize {
    static SPLITTER: OnceLock<Option<fancy_regex::Regex>> = OnceLock::new();
    let Some(splitter) = SPLITTER.get_or_init(|| fancy_regex::Regex::new(SPLIT).ok()) else {
        // The pattern is a constant the tests compile: unreachable, but a count is still owed.
        return text.len().div_ceil(4);
    };
    let mut n = 0;
    let mut at = 0;
    for piece in splitter.find_iter(text) {
        match piece {
            Ok(m) => {
                n += pieces(m.as_str().as_bytes());
                at = m.end();
            }
            // The matcher gave up (its backtracking limit): the rest counts a token per byte.
            Err(_) => return n + text.len() - at,
        }
    }
    n
}

/// The little-endian `u32` at index `i` of the table.
fn word(i: usize) -> usize {
    TABLE
        .get(i * 4..i * 4 + 4)
        .and_then(|b| b.try_into().ok())
        .map_or(0, |b| u32::from_le_bytes(b) as usize)
}

/// The table's sections: the number of tokens, where the offsets, the sorted ranks and the
/// bytes start (in words, words and bytes).
struct Layout {
    tokens: usize,
    sorted: usize,
    sorted_len: usize,
    bytes: usize,
}

fn layout() -> &'static Layout {
    static LAYOUT: OnceLock<Layout> = OnceLock::new();
    LAYOUT.get_or_init(|| {
        let tokens = word(0);
        let sorted_len = word(tokens + 2);
        let sorted = tokens + 3;
        Layout {
            tokens,
            sorted,
            sorted_len,
            bytes: (sorted + sorted_len) * 4,
        }
    })
}

/// The bytes of the token of rank `r`.
fn token(l: &Layout, r: usize) -> &'static [u8] {
    let (start, end) = (word(1 + r), word(2 + r));
    TABLE.get(l.bytes + start..l.bytes + end).unwrap_or(&[])
}

/// The rank of the token whose bytes are `bytes`, if there is one.
fn rank(bytes: &[u8]) -> Option<usize> {
    let l = layout();
    let (mut lo, mut hi) = (0, l.sorted_len);
    while lo < hi {
        let mid = (lo + hi) / 2;
        let r = word(l.sorted + mid);
        if r >= l.tokens {
            return None;
        }
        match token(l, r).cmp(bytes) {
            Ordering::Less => lo = mid + 1,
            Ordering::Greater => hi = mid,
            Ordering::Equal => return Some(r),
        }
    }
    None
}

/// The tokens byte-pair encoding makes of one piece: start from single bytes and merge the
/// adjacent pair whose joined bytes have the lowest rank until no joined pair is a token.
fn pieces(piece: &[u8]) -> usize {
    if piece.is_empty() {
        return 0;
    }
    if rank(piece).is_some() {
        return 1;
    }
    // Where each part starts; the piece's end closes the last.
    let mut starts: Vec<usize> = (0..piece.len()).collect();
    let joined = |starts: &[usize], i: usize| {
        let end = starts.get(i + 2).copied().unwrap_or(piece.len());
        rank(&piece[starts[i]..end])
    };
    let mut ranks: Vec<Option<usize>> = (0..starts.len().saturating_sub(1))
        .map(|i| joined(&starts, i))
        .collect();
    loop {
        let best = ranks
            .iter()
            .enumerate()
            .filter_map(|(i, r)| r.map(|r| (r, i)))
            .min();
        let Some((_, i)) = best else {
            return starts.len();
        };
        starts.remove(i + 1);
        ranks.remove(i);
        if i < ranks.len() {
            ranks[i] = joined(&starts, i);
        }
        if i > 0 {
            ranks[i - 1] = joined(&starts, i - 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    #[test]
    fn the_table_holds_the_vocabulary() {
        let bpe = tiktoken_rs::o200k_base().expect("bundled table");
        let l = layout();
        assert!((199_990..=200_019).contains(&l.tokens), "{}", l.tokens);
        assert!(l.sorted_len > 199_990, "{}", l.sorted_len);
        let hello = bpe.encode_ordinary("hello")[0] as usize;
        assert_eq!(rank(b"hello"), Some(hello));
        assert_eq!(token(l, hello), b"hello");
        assert_eq!(rank(b"<|endoftext|>"), None);
    }

    #[test]
    fn counts_are_the_tokenizers_own() {
        let bpe = tiktoken_rs::o200k_base().expect("bundled table");
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let mut texts: Vec<String> = vec![
            String::new(),
            "fn parse_config_file_v2(path: &Path) -> Result<Config> {".into(),
            "getUserAccountSettings".into(),
            "AKIAZ4Q7XW2PLM3NB5VC".into(),
            "ghp_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5".into(),
            "sk-proj-Zq8vN2xLm4Rt6Yp0Wk3Hs5Jd7Fg9Bc1Ae".into(),
            "The quick brown fox jumps over the lazy dog.  It's   here,\r\n\n  and I'll go.\t\n".into(),
            "naïve café — 東京 🚀 Ünïcödé".into(),
            "postgres://admin:s3cr3t-P4ss@db.internal:5432/prod".into(),
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U".into(),
            "1234567890123456789 0x7fffffff    \n   x".into(),
        ];
        let alphabet: Vec<char> = "abcXYZ019+/=_-.:@ \n\té😀'sLL".chars().collect();
        for _ in 0..300 {
            let len = rng.random_range(1..120);
            texts.push(
                (0..len)
                    .map(|_| alphabet[rng.random_range(0..alphabet.len())])
                    .collect(),
            );
        }
        let source = include_str!("scan.rs");
        texts.extend(source.lines().map(str::to_string));
        texts.push(source.to_string());
        for text in &texts {
            assert_eq!(count(text), bpe.encode_ordinary(text).len(), "{text:?}");
        }
    }
}
