//! What a finding is: its class (a secret or personal data), its kind, and where it lies.

use std::fmt;

/// Secrets (credentials, keys, tokens) and personal data are counted and switched apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Class {
    Secret,
    Pii,
}

impl Class {
    /// The placeholder's first word: `SECRET` or `PII`.
    pub fn word(self) -> &'static str {
        match self {
            Class::Secret => "SECRET",
            Class::Pii => "PII",
        }
    }
}

/// A kind of value: `SECRET_AWS_ACCESS_KEY_ID`, `PII_EMAIL`. The label is upper-case ASCII
/// letters, digits and single underscores, so that it can stand in a placeholder as it is.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Kind {
    pub class: Class,
    label: String,
}

impl Kind {
    /// A kind whose label is made from `name` (a rule id such as `aws-access-key-id`, or an
    /// environment variable's name): letters and digits upper-cased, every other run of
    /// characters one underscore.
    pub fn new(class: Class, name: &str) -> Self {
        let mut label = String::with_capacity(name.len());
        for c in name.chars() {
            if c.is_ascii_alphanumeric() {
                label.push(c.to_ascii_uppercase());
            } else if !label.is_empty() && !label.ends_with('_') {
                label.push('_');
            }
        }
        while label.ends_with('_') {
            label.pop();
        }
        if label.is_empty() {
            label.push_str("VALUE");
        }
        Self { class, label }
    }

    pub fn secret(name: &str) -> Self {
        Self::new(Class::Secret, name)
    }

    pub fn pii(name: &str) -> Self {
        Self::new(Class::Pii, name)
    }

    /// The label without the class: `AWS_ACCESS_KEY_ID`.
    pub fn label(&self) -> &str {
        &self.label
    }
}

/// `SECRET_AWS_ACCESS_KEY_ID`, as reports count it and placeholders name it.
impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}_{}", self.class.word(), self.label)
    }
}

/// A value found in a text: bytes `start..end`, of `kind`, found by `rule` (a rule's id, or
/// the detector's name for personal data).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub start: usize,
    pub end: usize,
    pub kind: Kind,
    pub rule: String,
}

impl Finding {
    pub fn new(start: usize, end: usize, kind: Kind, rule: impl Into<String>) -> Self {
        Self {
            start,
            end,
            kind,
            rule: rule.into(),
        }
    }

    pub fn len(&self) -> usize {
        self.end - self.start
    }

    pub fn is_empty(&self) -> bool {
        self.end <= self.start
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_placeholder_safe() {
        assert_eq!(
            Kind::secret("aws-access-key-id").to_string(),
            "SECRET_AWS_ACCESS_KEY_ID"
        );
        assert_eq!(Kind::pii("e-mail").to_string(), "PII_E_MAIL");
        assert_eq!(Kind::secret("--").label(), "VALUE");
        assert_eq!(Kind::secret("gitlab  pat__").label(), "GITLAB_PAT");
    }
}
