//! The environment of a test command: ours without secrets, with plain-text output forced.

/// Variables that hold credentials and never reach a test: the provider keys ralph-loop and
/// micro-agent read, and any name ending in one of [`SECRET_SUFFIXES`].
const SECRET_NAMES: &[&str] = &[
    "OPENAI_API_KEY",
    "OPENAI_KEY",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "AZURE_OPENAI_API_KEY",
];
const SECRET_SUFFIXES: &[&str] = &[
    "_API_KEY",
    "_TOKEN",
    "_SECRET",
    "_SECRET_KEY",
    "_ACCESS_KEY",
    "_PASSWORD",
];

/// Set for every test: plain text, and no watch mode or interactive prompts (jest and vitest
/// watch unless `CI` is set).
pub const FORCED_ENV: &[(&str, &str)] = &[("CI", "true"), ("NO_COLOR", "1"), ("FORCE_COLOR", "0")];

/// True when a variable of this name is a secret and is kept from the test command.
pub fn is_secret_var(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_NAMES.contains(&upper.as_str()) || SECRET_SUFFIXES.iter().any(|s| upper.ends_with(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_names() {
        for name in [
            "OPENAI_API_KEY",
            "OPENAI_KEY",
            "GOOGLE_API_KEY",
            "GITHUB_TOKEN",
            "DB_PASSWORD",
            "X_SECRET",
        ] {
            assert!(is_secret_var(name), "{name}");
        }
        for name in [
            "PATH",
            "HOME",
            "OPENAI_BASE_URL",
            "TOKENIZERS_PARALLELISM",
            "CI",
        ] {
            assert!(!is_secret_var(name), "{name}");
        }
    }
}
