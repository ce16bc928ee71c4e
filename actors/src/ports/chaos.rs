//! The port to Chaos's tests: how a generated test file fits the project (for Chaos's prompt),
//! and running it, saved in the session folder, against the target as it is on disk.

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use std::time::Duration;

use crate::ports::runner::RunnerError;
use crate::schema::adversarial::Counterexample;
use crate::schema::mutation::{Mutant, MutationRun};
use crate::schema::test_run::{LineHits, TestRun};

/// How a Chaos test file fits the project: what its prompt says about the file it must write.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChaosLayout {
    /// The framework that runs it: `pytest`, `jest`, `vitest`, `mocha`, `node`, `unittest`,
    /// `cargo`.
    pub framework: String,
    /// `python`, `javascript`, `typescript`, `rust`.
    pub language: String,
    /// The file's name (round 1's; later rounds differ only in the number).
    pub file_name: String,
    /// How the file imports the target, exactly (`from median import median`,
    /// `const { median } = require('../../../src/median')`).
    pub import_hint: String,
    /// The property-based testing library, with how to import it, when one is available.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub property_library: Option<String>,
    /// How the library's runs are sized and seeded, in the prompt's words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub property_setup: Option<String>,
    /// How concurrency tests run interleavings in this stack, in the prompt's words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<String>,
    /// Anything else the file must do to run (a test module's attribute, an ESM import).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// A mutation run on the target as it is on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MutationRequest {
    /// The lines to mutate (`[first, last]`, 1-based): those the run changed. Empty: the whole
    /// file.
    pub lines: Vec<[u32; 2]>,
    /// Chaos's rounds whose files run beside the unit tests (their tests all pass on the fix).
    pub rounds: Vec<u32>,
    /// Only these mutants (a re-run of the survivors); empty: every mutant on `lines`.
    pub only: Vec<Mutant>,
    /// The longest the tool may run.
    pub timeout: Duration,
}

/// Chaos's files run again with coverage ([`ChaosRunner::cover`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Covered {
    /// The target's lines they ran, together; `None` when the tool reports no lines per file.
    pub hits: Option<LineHits>,
    /// The runs' time, test time as any test run's.
    pub duration_ms: u64,
}

/// Runs Chaos's test files. Each round's file is kept in the session folder; running it kills
/// its process group on `cancel`, as the unit tests' runner does.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait::async_trait]
pub trait ChaosRunner: Send + Sync {
    /// How round `round`'s file fits the project.
    fn layout(&self, round: u32) -> ChaosLayout;

    /// Saves `suite` as round `round`'s file and runs it; the file's path relative to the
    /// project root is [`ChaosRunner::path`].
    async fn run(
        &self,
        round: u32,
        suite: &str,
        cancel: CancellationToken,
    ) -> Result<TestRun, RunnerError>;

    /// Runs round `round`'s saved file again (a re-check of its findings after a fix).
    async fn rerun(&self, round: u32, cancel: CancellationToken) -> Result<TestRun, RunnerError>;

    /// Round `round`'s saved file, if there is one.
    async fn suite(&self, round: u32) -> Option<String>;

    /// Where round `round`'s file is, relative to the project root.
    fn path(&self, round: u32) -> String;

    /// Appends to round `round`'s file a named test that replays `example` exactly (Hypothesis:
    /// the property's `.hypothesis.inner_test` called with the failing arguments). Returns the
    /// new test's name, or `None` when the language has no such replay.
    async fn regress(
        &self,
        round: u32,
        example: &Counterexample,
    ) -> Result<Option<String>, RunnerError>;

    /// Appends `code` (a test written to replay a counterexample) to round `round`'s file.
    async fn append(&self, round: u32, code: &str) -> Result<(), RunnerError>;

    /// Copies the files of `rounds` into the project as new test files beside its unit tests
    /// (`chaos.keep_tests`), their imports of the target rewritten for where they land; never
    /// over an existing file. Returns the paths written, relative to the project root, and a
    /// warning for each file not written or needing a library the project lacks.
    async fn keep(&self, rounds: Vec<u32>) -> Result<(Vec<String>, Vec<String>), RunnerError>;

    /// Runs the files of `rounds` again with the project's coverage tool: the target's lines
    /// they ran, together (`None` when the tool does not report lines per file), and the runs'
    /// time.
    async fn cover(
        &self,
        rounds: Vec<u32>,
        cancel: CancellationToken,
    ) -> Result<Covered, RunnerError>;

    /// Mutation-tests the target with the project's unit tests and the Chaos files named, in
    /// a scratch copy of the project (the user's files are never mutated), with the language's
    /// tool (StrykerJS, mutmut). Fails when the tool fails, runs past `request.timeout` or
    /// finds the tests failing before any mutant.
    async fn mutate(
        &self,
        request: MutationRequest,
        cancel: CancellationToken,
    ) -> Result<MutationRun, RunnerError>;
}
