//! The languages ralph-loop runs tests for.

use std::path::Path;

/// A project language: decides the test tools looked for and how failures are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Language {
    TypeScript,
    JavaScript,
    Python,
    Rust,
}

impl Language {
    pub const ALL: [Language; 4] = [
        Language::TypeScript,
        Language::JavaScript,
        Language::Python,
        Language::Rust,
    ];

    /// The name used in config, on the command line and in results.
    pub fn as_str(self) -> &'static str {
        match self {
            Language::TypeScript => "typescript",
            Language::JavaScript => "javascript",
            Language::Python => "python",
            Language::Rust => "rust",
        }
    }

    /// Accepts the names of [`Language::as_str`] and the usual short forms (`ts`, `js`, `py`, `rs`).
    pub fn parse(name: &str) -> Option<Language> {
        match name.trim().to_ascii_lowercase().as_str() {
            "typescript" | "ts" | "tsx" => Some(Language::TypeScript),
            "javascript" | "js" | "jsx" | "node" => Some(Language::JavaScript),
            "python" | "py" => Some(Language::Python),
            "rust" | "rs" => Some(Language::Rust),
            _ => None,
        }
    }

    /// The language of a source file, by its extension.
    pub fn of_file(path: &Path) -> Option<Language> {
        match path.extension()?.to_str()? {
            "ts" | "tsx" | "mts" | "cts" => Some(Language::TypeScript),
            "js" | "jsx" | "mjs" | "cjs" => Some(Language::JavaScript),
            "py" | "pyi" => Some(Language::Python),
            "rs" => Some(Language::Rust),
            _ => None,
        }
    }

    /// TypeScript and JavaScript share their tools (package.json, jest, vitest, mocha).
    pub fn is_node(self) -> bool {
        matches!(self, Language::TypeScript | Language::JavaScript)
    }
}

impl std::fmt::Display for Language {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Language {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Language::parse(s).ok_or_else(|| {
            format!("unknown language `{s}`: expected typescript, javascript, python or rust")
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for l in Language::ALL {
            assert_eq!(Language::parse(l.as_str()), Some(l));
        }
        assert_eq!(Language::parse("TS"), Some(Language::TypeScript));
        assert!("cobol".parse::<Language>().is_err());
        assert_eq!(
            Language::of_file(Path::new("src/a.tsx")),
            Some(Language::TypeScript)
        );
        assert_eq!(Language::of_file(Path::new("a.go")), None);
    }
}
