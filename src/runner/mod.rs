//! The test command, run as a process group with a timeout, a memory limit, a capped output and
//! no secrets in its environment, on this machine or in a Docker container (`docs/sandbox.md`);
//! its output parsed into the unified result schema ([`ralph_actors::runner::TestRun`],
//! documented in `docs/test-runners.md`).

pub mod classify;
pub mod coverage;
pub mod language;
pub mod lint;
mod parse;
pub mod plan;
pub mod project;
pub mod report;
pub mod sandbox;
#[cfg(test)]
mod testkit;

use std::collections::VecDeque;
use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use ralph_actors::runner::{
    ResultSource, RunStatus, Sandbox, TestRun, TestRunner, Totals, SCHEMA_VERSION,
};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::{Child, Command};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use language::Language;
pub use parse::{parse, strip_ansi, Parsed};
use plan::{Limits, SandboxKind};
pub use sandbox::{check_docker, default_image, SandboxError, DEFAULT_MEMORY_LIMIT_MB};

/// Defaults, as in `ralph.config.yaml` (`testing.timeout_seconds`, `testing.max_output_bytes`).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 1024 * 1024;

/// How long the group gets to exit after SIGTERM before SIGKILL.
const TERM_GRACE: Duration = Duration::from_secs(1);
/// After the command exits, how long a process it left behind may keep the pipes open (still
/// writing) before it is stopped.
const DRAIN_AFTER_EXIT: Duration = Duration::from_secs(1);
/// After the group is killed, how long to wait for the pipes to close: a process that escaped the
/// group (setsid) may hold them open for ever.
const DRAIN_AFTER_KILL: Duration = Duration::from_millis(500);

/// Variables that hold credentials and never reach a test: the provider keys ralph-loop and
/// micro-agent read, and any name ending in one of [`SECRET_SUFFIXES`].
const SECRET_NAMES: &[&str] = &[
    "OPENAI_API_KEY",
    "OPENAI_KEY",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "AZURE_OPENAI_API_KEY",
];
const SECRET_SUFFIXES: &[&str] = &[
    "_API_KEY",
    "_TOKEN",
    "_SECRET",
    "_SECRET_KEY",
    "_ACCESS_KEY",
    "_PASSWORD",
];

/// Set for every test: plain text, and no watch mode or interactive prompts (jest and vitest
/// watch unless `CI` is set).
const FORCED_ENV: &[(&str, &str)] = &[("CI", "true"), ("NO_COLOR", "1"), ("FORCE_COLOR", "0")];

/// True when a variable of this name is a secret and is kept from the test command.
pub fn is_secret_var(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_NAMES.contains(&upper.as_str()) || SECRET_SUFFIXES.iter().any(|s| upper.ends_with(s))
}

/// Runs `sh -c <command>` in `cwd`, here or in a container; see [`ProcessRunner::run_once`].
#[derive(Debug, Clone)]
pub struct ProcessRunner {
    pub command: String,
    pub cwd: PathBuf,
    pub timeout: Duration,
    pub max_output_bytes: usize,
    /// Variables added to the inherited environment. They pass the same secret filter.
    pub extra_env: Vec<(String, String)>,
    /// Resident memory the command's processes may use together; `None`: no limit.
    pub memory_limit_mb: Option<u64>,
    pub sandbox: SandboxKind,
    /// Picks the Docker image when [`SandboxKind::Docker`] names none.
    pub language: Option<Language>,
    /// The directory a container gets mounted (with `cwd`, should it lie outside); `None`: `cwd`.
    pub project_dir: Option<PathBuf>,
    /// The Docker client to call; tests put a fake in its place.
    pub docker_bin: PathBuf,
}

impl ProcessRunner {
    /// A runner for `command` in `cwd` as a local process group, with the default memory limit;
    /// see [`DEFAULT_TIMEOUT`], [`DEFAULT_MAX_OUTPUT_BYTES`] and [`DEFAULT_MEMORY_LIMIT_MB`].
    pub fn new(
        command: impl Into<String>,
        cwd: impl Into<PathBuf>,
        timeout: Duration,
        max_output_bytes: usize,
    ) -> Self {
        Self {
            command: command.into(),
            cwd: cwd.into(),
            timeout,
            max_output_bytes,
            extra_env: Vec::new(),
            memory_limit_mb: Some(DEFAULT_MEMORY_LIMIT_MB),
            sandbox: SandboxKind::Process,
            language: None,
            project_dir: None,
            docker_bin: PathBuf::from("docker"),
        }
    }

    /// Applies every limit of `limits`: timeout, output cap, memory limit and sandbox kind.
    pub fn with_limits(mut self, limits: &Limits) -> Self {
        self.timeout = limits.timeout;
        self.max_output_bytes = limits.max_output_bytes;
        self.memory_limit_mb = limits.memory_limit_mb;
        self.sandbox = limits.sandbox.clone();
        self
    }

    /// The project's language, which picks the default Docker image.
    pub fn with_language(mut self, language: Option<Language>) -> Self {
        self.language = language;
        self
    }

    /// The directory mounted into a container, so that files the tests read or write outside
    /// `cwd` (a workspace root, `.ralph/` reports) are there too.
    pub fn with_project_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.project_dir = Some(dir.into());
        self
    }

    /// The Docker client to run instead of `docker` from `PATH`.
    pub fn with_docker_bin(mut self, bin: impl Into<PathBuf>) -> Self {
        self.docker_bin = bin.into();
        self
    }

    /// Adds a variable to the command's environment (secrets are still removed).
    pub fn with_env(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.extra_env.push((name.into(), value.into()));
        self
    }

    /// The command's environment: ours plus `extra_env`, secrets removed, [`FORCED_ENV`] set.
    fn child_env(&self) -> Vec<(OsString, OsString)> {
        let extra = self
            .extra_env
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v)));
        let mut env: Vec<(OsString, OsString)> = std::env::vars_os()
            .chain(extra)
            .filter(|(k, _)| !is_secret_var(&k.to_string_lossy()))
            .filter(|(k, _)| !FORCED_ENV.iter().any(|(f, _)| k.to_str() == Some(*f)))
            .collect();
        env.extend(
            FORCED_ENV
                .iter()
                .map(|(k, v)| (OsString::from(k), OsString::from(v))),
        );
        env
    }

    /// Runs the command once. Never fails: a command that cannot start is a run with status
    /// `Error` whose output says why.
    ///
    /// The command runs in its own process group with stdin closed. On timeout or `cancel`, the
    /// whole group gets SIGTERM, then SIGKILL after a second; processes the command leaves
    /// behind after exiting are stopped the same way. When the group's resident memory passes
    /// `memory_limit_mb`, it gets SIGKILL at once and the run ends as `MemoryLimit`.
    ///
    /// In a Docker sandbox the group is the local `docker run` client; the container is killed
    /// with `docker kill` on timeout or cancel, its memory limit is the engine's, and it is
    /// removed after the run.
    pub async fn run_once(&self, cancel: CancellationToken) -> TestRun {
        let started = Instant::now();
        let env = self.child_env();
        let container = match &self.sandbox {
            SandboxKind::Process => None,
            SandboxKind::Docker { image } => match self.container(image.as_deref(), &env).await {
                Ok(container) => Some(container),
                Err(why) => return self.error_run(started, why),
            },
        };
        let mut cmd = match &container {
            None => {
                let mut cmd = Command::new("sh");
                cmd.arg("-c").arg(&self.command);
                cmd
            }
            Some(c) => {
                let mut cmd = Command::new(&self.docker_bin);
                cmd.args(&c.args);
                cmd
            }
        };
        cmd.current_dir(&self.cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .env_clear()
            .envs(env.iter().map(|(k, v)| (k, v)))
            .process_group(0)
            .kill_on_drop(true);
        let mut child = match cmd.spawn() {
            Ok(child) => child,
            Err(e) => {
                let why = match &container {
                    None => format!(
                        "could not start `{}` in {}: {e}",
                        self.command,
                        self.cwd.display()
                    ),
                    Some(_) => format!(
                        "could not start `{}` for the container: {e}",
                        self.docker_bin.display()
                    ),
                };
                return self.error_run(started, why);
            }
        };
        let Some(pgid) = child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .map(Pid::from_raw)
        else {
            return self.error_run(
                started,
                "the test command exited before it could be watched".into(),
            );
        };
        // Kills the group should this future be dropped mid-run; `kill_on_drop` reaches only
        // the shell, not what it started.
        let mut guard = GroupGuard::new(
            pgid,
            container
                .as_ref()
                .map(|c| (self.docker_bin.clone(), c.name.clone())),
        );

        let capture = Arc::new(Mutex::new(Capture::new(self.max_output_bytes)));
        let mut pumps = JoinSet::new();
        if let Some(out) = child.stdout.take() {
            pumps.spawn(pump(out, capture.clone()));
        }
        if let Some(err) = child.stderr.take() {
            pumps.spawn(pump(err, capture.clone()));
        }

        // In a container the local group is only the docker client; the engine enforces the
        // limit there.
        let watched_limit = match container {
            None => self.memory_limit_mb,
            Some(_) => None,
        };
        let mut peak_bytes = None;
        let ending = tokio::select! {
            status = child.wait() => Ending::Exited(status.ok()),
            () = tokio::time::sleep(self.timeout) => Ending::TimedOut,
            () = cancel.cancelled() => Ending::Cancelled,
            used = sandbox::watch_memory(pgid, watched_limit, &mut peak_bytes) => {
                Ending::OverMemory(used)
            }
        };
        if let (Some(c), Ending::TimedOut | Ending::Cancelled) = (&container, &ending) {
            sandbox::docker_kill(&self.docker_bin, &env, &c.name).await;
        }
        if matches!(ending, Ending::Exited(_)) {
            // Usually the pipes are already closed; a background process may still write.
            drain(&mut pumps, DRAIN_AFTER_EXIT).await;
        }
        let stopped_leftovers = terminate_group(pgid, &mut child).await;
        drain(&mut pumps, DRAIN_AFTER_KILL).await;
        pumps.abort_all();
        let mut oom_killed = false;
        if let Some(c) = &container {
            // Asked on any failure, not only exit 137: a test runner whose worker the OOM
            // killer stopped may exit with its own code.
            if let Ending::Exited(Some(st)) = &ending {
                if !st.success() {
                    oom_killed = sandbox::docker_oom_killed(&self.docker_bin, &env, &c.name).await;
                }
            }
            sandbox::docker_remove(&self.docker_bin, &env, &c.name).await;
        }
        guard.armed = false;
        let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);

        let (raw, output_truncated) = lock(&capture).render();
        let mut output = strip_ansi(&raw).into_owned();
        let parsed = parse(&output, &self.cwd);

        let limit_text = self
            .memory_limit_mb
            .map(|m| format!(" of {m} MB"))
            .unwrap_or_default();
        let (status, exit_code) = match &ending {
            Ending::Exited(Some(st)) if st.success() => (RunStatus::Passed, Some(0)),
            Ending::Exited(Some(st)) if oom_killed => {
                note(
                    &mut output,
                    &format!(
                        "killed: the container ran out of memory (Docker's memory limit{limit_text})"
                    ),
                );
                (RunStatus::MemoryLimit, st.code())
            }
            // `docker run` itself failed (no such image, a bad option): the tests never ran.
            Ending::Exited(Some(st)) if container.is_some() && st.code() == Some(125) => {
                note(
                    &mut output,
                    "docker could not start the container (exit 125): see docker's message above",
                );
                (RunStatus::Error, st.code())
            }
            Ending::Exited(Some(st)) => {
                if let Some(sig) = st.signal() {
                    note(
                        &mut output,
                        &format!("the test command was killed by signal {sig}"),
                    );
                }
                (RunStatus::Failed, st.code())
            }
            Ending::Exited(None) => (RunStatus::Failed, None),
            Ending::TimedOut => {
                let secs = self.timeout.as_secs_f64();
                note(
                    &mut output,
                    &format!("killed after {secs} s: the test command ran past its timeout"),
                );
                (RunStatus::Timeout, None)
            }
            Ending::Cancelled => {
                note(
                    &mut output,
                    "interrupted: the test run was cancelled and its processes stopped",
                );
                (RunStatus::Error, None)
            }
            Ending::OverMemory(used) => {
                note(
                    &mut output,
                    &format!(
                        "killed: the test command's processes used {} MB, over the memory \
                         limit{limit_text}",
                        sandbox::mib_ceil(*used)
                    ),
                );
                (RunStatus::MemoryLimit, None)
            }
        };
        if stopped_leftovers && matches!(ending, Ending::Exited(_)) {
            note(
                &mut output,
                "stopped processes the test command left running",
            );
        }

        TestRun {
            schema_version: SCHEMA_VERSION,
            command: self.command.clone(),
            status,
            exit_code,
            duration_ms,
            source: if parsed.is_some() {
                ResultSource::Text
            } else {
                ResultSource::Raw
            },
            framework: parsed.as_ref().map(|p| p.framework.to_string()),
            format: parsed.as_ref().map(|p| p.framework.to_string()),
            totals: parsed.as_ref().map_or_else(Totals::default, |p| p.totals),
            tests: parsed.map(|p| p.tests).unwrap_or_default(),
            sandbox: Some(self.sandbox_info(peak_bytes)),
            output,
            output_truncated,
            ..TestRun::new(self.command.clone(), status)
        }
    }

    fn error_run(&self, started: Instant, why: String) -> TestRun {
        TestRun {
            schema_version: SCHEMA_VERSION,
            command: self.command.clone(),
            status: RunStatus::Error,
            exit_code: None,
            duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            source: ResultSource::Raw,
            framework: None,
            totals: Totals::default(),
            tests: Vec::new(),
            output: format!("[ralph-loop] {why}\n"),
            output_truncated: false,
            sandbox: Some(self.sandbox_info(None)),
            ..TestRun::new(self.command.clone(), RunStatus::Error)
        }
    }

    /// The limits a run had, for its result.
    fn sandbox_info(&self, peak_bytes: Option<u64>) -> Sandbox {
        Sandbox {
            kind: match self.sandbox {
                SandboxKind::Process => "process",
                SandboxKind::Docker { .. } => "docker",
            }
            .into(),
            timeout_ms: u64::try_from(self.timeout.as_millis()).unwrap_or(u64::MAX),
            memory_limit_mb: self.memory_limit_mb,
            peak_memory_mb: peak_bytes.map(sandbox::mib_ceil),
        }
    }

    /// Probes the engine (once per process) and prepares a container for this run.
    async fn container(
        &self,
        image: Option<&str>,
        env: &[(OsString, OsString)],
    ) -> Result<Container, String> {
        let bin = self.docker_bin.clone();
        tokio::task::spawn_blocking(move || sandbox::ensure_docker(&bin))
            .await
            .map_err(|e| format!("could not check the Docker engine: {e}"))?
            .map_err(|e| e.to_string())?;
        let image = image
            .or_else(|| default_image(self.language))
            .ok_or_else(|| SandboxError::NoImage.to_string())?;
        // Absolute but not canonical: the container sees the very paths the host uses, so paths
        // in reports and output read the same on both sides.
        let absolute = |dir: &PathBuf| {
            std::path::absolute(dir)
                .ok()
                .filter(|d| d.is_dir())
                .ok_or_else(|| {
                    format!(
                        "could not start `{}` in {}: no such directory",
                        self.command,
                        dir.display()
                    )
                })
        };
        let workdir = absolute(&self.cwd)?;
        let mut mounts = vec![absolute(self.project_dir.as_ref().unwrap_or(&self.cwd))?];
        if !workdir.starts_with(&mounts[0]) {
            mounts.push(workdir.clone());
        }
        let set: Vec<&str> = FORCED_ENV
            .iter()
            .map(|(k, _)| *k)
            .chain(self.extra_env.iter().map(|(k, _)| k.as_str()))
            .collect();
        let env_names = sandbox::container_env_names(env, &set);
        let name = sandbox::container_name();
        let args = sandbox::docker_run_args(&sandbox::ContainerSpec {
            name: &name,
            image,
            mounts: &mounts,
            workdir: &workdir,
            memory_limit_mb: self.memory_limit_mb,
            env_names: &env_names,
            user: sandbox::caller_ids(),
            command: &self.command,
        });
        Ok(Container { name, args })
    }
}

/// A container prepared for one run.
struct Container {
    name: String,
    /// `docker` arguments, from `run` on.
    args: Vec<OsString>,
}

#[async_trait::async_trait]
impl TestRunner for ProcessRunner {
    async fn run(&self, cancel: CancellationToken) -> Result<TestRun, String> {
        Ok(self.run_once(cancel).await)
    }

    fn command(&self) -> String {
        self.command.clone()
    }
}

enum Ending {
    Exited(Option<std::process::ExitStatus>),
    TimedOut,
    Cancelled,
    /// The watchdog killed the group; the bytes it saw in use.
    OverMemory(u64),
}

/// A line ralph-loop adds to the output, marked as its own.
pub(crate) fn note(output: &mut String, text: &str) {
    if !output.is_empty() && !output.ends_with('\n') {
        output.push('\n');
    }
    output.push_str("[ralph-loop] ");
    output.push_str(text);
    output.push('\n');
}

/// Stops every process in the group: SIGTERM, then SIGKILL after [`TERM_GRACE`]. Returns whether
/// anything was still running.
async fn terminate_group(pgid: Pid, child: &mut Child) -> bool {
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
    // Reap the shell so it does not linger as a zombie.
    let _ = tokio::time::timeout(Duration::from_millis(500), child.wait()).await;
    true
}

/// Whether any process of the group still runs.
fn group_alive(pgid: Pid, child: &mut Child) -> bool {
    // Reaps the shell once it has exited, so it does not count as a member.
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
    sandbox::scan_group(pgid).is_none_or(|scan| scan.live > 0)
}

/// The process groups of the runs under way, for [`kill_running`].
static RUNNING: Mutex<Vec<Pid>> = Mutex::new(Vec::new());

fn running() -> MutexGuard<'static, Vec<Pid>> {
    RUNNING
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Kills (SIGKILL) the process group of every test run under way, and starts removing their
/// containers. For a hard exit, such as a second Ctrl+C before `std::process::exit`, where no
/// destructor runs to stop them.
pub fn kill_running() {
    for pgid in running().iter() {
        let _ = killpg(*pgid, Signal::SIGKILL);
    }
    sandbox::remove_running_containers();
}

/// Registers a run's process group (and container) for [`kill_running`], and kills the group
/// and removes the container when dropped while armed (the run's future was dropped mid-run).
struct GroupGuard {
    pgid: Pid,
    /// The docker client and the container's name.
    container: Option<(PathBuf, String)>,
    armed: bool,
}

impl GroupGuard {
    fn new(pgid: Pid, container: Option<(PathBuf, String)>) -> Self {
        running().push(pgid);
        if let Some((bin, name)) = &container {
            sandbox::register_container(bin, name);
        }
        Self {
            pgid,
            container,
            armed: true,
        }
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        running().retain(|p| *p != self.pgid);
        if let Some((bin, name)) = &self.container {
            sandbox::unregister_container(name);
            if self.armed {
                // Killing the local client leaves the container running.
                sandbox::remove_detached(bin, name);
            }
        }
        if self.armed {
            let _ = killpg(self.pgid, Signal::SIGKILL);
        }
    }
}

/// Copies one pipe into the shared capture until it closes.
async fn pump<R: AsyncRead + Unpin>(mut pipe: R, capture: Arc<Mutex<Capture>>) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => lock(&capture).push(&buf[..n]),
        }
    }
}

/// Waits up to `limit` for the pipes to close. Returns whether they did.
async fn drain(pumps: &mut JoinSet<()>, limit: Duration) -> bool {
    tokio::time::timeout(limit, async { while pumps.join_next().await.is_some() {} })
        .await
        .is_ok()
}

fn lock(capture: &Mutex<Capture>) -> MutexGuard<'_, Capture> {
    // A pump cannot panic while holding the lock; recover the data regardless.
    capture
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// `text` capped as a run's output is (see [`Capture`]), and whether anything was cut.
pub(crate) fn cap_output(text: &str, max: usize) -> (String, bool) {
    if text.len() <= max {
        return (text.to_string(), false);
    }
    let mut capture = Capture::new(max);
    capture.push(text.as_bytes());
    capture.render()
}

/// The output, capped: the first quarter and the last three quarters of `max` bytes are kept,
/// since a tool's summary comes at the end and the first error often at the start.
struct Capture {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    head_max: usize,
    tail_max: usize,
    cut: usize,
}

impl Capture {
    fn new(max: usize) -> Self {
        let head_max = max / 4;
        Self {
            head: Vec::new(),
            tail: VecDeque::new(),
            head_max,
            tail_max: max - head_max,
            cut: 0,
        }
    }

    fn push(&mut self, data: &[u8]) {
        let to_head = data.len().min(self.head_max - self.head.len());
        self.head.extend_from_slice(&data[..to_head]);
        self.tail.extend(&data[to_head..]);
        if self.tail.len() > self.tail_max {
            let excess = self.tail.len() - self.tail_max;
            self.tail.drain(..excess);
            self.cut += excess;
        }
    }

    /// The text, with a marker where bytes were cut, and whether any were.
    fn render(&mut self) -> (String, bool) {
        let mut head = std::mem::take(&mut self.head);
        let mut tail: Vec<u8> = std::mem::take(&mut self.tail).into();
        let mut cut = self.cut;
        if cut == 0 {
            head.extend_from_slice(&tail);
            return (String::from_utf8_lossy(&head).into_owned(), false);
        }
        // Cut at line ends when one is near, so neither part starts or ends mid-line.
        const NEAR: usize = 1024;
        if let Some(p) = head.iter().rposition(|&b| b == b'\n') {
            if head.len() - p <= NEAR {
                cut += head.len() - (p + 1);
                head.truncate(p + 1);
            }
        }
        if let Some(p) = tail.iter().take(NEAR).position(|&b| b == b'\n') {
            cut += p + 1;
            tail.drain(..=p);
        }
        let mut text = String::from_utf8_lossy(&head).into_owned();
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&format!("... [{cut} bytes cut] ...\n"));
        text.push_str(&String::from_utf8_lossy(&tail));
        (text, true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runner(command: &str) -> ProcessRunner {
        limited(command, Duration::from_secs(20), DEFAULT_MAX_OUTPUT_BYTES)
    }

    fn limited(command: &str, timeout: Duration, max_output_bytes: usize) -> ProcessRunner {
        ProcessRunner::new(command, std::env::temp_dir(), timeout, max_output_bytes)
    }

    async fn run(r: &ProcessRunner) -> TestRun {
        r.run_once(CancellationToken::new()).await
    }

    /// Whether `pid` still runs. A process that died but was not reaped (the container's init
    /// may not reap orphans) is a zombie: dead for our purposes.
    pub(crate) fn alive(pid: i32) -> bool {
        match nix::sys::signal::kill(Pid::from_raw(pid), None) {
            Err(Errno::ESRCH) => false,
            _ => std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|s| {
                    s.rsplit_once(')')
                        .map(|(_, r)| r.trim_start().starts_with('Z'))
                })
                .is_none_or(|zombie| !zombie),
        }
    }

    #[test]
    fn alive_tells_running_from_dead() {
        let mut child = match std::process::Command::new("sleep").arg("30").spawn() {
            Ok(c) => c,
            Err(e) => panic!("{e}"),
        };
        let pid = i32::try_from(child.id()).unwrap_or(0);
        assert!(alive(pid));
        let _ = child.kill();
        // Not reaped yet: a zombie, which counts as dead.
        std::thread::sleep(Duration::from_millis(100));
        assert!(!alive(pid));
        let _ = child.wait();
        assert!(!alive(pid));
    }

    #[tokio::test]
    async fn passing_command() {
        let r = run(&runner("echo hello; echo oops >&2")).await;
        assert_eq!((r.status, r.exit_code), (RunStatus::Passed, Some(0)));
        assert!(
            r.output.contains("hello\n") && r.output.contains("oops\n"),
            "{}",
            r.output
        );
        assert!(!r.parsed() && !r.output_truncated);
        assert_eq!(r.schema_version, SCHEMA_VERSION);
        assert!(r.duration_ms < 2000, "{}", r.duration_ms);
    }

    #[tokio::test]
    async fn failing_command() {
        let r = run(&runner("echo nope; exit 3")).await;
        assert_eq!((r.status, r.exit_code), (RunStatus::Failed, Some(3)));
        assert!(r.output.starts_with("nope"));
    }

    #[tokio::test]
    async fn output_is_parsed() {
        let out = "test a::b ... FAILED\\ntest result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured\\n";
        let r = run(&runner(&format!("printf '{out}'; exit 101"))).await;
        assert!(r.parsed());
        assert_eq!(r.framework.as_deref(), Some("cargo"));
        assert_eq!(
            r.totals,
            Totals {
                passed: 1,
                failed: 1,
                ..Totals::default()
            }
        );
        assert_eq!(r.failing_ids(), ["a::b"]);
    }

    #[tokio::test]
    async fn stdout_and_stderr_interleave_in_arrival_order() {
        let r = run(&runner(
            "echo one; sleep 0.1; echo two >&2; sleep 0.1; echo three",
        ))
        .await;
        assert_eq!(r.output, "one\ntwo\nthree\n");
    }

    #[tokio::test]
    async fn a_command_that_cannot_start_is_an_error_run() {
        let r = ProcessRunner::new("true", "/no/such/dir", DEFAULT_TIMEOUT, 4096)
            .run_once(CancellationToken::new())
            .await;
        assert_eq!(r.status, RunStatus::Error);
        assert!(
            r.output.contains("could not start") && r.output.contains("/no/such/dir"),
            "{}",
            r.output
        );
    }

    #[tokio::test]
    async fn a_hanging_command_and_its_grandchild_are_killed_at_the_timeout() {
        let r = limited(
            "sleep 300 & echo $!; sleep 300; wait",
            Duration::from_secs(1),
            4096,
        );
        let started = Instant::now();
        let run = run(&r).await;
        let took = started.elapsed();
        assert_eq!(run.status, RunStatus::Timeout);
        assert!(took < Duration::from_secs(3), "took {took:?}");
        assert!(run.output.contains("killed after 1 s"), "{}", run.output);
        let pid: i32 = match run
            .output
            .lines()
            .next()
            .and_then(|l| l.trim().parse().ok())
        {
            Some(pid) => pid,
            None => panic!("no pid in {:?}", run.output),
        };
        assert!(!alive(pid), "grandchild {pid} survived");
    }

    #[tokio::test]
    async fn a_command_that_ignores_sigterm_is_killed() {
        let r = limited(
            "trap '' TERM; echo ready; sleep 300",
            Duration::from_millis(300),
            4096,
        );
        let started = Instant::now();
        let run = run(&r).await;
        assert_eq!(run.status, RunStatus::Timeout);
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{:?}",
            started.elapsed()
        );
    }

    #[tokio::test]
    async fn cancel_stops_the_run() {
        let cancel = CancellationToken::new();
        let trigger = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            trigger.cancel();
        });
        let started = Instant::now();
        let r = runner("echo started; sleep 300").run_once(cancel).await;
        assert_eq!(r.status, RunStatus::Error);
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{:?}",
            started.elapsed()
        );
        assert!(
            r.output.starts_with("started\n") && r.output.contains("interrupted"),
            "{}",
            r.output
        );
    }

    #[tokio::test]
    async fn runs_under_way_are_registered_for_kill_running() {
        let dir = match tempfile::tempdir() {
            Ok(d) => d,
            Err(e) => panic!("{e}"),
        };
        let pid_file = dir.path().join("pid");
        // The shell's pid is its group's id.
        let r = runner(&format!("echo $$ > {}; sleep 300", pid_file.display()));
        let cancel = CancellationToken::new();
        let task = {
            let cancel = cancel.clone();
            tokio::spawn(async move { r.run_once(cancel).await })
        };
        let mut pgid = None;
        for _ in 0..250 {
            tokio::time::sleep(Duration::from_millis(20)).await;
            pgid = std::fs::read_to_string(&pid_file)
                .ok()
                .and_then(|s| s.trim().parse().ok());
            if pgid.is_some() {
                break;
            }
        }
        let pgid = Pid::from_raw(pgid.unwrap_or(0));
        let registered = running().contains(&pgid);
        cancel.cancel();
        let run = task.await.map_err(|e| e.to_string());
        assert!(matches!(
            run,
            Ok(TestRun {
                status: RunStatus::Error,
                ..
            })
        ));
        assert!(registered, "{pgid} not registered");
        assert!(!running().contains(&pgid), "{pgid} still registered");
    }

    #[tokio::test]
    async fn background_processes_left_behind_are_stopped() {
        let r = run(&runner("sleep 300 >/dev/null 2>&1 & echo $!")).await;
        assert_eq!(r.status, RunStatus::Passed);
        let pid: i32 = r
            .output
            .lines()
            .next()
            .and_then(|l| l.parse().ok())
            .unwrap_or(0);
        assert!(pid > 0 && !alive(pid), "{}", r.output);
        assert!(r.output.contains("left running"), "{}", r.output);
    }

    #[tokio::test]
    async fn output_cap_keeps_head_and_tail() {
        // 20,000 numbered lines, about 109 kB, into a 4 kB cap.
        let r = limited("seq 1 20000", Duration::from_secs(20), 4096);
        let run = run(&r).await;
        assert!(run.output_truncated);
        assert!(run.output.starts_with("1\n2\n3\n"), "{}", &run.output[..20]);
        assert!(run.output.ends_with("19999\n20000\n"));
        assert!(run.output.contains(" bytes cut] ...\n"));
        assert!(run.output.len() < 4096 + 100, "{}", run.output.len());
        // The cut falls on line ends: every line left is a whole number.
        assert!(run
            .output
            .lines()
            .filter(|l| !l.starts_with("..."))
            .all(|l| l.parse::<u32>().is_ok()));
        let cut: usize = run
            .output
            .lines()
            .find_map(|l| l.strip_prefix("... [")?.split(' ').next()?.parse().ok())
            .unwrap_or(0);
        let total: usize = (1..=20000).map(|n: u32| n.to_string().len() + 1).sum();
        assert_eq!(
            run.output.len() - format!("... [{cut} bytes cut] ...\n").len() + cut,
            total
        );
    }

    #[tokio::test]
    async fn a_flood_is_capped_in_memory_and_time() {
        // 64 MB through a 64 kB cap.
        let r = limited(
            "head -c 67108864 /dev/zero | tr '\\0' x",
            Duration::from_secs(20),
            65536,
        );
        let run = run(&r).await;
        assert_eq!(run.status, RunStatus::Passed);
        assert!(run.output_truncated && run.output.len() < 65536 + 100);
    }

    #[tokio::test]
    async fn secrets_are_removed_and_plain_output_is_asked_for() {
        let r = runner(
            "echo ${OPENAI_API_KEY:-none} ${ANTHROPIC_KEY:-none} ${GH_TOKEN:-none} \
             ${MY_SECRET:-none} ${Some_Api_Key:-none} $KEEP_ME $CI $NO_COLOR $FORCE_COLOR",
        )
        .with_env("OPENAI_API_KEY", "sk-live")
        .with_env("ANTHROPIC_KEY", "sk-ant")
        .with_env("GH_TOKEN", "ghp")
        .with_env("MY_SECRET", "s")
        .with_env("Some_Api_Key", "k")
        .with_env("KEEP_ME", "kept")
        .with_env("CI", "false");
        let run = run(&r).await;
        assert_eq!(run.output, "none none none none none kept true 1 0\n");
    }

    #[test]
    fn secret_names() {
        for name in [
            "OPENAI_API_KEY",
            "OPENAI_KEY",
            "GOOGLE_API_KEY",
            "GITHUB_TOKEN",
            "DB_PASSWORD",
            "X_SECRET",
        ] {
            assert!(is_secret_var(name), "{name}");
        }
        for name in [
            "PATH",
            "HOME",
            "OPENAI_BASE_URL",
            "TOKENIZERS_PARALLELISM",
            "CI",
        ] {
            assert!(!is_secret_var(name), "{name}");
        }
    }

    #[tokio::test]
    async fn stdin_is_closed() {
        let started = Instant::now();
        let r = run(&runner("cat; echo done")).await;
        assert_eq!(r.output, "done\n");
        assert!(started.elapsed() < Duration::from_secs(2));
    }

    #[tokio::test]
    async fn runs_in_the_given_directory() {
        let dir = tempfile::tempdir().map_err(|e| e.to_string());
        let dir = match dir {
            Ok(d) => d,
            Err(e) => panic!("{e}"),
        };
        let r = ProcessRunner::new("pwd", dir.path(), DEFAULT_TIMEOUT, 4096)
            .run_once(CancellationToken::new())
            .await;
        let expected = dir
            .path()
            .canonicalize()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        assert_eq!(r.output.trim(), expected);
    }

    #[tokio::test]
    async fn ansi_colours_are_removed() {
        let r = run(&runner("printf '\\033[31mred\\033[0m\\n'")).await;
        assert_eq!(r.output, "red\n");
    }

    #[tokio::test]
    async fn limits_apply_and_every_run_reports_them() {
        let limits = Limits {
            timeout: Duration::from_secs(7),
            max_output_bytes: 64,
            memory_limit_mb: Some(512),
            sandbox: SandboxKind::Process,
        };
        let r = runner("seq 1 1000").with_limits(&limits);
        assert_eq!(
            (r.timeout, r.max_output_bytes, r.memory_limit_mb),
            (Duration::from_secs(7), 64, Some(512))
        );
        let run = run(&r).await;
        assert!(run.output_truncated);
        assert_eq!(
            run.sandbox,
            Some(Sandbox {
                kind: "process".into(),
                timeout_ms: 7000,
                memory_limit_mb: Some(512),
                peak_memory_mb: None,
            })
        );
        // `new` keeps the default limit on; a run that cannot start still says what it had.
        let failed = ProcessRunner::new("true", "/no/such/dir", DEFAULT_TIMEOUT, 4096)
            .run_once(CancellationToken::new())
            .await;
        let sandbox = failed.sandbox.unwrap_or_else(|| panic!("no sandbox"));
        assert_eq!(
            (sandbox.memory_limit_mb, sandbox.timeout_ms),
            (Some(DEFAULT_MEMORY_LIMIT_MB), 300_000)
        );
    }

    #[tokio::test]
    async fn runs_through_the_trait() {
        let r: &dyn TestRunner = &runner("true");
        assert_eq!(r.command(), "true");
        let run = r.run(CancellationToken::new()).await;
        assert!(matches!(
            run,
            Ok(TestRun {
                status: RunStatus::Passed,
                ..
            })
        ));
    }
}
