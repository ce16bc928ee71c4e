//! How a command is stopped: the tokens its signals, its view and its hooks cancel, and the
//! process groups a forced stop kills. Made by [`crate::launch::Launch`], held by
//! everything that runs under it.

use std::sync::atomic::AtomicI32;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::process::groups::ProcessGroups;

/// How a command is stopped, and the process groups a forced stop kills.
#[derive(Clone)]
pub(crate) struct Stops {
    /// Ends the step under way.
    pub(crate) cancel: CancellationToken,
    /// Ends the work under way between two iterations.
    pub(crate) drain: CancellationToken,
    /// Kills the coding agent now (the loop's SIGQUIT).
    pub(crate) quit: CancellationToken,
    /// The signal that stopped the command, when one did (0 until then): a view closes by
    /// itself when a signal, not the person at it, stopped the run.
    pub(crate) signal: Arc<AtomicI32>,
    pub(crate) groups: ProcessGroups,
}

impl Stops {
    pub(crate) fn new(groups: ProcessGroups) -> Self {
        Self {
            cancel: CancellationToken::new(),
            drain: CancellationToken::new(),
            quit: CancellationToken::new(),
            signal: Arc::new(AtomicI32::new(0)),
            groups,
        }
    }
}
