//! Personal data: one detector per kind, each switchable (`local_guard.pii`). A detector scans
//! the whole text itself, byte by byte or from a rare byte (`@` for e-mail addresses), never with
//! a regex that must try every position: the guard's budget is 100 MB/s on one core for all of
//! them together. Numbers are checked where a check exists (Luhn for cards, mod 97 for IBANs,
//! each national scheme's own check digit), so a random run of digits is rarely taken.
//!
//! - `email`: addresses (`local@domain.tld`);
//! - `phone`: international (`+44 20 7946 0958`, E.164) and North American (`(415) 555-0132`)
//!   forms;
//! - `net`: IPv4 and IPv6 addresses, but for loopback, unspecified, broadcast and netmasks, and
//!   dotted quads that read as versions (`"version": "1.0.0.0"`);
//! - `card`: payment card numbers of the known networks, Luhn-checked;
//! - `iban`: IBANs of the countries that issue them, checksum, length and layout checked;
//! - `national`: national identity numbers whose scheme has a check digit (14 schemes), and the
//!   US SSN in its dashed form; plain runs of digits only after the scheme's keyword.
//!
//! `scan` holds what they share: runs of digits found eight bytes at a time, dates, and the
//! keyword look-behind; `luhn` and `verhoeff` the check digits the corpus computes too.

mod card;
mod email;
#[cfg(test)]
mod expect;
mod iban;
pub(crate) mod luhn;
mod national;
mod net;
mod phone;
mod scan;
pub(crate) mod verhoeff;

use crate::kind::Finding;

/// The kinds of personal data, as `local_guard.pii` names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PiiKind {
    Email,
    Phone,
    Ip,
    CreditCard,
    Iban,
    NationalId,
}

impl PiiKind {
    pub const ALL: [PiiKind; 6] = [
        PiiKind::Email,
        PiiKind::Phone,
        PiiKind::Ip,
        PiiKind::CreditCard,
        PiiKind::Iban,
        PiiKind::NationalId,
    ];

    /// The name config uses: `email`, `phone`, `ip`, `credit_card`, `iban`, `national_id`.
    pub fn name(self) -> &'static str {
        match self {
            PiiKind::Email => "email",
            PiiKind::Phone => "phone",
            PiiKind::Ip => "ip",
            PiiKind::CreditCard => "credit_card",
            PiiKind::Iban => "iban",
            PiiKind::NationalId => "national_id",
        }
    }

    pub fn parse(name: &str) -> Option<PiiKind> {
        PiiKind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Pushes every value of this kind found in `text` onto `out`, in any order.
    pub fn find(self, text: &str, out: &mut Vec<Finding>) {
        Self::find_all(&[self], text, out);
    }

    /// Pushes every value of `kinds` found in `text` onto `out`, in any order. The runs of
    /// digits most detectors start from are found once, for all of them.
    pub fn find_all(kinds: &[PiiKind], text: &str, out: &mut Vec<Finding>) {
        let digital = [
            PiiKind::Phone,
            PiiKind::CreditCard,
            PiiKind::Iban,
            PiiKind::NationalId,
        ];
        let runs: Vec<(usize, usize)> = if kinds.iter().any(|k| digital.contains(k)) {
            scan::DigitRuns::new(text.as_bytes()).collect()
        } else {
            Vec::new()
        };
        for kind in kinds {
            match kind {
                PiiKind::Email => email::find(text, out),
                PiiKind::Phone => phone::find(text, &runs, out),
                PiiKind::Ip => net::find(text, out),
                PiiKind::CreditCard => card::find(text, &runs, out),
                PiiKind::Iban => iban::find(text, &runs, out),
                PiiKind::NationalId => national::find(text, &runs, out),
            }
        }
    }
}
