//! A rule and an allowlist as a file states them, and what a file that cannot be used is.

use std::fmt;

/// A rule as a file states it.
#[derive(Debug, Clone, PartialEq)]
pub struct RuleSpec {
    pub id: String,
    pub regex: String,
    /// The capture group holding the secret; 0: the whole match.
    pub secret_group: usize,
    /// The least Shannon entropy (bits per character) the secret must have.
    pub entropy: Option<f32>,
    /// Lower-case literals: the regex runs only near one of them. None: on the whole text.
    pub keywords: Vec<String>,
    pub allow: Vec<AllowSpec>,
    /// `file:line`, for messages.
    pub origin: String,
}

/// What an allowlist looks at: the secret (default), the whole match, or its line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Target {
    #[default]
    Secret,
    Match,
    Line,
}

/// An allowlist as a file states it: a finding is allowed when one of its regexes matches the
/// target or the secret holds one of its stopwords (`all`: when both hold).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AllowSpec {
    pub target: Target,
    pub all: bool,
    pub regexes: Vec<String>,
    pub stopwords: Vec<String>,
}

/// A rule file that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct RuleError {
    pub file: String,
    /// 1-based; 0 when the file could not be read at all.
    pub line: usize,
    pub key: String,
    pub message: String,
}

impl fmt::Display for RuleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if self.line > 0 {
            write!(f, ":{}", self.line)?;
        }
        if !self.key.is_empty() {
            write!(f, ": {}", self.key)?;
        }
        write!(f, ": {}", self.message)
    }
}
