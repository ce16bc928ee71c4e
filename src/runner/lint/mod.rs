//! The linter run after the tests (`success_criteria.linter_errors`): eslint, ruff or clippy by
//! language, or the configured `linting.command`, its findings counted into
//! [`ralph_actors::schema::test_run::Lint`] (`docs/coverage-and-linting.md`).
//!
//! Each linter is asked for JSON: eslint's `--format json` (`errorCount`, `warningCount`), ruff's
//! `--output-format json` (one entry per finding), cargo's `--message-format json` (one
//! `compiler-message` per diagnostic). A configured command is read the same way when its output
//! is one of these, and by its exit status otherwise.
//!
//! The linter picked and checked to be installed: `plan`; run and its outcome counted: `run`;
//! each linter's report read into findings: `findings`. Finding installed tools is shared with
//! coverage (`runner::tools`).

mod findings;
mod plan;
mod run;

#[cfg(any(test, feature = "fuzzing"))]
pub(crate) use findings::detect;
pub use plan::{lint_plan, LintError, LintPlan};
pub use run::run_lint;
