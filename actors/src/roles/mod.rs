//! The actors of a run. Each role's actor owns the ports it uses and answers one message,
//! defined beside it: [`librarian`] (`GatherContext`), [`artisan`] (`Generate`), [`critic`]
//! (`Review`, `Judge`), [`chaos`] (`Write`, `RunSuite`, `Rerun`), [`tester`] (`RunTests`) and
//! the MemoryVault ([`vault`]: `Recall`, `Remember`) and LocalGuard ([`local_guard`]: `Seal`,
//! `SealTexts`, `SealRecord`, `Check`), through which every text bound for a model passes.
//! [`caller`] is what the model-calling roles share (metered calls, fallbacks, context use);
//! [`history`] the conversation a role may keep; [`switch`] a role's model as a person changes it
//! mid-run; [`waits`] when calls and test runs were in flight (the report's timings); `thought` gathers a call's streamed text into the thought stream's events.

pub mod artisan;
pub mod caller;
pub mod chaos;
pub mod critic;
pub mod history;
pub mod librarian;
pub mod local_guard;
pub mod switch;
pub mod tester;
pub(crate) mod thought;
pub mod vault;
pub mod waits;
