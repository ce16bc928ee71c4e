//! Fixtures shared by the lint tests: an eslint config and a tiny crate to run clippy on.

use crate::runner::testkit::project;

pub(super) const ESLINT_CONFIG: &str = "module.exports = [{ rules: { 'no-unused-vars': 'error', \
                                 eqeqeq: 'warn' } }];\n";

pub(super) fn crate_project(lib: &str) -> tempfile::TempDir {
    project(&[
        (
            "Cargo.toml",
            "[package]\nname = \"tiny\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
                 [workspace]\n",
        ),
        ("src/lib.rs", lib),
    ])
}
