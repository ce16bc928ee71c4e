//! Child processes as ralph-loop runs them: one [`supervise`]d command at a time, each in its
//! own process group ([`groups`]), its output [`capture`]d and its [`memory`] watched; a
//! command whose descendants may leave its group runs under a [`reaper`], which stops its whole
//! [`tree`] of descendants, whatever their group or session. A hook runs in a [`sandbox`]
//! (Landlock, and a [`seccomp`] filter for what Landlock does not cover) that keeps it to the
//! project.
//!
//! The test runner, and the hooks and agent CLIs to come, all build on
//! [`supervise::run`]: stdin closed, an explicit environment, output streamed line by line
//! ([`lines`], each at most 16 MiB) and capped, total and idle timeouts, a memory limit, and the whole group killed at the end.
//! The quick tool checks made before a run starts (a Python module importable, `cargo nextest`
//! installed, `cargo metadata`) go through [`probe`]: their own group, stdin closed, a time
//! limit.

pub(crate) mod capture;
pub mod groups;
pub(crate) mod lines;
pub(crate) mod memory;
pub(crate) mod probe;
pub(crate) mod reaper;
pub mod sandbox;
pub(crate) mod seccomp;
pub(crate) mod supervise;
pub(crate) mod tree;

/// The binaries' first step: started as `__sandbox ...` this binary restricts itself, then
/// becomes a hook (returning only on an error); as `__reap ...` it is the reaper of a supervised
/// command's tree. Either way, the exit code; `None` when it was started as itself.
pub fn helper_if_asked(args: &[std::ffi::OsString]) -> Option<u8> {
    sandbox::run_if_asked(args).or_else(|| reaper::run_if_asked(args))
}
