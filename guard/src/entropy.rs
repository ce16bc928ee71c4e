//! Shannon entropy, and the thresholds a value's characters call for: a random string of hex
//! digits cannot reach the entropy of a random base64 string of the same length, and no string
//! of `n` characters exceeds `log2(n)` bits per character, so a fixed bound would miss short
//! keys and every hex key.

/// Bits per character of `s`'s character distribution.
pub fn shannon(s: &str) -> f32 {
    let bytes = s.as_bytes();
    if bytes.is_empty() {
        return 0.0;
    }
    let mut counts = [0u32; 256];
    for &b in bytes {
        counts[usize::from(b)] += 1;
    }
    let n = bytes.len() as f32;
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = c as f32 / n;
            -p * p.log2()
        })
        .sum()
}

/// The alphabet a value is written in, which bounds the entropy it can have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Charset {
    Digits,
    Hex,
    /// Letters and digits, with `+/=-_` (base64 and base64url).
    Base64,
    Other,
}

impl Charset {
    pub fn of(s: &str) -> Charset {
        let b = s.as_bytes();
        if b.iter().all(u8::is_ascii_digit) {
            Charset::Digits
        } else if b
            .iter()
            .filter(|&&c| !c.is_ascii_hexdigit() && c != b'-')
            .count()
            <= b.len() / 16
        {
            // A hex key with a stray character (a typo, a vendor's near-miss format) or split
            // by dashes (a UUID's shape) has a hex key's entropy, not a base64 key's.
            Charset::Hex
        } else if b
            .iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'=' | b'-' | b'_'))
        {
            Charset::Base64
        } else {
            Charset::Other
        }
    }

    /// The most a random value in this alphabet is expected to reach, less a margin: the
    /// bound a rule asks for is lowered to this for values written in it.
    fn ceiling(self) -> f32 {
        match self {
            // log2(10) = 3.32, log2(16) = 4: random values of 16 to 40 characters land 0.3
            // to 0.7 below.
            Charset::Digits => 2.6,
            Charset::Hex => 3.2,
            Charset::Base64 | Charset::Other => f32::INFINITY,
        }
    }
}

/// Whether `s` has at least `min` bits per character, the bound lowered for its alphabet and
/// for its length (to 85 % of `log2(len)`, what a random string of that length reaches).
pub fn passes(s: &str, min: f32) -> bool {
    shannon(s) >= threshold(s, min)
}

/// The bound `passes` holds `s` to.
pub fn threshold(s: &str, min: f32) -> f32 {
    let len = s.len().max(2) as f32;
    min.min(Charset::of(s).ceiling()).min(0.85 * len.log2())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entropy_of_simple_strings() {
        assert_eq!(shannon(""), 0.0);
        assert_eq!(shannon("aaaa"), 0.0);
        assert!((shannon("ab") - 1.0).abs() < 1e-6);
        assert!((shannon("0123456789abcdef") - 4.0).abs() < 1e-6);
    }

    #[test]
    fn random_keys_pass_and_words_do_not() {
        assert!(passes("d41d8cd98f00b204e9800998ecf8427e", 3.5), "hex key");
        assert!(passes("Zx9kQ2mW7pL4vB8nR3tY6uH1", 4.0), "base62 key");
        assert!(passes("7Gq2kP9x", 3.5), "a short random password");
        assert!(!passes("passwordpassword", 3.5));
        assert!(!passes("changemechangeme", 3.5));
        assert!(!passes("aaaaaaaaaaaaaaaaaaaaaaaa", 3.0));
    }

    #[test]
    fn a_hex_key_with_a_stray_character_is_held_to_the_hex_bound() {
        assert_eq!(Charset::of("b233ff07a52x02532e2f30c49329bd9"), Charset::Hex);
        assert!(passes("c5555db44195Qd2be9dde8db7e259c8579d7c86", 3.5));
        assert_eq!(
            Charset::of("b233ff07a52x02532e2f30cx9329bd9"),
            Charset::Base64
        );
        assert_eq!(
            Charset::of("e6db15b3-606a-4505-bea5-e38fd0eae6e"),
            Charset::Hex
        );
    }
}
