//! Quick tool checks (`python3 -c 'import coverage'`, `cargo nextest --version`, `cargo
//! metadata`): a command run to its end for its output, in a process group of its own with stdin
//! closed, and killed with its group when it runs past a time limit, so that a tool that hangs (a
//! version manager's shim waiting on a prompt, a network filesystem) cannot hang a run's start.
//! What it started goes with it: the group is killed once it ends too.

use std::fs::File;
use std::io::{self, Read, Seek};
use std::os::unix::process::CommandExt;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;

/// How long a tool check may take: a cold `cargo metadata` or a Python start through a shim is
/// well within it; a hung one is not waited for longer.
pub const LIMIT: Duration = Duration::from_secs(30);

/// Runs `command` to its end within `limit`: its status and what it printed. An `Err` of kind
/// `TimedOut` when it ran past `limit` (its group killed), or the error that kept it from
/// starting.
pub fn output(mut command: Command, limit: Duration) -> io::Result<Output> {
    // Its output goes to unnamed files, read once it ends: no pipe to drain while waiting, and
    // no thread per stream (each would grow the process by its stack and malloc arena).
    let (mut stdout, mut stderr) = (tempfile::tempfile()?, tempfile::tempfile()?);
    command
        .stdin(Stdio::null())
        .stdout(stdout.try_clone()?)
        .stderr(stderr.try_clone()?)
        .process_group(0);
    let mut child = command.spawn()?;
    // The command's copies of the files only: ours stay open to be read.
    drop(command);
    let group = Pid::from_raw(child.id() as i32);
    let deadline = Instant::now() + limit;
    let ended = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if Instant::now() >= deadline {
            break None;
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    // Nothing the command started outlives it.
    let _ = killpg(group, Signal::SIGKILL);
    let Some(status) = ended else {
        let _ = child.wait();
        return Err(io::Error::new(
            io::ErrorKind::TimedOut,
            format!("did not end within {} s", limit.as_secs_f64()),
        ));
    };
    Ok(Output {
        status,
        stdout: read_all(&mut stdout)?,
        stderr: read_all(&mut stderr)?,
    })
}

/// A file the command wrote, from its start.
fn read_all(file: &mut File) -> io::Result<Vec<u8>> {
    file.rewind()?;
    let mut buf = Vec::new();
    file.read_to_end(&mut buf)?;
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_check_gives_its_output_and_status() {
        let mut c = Command::new("sh");
        c.args(["-c", "echo out; echo err >&2; exit 3"]);
        let out = output(c, LIMIT).expect("ran");
        assert_eq!(out.status.code(), Some(3));
        assert_eq!(out.stdout, b"out\n");
        assert_eq!(out.stderr, b"err\n");
    }

    /// A check that hangs is killed at its limit, with what it started: nothing of it survives.
    #[test]
    fn a_hung_check_is_killed_with_its_group_at_its_limit() {
        let dir = tempfile::tempdir().expect("dir");
        let pid_file = dir.path().join("pid");
        let mut c = Command::new("sh");
        c.arg("-c")
            .arg(format!("sleep 30 & echo $! > {}; wait", pid_file.display()));
        let started = Instant::now();
        let err = output(c, Duration::from_millis(300)).expect_err("timed out");
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        assert!(started.elapsed() < Duration::from_secs(5));
        let pid: i32 = std::fs::read_to_string(&pid_file)
            .expect("the child's pid")
            .trim()
            .parse()
            .expect("a pid");
        // Reaped by init once killed; give it a moment.
        let gone = (0..100).any(|_| {
            std::thread::sleep(Duration::from_millis(10));
            nix::sys::signal::kill(Pid::from_raw(pid), None).is_err()
                || std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .is_ok_and(|s| s.contains(") Z "))
        });
        assert!(gone, "the sleep it started still runs");
    }
}
