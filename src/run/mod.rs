//! One fix run, from flags to exit code: [`plan`] turns flags and config into a run (`gates`
//! looks for the coverage and mutation tools of its promise, `agent_artisan` puts a coding agent
//! in the Artisan's place), [`prepare`] makes its session ready (new, or resumed from its
//! folder) with its target locked, [`execute`] runs it under the launcher with its printers,
//! vault and ledger; `terminal` is the person the circuit breaker asks before it stops a run,
//! `pickers` the terminal view's model pickers, [`edge`] the diagnostics and the exit code.

mod agent_artisan;
pub(crate) mod edge;
mod gates;
pub(crate) mod pickers;
mod terminal;
pub(crate) mod plan;
pub(crate) mod execute;
pub(crate) mod prepare;
