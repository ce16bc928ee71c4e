//! The commands, each a page or so on the layers below it: every command that runs work starts
//! through the one launcher ([`crate::launch`]), a fix run is [`crate::run`]'s, a spec's targets
//! are run by [`crate::work`].
//!
//! - A fix run: [`commands`] are `run`, `resume` and `status`.
//! - Many: [`batch`] and [`agent`] run specs through [`crate::work::entry`]; [`queue`] is
//!   `inbox` and `query`, `agent_status` the agent's part of `status`.
//! - The Regent: [`agent_loop`] is `loop` (`loop_status` its part of `status`), [`breaker`]
//!   `breaker reset`, [`agents`] `agents` (`agents_add`: `agents add`).
//! - Around them: [`hooks`] `hooks validate | trust | import`, [`dashboard`] the web dashboard
//!   of the project's runs, [`replay`] a run played back or exported, [`vault`] and [`guard`]
//!   their commands.

pub mod agent;
pub mod agent_loop;
pub(crate) mod agent_status;
pub mod agents;
mod agents_add;
pub mod batch;
pub mod breaker;
pub(crate) mod commands;
pub mod dashboard;
pub mod guard;
pub mod hooks;
mod loop_status;
pub mod queue;
pub mod replay;
pub mod vault;

pub use crate::run::edge::{exit_code, init_tracing};
pub use crate::run::plan::{parse_models_flag, Overrides};
pub use commands::{resume, run, status};
