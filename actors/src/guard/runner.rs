//! Test runs through LocalGuard: a test that prints a secret has it masked before the run's
//! result reaches the core (and so before it is stored); Chaos's test files are written with
//! their values put back.

use std::sync::Arc;

use ralph_guard::Guard;
use tokio_util::sync::CancellationToken;

use super::mask_strings;
use crate::ports::chaos::{ChaosLayout, ChaosRunner, Covered, MutationRequest};
use crate::ports::runner::{RunnerError, TestRunner};
use crate::schema::adversarial::Counterexample;
use crate::schema::mutation::MutationRun;
use crate::schema::test_run::TestRun;

/// Where test output comes from, for `block` mode's message.
const TEST_OUTPUT: &str = "the test output";

fn masked<T: serde::Serialize + serde::de::DeserializeOwned>(
    guard: &Guard,
    value: T,
    origin: &str,
) -> Result<T, RunnerError> {
    mask_strings(guard, value, Some(origin))
        .map_err(|e| RunnerError::Internal(format!("cannot mask the results: {e}")))
}

fn masked_error(guard: &Guard, e: RunnerError) -> RunnerError {
    match e {
        RunnerError::Setup(m) => RunnerError::Setup(guard.mask(&m, Some(TEST_OUTPUT)).text),
        RunnerError::Internal(m) => RunnerError::Internal(guard.mask(&m, Some(TEST_OUTPUT)).text),
        RunnerError::Unrestorable(m) => RunnerError::Unrestorable(m),
    }
}

/// The unit tests' runner, its results masked.
pub struct GuardedRunner {
    inner: Arc<dyn TestRunner>,
    guard: Arc<Guard>,
}

impl GuardedRunner {
    pub fn new(inner: Arc<dyn TestRunner>, guard: Arc<Guard>) -> Self {
        Self { inner, guard }
    }
}

#[async_trait::async_trait]
impl TestRunner for GuardedRunner {
    async fn run(&self, cancel: CancellationToken) -> Result<TestRun, RunnerError> {
        match self.inner.run(cancel).await {
            Ok(run) => masked(&self.guard, run, TEST_OUTPUT),
            Err(e) => Err(masked_error(&self.guard, e)),
        }
    }

    fn command(&self) -> String {
        self.guard.mask(&self.inner.command(), None).text
    }
}

/// Chaos's runner: its files written with their values, its results masked.
pub struct GuardedChaos {
    inner: Arc<dyn ChaosRunner>,
    guard: Arc<Guard>,
}

impl GuardedChaos {
    pub fn new(inner: Arc<dyn ChaosRunner>, guard: Arc<Guard>) -> Self {
        Self { inner, guard }
    }

    fn unmask(&self, text: &str) -> Result<String, RunnerError> {
        self.guard
            .unmask(text)
            .map_err(|e| RunnerError::Unrestorable(e.to_string()))
    }

    fn results<T: serde::Serialize + serde::de::DeserializeOwned>(
        &self,
        result: Result<T, RunnerError>,
    ) -> Result<T, RunnerError> {
        match result {
            Ok(v) => masked(&self.guard, v, TEST_OUTPUT),
            Err(e) => Err(masked_error(&self.guard, e)),
        }
    }
}

#[async_trait::async_trait]
impl ChaosRunner for GuardedChaos {
    fn layout(&self, round: u32) -> ChaosLayout {
        self.inner.layout(round)
    }

    async fn run(
        &self,
        round: u32,
        suite: &str,
        cancel: CancellationToken,
    ) -> Result<TestRun, RunnerError> {
        let real = self.unmask(suite)?;
        self.results(self.inner.run(round, &real, cancel).await)
    }

    async fn rerun(&self, round: u32, cancel: CancellationToken) -> Result<TestRun, RunnerError> {
        self.results(self.inner.rerun(round, cancel).await)
    }

    async fn suite(&self, round: u32) -> Option<String> {
        let path = self.inner.path(round);
        let text = self.inner.suite(round).await?;
        Some(self.guard.mask(&text, Some(&path)).text)
    }

    fn path(&self, round: u32) -> String {
        self.inner.path(round)
    }

    async fn regress(
        &self,
        round: u32,
        example: &Counterexample,
    ) -> Result<Option<String>, RunnerError> {
        let real = Counterexample {
            arguments: self.unmask(&example.arguments)?,
            ..example.clone()
        };
        self.results(self.inner.regress(round, &real).await)
    }

    async fn append(&self, round: u32, code: &str) -> Result<(), RunnerError> {
        let real = self.unmask(code)?;
        self.inner.append(round, &real).await
    }

    async fn keep(&self, rounds: Vec<u32>) -> Result<(Vec<String>, Vec<String>), RunnerError> {
        self.results(self.inner.keep(rounds).await)
    }

    async fn cover(
        &self,
        rounds: Vec<u32>,
        cancel: CancellationToken,
    ) -> Result<Covered, RunnerError> {
        // Line numbers only: nothing to mask, but an error's text may quote output.
        self.inner
            .cover(rounds, cancel)
            .await
            .map_err(|e| masked_error(&self.guard, e))
    }

    async fn mutate(
        &self,
        mut request: MutationRequest,
        cancel: CancellationToken,
    ) -> Result<MutationRun, RunnerError> {
        // The survivors asked for again are named as the tool named them.
        for mutant in &mut request.only {
            mutant.id = self.unmask(&mutant.id)?;
        }
        self.results(self.inner.mutate(request, cancel).await)
    }
}
