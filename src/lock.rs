//! The lock that keeps two runs off one target file: `.ralph/locks/<hash>.lock`, held with
//! `flock(2)` for as long as the run's process lives.
//!
//! The kernel releases the lock when the holder exits, however it exits (a panic, SIGKILL), so a
//! lock is never left held by a dead run: its file stays, with the dead holder's details, and
//! the next run takes it over and says so. Runs on different targets of one project run side by
//! side.

use std::fs::File;
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

use nix::fcntl::{Flock, FlockArg};
use serde::{Deserialize, Serialize};

use crate::session::RALPH_DIR;

/// Who holds a target: written into the lock file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Holder {
    pub session: String,
    pub pid: u32,
    pub target: String,
    pub started_at: String,
}

/// Why a target could not be locked.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error(
        "{target} is being fixed by another run (session {session}, pid {pid}, since {since}); \
         wait for it to end or stop it, then try again"
    )]
    Held {
        target: String,
        session: String,
        pid: u32,
        since: String,
    },
    #[error("cannot lock {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// A held lock on one target; released when dropped or when the process ends.
#[derive(Debug)]
pub struct TargetLock {
    file: Flock<File>,
    path: PathBuf,
    /// The holder whose lock this run took over, when the file named one that had died.
    pub taken_over: Option<Holder>,
}

impl TargetLock {
    /// Locks `target` (an absolute path) under `root`'s `.ralph/locks/`, or says who holds it.
    pub fn acquire(root: &Path, target: &Path) -> Result<Self, LockError> {
        let dir = root.join(RALPH_DIR).join("locks");
        let io = |path: &Path, source| LockError::Io {
            path: path.to_path_buf(),
            source,
        };
        std::fs::create_dir_all(&dir).map_err(|e| io(&dir, e))?;
        let path = dir.join(format!("{}.lock", key(target)));
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| io(&path, e))?;
        let mut file = match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(locked) => locked,
            Err((mut file, errno)) if errno == nix::errno::Errno::EWOULDBLOCK => {
                let holder = read_holder(&mut file);
                return Err(LockError::Held {
                    target: target.display().to_string(),
                    session: holder
                        .as_ref()
                        .map_or_else(|| "unknown".into(), |h| h.session.clone()),
                    pid: holder.as_ref().map_or(0, |h| h.pid),
                    since: holder.map_or_else(|| "unknown".into(), |h| h.started_at),
                });
            }
            Err((_, errno)) => return Err(io(&path, std::io::Error::from(errno))),
        };
        // Unlocked yet naming a holder: that run died without releasing it (the kernel did).
        let taken_over = read_holder(&mut file);
        Ok(Self {
            file,
            path,
            taken_over,
        })
    }

    /// Names this run as the holder.
    pub fn claim(&mut self, holder: &Holder) -> Result<(), LockError> {
        let io = |source| LockError::Io {
            path: self.path.clone(),
            source,
        };
        let text = serde_json::to_string(holder).map_err(|e| io(std::io::Error::other(e)))?;
        self.file.set_len(0).map_err(io)?;
        self.file.rewind().map_err(io)?;
        self.file.write_all(text.as_bytes()).map_err(io)?;
        self.file.flush().map_err(io)
    }
}

impl Drop for TargetLock {
    fn drop(&mut self) {
        // Emptied, so the next run finds no holder to report; the kernel drops the lock with
        // the file handle.
        let _ = self.file.set_len(0);
    }
}

/// The sessions whose runs hold a target's lock now, under `root`. Read from `/proc/locks`, so
/// asking takes no lock (a run starting meanwhile is not refused).
pub fn holding_sessions(root: &Path) -> Vec<String> {
    use std::os::unix::fs::MetadataExt;
    let Ok(locks) = std::fs::read_to_string("/proc/locks") else {
        return Vec::new();
    };
    // "1: FLOCK  ADVISORY  WRITE 4242 08:01:1234567 0 EOF": the inode is the third field of
    // the sixth column.
    let held: std::collections::HashSet<u64> = locks
        .lines()
        .filter(|l| l.contains("FLOCK"))
        .filter_map(|l| {
            l.split_whitespace()
                .nth(5)?
                .rsplit(':')
                .next()?
                .parse()
                .ok()
        })
        .collect();
    let Ok(entries) = std::fs::read_dir(root.join(RALPH_DIR).join("locks")) else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok())
        .filter(|e| e.metadata().is_ok_and(|m| held.contains(&m.ino())))
        .filter_map(|e| {
            let mut file = File::open(e.path()).ok()?;
            read_holder(&mut file).map(|h| h.session)
        })
        .collect()
}

fn read_holder(file: &mut File) -> Option<Holder> {
    let mut text = String::new();
    file.rewind().ok()?;
    file.read_to_string(&mut text).ok()?;
    serde_json::from_str(&text).ok()
}

/// A file name for a target: a hash of its path, so any path fits.
fn key(target: &Path) -> String {
    // FNV-1a over the path's bytes: stable across builds, unlike `DefaultHasher`'s seed.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in target.as_os_str().as_encoded_bytes() {
        hash ^= u64::from(*b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    format!("{name}-{hash:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn holder(session: &str) -> Holder {
        Holder {
            session: session.into(),
            pid: std::process::id(),
            target: "median.py".into(),
            started_at: "2026-11-25T00:00:00Z".into(),
        }
    }

    #[test]
    fn a_second_lock_on_one_target_is_refused_naming_the_holder() {
        let dir = tempfile::tempdir().expect("tempdir");
        let target = dir.path().join("median.py");
        let mut first = TargetLock::acquire(dir.path(), &target).expect("first");
        first.claim(&holder("abc")).expect("claim");
        let err = TargetLock::acquire(dir.path(), &target).expect_err("held");
        let message = err.to_string();
        assert!(message.contains("session abc"), "{message}");
        assert!(
            message.contains(&format!("pid {}", std::process::id())),
            "{message}"
        );
        // Another target of the same project is free.
        TargetLock::acquire(dir.path(), &dir.path().join("mean.py")).expect("other target");
        drop(first);
        let again = TargetLock::acquire(dir.path(), &target).expect("released");
        assert!(
            again.taken_over.is_none(),
            "a released lock names no holder"
        );
    }

    #[test]
    fn a_dead_holder_s_lock_is_taken_over() {
        let dir = tempfile::tempdir().expect("tempdir");
        let target = dir.path().join("median.py");
        let first = TargetLock::acquire(dir.path(), &target).expect("first");
        let path = first.path.clone();
        drop(first);
        // A run that died: its file names it, but no process holds the lock.
        std::fs::write(&path, serde_json::to_string(&holder("dead")).expect("json"))
            .expect("write");
        let taken = TargetLock::acquire(dir.path(), &target).expect("stale");
        assert_eq!(
            taken.taken_over.as_ref().map(|h| h.session.as_str()),
            Some("dead")
        );
    }
}
