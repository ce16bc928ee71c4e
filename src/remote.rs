//! A run's controls from another process (the web dashboard, a script): the run names its
//! process in `control.json` in its folder for as long as it runs, and takes signals:
//!
//! - `SIGUSR1`: pause before its next step (a loop: before its next iteration);
//! - `SIGUSR2`: resume;
//! - `SIGINT`: stop as Ctrl+C does (the run is saved and can be resumed).
//!
//! Only runs that listen for the first two write the file: a signal a process does not handle
//! ends it. A process is signalled only while the file names it and it is still this program
//! (its `/proc/<pid>/exe`), so a pid reused by another program after a crash is left alone.

use std::path::{Path, PathBuf};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::watch;

/// The file's name in a run's folder.
pub const FILE: &str = "control.json";

/// What `control.json` says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Announcement {
    pub pid: u32,
    /// The running program, as `/proc/<pid>/exe` names it.
    pub exe: PathBuf,
}

/// What another process may ask of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request {
    Pause,
    Resume,
    Stop,
}

impl Request {
    fn signal(self) -> Signal {
        match self {
            Request::Pause => Signal::SIGUSR1,
            Request::Resume => Signal::SIGUSR2,
            Request::Stop => Signal::SIGINT,
        }
    }
}

/// Why a request did not reach a run.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    #[error("this run takes no requests (it was not started by `ralph-loop` or `ralph-loop loop`, or it has ended)")]
    NotListening,
    #[error("this run is not running any more")]
    NotRunning,
    #[error("cannot signal process {pid}: {source}")]
    Signal { pid: u32, source: nix::Error },
}

/// The announcement of a run under way; removes its file when dropped (the run's end).
#[derive(Debug)]
pub struct Announced {
    path: PathBuf,
}

impl Drop for Announced {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Writes `control.json` into `dir` for this process. `None` when it cannot be written: the
/// run goes on, and only its own terminal controls it.
pub fn announce(dir: &Path) -> Option<Announced> {
    let exe = std::fs::read_link("/proc/self/exe").ok()?;
    let me = Announcement {
        pid: std::process::id(),
        exe,
    };
    let path = dir.join(FILE);
    let bytes = serde_json::to_vec(&me).ok()?;
    crate::fsutil::replace_unsynced(&path, &bytes).ok()?;
    Some(Announced { path })
}

/// Sets `pause` on SIGUSR1 and clears it on SIGUSR2, for as long as the task runs (abort it at
/// the run's end).
pub async fn listen(pause: watch::Sender<bool>) {
    let (Ok(mut usr1), Ok(mut usr2)) = (
        signal(SignalKind::user_defined1()),
        signal(SignalKind::user_defined2()),
    ) else {
        return;
    };
    loop {
        let paused = tokio::select! {
            _ = usr1.recv() => true,
            _ = usr2.recv() => false,
        };
        pause.send_replace(paused);
    }
}

/// The process running the run in `dir`, when one is.
pub fn running(dir: &Path) -> Option<u32> {
    let text = std::fs::read(dir.join(FILE)).ok()?;
    let said: Announcement = serde_json::from_slice(&text).ok()?;
    is_alive(&said).then_some(said.pid)
}

/// Sends `request` to the run in `dir`; the pid it went to.
pub fn send(dir: &Path, request: Request) -> Result<u32, RemoteError> {
    let text = std::fs::read(dir.join(FILE)).map_err(|_| RemoteError::NotListening)?;
    let said: Announcement =
        serde_json::from_slice(&text).map_err(|_| RemoteError::NotListening)?;
    if !is_alive(&said) {
        return Err(RemoteError::NotRunning);
    }
    let pid = i32::try_from(said.pid).map_err(|_| RemoteError::NotRunning)?;
    kill(Pid::from_raw(pid), request.signal()).map_err(|source| RemoteError::Signal {
        pid: said.pid,
        source,
    })?;
    Ok(said.pid)
}

/// The process lives and still runs the program that announced itself (a binary rebuilt
/// meanwhile reads as "<path> (deleted)").
fn is_alive(said: &Announcement) -> bool {
    let Ok(exe) = std::fs::read_link(format!("/proc/{}/exe", said.pid)) else {
        return false;
    };
    exe == said.exe || exe.as_os_str() == format!("{} (deleted)", said.exe.display()).as_str()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_is_found_while_announced_and_not_after() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(running(dir.path()), None);
        let announced = announce(dir.path()).unwrap();
        assert_eq!(running(dir.path()), Some(std::process::id()));
        drop(announced);
        assert_eq!(running(dir.path()), None);
        assert!(matches!(
            send(dir.path(), Request::Pause),
            Err(RemoteError::NotListening)
        ));
    }

    #[test]
    fn a_pid_now_running_another_program_is_not_signalled() {
        let dir = tempfile::tempdir().unwrap();
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let said = Announcement {
            pid: child.id(),
            exe: PathBuf::from("/usr/local/bin/ralph-loop"),
        };
        std::fs::write(dir.path().join(FILE), serde_json::to_vec(&said).unwrap()).unwrap();
        assert!(matches!(
            send(dir.path(), Request::Stop),
            Err(RemoteError::NotRunning)
        ));
        assert_eq!(child.try_wait().unwrap(), None, "sleep still runs");
        child.kill().unwrap();
        child.wait().unwrap();
    }
}
