//! The orchestration core of ralph-loop: the Supervisor, the role actors, the iteration state
//! machine and the rules it is bounded by. It reaches the outside world only through the ports.
//!
//! Layout, from the leaves up (a module uses only those above it in this list):
//! - [`role`]: the roles and the one table that describes them;
//! - [`tracker`]: the agent loop's judgement of an iteration (status blocks, circuit breaker,
//!   exit gate), pure;
//! - [`schema`]: the documents a run produces and reads (test results, report, state);
//! - [`ports`]: the traits to the outside world (models, tests, files, session store, vault),
//!   each with its own error; the binary crate implements them, tests mock them (`mock`);
//! - [`events`]: the event type, the bus that carries it to any number of subscribers, and the
//!   snapshot a late subscriber starts from;
//! - [`policy`]: budget, entropy breaker, success criteria, flaky re-runs, test integrity;
//! - [`memory`]: failure signatures, recall ranking, anonymisation;
//! - [`prompt`]: templates, the context bundle they render, reply parsing;
//! - [`guard`]: LocalGuard at the ports (reads masked, writes unmasked);
//! - [`settings`], [`error`]: a run's settings, and the errors that end a step;
//! - [`roles`]: the actors (Librarian, Artisan, Critic, Chaos, Tester, MemoryVault, LocalGuard);
//! - [`machine`]: the iteration's states and the hook points;
//! - [`supervisor`]: runs as values, stepped to their end.

pub mod role;
pub mod tracker;
pub mod schema;
pub mod ports;
pub mod events;
pub mod policy;
pub mod memory;
pub mod prompt;
pub mod guard;
pub mod settings;
pub mod error;
pub mod roles;
pub mod machine;
pub mod supervisor;

pub use error::{Error, Result};

/// Compiles the patterns the first iteration reads test output and replies with (the circuit
/// breaker's normalisation, the test-integrity markers, the Critic's verdict), on the caller's
/// thread. A binary calls this beside the baseline test run, so that the path from its end to
/// the first model call does not compile them; without it, each compiles at its first use.
pub fn warm() {
    policy::entropy::warm();
    policy::integrity::warm();
    prompt::reply::warm();
}

#[cfg(test)]
mod tests;
