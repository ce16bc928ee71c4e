//! The typed messages the actors exchange.

use std::sync::Arc;

use actix::Message;
use tokio_util::sync::CancellationToken;

use crate::error::Result;
use crate::reply::Verdict;
use crate::report::Report;
use crate::roles::ContextBundle;
use crate::runner::TestRun;

/// Supervisor → Librarian: read the project fresh from disk for this iteration.
#[derive(Message)]
#[rtype(result = "Result<ContextBundle>")]
pub struct GatherContext {
    pub iteration: u32,
    pub cancel: CancellationToken,
}

/// Supervisor → Artisan: write the whole new target file.
#[derive(Message)]
#[rtype(result = "Result<Proposal>")]
pub struct Generate {
    pub iteration: u32,
    pub context: Arc<ContextBundle>,
    /// Why the Critic rejected the previous proposal of this iteration.
    pub critique: Option<String>,
    pub cancel: CancellationToken,
}

/// The Artisan's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proposal {
    /// The new file; `None` when the reply had no fenced code block.
    pub code: Option<String>,
    pub reply: String,
}

/// Supervisor → Critic: review a proposal before any test runs.
#[derive(Message)]
#[rtype(result = "Result<Verdict>")]
pub struct Review {
    pub iteration: u32,
    pub context: Arc<ContextBundle>,
    pub code: String,
    pub cancel: CancellationToken,
}

/// Supervisor → Tester.
#[derive(Message)]
#[rtype(result = "Result<TestRun>")]
pub struct RunTests {
    pub cancel: CancellationToken,
}

/// Supervisor → Artisan, Critic: forget the conversation so far.
#[derive(Message)]
#[rtype(result = "()")]
pub struct ResetContext;

/// Starts the run; answered with the final report when it ends.
#[derive(Message)]
#[rtype(result = "Report")]
pub struct StartRun;

/// Ctrl+C: end the current step, write state and report, finish as `interrupted`.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Interrupt;
