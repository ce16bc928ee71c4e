//! The reaper: a small process between ralph-loop and a command whose descendants may escape
//! its process group (a coding agent's shell tool starts commands in sessions of their own).
//! It runs the command as its child and is the child subreaper of the command's whole tree
//! (`PR_SET_CHILD_SUBREAPER`), so every orphan of the tree becomes its child instead of init's.
//! When the command exits, when ralph-loop asks it to stop (SIGTERM, SIGINT, SIGHUP), or when
//! ralph-loop dies (`PR_SET_PDEATHSIG`), it stops every process left in the tree, whatever its
//! group or session, then exits with the command's status. No descendant survives it.
//!
//! It is ralph-loop's own binary run as `ralph-loop __reap PARENT_PID -- PROGRAM ARGS...`
//! (`[REAP_ARG]`), so that it needs no file of its own and starts in about a millisecond; the
//! main functions of both binaries hand that argument here before anything else runs.

use std::ffi::OsString;
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, SigSet, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;

use super::tree::{live_descendants, signal_descendants};

/// The first argument that makes ralph-loop's binary a reaper.
pub const REAP_ARG: &str = "__reap";

/// How long the tree gets after SIGTERM before SIGKILL; shorter than the supervisor's own
/// grace, so that the reaper is done before its group is killed.
const GRACE: Duration = Duration::from_millis(500);

/// How often the reaper looks for an exit or a signal when none has come.
const TICK: Duration = Duration::from_millis(50);

/// `program args` under a reaper started from `binary` (ralph-loop's own executable).
pub fn wrap(
    binary: &std::path::Path,
    program: OsString,
    args: Vec<OsString>,
) -> (OsString, Vec<OsString>) {
    let mut wrapped: Vec<OsString> = vec![
        REAP_ARG.into(),
        std::process::id().to_string().into(),
        "--".into(),
        program,
    ];
    wrapped.extend(args);
    (binary.as_os_str().to_owned(), wrapped)
}

/// When `args` (a binary's whole command line) ask for the reaper, runs it to its end and
/// returns its exit code; `None` otherwise. Called first by both binaries' `main`.
pub fn run_if_asked(args: &[OsString]) -> Option<u8> {
    if args.get(1)? != REAP_ARG {
        return None;
    }
    Some(u8::try_from(main(&args[2..])).unwrap_or(1))
}

/// The reaper's main: `args` are what follows [`REAP_ARG`]. Returns the exit code.
pub fn main(args: &[OsString]) -> i32 {
    let (parent, program, rest) = match args {
        [parent, dashes, program, rest @ ..] if dashes == "--" => (parent, program, rest),
        _ => {
            eprintln!("ralph-loop {REAP_ARG}: usage: {REAP_ARG} PARENT_PID -- PROGRAM [ARGS...]");
            return 2;
        }
    };
    let parent: i32 = parent.to_str().and_then(|p| p.parse().ok()).unwrap_or(0);
    if let Err(e) = become_reaper(parent) {
        eprintln!("ralph-loop {REAP_ARG}: {e}");
        return 125;
    }
    // Signals wait in the queue until read below; the command starts with none blocked
    // (the standard library clears the mask in the child).
    let mut watched = SigSet::empty();
    for s in [
        Signal::SIGTERM,
        Signal::SIGINT,
        Signal::SIGHUP,
        Signal::SIGCHLD,
    ] {
        watched.add(s);
    }
    if let Err(e) = watched.thread_block() {
        eprintln!("ralph-loop {REAP_ARG}: cannot block signals: {e}");
        return 125;
    }
    let child = match std::process::Command::new(program).args(rest).spawn() {
        Ok(child) => child,
        Err(e) => {
            eprintln!(
                "ralph-loop {REAP_ARG}: cannot run {}: {e}",
                program.to_string_lossy()
            );
            return 127;
        }
    };
    let child = Pid::from_raw(child.id() as i32);
    let mut status: Option<i32> = None;
    let mut stopping: Option<Instant> = None;
    loop {
        status = reap(Some(child)).or(status);
        if status.is_some() {
            break;
        }
        match wait_signal(&watched, TICK) {
            Some(Signal::SIGCHLD) | None => {}
            Some(signal) => {
                // Passed on to the command; the rest of the tree follows it below.
                let _ = kill(child, signal);
                stopping.get_or_insert_with(Instant::now);
            }
        }
        if stopping.is_some_and(|at| at.elapsed() >= GRACE) {
            let _ = kill(child, Signal::SIGKILL);
        }
    }
    stop_tree();
    status.unwrap_or(128 + Signal::SIGKILL as i32)
}

/// Makes this process the subreaper of what it starts, and ties its life to `parent`'s.
fn become_reaper(parent: i32) -> Result<(), String> {
    // SAFETY: prctl with integer arguments only; no pointers are passed.
    let subreaper = unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
    if subreaper != 0 {
        return Err(format!(
            "cannot become a subreaper: {}",
            std::io::Error::last_os_error()
        ));
    }
    // SAFETY: as above.
    let death = unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM, 0, 0, 0) };
    if death != 0 {
        return Err(format!(
            "cannot follow the parent's death: {}",
            std::io::Error::last_os_error()
        ));
    }
    // The parent may have died before the line above: then no signal will come.
    if parent != 0 && nix::unistd::getppid().as_raw() != parent {
        return Err("ralph-loop exited before the command started".into());
    }
    Ok(())
}

/// Reaps every child that has exited (the command and adopted orphans); the command's exit
/// code once it has exited.
fn reap(command: Option<Pid>) -> Option<i32> {
    let mut code = None;
    loop {
        match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::Exited(pid, c)) if Some(pid) == command => code = Some(c),
            Ok(WaitStatus::Signaled(pid, s, _)) if Some(pid) == command => {
                code = Some(128 + s as i32)
            }
            Ok(WaitStatus::StillAlive) | Err(_) => return code,
            Ok(_) => {}
        }
    }
}

/// The next of `set`'s signals, waiting at most `timeout`.
fn wait_signal(set: &SigSet, timeout: Duration) -> Option<Signal> {
    let ts = libc::timespec {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: `set` is a valid signal set and `ts` a valid timespec for the call's duration;
    // the info pointer may be null.
    let n = unsafe { libc::sigtimedwait(set.as_ref(), std::ptr::null_mut(), &ts) };
    (n > 0).then(|| Signal::try_from(n).ok()).flatten()
}

/// Stops every process left in the tree: SIGTERM, then SIGKILL after [`GRACE`], reaping them
/// as they go (they are this process's children or their descendants).
fn stop_tree() {
    let me = std::process::id() as i32;
    if signal_descendants(me, Signal::SIGTERM) == 0 {
        return;
    }
    let deadline = Instant::now() + GRACE;
    while Instant::now() < deadline {
        reap(None);
        std::thread::sleep(Duration::from_millis(10));
        if live_descendants(me) == 0 {
            return;
        }
    }
    // Until none is left: a process may fork while it is being killed.
    for _ in 0..20 {
        if signal_descendants(me, Signal::SIGKILL) == 0 {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
        reap(None);
    }
    reap(None);
}
