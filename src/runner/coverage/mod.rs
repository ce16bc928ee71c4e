//! Code coverage for a test plan (`success_criteria.coverage_threshold`): the flags or wrapper
//! that make each test tool also write a coverage summary file, and the reader of that file
//! (`docs/coverage-and-linting.md`).
//!
//! | framework        | tool                                  | summary read                  |
//! |------------------|---------------------------------------|-------------------------------|
//! | jest             | jest's own (`--coverage`)             | istanbul `json-summary`       |
//! | vitest           | `@vitest/coverage-v8`                 | istanbul `json-summary`       |
//! | mocha, node      | `c8` wrapping the command             | istanbul `json-summary`       |
//! | pytest, unittest | coverage.py (`python -m coverage`)    | `coverage json`               |
//! | cargo, nextest   | `cargo llvm-cov`, else `cargo tarpaulin` | llvm-cov export / tarpaulin JSON |
//!
//! [`with_coverage`] answers first whether the tool is there (at the run's start, before any
//! model is called), then returns the changed plan and a [`CoverageReader`] for after the run.
//!
//! Which tool, whether it is installed and how gathering fails: `tool`; the changed command:
//! `gather`; the summary read after the run: `summary`; the target's own lines, for the
//! coverage of the lines a run changed: `lines`. Finding installed tools is shared with
//! the linters (`runner::tools`).

mod gather;
mod lines;
mod summary;
mod tool;

pub use gather::with_coverage;
pub use summary::CoverageReader;
pub use tool::{CoverageError, CoverageTool};
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) use {lines::target_lines, summary::parse_summary};
