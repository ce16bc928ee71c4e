//! The run's placeholder table: each distinct value masked once gets one placeholder for the
//! whole run. Held in memory only; every value is zeroised when the table is dropped or wiped.

use std::borrow::Borrow;
use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};

use zeroize::Zeroizing;

use crate::kind::Kind;
use crate::placeholder;

/// A masked value, zeroised when dropped.
#[derive(PartialEq, Eq)]
struct Value(Zeroizing<String>);

impl Hash for Value {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.as_str().hash(state);
    }
}

impl Borrow<str> for Value {
    fn borrow(&self) -> &str {
        self.0.as_str()
    }
}

struct Entry {
    placeholder: String,
    value: Value,
    kind: Kind,
    /// Where the value was first seen (a file), for `block` mode's message.
    origin: Option<String>,
    /// A placeholder-like text of the user's, escaped so it comes back as it was: not a
    /// secret, not counted.
    lookalike: bool,
}

/// Placeholders and the values they stand for.
#[derive(Default)]
pub struct Table {
    entries: Vec<Entry>,
    by_value: HashMap<Value, usize>,
    by_placeholder: HashMap<String, usize>,
    /// The last number given to each kind (`SECRET_AWS_ACCESS_KEY_ID` → 2).
    counters: BTreeMap<String, u32>,
}

/// What the table knows of a placeholder, without its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    pub kind: Kind,
    pub origin: Option<String>,
}

impl Table {
    /// The placeholder of `value`, made on first sight.
    pub fn intern(&mut self, value: &str, kind: &Kind, origin: Option<&str>) -> &str {
        self.intern_as(value, kind, origin, false)
    }

    /// The placeholder a user's placeholder-like text stands behind.
    pub fn intern_lookalike(&mut self, text: &str) -> &str {
        self.intern_as(text, &Kind::secret("lookalike"), None, true)
    }

    fn intern_as(
        &mut self,
        value: &str,
        kind: &Kind,
        origin: Option<&str>,
        lookalike: bool,
    ) -> &str {
        let index = match self.by_value.get(value) {
            Some(&i) => i,
            None => {
                let n = self.counters.entry(kind.to_string()).or_insert(0);
                *n += 1;
                let placeholder = placeholder::format(kind, *n);
                let i = self.entries.len();
                self.entries.push(Entry {
                    placeholder: placeholder.clone(),
                    value: Value(Zeroizing::new(value.to_string())),
                    kind: kind.clone(),
                    origin: origin.map(str::to_string),
                    lookalike,
                });
                self.by_value
                    .insert(Value(Zeroizing::new(value.to_string())), i);
                self.by_placeholder.insert(placeholder, i);
                i
            }
        };
        &self.entries[index].placeholder
    }

    /// The value behind `placeholder`, when it is one of the run's.
    pub fn value(&self, placeholder: &str) -> Option<&str> {
        self.by_placeholder
            .get(placeholder)
            .map(|&i| self.entries[i].value.0.as_str())
    }

    /// Whether `placeholder` stands for a user's placeholder-like text.
    pub fn is_lookalike(&self, placeholder: &str) -> bool {
        self.by_placeholder
            .get(placeholder)
            .is_some_and(|&i| self.entries[i].lookalike)
    }

    pub fn origin(&self, placeholder: &str) -> Option<Origin> {
        self.by_placeholder.get(placeholder).map(|&i| Origin {
            kind: self.entries[i].kind.clone(),
            origin: self.entries[i].origin.clone(),
        })
    }

    /// The values masked since the table held `seen` entries (not the escaped lookalikes),
    /// each with its kind.
    pub fn values_since(&self, seen: usize) -> impl Iterator<Item = (&str, &Kind)> {
        self.entries
            .iter()
            .skip(seen)
            .filter(|e| !e.lookalike)
            .map(|e| (e.value.0.as_str(), &e.kind))
    }

    /// The kinds with placeholders (`SECRET_AWS_ACCESS_KEY_ID`), for spotting mangled ones.
    pub fn kinds(&self) -> impl Iterator<Item = &str> {
        self.counters.keys().map(String::as_str)
    }

    /// The last number given to each kind: what a resumed session numbers on from.
    pub fn counters(&self) -> BTreeMap<String, u32> {
        self.counters.clone()
    }

    /// Numbers each kind on from `counters` (a stopped run's), so that a placeholder the
    /// stopped run made never names a value of this one.
    pub fn continue_from(&mut self, counters: &BTreeMap<String, u32>) {
        for (kind, &n) in counters {
            let at = self.counters.entry(kind.clone()).or_insert(0);
            *at = (*at).max(n);
        }
    }

    /// Distinct values masked, by kind (`SECRET_AWS_ACCESS_KEY_ID`): counts only.
    pub fn counts(&self) -> BTreeMap<String, usize> {
        let mut out = BTreeMap::new();
        for e in self.entries.iter().filter(|e| !e.lookalike) {
            *out.entry(e.kind.to_string()).or_insert(0) += 1;
        }
        out
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Forgets every value now, zeroising it.
    pub fn wipe(&mut self) {
        self.by_value.clear();
        self.by_placeholder.clear();
        self.entries.clear();
        self.counters.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_placeholder_per_value_numbered_per_kind() {
        let mut t = Table::default();
        let aws = Kind::secret("aws-access-key-id");
        let mail = Kind::pii("email");
        assert_eq!(
            t.intern("AKIA1", &aws, Some("a.py")),
            "<<SECRET_AWS_ACCESS_KEY_ID_1>>"
        );
        assert_eq!(
            t.intern("AKIA2", &aws, None),
            "<<SECRET_AWS_ACCESS_KEY_ID_2>>"
        );
        assert_eq!(t.intern("a@b.io", &mail, None), "<<PII_EMAIL_1>>");
        assert_eq!(
            t.intern("AKIA1", &aws, None),
            "<<SECRET_AWS_ACCESS_KEY_ID_1>>"
        );
        assert_eq!(t.value("<<SECRET_AWS_ACCESS_KEY_ID_2>>"), Some("AKIA2"));
        assert_eq!(
            t.origin("<<SECRET_AWS_ACCESS_KEY_ID_1>>")
                .and_then(|o| o.origin),
            Some("a.py".into())
        );
        t.intern_lookalike("<<PII_EMAIL_1>>");
        assert_eq!(t.counts().get("SECRET_AWS_ACCESS_KEY_ID"), Some(&2));
        assert_eq!(t.counts().get("SECRET_LOOKALIKE"), None);
        t.wipe();
        assert!(t.is_empty() && t.value("<<PII_EMAIL_1>>").is_none());
    }
}
