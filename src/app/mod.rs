//! The wiring of a run at the binary's edge. Every command that runs work starts the same way:
//! `launch` is the one launcher (the actor system, the process groups, one signal handler
//! with one rule per command, the pause from the view or another process) and `view` the one
//! view it shows (lines, the TUI, the dashboard); `stops` is how either stops the work.
//!
//! - A fix run: [`plan`] turns flags and config into a run (`gates` looks for the coverage and
//!   mutation tools of its promise), [`execute`] runs it with its printer, vault and ledger;
//!   [`commands`] are `run`, `resume` and `status`, [`edge`] the exit code and diagnostics,
//!   `terminal` the person the circuit breaker asks before it stops a run.
//! - Many: [`batch`] and [`agent`] run specs through `entry` (one spec's targets, each a fix
//!   run), [`queue`] is `inbox` and `query`, `skips` the tasks skipped in the view.
//! - The Regent: [`agent_loop`] is `loop`, [`breaker`] `breaker reset`, [`agents`] `agents`.
//! - Around them: [`hooks`] `hooks validate | trust | import`, [`dashboard`] the web dashboard
//!   of the project's runs, [`replay`] a run played back or exported, `pickers` the terminal
//!   view's model pickers, [`vault`] and [`guard`] their commands.

pub mod agent;
mod agent_artisan;
pub mod agent_loop;
pub(crate) mod agent_status;
pub mod agents;
mod agents_add;
pub mod batch;
pub mod breaker;
pub(crate) mod commands;
pub mod dashboard;
pub(crate) mod edge;
pub(crate) mod entry;
pub(crate) mod execute;
mod gates;
pub mod guard;
pub mod hooks;
mod loop_status;
mod pickers;
pub(crate) mod plan;
pub mod queue;
pub mod replay;
mod skips;
pub(crate) mod launch;
pub(crate) mod stops;
pub(crate) mod view;
mod terminal;
pub mod vault;

pub use commands::{resume, run, status};
pub use edge::{exit_code, init_tracing};
pub use plan::{parse_models_flag, Overrides};
