//! `agent --watch`: waits, when the inbox is empty, for it to change, as the operating system
//! tells it (inotify on Linux, through `notify`): an idle agent costs no CPU and picks up a
//! spec added by `ralph-loop inbox add` (another process) at once.

use std::path::Path;

use notify::{EventKind, RecursiveMode, Watcher};
use tokio::sync::mpsc;

use crate::agent::AgentError;
use crate::error::Result;
use crate::work::entry::Shared;

/// A watch on `.ralph/inbox.jsonl`, from the agent's start (no change between a look at the
/// inbox and the wait is missed: it is waiting in the channel).
pub(crate) struct Watch {
    _watcher: notify::RecommendedWatcher,
    changes: mpsc::UnboundedReceiver<()>,
}

impl Watch {
    pub(crate) fn inbox(root: &Path) -> Result<Watch> {
        let dir = crate::session::ralph_dir(root).map_err(AgentError::io(format!(
            "cannot create {}",
            root.join(crate::session::RALPH_DIR).display()
        )))?;
        let (tx, changes) = mpsc::unbounded_channel();
        let mut watcher =
            notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
                // Reads (the agent's own look at the inbox) are no change; a write, a rename
                // over it (a status change) or its removal are.
                let Ok(event) = event else { return };
                let inbox = event
                    .paths
                    .iter()
                    .any(|p| p.file_name().is_some_and(|n| n == crate::inbox::FILE));
                if inbox && !matches!(event.kind, EventKind::Access(_)) {
                    let _ = tx.send(());
                }
            })
            .map_err(|e| watch_error(&dir, e))?;
        // The folder, not the file: the inbox is replaced by a rename at each status change.
        watcher
            .watch(&dir, RecursiveMode::NonRecursive)
            .map_err(|e| watch_error(&dir, e))?;
        Ok(Watch {
            _watcher: watcher,
            changes,
        })
    }

    /// Waits for the inbox to change (true) or the user to stop the agent (false).
    pub(crate) async fn changed(&mut self, shared: &Shared) -> bool {
        tokio::select! {
            change = self.changes.recv() => change.is_some(),
            _ = shared.stops.drain.cancelled() => false,
            _ = shared.stops.cancel.cancelled() => false,
        }
    }
}

fn watch_error(dir: &Path, e: notify::Error) -> crate::error::Error {
    AgentError::Io {
        context: format!("cannot watch {}", dir.display()),
        source: std::io::Error::other(e),
    }
    .into()
}
