//! [`HashedNgrams`]: the offline embedder, feature-hashed character n-grams. Why it is the
//! default, and why its vectors must never change, is said in [`super`].

use ralph_actors::ports::memory::{Embedder, GuardedTexts, MemoryError};
use xxhash_rust::xxh3::xxh3_64_with_seed;

use super::spec::EmbedError;

/// The dimension of [`HashedNgrams`] unless `memory.embedder.dims` says otherwise: enough
/// buckets that collisions between a signature's few hundred n-grams stay rare, small enough
/// to store and scan thousands of attempts for nothing.
pub const DEFAULT_HASHED_DIMS: usize = 256;

/// The hash seed of `hashed-ngrams-v1` ("RALPHNG1"). Part of the vector format: never change it.
const SEED: u64 = 0x5241_4C50_484E_4731;
/// The n-gram lengths of `hashed-ngrams-v1`: bigrams match short tokens (`3`, `ok`), 4-grams
/// carry most of a word's identity. Part of the vector format.
const NGRAMS: [usize; 3] = [2, 3, 4];

/// Feature-hashed character n-grams: the offline embedder (see [`super`] for why).
///
/// Each word (a run of ASCII letters and digits, or of any non-ASCII characters) is lowercased,
/// padded with a space at each end so that n-grams at a word's edge differ from those inside,
/// and cut into its 2-, 3- and 4-grams. Each n-gram's xxh3 hash picks a bucket and, by its top
/// bit, a sign (so collisions cancel out on average rather than pile up); the vector is then
/// scaled to length 1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HashedNgrams {
    dims: usize,
}

impl HashedNgrams {
    pub fn new(dims: usize) -> Result<Self, EmbedError> {
        if dims == 0 {
            return Err(EmbedError::ZeroDims);
        }
        Ok(Self { dims })
    }

    /// The vector of one text; all zeros when it has no word.
    pub fn vector(&self, text: &str) -> Vec<f32> {
        let mut v = vec![0.0f32; self.dims];
        let mut padded = Vec::new();
        let mut gram = Vec::new();
        // ASCII rules only: `char::is_alphanumeric` and `to_lowercase` follow the Unicode
        // tables of the Rust release, and a vector must not change with the compiler.
        let words = text
            .split(|c: char| c.is_ascii() && !c.is_ascii_alphanumeric())
            .filter(|w| !w.is_empty());
        for word in words {
            padded.clear();
            padded.push(b' ');
            padded.extend(word.bytes().map(|b| b.to_ascii_lowercase()));
            padded.push(b' ');
            let chars: Vec<&[u8]> = utf8_chars(&padded);
            for n in NGRAMS {
                for window in chars.windows(n) {
                    gram.clear();
                    window.iter().for_each(|c| gram.extend_from_slice(c));
                    let h = xxh3_64_with_seed(&gram, SEED);
                    let bucket = (h % self.dims as u64) as usize;
                    v[bucket] += if h >> 63 == 1 { -1.0 } else { 1.0 };
                }
            }
        }
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        if norm > 0.0 {
            v.iter_mut().for_each(|x| *x /= norm);
        }
        v
    }
}

impl Default for HashedNgrams {
    fn default() -> Self {
        Self {
            dims: DEFAULT_HASHED_DIMS,
        }
    }
}

/// The characters of UTF-8 bytes, each as its bytes: n-grams count characters, not bytes, so a
/// non-ASCII word is not cut mid-character.
fn utf8_chars(bytes: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut start = 0;
    for i in 1..=bytes.len() {
        // A continuation byte (10xxxxxx) belongs to the character before it.
        if i == bytes.len() || bytes[i] & 0xC0 != 0x80 {
            out.push(&bytes[start..i]);
            start = i;
        }
    }
    out
}

#[async_trait::async_trait]
impl Embedder for HashedNgrams {
    fn id(&self) -> String {
        format!("hashed-ngrams-v1/{}", self.dims)
    }

    fn dims(&self) -> usize {
        self.dims
    }

    async fn embed(&self, texts: GuardedTexts) -> Result<Vec<Vec<f32>>, MemoryError> {
        Ok(texts.texts().iter().map(|t| self.vector(t)).collect())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use crate::vault::embed::sealed_texts;
    use crate::vault::embed::{build, EmbedderSpec};
    use ralph_actors::memory::rank::cosine;

    const SAME_A: &str = "AssertionError: expected 3 to equal 2.5 in test_median_even";
    const SAME_B: &str = "AssertionError: expected 3 to equal 2.5 in test_median_odd";
    const OTHER: &str = "ModuleNotFoundError: No module named numpy";

    fn hashed() -> HashedNgrams {
        HashedNgrams::default()
    }

    #[test]
    fn hashed_is_deterministic_and_unit_length() {
        let e = hashed();
        let (a, b) = (e.vector(SAME_A), e.vector(SAME_A));
        assert_eq!(a, b);
        assert_eq!(a.len(), 256);
        let norm = a.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-5, "norm {norm}");
        assert_eq!(e.id(), "hashed-ngrams-v1/256");
        assert_eq!(HashedNgrams::new(64).unwrap().vector(SAME_A).len(), 64);
    }

    #[test]
    fn hashed_golden_values_never_change() {
        // If this fails, stored vectors no longer match new ones: bump the id's version.
        let v = hashed().vector("AssertionError: expected 3 to equal 2.5");
        let nonzero: Vec<(usize, f32)> = v
            .iter()
            .copied()
            .enumerate()
            .filter(|(_, x)| *x != 0.0)
            .collect();
        let golden: &[(usize, f32)] = &GOLDEN;
        let shown: Vec<String> = nonzero[..8]
            .iter()
            .map(|(i, x)| format!("({i}, {x:.6})"))
            .collect();
        assert_eq!(
            nonzero.len(),
            GOLDEN_NONZERO,
            "first values: {}",
            shown.join(", ")
        );
        for ((i, x), (gi, gx)) in nonzero.iter().zip(golden) {
            assert_eq!(i, gi, "first values: {}", shown.join(", "));
            assert!((x - gx).abs() < 1e-5, "first values: {}", shown.join(", "));
        }
        // Every bucket, folded into one number: sum of index × value.
        let weighted: f32 = nonzero.iter().map(|(i, x)| *i as f32 * x).sum();
        assert!((weighted - 174.1).abs() < 1e-3, "weighted sum {weighted}");
    }

    /// Of `AssertionError: expected 3 to equal 2.5`: 68 buckets hit, whose counts' squares sum
    /// to 100 (hence the tenths), and the first eight of them.
    const GOLDEN_NONZERO: usize = 68;
    const GOLDEN: [(usize, f32); 8] = [
        (3, 0.1),
        (7, 0.2),
        (18, 0.1),
        (19, 0.1),
        (23, 0.1),
        (27, 0.1),
        (36, 0.1),
        (39, -0.1),
    ];

    #[test]
    fn hashed_similar_failures_are_near_and_unrelated_far() {
        let e = hashed();
        let near = cosine(&e.vector(SAME_A), &e.vector(SAME_B));
        let far = cosine(&e.vector(SAME_A), &e.vector(OTHER));
        assert!(near >= 0.85, "near = {near}, far = {far}");
        assert!(far < 0.4, "near = {near}, far = {far}");
    }

    #[test]
    fn hashed_edge_cases() {
        let e = hashed();
        assert!(e.vector("").iter().all(|x| *x == 0.0));
        assert!(e.vector(" ::: ").iter().all(|x| *x == 0.0));
        // Case does not matter; non-ASCII words are kept whole and do not panic.
        assert_eq!(e.vector("KeyError"), e.vector("keyerror"));
        assert!(e
            .vector("Fehler: Größe überschritten")
            .iter()
            .any(|x| *x != 0.0));
        assert_eq!(HashedNgrams::new(0), Err(EmbedError::ZeroDims));
    }

    #[tokio::test]
    async fn hashed_embeds_through_the_trait() {
        let e = build(&EmbedderSpec::default()).unwrap();
        assert_eq!(e.id(), "hashed-ngrams-v1/256");
        let out = e
            .embed(sealed_texts(vec![SAME_A.into(), OTHER.into()]))
            .await
            .unwrap();
        assert_eq!(out, vec![hashed().vector(SAME_A), hashed().vector(OTHER)]);
    }
}
