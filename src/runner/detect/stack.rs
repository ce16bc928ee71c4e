//! The language stacks a directory's manifests can name (node, Python, Rust) and the order they
//! are tried in, and the optional tools ([`Probe`]) that pick a stack's framework: pytest over
//! unittest, cargo-nextest over `cargo test`.

use std::path::Path;
use std::process::Command;
use std::sync::OnceLock;

use crate::runner::language::Language;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stack {
    Node,
    Python,
    Rust,
}

const NODE_MANIFESTS: &[&str] = &["package.json"];
pub(super) const PYTHON_MANIFESTS: &[&str] = &[
    "pyproject.toml",
    "pytest.ini",
    "setup.cfg",
    "tox.ini",
    "requirements.txt",
    "setup.py",
];
const RUST_MANIFESTS: &[&str] = &["Cargo.toml"];

impl Stack {
    pub(super) fn manifests(self) -> &'static [&'static str] {
        match self {
            Stack::Node => NODE_MANIFESTS,
            Stack::Python => PYTHON_MANIFESTS,
            Stack::Rust => RUST_MANIFESTS,
        }
    }

    pub(super) fn of(language: Language) -> Stack {
        match language {
            Language::TypeScript | Language::JavaScript => Stack::Node,
            Language::Python => Stack::Python,
            Language::Rust => Stack::Rust,
        }
    }

    /// The order of a directory's stacks: the target's own language first, so its tests run
    /// (and its manifest is found) before the others'.
    pub(super) fn order_for(target: &Path) -> [Stack; 3] {
        match target.extension().and_then(|e| e.to_str()).unwrap_or("") {
            "py" | "pyi" => [Stack::Python, Stack::Node, Stack::Rust],
            "rs" => [Stack::Rust, Stack::Node, Stack::Python],
            _ => [Stack::Node, Stack::Python, Stack::Rust],
        }
    }
}

/// The test tools that are optional extras, asked about once, on first need: whether pytest can
/// be imported (else Python projects get unittest) and whether cargo-nextest is installed.
#[derive(Debug, Default)]
pub struct Probe {
    pytest: OnceLock<bool>,
    nextest: OnceLock<bool>,
}

impl Probe {
    /// Asks this machine (`python3 -c "import pytest"`, `cargo nextest --version`).
    pub fn system() -> Self {
        Self::default()
    }

    /// Fixed answers, for tests and for callers that know better.
    pub fn fixed(pytest: bool, nextest: bool) -> Self {
        Self {
            pytest: OnceLock::from(pytest),
            nextest: OnceLock::from(nextest),
        }
    }

    pub fn pytest(&self) -> bool {
        *self
            .pytest
            .get_or_init(|| succeeds("python3", &["-c", "import pytest"]))
    }

    pub fn nextest(&self) -> bool {
        *self
            .nextest
            .get_or_init(|| succeeds("cargo", &["nextest", "--version"]))
    }
}

fn succeeds(program: &str, args: &[&str]) -> bool {
    let mut command = Command::new(program);
    command.args(args);
    crate::process::probe::output(command, crate::process::probe::LIMIT)
        .is_ok_and(|o| o.status.success())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_system_probe_asks_this_machine() {
        let probe = Probe::system();
        let nextest = std::process::Command::new("cargo")
            .args(["nextest", "--version"])
            .output()
            .is_ok_and(|o| o.status.success());
        assert_eq!(probe.nextest(), nextest);
        let pytest = std::process::Command::new("python3")
            .args(["-m", "pytest", "--version"])
            .output()
            .is_ok_and(|o| o.status.success());
        assert_eq!(probe.pytest(), pytest);
        let fixed = Probe::fixed(false, true);
        assert!(!fixed.pytest() && fixed.nextest());
    }
}
