//! [`ProcessRunner`]: one test command, as a supervised process group on this machine or as
//! `docker run` (`docs/sandbox.md`), its output read into a [`TestRun`].

use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ralph_actors::ports::runner::{RunnerError, TestRunner};
use ralph_actors::schema::test_run::{
    ResultSource, RunStatus, Sandbox, TestRun, Totals, SCHEMA_VERSION,
};
use tokio_util::sync::CancellationToken;

use crate::process::groups::ProcessGroups;
use crate::process::memory::mib_ceil;
use crate::process::supervise::{self, Ending, SpawnError, Spec};
use crate::runner::env::{is_secret_var, FORCED_ENV};
use crate::runner::language::Language;
use crate::runner::parse::{parse, strip_ansi};
use crate::runner::plan::{Limits, SandboxKind};
use crate::runner::sandbox::{self, default_image, SandboxError, DEFAULT_MEMORY_LIMIT_MB};

/// Defaults, as in `ralph.config.yaml` (`testing.timeout_seconds`, `testing.max_output_bytes`).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 1024 * 1024;

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
    /// Where the run's process group is registered while it runs.
    pub groups: ProcessGroups,
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
            groups: ProcessGroups::new(),
        }
    }

    /// Registers the run's process group in `groups` (the program's registry) rather than in
    /// a registry of its own.
    pub fn with_groups(mut self, groups: ProcessGroups) -> Self {
        self.groups = groups;
        self
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
        let spec = self.spec(container.as_ref(), &env);
        let outcome = match supervise::run(spec, cancel, &self.groups).await {
            Ok(outcome) => outcome,
            Err(SpawnError::Spawn(e)) => {
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
            Err(SpawnError::Vanished) => {
                return self.error_run(
                    started,
                    "the test command exited before it could be watched".into(),
                )
            }
        };
        let mut oom_killed = false;
        if let Some(c) = &container {
            // Asked on any failure, not only exit 137: a test runner whose worker the OOM
            // killer stopped may exit with its own code.
            if let Ending::Exited(Some(st)) = &outcome.ending {
                if !st.success() {
                    oom_killed = sandbox::docker_oom_killed(&self.docker_bin, &env, &c.name).await;
                }
            }
            sandbox::docker_remove(&self.docker_bin, &env, &c.name).await;
        }
        let duration_ms = millis(started.elapsed());

        let mut output = strip_ansi(&outcome.output).into_owned();
        let parsed = parse(&output, &self.cwd);

        let (status, exit_code) = self.status_of(
            &outcome.ending,
            container.is_some(),
            oom_killed,
            &mut output,
        );
        if outcome.stopped_leftovers {
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
            sandbox: Some(self.sandbox_info(outcome.peak_memory_bytes)),
            output,
            output_truncated: outcome.truncated,
            ..TestRun::new(self.command.clone(), status)
        }
    }

    /// How the test command runs: `sh -c` in its own process group with a memory limit, or the
    /// docker client of its container, which is killed and removed through docker.
    fn spec(&self, container: Option<&Container>, env: &[(OsString, OsString)]) -> Spec {
        let mut spec = match container {
            None => Spec::new(
                "sh",
                [OsString::from("-c"), OsString::from(&self.command)],
                &self.cwd,
                env.to_vec(),
                self.timeout,
                self.max_output_bytes,
            ),
            Some(c) => Spec::new(
                &self.docker_bin,
                c.args.clone(),
                &self.cwd,
                env.to_vec(),
                self.timeout,
                self.max_output_bytes,
            ),
        };
        match container {
            // In a container the local group is only the docker client; the engine enforces the
            // memory limit there, and killing the client would leave the container running.
            Some(c) => {
                let (bin, kill_env, name) = (self.docker_bin.clone(), env.to_vec(), c.name.clone());
                spec.before_stop = Some(Box::pin(async move {
                    sandbox::docker_kill(&bin, &kill_env, &name).await;
                }));
                let (bin, name) = (self.docker_bin.clone(), c.name.clone());
                spec.cleanup = Some(Arc::new(move || sandbox::remove_detached(&bin, &name)));
            }
            None => spec.memory_limit_mb = self.memory_limit_mb,
        }
        spec
    }

    /// The run's status and exit code from how its process ended, with a note in `output`
    /// where the tests' own output would not say it (a timeout, a kill, no container).
    fn status_of(
        &self,
        ending: &Ending,
        in_container: bool,
        oom_killed: bool,
        output: &mut String,
    ) -> (RunStatus, Option<i32>) {
        let limit_text = self
            .memory_limit_mb
            .map(|m| format!(" of {m} MB"))
            .unwrap_or_default();
        match ending {
            Ending::Exited(Some(st)) if st.success() => (RunStatus::Passed, Some(0)),
            Ending::Exited(Some(st)) if oom_killed => {
                note(
                    output,
                    &format!(
                        "killed: the container ran out of memory (Docker's memory limit{limit_text})"
                    ),
                );
                (RunStatus::MemoryLimit, st.code())
            }
            // `docker run` itself failed (no such image, a bad option): the tests never ran.
            Ending::Exited(Some(st)) if in_container && st.code() == Some(125) => {
                note(
                    output,
                    "docker could not start the container (exit 125): see docker's message above",
                );
                (RunStatus::Error, st.code())
            }
            Ending::Exited(Some(st)) => {
                if let Some(sig) = st.signal() {
                    note(
                        output,
                        &format!("the test command was killed by signal {sig}"),
                    );
                }
                (RunStatus::Failed, st.code())
            }
            Ending::Exited(None) => (RunStatus::Failed, None),
            // The test runner sets no idle limit; were one set, it is a timeout too.
            Ending::TimedOut | Ending::Idle => {
                let secs = self.timeout.as_secs_f64();
                note(
                    output,
                    &format!("killed after {secs} s: the test command ran past its timeout"),
                );
                (RunStatus::Timeout, None)
            }
            Ending::Cancelled => {
                note(
                    output,
                    "interrupted: the test run was cancelled and its processes stopped",
                );
                (RunStatus::Error, None)
            }
            Ending::OverMemory(used) => {
                note(
                    output,
                    &format!(
                        "killed: the test command's processes used {} MB, over the memory \
                         limit{limit_text}",
                        mib_ceil(*used)
                    ),
                );
                (RunStatus::MemoryLimit, None)
            }
        }
    }

    fn error_run(&self, started: Instant, why: String) -> TestRun {
        TestRun {
            schema_version: SCHEMA_VERSION,
            command: self.command.clone(),
            status: RunStatus::Error,
            exit_code: None,
            duration_ms: millis(started.elapsed()),
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
            peak_memory_mb: peak_bytes.map(mib_ceil),
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
    async fn run(&self, cancel: CancellationToken) -> Result<TestRun, RunnerError> {
        Ok(self.run_once(cancel).await)
    }

    fn command(&self) -> String {
        self.command.clone()
    }
}

/// A line ralph-loop adds to the output, marked as its own.
pub fn note(output: &mut String, text: &str) {
    if !output.is_empty() && !output.ends_with('\n') {
        output.push('\n');
    }
    output.push_str("[ralph-loop] ");
    output.push_str(text);
    output.push('\n');
}

/// `d` in whole milliseconds, rounded to the nearest: truncated, every run would read half a
/// millisecond short on average, and a harness subtracting the runs from the wall time would
/// count that as the loop's own time.
fn millis(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_micros().saturating_add(500) / 1000).unwrap_or(u64::MAX)
}

#[cfg(test)]
pub(crate) mod tests {
    use nix::errno::Errno;
    use nix::unistd::Pid;

    use super::*;

    fn runner(command: &str) -> ProcessRunner {
        limited(command, Duration::from_secs(20), DEFAULT_MAX_OUTPUT_BYTES)
    }

    fn limited(command: &str, timeout: Duration, max_output_bytes: usize) -> ProcessRunner {
        ProcessRunner::new(command, std::env::temp_dir(), timeout, max_output_bytes)
    }

    /// Asserts that what was `started` has taken less than `limit`.
    fn assert_within(started: Instant, limit: Duration) {
        let took = started.elapsed();
        assert!(took < limit, "took {took:?}");
    }

    /// Asserts that `run`'s output holds every one of `pieces`.
    fn assert_output_has(run: &TestRun, pieces: &[&str]) {
        for piece in pieces {
            assert!(run.output.contains(piece), "no {piece:?} in {}", run.output);
        }
    }

    async fn run(r: &ProcessRunner) -> TestRun {
        r.run_once(CancellationToken::new()).await
    }

    /// `command` run with `timeout` (and 4 KiB of output), which must time out and be stopped
    /// within 3 s.
    async fn timed_out(command: &str, timeout: Duration) -> TestRun {
        let started = Instant::now();
        let run = run(&limited(command, timeout, 4096)).await;
        assert_within(started, Duration::from_secs(3));
        assert_eq!(run.status, RunStatus::Timeout);
        run
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
        assert_output_has(&r, &["hello\n", "oops\n"]);
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
        assert_output_has(&r, &["could not start", "/no/such/dir"]);
    }

    #[tokio::test]
    async fn a_hanging_command_and_its_grandchild_are_killed_at_the_timeout() {
        let run = timed_out(
            "sleep 300 & echo $!; sleep 300; wait",
            Duration::from_secs(1),
        )
        .await;
        assert_output_has(&run, &["killed after 1 s"]);
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
        timed_out(
            "trap '' TERM; echo ready; sleep 300",
            Duration::from_millis(300),
        )
        .await;
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
        assert_within(started, Duration::from_secs(2));
        assert!(
            r.output.starts_with("started\n") && r.output.contains("interrupted"),
            "{}",
            r.output
        );
    }

    #[tokio::test]
    async fn runs_under_way_are_registered_in_the_process_groups() {
        let dir = match tempfile::tempdir() {
            Ok(d) => d,
            Err(e) => panic!("{e}"),
        };
        let pid_file = dir.path().join("pid");
        // The shell's pid is its group's id.
        let groups = ProcessGroups::new();
        let r = runner(&format!("echo $$ > {}; sleep 300", pid_file.display()))
            .with_groups(groups.clone());
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
        let registered = groups.contains(pgid.as_raw());
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
        assert!(!groups.contains(pgid.as_raw()), "{pgid} still registered");
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

    #[tokio::test]
    async fn stdin_is_closed() {
        let started = Instant::now();
        let r = run(&runner("cat; echo done")).await;
        assert_eq!(r.output, "done\n");
        assert_within(started, Duration::from_secs(2));
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
