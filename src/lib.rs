//! ralph-loop: the command line, config, and the real implementations of the core's ports
//! (`ralph-actors`).
//!
//! Layout, from the binaries' edge inwards (`mod` declarations below are in the opposite order,
//! from the leaves up: a module uses only those declared before it):
//! - [`cli`], [`micro_agent`]: the two binaries' command lines; [`app`]: the commands, each on
//!   the three layers below it; [`work`]: a spec as a unit of work (its targets run in turn,
//!   its progress saved, the agent's worktrees, a batch's report); [`run`]: one fix run planned,
//!   prepared and executed, its exit code; [`launch`]: the one launcher every command starts
//!   through (actor system, signals, pause, the view); [`error`]: the edge's typed errors and
//!   their exit codes.
//! - Many runs: [`spec`] (a task as Markdown with front matter, and planning its targets),
//!   [`inbox`] (the queue of specs), [`agent`] (agent mode's session file, lock and log),
//!   [`git`] (the commits and stashes of finished and failed specs).
//! - Coding-agent CLIs: [`agents`] (their definitions, detection, models, readers of their
//!   output, one supervised run), [`gateway`] (the loopback server between an agent and its
//!   model: LocalGuard, the budget and the user's key on the wire), and [`regent`] (`ralph-loop loop`: an agent run again and
//!   again under the Regent, with git, tests, breaker and exit gate).
//! - [`config`]: `ralph.config.yaml` discovery, validation and defaults; [`models`]:
//!   `provider/model` names, the alias table and each role's default models.
//! - [`printers`]: the human, JSON-lines and JSON renderings of the event stream, and the
//!   session's event log; [`views`]: the live views (the terminal UI, the web dashboard), with
//!   [`remote`] (a run's pause, resume and stop asked from another process).
//! - [`hooks`]: the user's lifecycle hooks and plugins, run at the fix loop's stages.
//! - The ports' implementations: [`providers`] (LLM clients over HTTP, rate limits, record and
//!   replay, prices, token counting), [`runner`] (test detection, plans, runs, result parsing,
//!   coverage, lint, Docker), [`chaos`] (Chaos's test files in the session folder), [`workspace`] (the project's files) with [`context`] (the
//!   Librarian's import graph and packing), [`session`] (the `.ralph/session-<uuid>/` store)
//!   with [`lock`] (one run per target file),
//!   [`vault`] (the MemoryVault on LanceDB, embedders), [`guard`] (LocalGuard built from the
//!   config, and `guard scan`).
//! - Tests: `testkit`, the one support module of the unit tests (built only for them), and
//!   `fuzzing`, the fuzz targets' entry points (built for the unit tests and with the `fuzzing`
//!   feature: `fuzz/`, docs/reliability.md).
//! - Shared pieces: [`process`] (supervised child processes in their own group), [`http`] (the
//!   one retry policy of every HTTP client), [`fsutil`] (atomic writes).
//!
//! Only what the two binaries, the integration tests and the benchmarks reach is `pub`; every
//! other module is `pub(crate)`, so the compiler finds what nothing uses.

// Without the `vault` feature (LanceDB) the crate is its layers below a run: the parsers,
// providers, runners and views the fuzz targets reach (fuzz/), and no command; what only the
// commands use is then unused, and said so only in the build that has them.
#![cfg_attr(not(feature = "vault"), allow(dead_code, unused_imports))]
// These docs map the whole layout, private modules included: read them with
// `cargo doc --document-private-items`, where every link resolves.
#![allow(rustdoc::private_intra_doc_links)]

pub(crate) mod fsutil;
pub(crate) mod http;
pub mod process;
pub(crate) mod models;
pub mod cli;
pub(crate) mod git;
pub(crate) mod session;
pub(crate) mod lock;
pub(crate) mod inbox;
pub mod context;
pub mod runner;
pub mod chaos;
pub mod providers;
pub mod gateway;
pub mod printers;
pub mod agents;
pub mod config;
pub(crate) mod spec;
pub(crate) mod workspace;
pub mod guard;
#[cfg(feature = "vault")]
pub mod vault;
pub mod hooks;
pub(crate) mod agent;
pub(crate) mod error;
pub(crate) mod regent;
pub(crate) mod remote;
pub mod views;
#[cfg(feature = "vault")]
pub(crate) mod launch;
#[cfg(feature = "vault")]
pub(crate) mod run;
#[cfg(feature = "vault")]
pub(crate) mod work;
#[cfg(feature = "vault")]
pub mod app;
#[cfg(feature = "vault")]
pub mod micro_agent;
#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzzing;
#[cfg(test)]
pub(crate) mod testkit;

pub use error::{Error, Result};
