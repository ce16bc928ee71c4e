//! Process groups: how a supervised command's group is stopped, and the registry of the groups
//! under way that the binary's edge kills on a hard exit (a second Ctrl+C).

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use tokio::process::Child;

use crate::process::memory::scan_group;

/// How long the group gets to exit after SIGTERM before SIGKILL.
const TERM_GRACE: Duration = Duration::from_secs(1);

/// Run when a group is killed without being waited for: removes what lives outside the group
/// (a container the group's client started).
pub type Cleanup = Arc<dyn Fn() + Send + Sync>;

/// The process groups under way, shared by every supervised command of a program. Cheap to
/// clone; the binary's edge keeps one for [`ProcessGroups::kill_all`].
#[derive(Clone, Default)]
pub struct ProcessGroups {
    inner: Arc<Mutex<Vec<Entry>>>,
}

struct Entry {
    pgid: Pid,
    cleanup: Option<Cleanup>,
    reaped: bool,
}

/// How a group is stopped without waiting: SIGKILL, except a group led by the reaper, which
/// gets SIGTERM: SIGKILL would kill the reaper before it could stop what escaped the group (a
/// shell tool's command in a session of its own), whereas on SIGTERM it kills the command
/// after its grace, then every descendant, whatever its group.
fn hard_stop(reaped: bool) -> Signal {
    match reaped {
        true => Signal::SIGTERM,
        false => Signal::SIGKILL,
    }
}

impl std::fmt::Debug for ProcessGroups {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let pgids: Vec<i32> = self.lock().iter().map(|e| e.pgid.as_raw()).collect();
        f.debug_struct("ProcessGroups")
            .field("pgids", &pgids)
            .finish()
    }
}

impl ProcessGroups {
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, Vec<Entry>> {
        // Plain values: still usable after a panic elsewhere.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Kills every group under way (see [`hard_stop`]) and runs their cleanups: for a hard
    /// exit, such as a second Ctrl+C before `std::process::exit`, where no destructor runs to
    /// stop them.
    pub fn kill_all(&self) {
        for entry in self.lock().iter() {
            let _ = killpg(entry.pgid, hard_stop(entry.reaped));
            if let Some(cleanup) = &entry.cleanup {
                cleanup();
            }
        }
    }

    /// Whether `pgid` is registered (a run of it under way).
    pub fn contains(&self, pgid: i32) -> bool {
        self.lock().iter().any(|e| e.pgid.as_raw() == pgid)
    }

    /// Registers a group (`reaped`: led by the reaper); the guard kills it (and cleans up) if
    /// dropped while armed.
    pub(crate) fn guard(&self, pgid: Pid, cleanup: Option<Cleanup>, reaped: bool) -> GroupGuard {
        self.lock().push(Entry {
            pgid,
            cleanup: cleanup.clone(),
            reaped,
        });
        GroupGuard {
            groups: self.clone(),
            pgid,
            cleanup,
            reaped,
            armed: true,
        }
    }
}

/// A registered group. Dropped while armed (the future running it was dropped mid-run), it
/// kills the group: `kill_on_drop` reaches only the direct child, not what it started.
pub(crate) struct GroupGuard {
    groups: ProcessGroups,
    pgid: Pid,
    cleanup: Option<Cleanup>,
    reaped: bool,
    pub(crate) armed: bool,
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.groups.lock().retain(|e| e.pgid != self.pgid);
        if self.armed {
            let _ = killpg(self.pgid, hard_stop(self.reaped));
            if let Some(cleanup) = &self.cleanup {
                cleanup();
            }
        }
    }
}

/// Stops every process in the group: SIGTERM, then SIGKILL after [`TERM_GRACE`]. Returns whether
/// anything was still running.
pub(crate) async fn terminate_group(pgid: Pid, child: &mut Child) -> bool {
    if !group_alive(pgid, child) {
        return false;
    }
    let _ = killpg(pgid, Signal::SIGTERM);
    let deadline = Instant::now() + TERM_GRACE;
    while Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
        if !group_alive(pgid, child) {
            return true;
        }
    }
    let _ = killpg(pgid, Signal::SIGKILL);
    // Reap the direct child so it does not linger as a zombie.
    let _ = tokio::time::timeout(Duration::from_millis(500), child.wait()).await;
    true
}

/// Whether any process of the group still runs.
fn group_alive(pgid: Pid, child: &mut Child) -> bool {
    // Reaps the direct child once it has exited, so it does not count as a member.
    let _ = child.try_wait();
    match killpg(pgid, None) {
        Err(Errno::ESRCH) => false,
        _ => group_has_live_member(pgid),
    }
}

/// `killpg(0)` also succeeds for a group of zombies, which an init that does not reap (as in
/// some containers) leaves behind; on Linux, look at the members' states. Without `/proc`, a
/// group that answers `killpg` counts as alive.
fn group_has_live_member(pgid: Pid) -> bool {
    scan_group(pgid).is_none_or(|scan| scan.live > 0)
}
