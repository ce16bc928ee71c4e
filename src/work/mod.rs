//! A spec as a unit of work, as a batch and the agent run it: [`entry`] runs its targets in
//! turn, each a fix run, its progress saved at every change; [`items`] are a batch's entries
//! resolved to specs, [`report`] its `batch-report.json`. For the agent's parallel specs,
//! [`worktree`] is where one runs, [`changes`] the files it changed (and the check that the
//! tree is clean at start), [`land`] its work committed or set aside in git, and [`watch`]
//! waits for the inbox to change.

pub(crate) mod changes;
pub(crate) mod entry;
pub(crate) mod items;
pub(crate) mod report;
pub(crate) mod watch;
pub(crate) mod worktree;
pub(crate) mod land;
