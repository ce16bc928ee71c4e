//! The Regent: `ralph-loop loop`, a coding-agent CLI run again and again on a prompt file, a
//! fresh process each iteration, supervised (the seeds' Regent and Ralph Tracker).
//!
//! - [`tasks`]: the task list, read afresh each iteration;
//! - [`prompt`]: the iteration's prompt (the prompt file, the tasks, the last test results, the
//!   Regent's notes, the RALPH_STATUS request);
//! - [`state`]: `.ralph/regent-state.json`, written atomically after every change;
//! - [`baseline`]: `tdd` mode's baseline and regressions; [`bootstrap`]: whether a project is
//!   too new to be tested;
//! - [`run`]: the loop as a value (limits, breaker admission); [`machine`] its states on the
//!   fix loop's driver, the hooks told of each move; [`turn`] is the agent's turn within an
//!   iteration (restarts), [`outcome`] what it left, [`judge`] what follows it (progress,
//!   commit, rollback, breaker, exit gate), [`verify`] the tests (found, run, judged by
//!   `testing.mode`);
//! - [`around`]: the `pre_task` and `post_task` hooks around the list's tasks;
//! - [`actor`]: the Regent actor, the loop behind a mailbox.

pub(crate) mod actor;
pub(crate) mod around;
pub(crate) mod baseline;
pub(crate) mod bootstrap;
pub(crate) mod judge;
pub(crate) mod machine;
pub(crate) mod outcome;
pub(crate) mod prompt;
pub(crate) mod run;
pub(crate) mod state;
pub(crate) mod tasks;
pub(crate) mod turn;
pub(crate) mod verify;
