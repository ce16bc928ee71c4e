//! Secret rules: the bundled set (`guard/rules/secrets.toml`, our own rules in gitleaks'
//! format), a team's gitleaks file (`local_guard.rules`), compiled on first use.
//!
//! - `spec`: a rule and an allowlist as a file states them, and the error a bad file is;
//! - `gitleaks`: reading the format, with errors that name the file, line and key;
//! - this module: the compiled [`Rule`], [`RuleSet`] and allowlists.

mod gitleaks;
mod spec;

use std::path::Path;
use std::sync::OnceLock;

use regex::bytes::{Regex, RegexBuilder};

use crate::kind::Kind;
pub use spec::{AllowSpec, RuleError, RuleSpec, Target};

// `bundled_specs()`: the bundled rules (`rules/secrets.toml`), read by build.rs.
include!(concat!(env!("OUT_DIR"), "/bundled.rs"));

/// Whether `pattern` can match across lines: it sets `(?s)`, or it writes a line break (`\n`,
/// `\r`; not `\\n`, an escaped backslash before an `n`, as a JSON-escaped PEM key is matched).
pub fn spans_lines(pattern: &str) -> bool {
    if pattern.contains("(?s") {
        return true;
    }
    let b = pattern.as_bytes();
    let mut i = 0;
    while i + 1 < b.len() {
        if b[i] == b'\\' {
            if matches!(b[i + 1], b'n' | b'r') {
                return true;
            }
            // A backslash and the byte after it are one escape: an escaped backslash never
            // starts another.
            i += 2;
        } else {
            i += 1;
        }
    }
    false
}

/// A rule's pattern as RE2 (gitleaks' engine) reads it: `\w`, `\d`, `\s` and `(?i)` are ASCII, and
/// it runs on bytes. That is what gitleaks files are written for, and it compiles and runs many
/// times faster than the same pattern over Unicode classes.
fn compile(pattern: &str) -> Result<Regex, regex::Error> {
    RegexBuilder::new(pattern)
        .unicode(false)
        .size_limit(1 << 22)
        .build()
}

/// A compiled allowlist.
#[derive(Debug)]
pub struct Allow {
    target: Target,
    all: bool,
    regexes: Vec<Regex>,
    stopwords: Vec<String>,
}

impl Allow {
    fn compile(spec: &AllowSpec, origin: &str) -> Result<Self, String> {
        let regexes = spec
            .regexes
            .iter()
            .map(|r| compile(r).map_err(|e| format!("{origin}: allowlist regex `{r}`: {e}")))
            .collect::<Result<_, _>>()?;
        Ok(Self {
            target: spec.target,
            all: spec.all,
            regexes,
            stopwords: spec.stopwords.clone(),
        })
    }

    /// Whether this allowlist lets `secret` (in `matched`, on `line`) through.
    pub fn allows(&self, secret: &str, matched: &str, line: &str) -> bool {
        let target = match self.target {
            Target::Secret => secret,
            Target::Match => matched,
            Target::Line => line,
        };
        let by_regex =
            !self.regexes.is_empty() && self.regexes.iter().any(|r| r.is_match(target.as_bytes()));
        let lower = secret.to_ascii_lowercase();
        let by_word =
            !self.stopwords.is_empty() && self.stopwords.iter().any(|w| lower.contains(w.as_str()));
        if self.all {
            (self.regexes.is_empty() || by_regex) && (self.stopwords.is_empty() || by_word)
        } else {
            by_regex || by_word
        }
    }
}

/// A rule ready to run; its regex is compiled the first time one of its keywords is seen.
#[derive(Debug)]
pub struct Rule {
    pub spec: RuleSpec,
    pub kind: Kind,
    /// The regex can match across lines (`(?s)`, `\n`): its window runs past the keyword's line.
    pub multiline: bool,
    compiled: OnceLock<Option<(Regex, Vec<Allow>)>>,
}

impl Rule {
    fn new(spec: RuleSpec) -> Self {
        let multiline = spans_lines(&spec.regex);
        Self {
            kind: Kind::secret(&spec.id),
            multiline,
            spec,
            compiled: OnceLock::new(),
        }
    }

    fn compile(spec: &RuleSpec) -> Result<(Regex, Vec<Allow>), String> {
        let regex = compile(&spec.regex)
            .map_err(|e| format!("{}: rule `{}`: regex: {e}", spec.origin, spec.id))?;
        if spec.secret_group >= regex.captures_len() {
            return Err(format!(
                "{}: rule `{}`: secretGroup {} but the regex has {} groups",
                spec.origin,
                spec.id,
                spec.secret_group,
                regex.captures_len() - 1
            ));
        }
        let allow = spec
            .allow
            .iter()
            .map(|a| Allow::compile(a, &spec.origin))
            .collect::<Result<_, _>>()?;
        Ok((regex, allow))
    }

    /// The compiled regex and allowlists; `None` for a bundled rule that does not compile (the
    /// bundled set's tests compile every rule).
    pub fn compiled(&self) -> Option<&(Regex, Vec<Allow>)> {
        self.compiled
            .get_or_init(|| Self::compile(&self.spec).ok())
            .as_ref()
    }
}

/// The rules a detector runs, and the allowlists every rule shares.
#[derive(Debug)]
pub struct RuleSet {
    pub rules: Vec<Rule>,
    pub allow: Vec<Allow>,
    /// What was left aside while loading (rules a text scanner cannot use).
    pub notes: Vec<String>,
}

impl RuleSet {
    /// The bundled rules.
    pub fn bundled() -> Self {
        let (rules, global) = bundled_specs();
        // The bundled allowlists' regexes compile in this crate's tests: one that did not would
        // be a build defect, left out rather than a panic.
        let allow = global
            .iter()
            .filter_map(|spec| Allow::compile(spec, "bundled rules").ok())
            .collect();
        Self {
            rules: rules.into_iter().map(Rule::new).collect(),
            allow,
            notes: Vec::new(),
        }
    }

    /// No rules at all.
    pub fn empty() -> Self {
        Self {
            rules: Vec::new(),
            allow: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// Adds the rules of a gitleaks file (`text`, read from `file`): a rule with a bundled
    /// rule's id replaces it, `[extend] disabledRules` leaves bundled rules out, its global
    /// allowlists apply to every rule. Every regex is compiled now, so a bad one is an error
    /// at start.
    pub fn extend_with(&mut self, file: &str, text: &str) -> Result<(), RuleError> {
        let parsed = gitleaks::parse(file, text)?;
        let fail = |spec: &RuleSpec, message: String| RuleError {
            file: file.to_string(),
            line: spec
                .origin
                .rsplit(':')
                .next()
                .and_then(|l| l.parse().ok())
                .unwrap_or(0),
            key: format!("rules.{}.regex", spec.id),
            message: message
                .split_once(": regex: ")
                .map_or(message.clone(), |(_, m)| m.to_string()),
        };
        self.rules
            .retain(|r| !parsed.disabled.iter().any(|d| d == &r.spec.id));
        for spec in parsed.rules {
            let compiled = Rule::compile(&spec).map_err(|m| fail(&spec, m))?;
            let rule = Rule::new(spec);
            let _ = rule.compiled.set(Some(compiled));
            match self.rules.iter_mut().find(|r| r.spec.id == rule.spec.id) {
                Some(old) => *old = rule,
                None => self.rules.push(rule),
            }
        }
        for spec in &parsed.allow {
            let allow = Allow::compile(spec, file).map_err(|message| RuleError {
                file: file.to_string(),
                line: 0,
                key: "allowlist".into(),
                message,
            })?;
            self.allow.push(allow);
        }
        self.notes.extend(parsed.notes);
        Ok(())
    }

    /// Adds the gitleaks file at `path`.
    pub fn extend_from(&mut self, path: &Path) -> Result<(), RuleError> {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| RuleError {
            file: name.clone(),
            line: 0,
            key: String::new(),
            message: format!("cannot read the rules file: {e}"),
        })?;
        self.extend_with(&name, &text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_bundled_rule_compiles_and_has_keywords() {
        let file = gitleaks::parse("bundled rules", include_str!("../../rules/secrets.toml"));
        assert!(file.is_ok(), "{file:?}");
        let set = RuleSet::bundled();
        assert!(set.rules.len() >= 100, "{} rules", set.rules.len());
        let mut ids = std::collections::BTreeSet::new();
        for rule in &set.rules {
            assert!(ids.insert(rule.spec.id.clone()), "{} twice", rule.spec.id);
            assert!(
                !rule.spec.keywords.is_empty(),
                "{}: no keywords",
                rule.spec.id
            );
            if let Err(e) = Rule::compile(&rule.spec) {
                panic!("{e}");
            }
        }
    }

    #[test]
    fn a_team_file_replaces_disables_and_adds() {
        let mut set = RuleSet::bundled();
        let before = set.rules.len();
        let first = set.rules[0].spec.id.clone();
        let text = format!(
            "[extend]\nuseDefault = true\ndisabledRules = [\"{first}\"]\n\n[[rules]]\nid = \"acme-token\"\nregex = '''acme_[a-z]{{8}}'''\nkeywords = [\"acme_\"]\n"
        );
        let added = set.extend_with("team.toml", &text);
        assert!(added.is_ok(), "{added:?}");
        assert_eq!(set.rules.len(), before);
        assert!(set.rules.iter().all(|r| r.spec.id != first));
        assert!(set.rules.iter().any(|r| r.spec.id == "acme-token"));
        let bad = set.extend_with(
            "team.toml",
            "[[rules]]\nid = \"broken\"\nregex = '''(unclosed'''\n",
        );
        let e = bad.expect_err("a bad regex");
        assert_eq!((e.line, e.key.as_str()), (1, "rules.broken.regex"));
        assert!(
            e.to_string()
                .starts_with("team.toml:1: rules.broken.regex: "),
            "{e}"
        );
    }

    #[test]
    fn allowlists_look_at_their_target() {
        let spec = AllowSpec {
            target: Target::Line,
            regexes: vec!["fixtures".into()],
            ..AllowSpec::default()
        };
        let a = Allow::compile(&spec, "t").expect("compiles");
        assert!(a.allows("abc", "k=abc", "load('fixtures/k=abc')"));
        assert!(!a.allows("abc", "k=abc", "k=abc"));
        let words = AllowSpec {
            stopwords: vec!["example".into()],
            ..AllowSpec::default()
        };
        let a = Allow::compile(&words, "t").expect("compiles");
        assert!(a.allows("AKIAEXAMPLE", "", ""));
    }
}
