//! One mutation run's inputs ([`Job`]) and what both tools share: running a tool's command
//! under the run's limits, and reading their output.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use ralph_actors::ports::chaos::MutationRequest;
use ralph_actors::ports::runner::RunnerError;
use tokio_util::sync::CancellationToken;

use crate::process::groups::ProcessGroups;
use crate::process::supervise::{self, Ending, Spec};
use crate::runner::language::Language;

use super::scratch::Scratch;

/// Output kept from a tool's run, for the error that quotes it.
const MAX_OUTPUT: usize = 64 * 1024;

/// A tool's run as errors name it, and how much of its output is kept.
pub(super) struct Called<'a> {
    what: &'a str,
    keep: usize,
}

impl<'a> Called<'a> {
    /// A run whose output is only quoted when it fails.
    pub(super) fn quoted(what: &'a str) -> Self {
        Self {
            what,
            keep: MAX_OUTPUT,
        }
    }

    /// A run whose output is read whole: up to `keep` bytes.
    pub(super) fn read(what: &'a str, keep: usize) -> Self {
        Self { what, keep }
    }
}

/// One mutation run, as [`crate::chaos::FsChaosRunner`] asks for it.
pub struct Job<'a> {
    pub language: Language,
    /// The project root and the unit tests' directory, in the user's tree.
    pub root: &'a Path,
    pub cwd: &'a Path,
    /// The target, absolute, in the user's tree.
    pub target: &'a Path,
    /// The command that runs the unit tests from a directory of the copy (StrykerJS runs it
    /// per mutant).
    pub unit_command: &'a (dyn Fn(&Path) -> String + Sync),
    /// Chaos's files to run with them, absolute, in the user's tree.
    pub suites: Vec<PathBuf>,
    /// The command that runs a Chaos file (in the copy) from a directory (in the copy).
    pub suite_command: &'a (dyn Fn(&Path, &Path) -> String + Sync),
    /// The variables the Chaos files need (the property library's path).
    pub env: Vec<(String, String)>,
    pub request: &'a MutationRequest,
    /// A Rust target's crate.
    pub krate: Option<&'a crate::chaos::cargo::RustCrate>,
    pub memory_limit_mb: Option<u64>,
    pub groups: &'a ProcessGroups,
}

impl Job<'_> {
    /// The unit tests' directory in `scratch`, and the target relative to it.
    pub(super) fn in_copy(&self, scratch: &Scratch) -> (PathBuf, String) {
        let cwd = scratch.map(self.cwd);
        let target = scratch.map(self.target);
        let relative = target
            .strip_prefix(&cwd)
            .unwrap_or(&target)
            .to_string_lossy()
            .into_owned();
        (cwd, relative)
    }
}

/// Runs a tool's command in its own process group, within the request's time and the test
/// limits' memory. `Err` when it could not start, ran out of time or memory, or was cancelled.
pub(super) async fn supervised(
    program: impl Into<OsString>,
    args: Vec<OsString>,
    cwd: &Path,
    env: Vec<(String, String)>,
    job: &Job<'_>,
    cancel: &CancellationToken,
    called: Called<'_>,
) -> Result<(Option<i32>, String), RunnerError> {
    let what = called.what;
    let mut vars: Vec<(OsString, OsString)> = std::env::vars_os().collect();
    for (k, v) in env {
        vars.retain(|(key, _)| key.to_str() != Some(k.as_str()));
        vars.push((k.into(), v.into()));
    }
    let mut spec = Spec::new(program, args, cwd, vars, job.request.timeout, called.keep);
    spec.memory_limit_mb = job.memory_limit_mb;
    let outcome = supervise::run(spec, cancel.clone(), job.groups)
        .await
        .map_err(|e| RunnerError::Internal(format!("{what} did not start: {e}")))?;
    match outcome.ending {
        Ending::Exited(status) => Ok((status.and_then(|s| s.code()), outcome.output)),
        Ending::TimedOut | Ending::Idle => Err(RunnerError::Internal(format!(
            "{what} ran past chaos.mutation_timeout_seconds ({} s)",
            job.request.timeout.as_secs()
        ))),
        Ending::Cancelled => Err(RunnerError::Internal(format!("{what} was stopped"))),
        Ending::OverMemory(bytes) => Err(RunnerError::Internal(format!(
            "{what} went over the memory limit ({} MiB used)",
            crate::process::memory::mib_ceil(bytes)
        ))),
    }
}

/// `name`'s executable on `PATH`.
pub(super) fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// The text of the report `file` a tool wrote; `Err` quotes how it ended and its last lines.
pub(super) fn report_text(
    file: &Path,
    what: &str,
    code: Option<i32>,
    output: &str,
) -> Result<String, RunnerError> {
    std::fs::read_to_string(file).map_err(|_| {
        RunnerError::Internal(format!(
            "{what} wrote no report (exit {}): {}",
            code.map_or("by a signal".into(), |c| c.to_string()),
            tail(output)
        ))
    })
}

/// Line `line` (1-based) of `source`, for a mutant's `original`.
pub(super) fn source_line(source: &[&str], line: u32) -> Option<String> {
    (line as usize)
        .checked_sub(1)
        .and_then(|i| source.get(i))
        .map(|l| l.to_string())
}

/// The last lines of a tool's output, for an error.
pub(super) fn tail(output: &str) -> String {
    let lines: Vec<&str> = output.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(8)..].join("\n")
}

/// `[first, last]` ranges as one line number's membership test.
pub(super) fn in_lines(lines: &[[u32; 2]], line: u32) -> bool {
    lines.is_empty() || lines.iter().any(|[a, b]| (*a..=*b).contains(&line))
}

/// How long a tool may take per mutant beyond the tests' own time.
pub(super) const PER_MUTANT_GRACE: Duration = Duration::from_secs(5);
