//! The wiring of a run at the binary's edge: [`plan`] turns flags and config into a run,
//! (`gates` looks for the coverage and mutation tools of its promise), [`execute`] runs it under an actor system with its printer, vault and Ctrl+C handling,
//! [`commands`] are `run`, `resume` and `status`, [`edge`] the exit code and diagnostics,
//! `terminal` the person the circuit breaker asks before it stops a run, [`agent_loop`] and
//! [`breaker`] the agent loop's `loop` and `breaker reset`, [`hooks`] `hooks validate | trust |
//! import`, [`dashboard`] the web dashboard of the project's runs, [`replay`] a run played
//! back or exported, `pickers` the terminal view's model pickers, `skips` the tasks skipped in
//! it, `task_view` how a batch or agent shows itself.

pub mod agent;
mod agent_artisan;
pub mod agent_loop;
pub(crate) mod agent_status;
pub mod agents;
mod agents_add;
pub mod batch;
pub mod breaker;
pub mod commands;
pub mod dashboard;
pub mod edge;
pub(crate) mod entry;
pub mod execute;
mod gates;
pub mod guard;
pub mod hooks;
mod loop_status;
mod pickers;
pub mod plan;
pub mod queue;
pub mod replay;
mod skips;
mod task_view;
mod terminal;
pub mod vault;

pub use commands::{resume, run, status};
pub use edge::{exit_code, init_tracing};
pub use plan::{parse_models_flag, Overrides};
