//! Helpers for the runner tests that run real tools on small projects in temp directories.
#![allow(clippy::expect_used)]

use std::path::{Path, PathBuf};

/// The JavaScript tools the suite installs (`scripts/setup-deps`); projects link to them.
pub(crate) fn node_tools() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/node-tools/node_modules")
}

/// A temp directory holding `files` (path, content), directories made as needed.
pub(crate) fn project(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    for (name, text) in files {
        let path = dir.path().join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("mkdir");
        }
        std::fs::write(path, text).expect("write");
    }
    dir
}

/// [`project`] with `node_modules` linked to [`node_tools`].
pub(crate) fn node_project(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = project(files);
    std::os::unix::fs::symlink(node_tools(), dir.path().join("node_modules"))
        .expect("link node_modules");
    dir
}

/// A Python virtual environment without pip (so without pytest, coverage or ruff) in `dir`;
/// returns its interpreter.
pub(crate) fn bare_python(dir: &Path) -> PathBuf {
    let venv = dir.join("venv");
    let made = std::process::Command::new("python3")
        .args(["-m", "venv", "--without-pip"])
        .arg(&venv)
        .status()
        .expect("python3 -m venv");
    assert!(made.success());
    venv.join("bin/python")
}

/// The lint tests' eslint config.
pub(crate) const ESLINT_CONFIG: &str = "module.exports = [{ rules: { 'no-unused-vars': 'error', \
                                 eqeqeq: 'warn' } }];\n";

pub(crate) fn crate_project(lib: &str) -> tempfile::TempDir {
    project(&[
        (
            "Cargo.toml",
            "[package]\nname = \"tiny\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
                 [workspace]\n",
        ),
        ("src/lib.rs", lib),
    ])
}

/// `git` with `args` in `dir`, committing as the tests' author (`T <t@example.com>`); it must
/// succeed.
pub(crate) fn git(dir: &Path, args: &[&str]) {
    let out = std::process::Command::new("git")
        .args(["-c", "user.name=T", "-c", "user.email=t@example.com"])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}");
}
