//! The hooks' sandbox: a command run under a Landlock ruleset, reading only the system's paths
//! (and those it is given), writing only the project, a temporary folder (and those it is
//! given), and with no TCP connection or bind unless allowed.
//!
//! It is the small `ralph-sandbox` binary installed beside ralph-loop's (or, without it,
//! ralph-loop's own) run as `… __sandbox [--read P]... [--write P]... [--net] -- PROGRAM
//! ARGS...`: the fresh, single-threaded process restricts itself and then becomes the program
//! (exec), so the ruleset holds for it and everything it starts. A ruleset cannot be lifted by
//! the program, whatever it does.
//!
//! Run as root, the command also loses the capabilities that would reach past the ruleset (to
//! read other processes through `/proc`, load modules, make device nodes, open raw sockets...):
//! Landlock leaves those to the capabilities, so they are dropped from the bounding set first.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};

use caps::{CapSet, Capability};
use landlock::{
    path_beneath_rules, Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus, Scope, ABI,
};

/// The first argument that makes ralph-loop's binary the sandbox.
pub const SANDBOX_ARG: &str = "__sandbox";

/// What a sandboxed command may reach.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Policy {
    /// Read (and execute) beneath these, besides [`SYSTEM_READ`].
    pub read: Vec<PathBuf>,
    /// Read, write, create and remove beneath these.
    pub write: Vec<PathBuf>,
    /// TCP connections and binds allowed.
    pub network: bool,
}

/// What every sandboxed command may read: the system's programs, libraries and settings.
pub const SYSTEM_READ: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/nix",
    "/proc", "/sys", "/dev",
];

/// Devices a command may write: where output is thrown away, or read from.
const DEVICES_WRITE: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/tty",
    "/dev/random",
    "/dev/urandom",
    "/dev/shm",
];

/// The newest Landlock ABI this build knows; an older kernel gets what it has (best effort),
/// which [`support`] tells beforehand.
const ABI_USED: ABI = ABI::V6;

/// What a sandboxed command keeps of root's capabilities: working on files it does not own and
/// changing its user (as package managers do), all of it still under the ruleset.
const KEPT: &[Capability] = &[
    Capability::CAP_CHOWN,
    Capability::CAP_DAC_OVERRIDE,
    Capability::CAP_DAC_READ_SEARCH,
    Capability::CAP_FOWNER,
    Capability::CAP_FSETID,
    Capability::CAP_SETGID,
    Capability::CAP_SETUID,
];

/// What the running kernel offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Support {
    /// Landlock with this ABI version: files from 1, TCP from 4.
    Landlock(i32),
    /// No Landlock (too old a kernel, or not enabled at boot).
    None,
}

/// Asks the kernel for its Landlock ABI version.
pub fn support() -> Support {
    // SAFETY: LANDLOCK_CREATE_RULESET_VERSION with a null attribute and size 0 only returns
    // the version (or -1 with errno); it reads and writes no memory.
    let version = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            1u32,
        )
    };
    match i32::try_from(version) {
        Ok(v) if v > 0 => Support::Landlock(v),
        _ => Support::None,
    }
}

/// `program args` run under `policy`, through the sandbox started from `binary`.
pub fn wrap(
    binary: &Path,
    policy: &Policy,
    program: OsString,
    args: Vec<OsString>,
) -> (OsString, Vec<OsString>) {
    let mut wrapped: Vec<OsString> = vec![SANDBOX_ARG.into()];
    for p in &policy.read {
        wrapped.extend(["--read".into(), p.clone().into_os_string()]);
    }
    for p in &policy.write {
        wrapped.extend(["--write".into(), p.clone().into_os_string()]);
    }
    if policy.network {
        wrapped.push("--net".into());
    }
    wrapped.push("--".into());
    wrapped.push(program);
    wrapped.extend(args);
    (binary.as_os_str().to_owned(), wrapped)
}

/// When `args` (a binary's whole command line) ask for the sandbox, restricts this process and
/// becomes the program; returns only on an error, with the exit code. `None` otherwise.
pub fn run_if_asked(args: &[OsString]) -> Option<u8> {
    if args.get(1)? != SANDBOX_ARG {
        return None;
    }
    Some(main(&args[2..]))
}

fn main(args: &[OsString]) -> u8 {
    let mut policy = Policy::default();
    let mut rest = args.iter();
    let program = loop {
        match rest.next().and_then(|a| a.to_str()) {
            Some("--read") => policy.read.extend(rest.next().map(PathBuf::from)),
            Some("--write") => policy.write.extend(rest.next().map(PathBuf::from)),
            Some("--net") => policy.network = true,
            Some("--") => break rest.next(),
            _ => break None,
        }
    };
    let Some(program) = program else {
        eprintln!("ralph-loop {SANDBOX_ARG}: usage: {SANDBOX_ARG} [--read P]... [--write P]... [--net] -- PROGRAM [ARGS...]");
        return 2;
    };
    if let Err(e) = drop_capabilities() {
        eprintln!("ralph-loop {SANDBOX_ARG}: cannot drop the hook's capabilities: {e}");
        return 125;
    }
    if let Err(e) = restrict(&policy) {
        eprintln!("ralph-loop {SANDBOX_ARG}: cannot restrict the hook: {e}");
        return 125;
    }
    if !policy.network {
        if let Err(e) = super::seccomp::deny_inet() {
            eprintln!("ralph-loop {SANDBOX_ARG}: cannot keep the hook off the network: {e}");
            return 125;
        }
    }
    let e = std::process::Command::new(program).args(rest).exec();
    eprintln!(
        "ralph-loop {SANDBOX_ARG}: cannot run {}: {e}",
        program.to_string_lossy()
    );
    127
}

/// Drops every capability but [`KEPT`] from the bounding set, which bounds what root gets back
/// at each `exec`, and empties the inheritable and ambient sets. Landlock does not stop a
/// process with `CAP_SYS_PTRACE` from reading another's memory and environment through `/proc`
/// (and ralph-loop's environment holds the provider keys), nor what `CAP_SYS_MODULE`,
/// `CAP_MKNOD` or `CAP_NET_RAW` open. Without root there is nothing to drop from the bounding
/// set (nor the right to), and Landlock keeps other processes out.
pub fn drop_capabilities() -> Result<(), caps::errors::CapsError> {
    if caps::has_cap(None, CapSet::Effective, Capability::CAP_SETPCAP)? {
        for cap in caps::read(None, CapSet::Bounding)? {
            if !KEPT.contains(&cap) {
                caps::drop(None, CapSet::Bounding, cap)?;
            }
        }
    }
    caps::clear(None, CapSet::Inheritable)?;
    caps::clear(None, CapSet::Ambient)
}

/// Restricts this process (and what it starts) to `policy`: files and TCP as it says, and no
/// signal or abstract Unix socket to a process outside the sandbox.
pub fn restrict(policy: &Policy) -> Result<RulesetStatus, landlock::RulesetError> {
    let existing = |paths: Vec<PathBuf>| -> Vec<PathBuf> {
        paths.into_iter().filter(|p| p.exists()).collect()
    };
    let read = existing(
        SYSTEM_READ
            .iter()
            .map(PathBuf::from)
            .chain(policy.read.iter().cloned())
            .collect(),
    );
    let devices = existing(DEVICES_WRITE.iter().map(PathBuf::from).collect());
    let write = existing(policy.write.clone());
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(ABI_USED))?;
    if !policy.network {
        // Handled and never allowed: every TCP connect and bind is refused.
        ruleset = ruleset.handle_access(AccessNet::from_all(ABI_USED))?;
    }
    let status = ruleset
        .scope(Scope::from_all(ABI_USED))?
        .create()?
        .add_rules(path_beneath_rules(&read, AccessFs::from_read(ABI_USED)))?
        .add_rules(path_beneath_rules(
            &devices,
            AccessFs::from_read(ABI_USED) | AccessFs::from_write(ABI_USED),
        ))?
        .add_rules(path_beneath_rules(&write, AccessFs::from_all(ABI_USED)))?
        .restrict_self()?;
    Ok(status.ruleset)
}
