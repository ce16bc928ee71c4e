//! Values already known, found wherever they appear: the run's masked values (a key masked in
//! the target is masked in the test output too, where no rule would see it without its name)
//! and the environment's secret values.
//!
//! One pass finds them all: an Aho-Corasick automaton over each value's first few bytes, then a
//! comparison of the whole value where one starts. The automaton holds those prefixes only, so
//! no whole value outlives the zeroised stores; it is rebuilt when values are added.

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use zeroize::Zeroizing;

use crate::kind::{Finding, Kind};

/// The bytes of a value the automaton looks for.
const PREFIX: usize = 6;

/// Known values and the automaton that finds them.
#[derive(Default)]
pub struct Literals {
    values: Vec<(Zeroizing<String>, Kind)>,
    /// For each prefix pattern, the values that start with it.
    owners: Vec<Vec<usize>>,
    automaton: Option<AhoCorasick>,
}

impl Literals {
    pub fn len(&self) -> usize {
        self.values.len()
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Adds values (empty ones are left out); the automaton is rebuilt.
    pub fn extend(&mut self, values: impl IntoIterator<Item = (String, Kind)>) {
        let before = self.values.len();
        self.values.extend(
            values
                .into_iter()
                .filter(|(v, _)| !v.is_empty())
                .map(|(v, k)| (Zeroizing::new(v), k)),
        );
        if self.values.len() != before {
            self.rebuild();
        }
    }

    fn rebuild(&mut self) {
        let mut prefixes: Vec<&[u8]> = Vec::new();
        self.owners.clear();
        for (i, (value, _)) in self.values.iter().enumerate() {
            let bytes = value.as_bytes();
            let prefix = &bytes[..bytes.len().min(PREFIX)];
            match prefixes.iter().position(|p| *p == prefix) {
                Some(p) => self.owners[p].push(i),
                None => {
                    prefixes.push(prefix);
                    self.owners.push(vec![i]);
                }
            }
        }
        // Longest prefixes first: where a short value and a long one start at the same place,
        // the long one is tried (the short one lies inside it).
        let mut order: Vec<usize> = (0..prefixes.len()).collect();
        order.sort_by_key(|&p| std::cmp::Reverse(prefixes[p].len()));
        let patterns: Vec<&[u8]> = order.iter().map(|&p| prefixes[p]).collect();
        self.owners = order.iter().map(|&p| self.owners[p].clone()).collect();
        // Leftmost-first, not overlapping: the automaton may then use its vectorised prefilter,
        // and found values do not overlap anyway once resolved.
        self.automaton = AhoCorasickBuilder::new()
            .match_kind(MatchKind::LeftmostFirst)
            .build(&patterns)
            .ok();
    }

    /// Every occurrence of a known value in `text`, as a finding of its kind.
    pub fn find(&self, text: &str, out: &mut Vec<Finding>) {
        let Some(ac) = &self.automaton else {
            return;
        };
        let bytes = text.as_bytes();
        for m in ac.find_iter(bytes) {
            for &i in &self.owners[m.pattern().as_usize()] {
                let (value, kind) = &self.values[i];
                let end = m.start() + value.len();
                if bytes.get(m.start()..end) == Some(value.as_bytes())
                    && text.is_char_boundary(m.start())
                    && text.is_char_boundary(end)
                {
                    out.push(Finding::new(m.start(), end, kind.clone(), "known"));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_occurrence_of_every_value_is_found() {
        let mut l = Literals::default();
        let key = Kind::secret("k");
        l.extend([
            ("hunter2hunter2".to_string(), key.clone()),
            ("hunter2-other".to_string(), key.clone()),
            ("ab".to_string(), key.clone()),
            (String::new(), key),
        ]);
        let text = "x hunter2hunter2 y hunter2-other z hunter2 ab";
        let mut out = Vec::new();
        l.find(text, &mut out);
        let found: Vec<&str> = out.iter().map(|f| &text[f.start..f.end]).collect();
        assert_eq!(found, ["hunter2hunter2", "hunter2-other", "ab"]);
    }
}
