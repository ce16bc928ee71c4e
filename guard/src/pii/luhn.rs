//! The Luhn check digit (cards, Canadian SIN, Swedish personnummer), shared by the detectors
//! and the corpus that plants values for them.

/// The Luhn sum of `digits` (0-9 each), the rightmost at position `shift`; odd positions are
/// doubled, their two digits added.
fn sum(digits: &[u8], shift: usize) -> u32 {
    digits
        .iter()
        .rev()
        .enumerate()
        .map(|(i, &x)| {
            let x = u32::from(x);
            if (i + shift) % 2 == 1 {
                let y = 2 * x;
                y / 10 + y % 10
            } else {
                x
            }
        })
        .sum()
}

/// Whether `digits`, its check digit last, passes.
pub(crate) fn valid(digits: &[u8]) -> bool {
    sum(digits, 0).is_multiple_of(10)
}

/// The check digit that completes `digits`.
#[cfg(any(test, feature = "corpus"))]
pub(crate) fn check_digit(digits: &[u8]) -> u8 {
    ((10 - sum(digits, 1) % 10) % 10) as u8
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_cards_pass_and_a_changed_digit_does_not() {
        let (d, n) = crate::pii::scan::digits::<19>(b"4111 1111 1111 1111");
        assert!(valid(&d[..n]));
        let (d, n) = crate::pii::scan::digits::<19>(b"4111 1111 1111 1112");
        assert!(!valid(&d[..n]));
        assert_eq!(
            check_digit(&[4, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]),
            1
        );
    }
}
