//! What every detector's tests assert: the values it takes from a text, that it takes none from
//! near misses, and the bounds and kind of what it reports.

use super::scan::DigitRuns;
use crate::kind::Finding;

/// A detector that scans the text itself (e-mail and IP addresses).
type TextFind = fn(&str, &mut Vec<Finding>);

/// A detector that reads the text's runs of digits (cards, IBANs, national ids, phones).
type RunsFind = fn(&str, &[(usize, usize)], &mut Vec<Finding>);

/// A detector under test, in either of the two signatures detectors have.
#[derive(Clone, Copy)]
pub(super) enum Find {
    Text(TextFind),
    Runs(RunsFind),
}

impl Find {
    /// What it reports in `text`, in its order, the runs of digits found as
    /// `PiiKind::find_all` finds them.
    pub(super) fn findings(self, text: &str) -> Vec<Finding> {
        let mut out = Vec::new();
        match self {
            Find::Text(find) => find(text, &mut out),
            Find::Runs(find) => {
                let runs: Vec<_> = DigitRuns::new(text.as_bytes()).collect();
                find(text, &runs, &mut out);
            }
        }
        out
    }

    /// The values it takes from `text`, in its order.
    pub(super) fn spans(self, text: &str) -> Vec<&str> {
        self.findings(text)
            .iter()
            .map(|f| &text[f.start..f.end])
            .collect()
    }
}

/// Each of `values`, framed by `frame`, is found alone and whole.
pub(super) fn each(find: Find, values: &[&str], frame: impl Fn(&str) -> String) {
    for &value in values {
        let text = frame(value);
        assert_eq!(find.spans(&text), [value], "{text}");
    }
}

/// Nothing is found in any of `texts`.
pub(super) fn none(find: Find, texts: &[&str]) {
    for text in texts {
        let got = find.spans(text);
        assert!(got.is_empty(), "{text}: {got:?}");
    }
}

/// The first finding in `text` has these bounds and this kind; returned for further checks.
pub(super) fn first(find: Find, text: &str, bounds: (usize, usize), kind: &str) -> Finding {
    let found = find.findings(text);
    let Some(f) = found.first() else {
        panic!("{text}: nothing found");
    };
    assert_eq!((f.start, f.end), bounds, "{text}");
    assert_eq!(f.kind.to_string(), kind, "{text}");
    f.clone()
}
