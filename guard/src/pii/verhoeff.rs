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

/// The position permutations: row `i` is the permutation of row 1 applied `i` times.
const PERM: [[u8; 10]; 8] = powers([1, 5, 7, 6, 2, 8, 3, 0, 9, 4]);

/// The identity and the first seven powers of the permutation `first`: row `i` maps each digit
/// through `first` `i` times.
const fn powers(first: [u8; 10]) -> [[u8; 10]; 8] {
    let mut rows = [[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]; 8];
    let mut i = 1;
    while i < 8 {
        let mut d = 0;
        while d < 10 {
            rows[i][d] = first[rows[i - 1][d] as usize];
            d += 1;
        }
        i += 1;
    }
    rows
}

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

    #[test]
    fn each_position_permutation_is_the_first_applied_once_more() {
        for i in 1..PERM.len() - 1 {
            let next: Vec<u8> = PERM[i].iter().map(|&d| PERM[1][usize::from(d)]).collect();
            assert_eq!(next, PERM[i + 1], "row {}", i + 1);
        }
        // The last row as Verhoeff's published table has it.
        assert_eq!(PERM[7], [7, 0, 4, 6, 9, 1, 3, 2, 5, 8]);
    }

    #[test]
    fn a_twelve_digit_number_reaching_every_row_completes_and_checks() {
        // Twelve digits use the permutations of every position, the fifth row's included:
        // each completed number passes, and so does none with its last digit changed.
        let base = [8, 8, 1, 2, 4, 1, 5, 8, 6, 8, 3];
        let mut full = base.to_vec();
        full.push(check_digit(&base));
        assert_eq!(full[11], 0, "881241586830 is a valid Aadhaar number");
        assert!(valid(&full));
        let right = full[11];
        for wrong in (0..10).filter(|&d| d != right) {
            full[11] = wrong;
            assert!(!valid(&full), "last digit {wrong}");
        }
    }
}
