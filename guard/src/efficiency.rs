//! Token efficiency: how many characters a tokenizer's token covers in a value. A tokenizer's
//! vocabulary is built from words and code, so English words and identifiers take few tokens
//! (4 or more characters each) while random keys take many (about 2). Checked beside entropy,
//! it sets aside the high-entropy strings source code is full of (`getUserAccountSettings`,
//! `parse_config_file_v2`) that entropy alone would take for keys.
//!
//! The tokenizer is the caller's ([`TokenLens`]): ralph-loop passes [`crate::tokens::O200k`],
//! OpenAI's `o200k_base` counted from a compact table, so the check builds no tokenizer.

/// Counts the tokens of a text.
pub trait TokenLens: Send + Sync {
    fn tokens(&self, text: &str) -> usize;
}

/// Below this many characters per token, a value reads as random.
pub const RANDOM_BELOW: f32 = 3.0;

/// A long value is judged by its first characters: enough to tell words from noise, and
/// byte-pair merging grows with the square of a piece's length.
const SAMPLE: usize = 256;

/// Characters per token of `value` (of its first [`SAMPLE`] characters).
pub fn chars_per_token(lens: &dyn TokenLens, value: &str) -> f32 {
    let sample = value
        .char_indices()
        .nth(SAMPLE)
        .map_or(value, |(end, _)| &value[..end]);
    let tokens = lens.tokens(sample).max(1);
    sample.chars().count() as f32 / tokens as f32
}

/// Whether `value` tokenizes like a random string rather than like words.
pub fn looks_random(lens: &dyn TokenLens, value: &str) -> bool {
    chars_per_token(lens, value) < RANDOM_BELOW
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::O200k;

    #[test]
    fn words_and_identifiers_are_efficient_and_keys_are_not() {
        let lens = O200k;
        for key in [
            "Zx9kQ2mW7pL4vB8nR3tY6uH1",
            "d41d8cd98f00b204e9800998ecf8427e",
            "wJalrXUtnFEMI7K7MDENGbPxRfiCYzQ9",
            "q8Vn3Lk2Tz7Rw5Yx",
        ] {
            assert!(
                looks_random(&lens, key),
                "{key}: {}",
                chars_per_token(&lens, key)
            );
        }
        // A long one is read by its start (a 64 KiB key costs what 256 characters do).
        let long: String = "q8Vn3Lk2Tz7Rw5YxZx9kQ2mW7pL4vB8n".repeat(2048);
        assert!(looks_random(&lens, &long));
        for word in [
            "getUserAccountSettings",
            "parse_config_file_version",
            "ThisIsNotASecretButAName",
            "correcthorsebatterystaple",
        ] {
            assert!(
                !looks_random(&lens, word),
                "{word}: {}",
                chars_per_token(&lens, word)
            );
        }
    }
}
