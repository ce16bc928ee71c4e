//! What a guard is built from: the mode, the kinds switched on, the user's rules, patterns and
//! allowlist, and the environment whose secret-looking values are always masked.

use std::path::PathBuf;
use std::sync::Arc;

use regex::Regex;

use crate::efficiency::TokenLens;
use crate::kind::Kind;
use crate::pii::PiiKind;
use crate::rules::{RuleError, RuleSet};
use crate::scan::{Allowlist, Detector};

/// What the guard does with what it finds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Mode {
    /// Replace each value by its placeholder; put the values back before a reply is used.
    #[default]
    Mask,
    /// Refuse the call and stop, naming the kind and the file.
    Block,
    /// Send everything as it is.
    Off,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Mask => "mask",
            Mode::Block => "block",
            Mode::Off => "off",
        }
    }
}

/// A guard's settings, as `local_guard` in the config states them.
#[derive(Clone, Default)]
pub struct GuardConfig {
    pub mode: Mode,
    /// The bundled secret rules (and a team's file) are run.
    pub secrets: bool,
    /// The personal-data kinds switched on.
    pub pii: Vec<PiiKind>,
    /// A gitleaks rules file to add to the bundled rules.
    pub rules_file: Option<PathBuf>,
    /// The user's named patterns: each match (its first group, when it has one) is masked.
    pub patterns: Vec<(String, Regex)>,
    /// Values never masked.
    pub allow_literals: Vec<String>,
    pub allow_patterns: Vec<Regex>,
    /// The environment: the values of variables whose names look secret are masked wherever
    /// they appear.
    pub env: Vec<(String, String)>,
    /// The tokenizer for the token-efficiency check; without one, entropy alone decides.
    pub lens: Option<Arc<dyn TokenLens>>,
}

impl std::fmt::Debug for GuardConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GuardConfig")
            .field("mode", &self.mode)
            .field("secrets", &self.secrets)
            .field("pii", &self.pii)
            .field("rules_file", &self.rules_file)
            .field("patterns", &self.patterns.len())
            .field(
                "allow",
                &(self.allow_literals.len() + self.allow_patterns.len()),
            )
            .finish()
    }
}

impl GuardConfig {
    /// Everything on, in `mask` mode, with no environment: the defaults.
    pub fn all() -> Self {
        Self {
            secrets: true,
            pii: PiiKind::ALL.to_vec(),
            ..Self::default()
        }
    }

    /// The detector these settings describe; `Err` when the rules file cannot be used.
    pub fn detector(&self) -> Result<Detector, RuleError> {
        let mut rules = if self.secrets {
            RuleSet::bundled()
        } else {
            RuleSet::empty()
        };
        if let Some(path) = &self.rules_file {
            rules.extend_from(path)?;
        }
        let patterns = self
            .patterns
            .iter()
            .map(|(name, regex)| (Kind::secret(name), regex.clone()))
            .collect();
        let allow = Allowlist {
            literals: self.allow_literals.clone(),
            patterns: self.allow_patterns.clone(),
        };
        Ok(Detector::new(
            rules,
            patterns,
            self.pii.clone(),
            allow,
            self.lens.clone(),
        ))
    }

    /// The environment's values that are always masked, with their kinds (`SECRET_ENV_<NAME>`).
    pub fn env_literals(&self) -> Vec<(Kind, String)> {
        self.env
            .iter()
            .filter(|(name, value)| secret_name(name) && secret_value(value))
            .map(|(name, value)| (Kind::secret(&format!("env-{name}")), value.clone()))
            .collect()
    }
}

/// Whether a variable's name says it holds a secret.
pub fn secret_name(name: &str) -> bool {
    let n = name.to_ascii_uppercase();
    const WORDS: &[&str] = &[
        "PASSWORD",
        "PASSWD",
        "PASSPHRASE",
        "SECRET",
        "TOKEN",
        "API_KEY",
        "APIKEY",
        "ACCESS_KEY",
        "PRIVATE_KEY",
        "CREDENTIAL",
        "AUTH",
        "COOKIE",
        "DSN",
        "DATABASE_URL",
        "CONNECTION_STRING",
        "_PWD",
        "_KEY",
    ];
    // Names that carry those words without holding secrets.
    const NOT: &[&str] = &[
        "SSH_AUTH_SOCK",
        "GIT_ASKPASS",
        "SSH_ASKPASS",
        "KEYBOARD",
        "_KEYMAP",
    ];
    WORDS.iter().any(|w| n.contains(w)) && !NOT.iter().any(|w| n.contains(w))
}

/// Whether a value could be a secret: long enough to be one, and not a path or a flag.
fn secret_value(value: &str) -> bool {
    value.len() >= 8
        && !value.starts_with('/')
        && !value.starts_with('~')
        && !value.contains(":path=")
        && !value.chars().all(|c| c.is_ascii_digit())
        && !matches!(
            value.to_ascii_lowercase().as_str(),
            "true" | "false" | "enabled" | "disabled"
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_looking_environment_values_are_kept() {
        let config = GuardConfig {
            env: vec![
                ("OPENAI_API_KEY".into(), "sk-proj-abcdefgh12345678".into()),
                ("DB_PASSWORD".into(), "hunter2hunter2".into()),
                ("SSH_AUTH_SOCK".into(), "/tmp/ssh-x/agent.1".into()),
                ("HOME".into(), "/root".into()),
                ("GITHUB_TOKEN".into(), "short".into()),
                ("AWS_SECRET_ACCESS_KEY".into(), "/not/a/secret/path".into()),
            ],
            ..GuardConfig::all()
        };
        let kept: Vec<String> = config
            .env_literals()
            .into_iter()
            .map(|(k, _)| k.to_string())
            .collect();
        assert_eq!(
            kept,
            ["SECRET_ENV_OPENAI_API_KEY", "SECRET_ENV_DB_PASSWORD"]
        );
    }
}
