//! The `local_guard` section: what LocalGuard masks before anything leaves the machine, and
//! the guard a run is built with ([`LocalGuardConfig::guard_config`]).

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use ralph_guard::pii::PiiKind;
use ralph_guard::{GuardConfig, Mode};
use regex::Regex;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};

/// `local_guard:` in the config.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LocalGuardConfig {
    /// `false` sends everything as it is (as `mode: off`).
    pub enabled: bool,
    /// `mask` (default), `block` or `off`.
    pub mode: GuardMode,
    /// The bundled secret rules (and `rules`).
    pub secrets: bool,
    /// Each kind of personal data, on or off: `email`, `phone`, `ip`, `credit_card`, `iban`,
    /// `national_id`. Kinds left out stay on.
    #[serde(deserialize_with = "pii_switches")]
    pub pii: BTreeMap<String, bool>,
    /// A gitleaks rules file (TOML) added to the bundled rules; relative to this file.
    pub rules: Option<PathBuf>,
    /// Named patterns of the user's own: every match (its first group, when it has one) is
    /// masked as `SECRET_<NAME>`.
    #[serde(deserialize_with = "pattern_map")]
    pub patterns: BTreeMap<String, String>,
    /// Values never masked: a literal value, or `{regex: ...}`.
    pub allow: Vec<AllowEntry>,
}

impl Default for LocalGuardConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            mode: GuardMode::Mask,
            secrets: true,
            pii: PiiKind::ALL
                .iter()
                .map(|k| (k.name().to_string(), true))
                .collect(),
            rules: None,
            patterns: BTreeMap::new(),
            allow: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GuardMode {
    Mask,
    Block,
    Off,
}

/// An allowlist entry: a literal value, or `{regex: ...}`, a pattern the value must match.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum AllowEntry {
    Literal(String),
    Pattern { regex: String },
}

impl<'de> Deserialize<'de> for AllowEntry {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = AllowEntry;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a value never to mask, or {regex: PATTERN}")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<AllowEntry, E> {
                Ok(AllowEntry::Literal(s.to_string()))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<AllowEntry, A::Error> {
                let mut regex = None;
                while let Some(key) = map.next_key::<String>()? {
                    if key != "regex" {
                        return Err(de::Error::custom(format!(
                            "unknown key `{key}` (an entry is a value, or {{regex: PATTERN}})"
                        )));
                    }
                    regex = Some(map.next_value::<RegexValue>()?.0);
                }
                regex
                    .map(|regex| AllowEntry::Pattern { regex })
                    .ok_or_else(|| de::Error::custom("an entry needs `regex`"))
            }
        }
        d.deserialize_any(V)
    }
}

impl LocalGuardConfig {
    /// The guard's settings: these, with the process's `env` (whose secret-looking values are
    /// always masked). The patterns compiled when the file was read; a rules file is read when
    /// the guard is built.
    pub fn guard_config(&self, env: Vec<(String, String)>) -> GuardConfig {
        let mode = match (self.enabled, self.mode) {
            (false, _) | (_, GuardMode::Off) => Mode::Off,
            (true, GuardMode::Mask) => Mode::Mask,
            (true, GuardMode::Block) => Mode::Block,
        };
        let pii = PiiKind::ALL
            .into_iter()
            .filter(|k| self.pii.get(k.name()).copied().unwrap_or(true))
            .collect();
        let mut allow_literals = Vec::new();
        let mut allow_patterns = Vec::new();
        for entry in &self.allow {
            match entry {
                AllowEntry::Literal(value) => allow_literals.push(value.clone()),
                AllowEntry::Pattern { regex } => {
                    if let Ok(r) = Regex::new(regex) {
                        allow_patterns.push(r);
                    }
                }
            }
        }
        GuardConfig {
            mode,
            secrets: self.secrets,
            pii,
            rules_file: self.rules.clone(),
            patterns: self
                .patterns
                .iter()
                .filter_map(|(name, r)| Regex::new(r).ok().map(|r| (name.clone(), r)))
                .collect(),
            allow_literals,
            allow_patterns,
            env,
            lens: None,
        }
    }
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `patterns:` — name → regex, each compiled as it is read.
fn pattern_map<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<String, String>, D::Error> {
    struct Patterns;
    impl<'de> Visitor<'de> for Patterns {
        type Value = BTreeMap<String, String>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a map of pattern names to regexes")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut out = BTreeMap::new();
            while let Some(name) = map.next_key::<String>()? {
                if !name.chars().any(|c| c.is_ascii_alphanumeric()) {
                    return Err(de::Error::custom(format!(
                        "pattern name `{name}` needs a letter or digit: it names the placeholder"
                    )));
                }
                let regex = map.next_value::<RegexValue>()?.0;
                out.insert(name, regex);
            }
            Ok(out)
        }
    }
    d.deserialize_map(Patterns)
}

/// A regex as a map's value, checked inside its own visitor so the error is placed at it.
struct RegexValue(String);

impl<'de> Deserialize<'de> for RegexValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = RegexValue;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a regex")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<RegexValue, E> {
                Regex::new(s)
                    .map(|_| RegexValue(s.to_string()))
                    .map_err(|e| {
                        E::custom(format!("not a valid regex: {}", one_line(&e.to_string())))
                    })
            }
        }
        d.deserialize_str(V)
    }
}

/// `pii:` — kind → on/off, kinds checked by name.
fn pii_switches<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<String, bool>, D::Error> {
    struct Switches;
    impl<'de> Visitor<'de> for Switches {
        type Value = BTreeMap<String, bool>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a map of personal-data kinds to true or false")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut out: BTreeMap<String, bool> = PiiKind::ALL
                .iter()
                .map(|k| (k.name().to_string(), true))
                .collect();
            while let Some(name) = map.next_key::<String>()? {
                if PiiKind::parse(&name).is_none() {
                    let known: Vec<&str> = PiiKind::ALL.iter().map(|k| k.name()).collect();
                    return Err(de::Error::custom(format!(
                        "unknown kind `{name}` (known: {})",
                        known.join(", ")
                    )));
                }
                out.insert(name, map.next_value()?);
            }
            Ok(out)
        }
    }
    d.deserialize_map(Switches)
}
