//! Locating a project's installed tools, for the coverage and lint checks that run before any
//! model is called: executables on `PATH` and cargo subcommands ([`ToolEnv`]), node packages and
//! binaries resolved upward through `node_modules`, Python modules the project's interpreter
//! imports; and the shell quoting of the paths put in those tools' commands.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Whether `python` (as the test command calls it) imports `module` in `cwd`.
pub(super) fn python_imports(
    python: &str,
    module: &str,
    cwd: &Path,
    env: &[(String, String)],
) -> bool {
    capture(&format!("{python} -c 'import {module}'"), cwd, env).is_some()
}

/// Runs `sh -c <command>` in `cwd`; its stdout when it succeeds within the tool checks' limit.
pub(super) fn capture(command: &str, cwd: &Path, env: &[(String, String)]) -> Option<String> {
    let mut sh = Command::new("sh");
    sh.arg("-c")
        .arg(command)
        .current_dir(cwd)
        .envs(env.iter().map(|(k, v)| (k, v)));
    let out = crate::process::probe::output(sh, crate::process::probe::LIMIT).ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Where tools are looked for: `PATH`, and cargo's bin directory for cargo subcommands.
#[derive(Debug, Clone)]
pub(super) struct ToolEnv {
    pub path: Option<OsString>,
    pub cargo_home: Option<PathBuf>,
}

impl ToolEnv {
    pub fn current() -> Self {
        let cargo_home = std::env::var_os("CARGO_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")));
        Self {
            path: std::env::var_os("PATH"),
            cargo_home,
        }
    }

    /// The executable `name` on `PATH`.
    pub fn which(&self, name: &str) -> Option<PathBuf> {
        crate::fsutil::which(name, self.path.as_deref())
    }

    /// Whether cargo finds the subcommand binary `name` (`cargo-llvm-cov`): on `PATH` or in
    /// `$CARGO_HOME/bin`, where `cargo install` puts it.
    pub fn cargo_subcommand(&self, name: &str) -> bool {
        self.which(name).is_some()
            || self
                .cargo_home
                .as_ref()
                .is_some_and(|home| crate::fsutil::is_executable(&home.join("bin").join(name)))
    }
}

/// `rel` in `start` or the nearest ancestor that has it, as node resolves `node_modules`.
pub(super) fn find_upward(start: &Path, rel: &str) -> Option<PathBuf> {
    let start = std::path::absolute(start).ok()?;
    start
        .ancestors()
        .map(|dir| dir.join(rel))
        .find(|candidate| candidate.exists())
}

/// Whether the node package resolves from `cwd`.
pub(super) fn node_package(cwd: &Path, package: &str) -> bool {
    find_upward(cwd, &format!("node_modules/{package}/package.json")).is_some()
}

/// Whether `npx --no-install <bin>` finds `bin` from `cwd`: a local install, or one on `PATH`.
pub(super) fn node_bin(cwd: &Path, bin: &str, env: &ToolEnv) -> bool {
    find_upward(cwd, &format!("node_modules/.bin/{bin}")).is_some() || env.which(bin).is_some()
}

/// `path` as one shell word.
pub(super) fn sh_quote(path: impl AsRef<OsStr>) -> String {
    let text = path.as_ref().to_string_lossy();
    if !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+=:,@%".contains(c))
    {
        return text.into_owned();
    }
    format!("'{}'", text.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_quoting() {
        assert_eq!(sh_quote("/tmp/a-b/c.json"), "/tmp/a-b/c.json");
        assert_eq!(sh_quote("/tmp/a b/it's"), r"'/tmp/a b/it'\''s'");
        assert_eq!(sh_quote(""), "''");
    }
}
