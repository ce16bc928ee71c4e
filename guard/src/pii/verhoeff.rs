//! The Verhoeff check digit (India's Aadhaar): dihedral-group tables, shared by the detector
//! and the corpus that plants values for it.

/// The multiplication table of the dihedral group D5.
const MUL: [[u8; 10]; 10] = [
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
    [1, 2, 3, 4, 0, 6, 7, 8, 9, 5],
    [2, 3, 4, 0, 1, 7, 8, 9, 5, 6],
    [3, 4, 0, 1, 2, 8, 9, 5, 6, 7],
    [4, 0, 1, 2, 3, 9, 5, 6, 7, 8],
    [5, 9, 8, 7, 6, 0, 4, 3, 2, 1],
    [6, 5, 9, 8, 7, 1, 0, 4, 3, 2],
    [7, 6, 5, 9, 8, 2, 1, 0, 4, 3],
    [8, 7, 6, 5, 9, 3, 2, 1, 0, 4],
    [9, 8, 7, 6, 5, 4, 3, 2, 1, 0],
];

/// The position permutations.
const PERM: [[u8; 10]; 8] = [
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
    [1, 5, 7, 6, 2, 8, 3, 0, 9, 4],
    [5, 8, 0, 3, 7, 9, 6, 1, 4, 2],
    [8, 9, 1, 6, 0, 4, 3, 5, 2, 7],
    [9, 4, 5, 3, 1, 2, 7, 8, 6, 0],
    [4, 2, 8, 6, 5, 7, 3, 9, 0, 1],
    [2, 7, 9, 3, 8, 0, 6, 4, 1, 5],
    [7, 0, 4, 6, 9, 1, 3, 2, 5, 8],
];

/// The inverses in D5.
#[cfg(any(test, feature = "corpus"))]
const INV: [u8; 10] = [0, 4, 3, 2, 1, 5, 6, 7, 8, 9];

/// The checksum of `digits` (0-9 each), the rightmost at position `shift`.
fn checksum(digits: &[u8], shift: usize) -> u8 {
    digits.iter().rev().enumerate().fold(0u8, |c, (i, &x)| {
        let p = PERM[(i + shift) % 8][usize::from(x % 10)];
        MUL[usize::from(c)][usize::from(p)]
    })
}

/// Whether `digits`, its check digit last, passes.
pub(crate) fn valid(digits: &[u8]) -> bool {
    checksum(digits, 0) == 0
}

/// The check digit that completes `digits`.
#[cfg(any(test, feature = "corpus"))]
pub(crate) fn check_digit(digits: &[u8]) -> u8 {
    INV[usize::from(checksum(digits, 1))]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_published_example_passes_and_a_changed_digit_does_not() {
        // 236 gets the check digit 3 in Verhoeff's worked example.
        assert_eq!(check_digit(&[2, 3, 6]), 3);
        assert!(valid(&[2, 3, 6, 3]));
        assert!(!valid(&[2, 3, 7, 3]));
    }
}
