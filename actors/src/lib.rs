//! The orchestration core of ralph-loop.
//!
//! Layout:
//! - [`llm`], [`runner`], [`workspace`]: the small traits through which the actors reach the outside
//!   world (an LLM client, a test runner, the project files and the session store). The binary crate
//!   holds the real implementations; tests use the `mockall` mocks (`mock` feature).
//! - [`messages`]: the typed messages the actors exchange.
//! - [`roles`]: the role actors (Librarian, Artisan, Critic, Tester).
//! - [`supervisor`]: the Supervisor actor and the per-iteration state machine
//!   (context → generate → review → test → decide).
//! - [`budget`], [`entropy`]: the ledger that keeps spending under the cap, and the circuit breaker
//!   that stops a run stuck on the same failure.
//! - [`events`], [`report`]: the one event stream every printer renders, and the final report.
//! - [`prompt`], [`reply`]: prompt templates and the parsing of the roles' replies.
//! - [`criteria`], [`flaky`], [`integrity`]: the success criteria judged on a test run, flaky-test
//!   re-runs, and the check that a proposal leaves the tests alone.

pub mod budget;
pub mod criteria;
pub mod entropy;
pub mod error;
pub mod events;
pub mod flaky;
pub mod integrity;
pub mod llm;
pub mod memory;
pub mod messages;
pub mod prompt;
pub mod reply;
pub mod report;
pub mod roles;
pub mod runner;
pub mod settings;
pub mod supervisor;
pub mod vault;
pub mod workspace;

pub use error::{Error, Result};

#[cfg(test)]
mod tests;
