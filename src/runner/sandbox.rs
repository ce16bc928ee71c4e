//! The sandbox of a test run besides its timeout, output cap and memory watchdog
//! ([`crate::process`]): `docker run` for `sandbox.type: docker` (`docs/sandbox.md`).
//!
//! The watchdog's limit is soft (it samples `/proc`); Docker mode is the hard limit: the engine
//! puts the container in its own memory cgroup.

use std::ffi::OsString;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;

use super::language::Language;

/// `sandbox.memory_limit_mb` when the config does not set it.
pub const DEFAULT_MEMORY_LIMIT_MB: u64 = 2048;
/// `docker run --pids-limit`: a fork bomb in a test stops here instead of at the host's limit.
pub const DOCKER_PIDS_LIMIT: u32 = 4096;
/// Containers ralph-loop starts carry this label, so leftovers can be found
/// (`docker ps -a --filter label=ralph-loop`).
pub const DOCKER_LABEL: &str = "ralph-loop";

/// How long `docker info` may take to answer before the engine counts as absent.
const DOCKER_PROBE_TIMEOUT: Duration = Duration::from_secs(5);
/// How long `docker kill`, `inspect` and `rm` may take; an engine that stops answering must not
/// hang the loop.
const DOCKER_CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// Why tests cannot run in the configured sandbox.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SandboxError {
    #[error(
        "sandbox.type is docker but no Docker engine is running (docker info: {detail}): \
         start Docker or set sandbox.type: process"
    )]
    NoEngine { detail: String },
    #[error(
        "sandbox.type is docker but `{bin}` could not be run ({detail}): install Docker or set \
         sandbox.type: process"
    )]
    NoClient { bin: String, detail: String },
    #[error(
        "sandbox.type is docker but sandbox.image is not set and the project's language is \
         unknown: set sandbox.image"
    )]
    NoImage,
}

/// Checks that a Docker engine answers, so that `sandbox.type: docker` fails at startup rather
/// than at the first test run. The answer is remembered for the rest of the process.
pub fn check_docker() -> Result<(), SandboxError> {
    ensure_docker(Path::new("docker"))
}

/// [`check_docker`] for a given client binary; each binary is probed once per process. Blocks
/// for up to [`DOCKER_PROBE_TIMEOUT`].
pub(crate) fn ensure_docker(bin: &Path) -> Result<(), SandboxError> {
    static PROBES: Mutex<Vec<(PathBuf, Result<(), SandboxError>)>> = Mutex::new(Vec::new());
    if let Some((_, known)) = lock(&PROBES).iter().find(|(b, _)| b == bin) {
        return known.clone();
    }
    // Probed without holding the lock: two runs starting together may both probe, which is
    // harmless, whereas holding it would stall every other run for the probe's duration.
    let result = probe_docker(bin, DOCKER_PROBE_TIMEOUT);
    lock(&PROBES).push((bin.to_path_buf(), result.clone()));
    result
}

/// Runs `docker info` once.
fn probe_docker(bin: &Path, timeout: Duration) -> Result<(), SandboxError> {
    let mut child = client_command(bin, &["info", "--format", "{{.ServerVersion}}"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| SandboxError::NoClient {
            bin: bin.display().to_string(),
            detail: e.to_string(),
        })?;
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
            _ => {
                // The client may have started helpers (credential or context plugins).
                if let Ok(pgid) = i32::try_from(child.id()) {
                    let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
                }
                let _ = child.wait();
                return Err(SandboxError::NoEngine {
                    detail: format!("no answer within {} s", timeout.as_secs_f64()),
                });
            }
        }
    };
    if status.success() {
        return Ok(());
    }
    let mut stderr = String::new();
    if let Some(mut pipe) = child.stderr.take() {
        let _ = pipe.read_to_string(&mut stderr);
    }
    let detail = stderr
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map_or_else(|| format!("exited with {status}"), str::to_owned);
    Err(SandboxError::NoEngine { detail })
}

/// The image used when `sandbox.image` is not set.
pub fn default_image(language: Option<Language>) -> Option<&'static str> {
    match language? {
        Language::TypeScript | Language::JavaScript => Some("node:20-bookworm-slim"),
        Language::Python => Some("python:3.11-slim"),
        Language::Rust => Some("rust:1-slim"),
    }
}

/// Variables of ralph-loop's environment that mean the same inside a container. Everything else
/// describes this machine (`PATH`, `HOME`, `TMPDIR`, `CARGO_HOME`, `VIRTUAL_ENV`, ...) and would
/// break the image's own setup.
const PORTABLE_VARS: &[&str] = &[
    "LANG",
    "LANGUAGE",
    "TZ",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "all_proxy",
];

/// The names passed into the container with `-e NAME` (their values come from the docker
/// client's environment, so none shows in the process list): the portable variables present in
/// `env`, and the ones the runner sets (`forced`, e.g. `CI`, and the plan's, e.g.
/// `RUSTC_BOOTSTRAP`). `env` has had its secrets removed already; a name not in it is not passed.
pub(crate) fn container_env_names(env: &[(OsString, OsString)], set: &[&str]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for (name, _) in env {
        let Some(name) = name.to_str() else {
            continue;
        };
        let portable = PORTABLE_VARS.contains(&name) || name.starts_with("LC_");
        if (portable || set.contains(&name)) && !names.iter().any(|n| n == name) {
            names.push(name.to_owned());
        }
    }
    names
}

/// One container run's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ContainerSpec<'a> {
    pub name: &'a str,
    pub image: &'a str,
    /// Bind-mounted at the same path inside, so paths in reports and output match the host's.
    pub mounts: &'a [PathBuf],
    pub workdir: &'a Path,
    pub memory_limit_mb: Option<u64>,
    pub env_names: &'a [String],
    /// `uid:gid` to run as, so files the tests write stay the user's.
    pub user: (u32, u32),
    pub command: &'a str,
}

/// The arguments of `docker run` for `spec`. No `--rm`: the container must outlive its exit for
/// `docker inspect` to tell an OOM kill; ralph-loop removes it afterwards.
pub(crate) fn docker_run_args(spec: &ContainerSpec<'_>) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec!["run".into(), "--name".into(), spec.name.into()];
    args.extend(["--label".into(), DOCKER_LABEL.into(), "--init".into()]);
    args.extend([
        "--user".into(),
        format!("{}:{}", spec.user.0, spec.user.1).into(),
    ]);
    for dir in spec.mounts {
        let mut bind = dir.as_os_str().to_owned();
        bind.push(":");
        bind.push(dir);
        args.extend(["-v".into(), bind]);
    }
    args.extend(["-w".into(), spec.workdir.as_os_str().to_owned()]);
    if let Some(mb) = spec.memory_limit_mb {
        // The same value for memory and memory+swap: no swap, so the limit is the limit.
        args.extend(["--memory".into(), format!("{mb}m").into()]);
        args.extend(["--memory-swap".into(), format!("{mb}m").into()]);
    }
    args.extend(["--pids-limit".into(), DOCKER_PIDS_LIMIT.to_string().into()]);
    // The user may have no home in the image (no passwd entry for the uid); tools that write
    // caches there (npm, pip, cargo) need one that is writable.
    args.extend(["-e".into(), "HOME=/tmp".into()]);
    for name in spec.env_names {
        args.extend(["-e".into(), name.into()]);
    }
    args.extend([
        spec.image.into(),
        "sh".into(),
        "-c".into(),
        spec.command.into(),
    ]);
    args
}

/// A fresh container name.
pub(crate) fn container_name() -> String {
    format!("ralph-{}", uuid::Uuid::new_v4().simple())
}

/// The caller's uid and gid.
pub(crate) fn caller_ids() -> (u32, u32) {
    // SAFETY: getuid and getgid cannot fail and take no pointers.
    unsafe { (libc::getuid(), libc::getgid()) }
}

/// Runs `docker <args>` under [`DOCKER_CALL_TIMEOUT`]; `None` when it could not run or did not
/// finish in time.
async fn docker(
    bin: &Path,
    env: &[(OsString, OsString)],
    args: &[&str],
) -> Option<std::process::Output> {
    let run = tokio::process::Command::new(bin)
        .args(args)
        .stdin(Stdio::null())
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .process_group(0)
        .kill_on_drop(true)
        .output();
    tokio::time::timeout(DOCKER_CALL_TIMEOUT, run)
        .await
        .ok()?
        .ok()
}

/// Stops a container: killing the local `docker run` client would leave it running.
pub(crate) async fn docker_kill(bin: &Path, env: &[(OsString, OsString)], name: &str) {
    let _ = docker(bin, env, &["kill", name]).await;
}

/// Whether the kernel's OOM killer stopped a process of the container (its memory limit).
pub(crate) async fn docker_oom_killed(
    bin: &Path,
    env: &[(OsString, OsString)],
    name: &str,
) -> bool {
    docker(
        bin,
        env,
        &["inspect", "--format", "{{.State.OOMKilled}}", name],
    )
    .await
    .is_some_and(|out| {
        out.status.success() && String::from_utf8_lossy(&out.stdout).trim() == "true"
    })
}

/// Removes a container, killing it first if it still runs.
pub(crate) async fn docker_remove(bin: &Path, env: &[(OsString, OsString)], name: &str) {
    let _ = docker(bin, env, &["rm", "-f", name]).await;
}

/// Starts `docker rm -f <name>` and reaps it on a thread, for where no one can wait (a drop).
pub(crate) fn remove_detached(bin: &Path, name: &str) {
    if let Ok(mut child) = spawn_remove(bin, name) {
        std::thread::spawn(move || child.wait());
    }
}

fn spawn_remove(bin: &Path, name: &str) -> std::io::Result<std::process::Child> {
    client_command(bin, &["rm", "-f", name])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
}

/// The docker client `bin` with `args`: no input, only [`client_env`], and out of the
/// terminal's process group, so the Ctrl+C that caused a hard exit does not stop it.
fn client_command(bin: &Path, args: &[&str]) -> std::process::Command {
    let mut command = std::process::Command::new(bin);
    command
        .args(args)
        .stdin(Stdio::null())
        .env_clear()
        .envs(client_env())
        .process_group(0);
    command
}

/// ralph-loop's environment without secrets: the docker client needs `PATH`, `HOME` (its
/// config) and `DOCKER_*`, never an API key.
fn client_env() -> Vec<(OsString, OsString)> {
    std::env::vars_os()
        .filter(|(k, _)| !crate::runner::env::is_secret_var(&k.to_string_lossy()))
        .collect()
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Nothing panics while holding these locks; recover the data regardless.
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use ralph_actors::schema::test_run::{RunStatus, TestRun};
    use tokio_util::sync::CancellationToken;

    use super::*;
    use crate::runner::command::tests::alive;
    use crate::runner::plan::{Limits, SandboxKind};
    use crate::runner::{ProcessRunner, DEFAULT_MAX_OUTPUT_BYTES};

    fn limits(timeout: Duration, memory_limit_mb: Option<u64>, sandbox: SandboxKind) -> Limits {
        Limits {
            timeout,
            max_output_bytes: DEFAULT_MAX_OUTPUT_BYTES,
            memory_limit_mb,
            sandbox,
        }
    }

    fn local(command: &str, memory_limit_mb: Option<u64>) -> ProcessRunner {
        ProcessRunner::new(
            command,
            std::env::temp_dir(),
            DEFAULT_TIMEOUT_FOR_TESTS,
            4096,
        )
        .with_limits(&limits(
            DEFAULT_TIMEOUT_FOR_TESTS,
            memory_limit_mb,
            SandboxKind::Process,
        ))
    }

    const DEFAULT_TIMEOUT_FOR_TESTS: Duration = Duration::from_secs(20);

    /// The pids printed one per line at the start of `output`.
    fn pids(output: &str) -> Vec<i32> {
        output
            .lines()
            .map_while(|l| l.trim().parse().ok())
            .collect()
    }

    /// The run printed `n` pids first, and none of them is alive any more.
    fn assert_all_stopped(output: &str, n: usize) {
        let pids = pids(output);
        assert_eq!(pids.len(), n, "{output}");
        for pid in pids {
            assert!(!alive(pid), "{pid} survived");
        }
    }

    /// Python that prints its pid, then allocates (and touches) 1 MB after 1 MB for ever.
    const HOG: &str = r#"python3 -c "import os; print(os.getpid(), flush=True); b=[bytearray(10**6) for _ in range(100000)]""#;

    #[tokio::test]
    async fn a_memory_hog_is_killed_at_the_limit_with_its_group() {
        let started = Instant::now();
        let run = local(HOG, Some(200))
            .run_once(CancellationToken::new())
            .await;
        let took = started.elapsed();
        assert_eq!(run.status, RunStatus::MemoryLimit, "{}", run.output);
        assert_eq!(run.exit_code, None);
        assert!(took < Duration::from_secs(3), "took {took:?}");
        assert!(
            run.output
                .contains("[ralph-loop] killed: the test command's processes used ")
                && run
                    .output
                    .contains(" MB, over the memory limit of 200 MB\n"),
            "{}",
            run.output
        );
        let sandbox = run.sandbox.clone().unwrap_or_else(|| panic!("no sandbox"));
        assert_eq!(sandbox.kind, "process");
        assert_eq!(sandbox.memory_limit_mb, Some(200));
        let peak = sandbox.peak_memory_mb.unwrap_or(0);
        // Over the limit, by no more than a few intervals of allocation.
        assert!((201..1024).contains(&peak), "peak {peak}");
        assert!(run.summary().contains("over the memory limit of 200 MB"));
        assert_all_stopped(&run.output, 1);
    }

    #[tokio::test]
    async fn a_child_of_the_shell_hogging_memory_is_caught() {
        // The shell stays (a command follows), so the hog is its child, not the shell itself.
        let run = local(&format!("echo $$; {HOG}; echo after"), Some(200))
            .run_once(CancellationToken::new())
            .await;
        assert_eq!(run.status, RunStatus::MemoryLimit, "{}", run.output);
        assert!(!run.output.contains("after"), "{}", run.output);
        assert_all_stopped(&run.output, 2);
    }

    #[tokio::test]
    async fn memory_is_summed_over_the_group() {
        // Three processes of about 100 MB each (90 MB and the interpreter): none passes 250 MB,
        // nor do two (at 200 MB a slow third start let two reach the limit alone), all three do.
        // One write per pid line: print() writes the number and the newline separately, and
        // three processes printing at once interleave them.
        let one = r#"python3 -c "import os, time; os.write(1, b'%d\n' % os.getpid()); time.sleep(0.2); b=bytearray(90*10**6); time.sleep(30)""#;
        let command = format!("{one} & {one} & {one} & wait");
        let started = Instant::now();
        let run = local(&command, Some(250))
            .run_once(CancellationToken::new())
            .await;
        assert_eq!(run.status, RunStatus::MemoryLimit, "{}", run.output);
        // Long before the 30 s sleeps end; generous, as a loaded machine starts python slowly.
        assert!(started.elapsed() < Duration::from_secs(15));
        let peak = run
            .sandbox
            .as_ref()
            .and_then(|s| s.peak_memory_mb)
            .unwrap_or(0);
        assert!(peak > 250, "peak {peak}");
        // Each prints its pid before it allocates.
        assert_all_stopped(&run.output, 3);
    }

    #[tokio::test]
    async fn a_command_under_the_limit_passes_and_reports_its_peak() {
        let run = local(
            r#"python3 -c "import time; b=bytearray(50*10**6); time.sleep(0.3)""#,
            Some(200),
        )
        .run_once(CancellationToken::new())
        .await;
        assert_eq!(run.status, RunStatus::Passed, "{}", run.output);
        let sandbox = run.sandbox.unwrap_or_else(|| panic!("no sandbox"));
        assert_eq!(sandbox.kind, "process");
        assert_eq!(sandbox.timeout_ms, 20_000);
        assert_eq!(sandbox.memory_limit_mb, Some(200));
        let peak = sandbox.peak_memory_mb.unwrap_or(0);
        assert!((48..200).contains(&peak), "peak {peak}");
    }

    #[tokio::test]
    async fn a_run_shorter_than_one_sample_reports_no_peak() {
        let run = local("true", Some(200))
            .run_once(CancellationToken::new())
            .await;
        assert_eq!(run.status, RunStatus::Passed);
        let sandbox = run.sandbox.unwrap_or_else(|| panic!("no sandbox"));
        assert_eq!(
            (sandbox.memory_limit_mb, sandbox.peak_memory_mb),
            (Some(200), None)
        );
    }

    #[tokio::test]
    async fn no_limit_turns_the_watchdog_off() {
        let run = local(
            r#"python3 -c "import time; b=bytearray(300*10**6); time.sleep(0.2)""#,
            None,
        )
        .run_once(CancellationToken::new())
        .await;
        assert_eq!(run.status, RunStatus::Passed, "{}", run.output);
        let sandbox = run.sandbox.unwrap_or_else(|| panic!("no sandbox"));
        assert_eq!(
            (sandbox.memory_limit_mb, sandbox.peak_memory_mb),
            (None, None)
        );
    }

    #[test]
    fn images_by_language() {
        assert_eq!(
            default_image(Some(Language::TypeScript)),
            Some("node:20-bookworm-slim")
        );
        assert_eq!(
            default_image(Some(Language::JavaScript)),
            Some("node:20-bookworm-slim")
        );
        assert_eq!(
            default_image(Some(Language::Python)),
            Some("python:3.11-slim")
        );
        assert_eq!(default_image(Some(Language::Rust)), Some("rust:1-slim"));
        assert_eq!(default_image(None), None);
    }

    #[test]
    fn only_portable_and_runner_set_variables_enter_the_container() {
        let env: Vec<(OsString, OsString)> = [
            ("PATH", "/root/.cargo/bin:/usr/bin"),
            ("HOME", "/root"),
            ("TMPDIR", "/var/folders/x"),
            ("LANG", "C.UTF-8"),
            ("LC_ALL", "C.UTF-8"),
            ("CARGO_HOME", "/root/.cargo"),
            ("https_proxy", "http://proxy:3128"),
            ("CI", "true"),
            ("RUSTC_BOOTSTRAP", "1"),
        ]
        .iter()
        .map(|(k, v)| (OsString::from(k), OsString::from(v)))
        .collect();
        assert_eq!(
            container_env_names(&env, &["CI", "RUSTC_BOOTSTRAP", "NOT_SET"]),
            ["LANG", "LC_ALL", "https_proxy", "CI", "RUSTC_BOOTSTRAP"]
        );
    }

    /// How the fake engine answers `docker info`.
    enum Engine {
        Up,
        Down,
        Hanging,
    }

    /// A `docker` executable that records each call (arguments separated by 0x1f, calls by
    /// 0x1e) and runs `docker run`'s command locally, in the `-w` directory, with only the `-e`
    /// variables, as a container would.
    struct FakeDocker {
        dir: tempfile::TempDir,
        bin: PathBuf,
    }

    impl FakeDocker {
        fn new(engine: Engine, oom_killed: bool) -> Self {
            let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
            let bin = dir.path().join("docker");
            let log = dir.path().join("calls");
            let info = match engine {
                Engine::Up => "exit 0",
                Engine::Down => {
                    "echo 'Cannot connect to the Docker daemon at unix:///fake.sock. Is the \
                     docker daemon running?' >&2; echo 'second line' >&2; exit 1"
                }
                Engine::Hanging => "sleep 30",
            };
            let script = format!(
                r#"#!/bin/sh
[ "$1" = ready ] && exit 0
for a in "$@"; do printf '%s\037' "$a" >> '{log}'; done
printf '\036' >> '{log}'
case "$1" in
info) {info};;
inspect) echo {oom_killed};;
kill|rm) exit 0;;
run)
  shift
  vars=
  while [ $# -gt 0 ]; do
    case "$1" in
      --init) shift;;
      -e) case "$2" in
            *=*) vars="$vars $2";;
            *) if v=$(printenv "$2"); then vars="$vars $2=$v"; fi;;
          esac
          shift 2;;
      -w) wd=$2; shift 2;;
      -*) shift 2;;
      *) break;;
    esac
  done
  shift
  cd "$wd" || exit 125
  exec env -i $vars "$@";;
*) echo "fake docker: unknown command $1" >&2; exit 1;;
esac
"#,
                log = log.display()
            );
            if let Err(e) = std::fs::write(&bin, script) {
                panic!("{e}");
            }
            let mode = std::os::unix::fs::PermissionsExt::from_mode(0o755);
            if let Err(e) = std::fs::set_permissions(&bin, mode) {
                panic!("{e}");
            }
            // Another test thread forking while the file was open for writing leaves a copy of
            // the descriptor open until its exec, during which running the file fails with
            // ETXTBSY ("Text file busy"); wait that out so the probe does not fail for it.
            for _ in 0..100 {
                match std::process::Command::new(&bin).arg("ready").status() {
                    Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) => {
                        std::thread::sleep(Duration::from_millis(10));
                    }
                    _ => break,
                }
            }
            Self { dir, bin }
        }

        fn calls(&self) -> Vec<Vec<String>> {
            let log = std::fs::read_to_string(self.dir.path().join("calls")).unwrap_or_default();
            log.split('\u{1e}')
                .filter(|c| !c.is_empty())
                .map(|c| {
                    c.split('\u{1f}')
                        .filter(|a| !a.is_empty())
                        .map(str::to_owned)
                        .collect()
                })
                .collect()
        }

        /// The calls whose first argument is `command`.
        fn calls_of(&self, command: &str) -> Vec<Vec<String>> {
            self.calls()
                .into_iter()
                .filter(|c| c.first().map(String::as_str) == Some(command))
                .collect()
        }

        fn runner(&self, command: &str, cwd: &Path, timeout: Duration) -> ProcessRunner {
            ProcessRunner::new(command, cwd, timeout, DEFAULT_MAX_OUTPUT_BYTES)
                .with_limits(&limits(
                    timeout,
                    Some(300),
                    SandboxKind::Docker { image: None },
                ))
                .with_language(Some(Language::Python))
                .with_docker_bin(&self.bin)
        }

        /// `command` run once through this docker in a fresh temporary folder, with the tests'
        /// default timeout.
        async fn run_in_temp(&self, command: &str) -> TestRun {
            let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
            self.runner(command, dir.path(), DEFAULT_TIMEOUT_FOR_TESTS)
                .run_once(CancellationToken::new())
                .await
        }
    }

    /// The value following `flag` in `args`, each time it appears.
    fn values<'a>(args: &'a [String], flag: &str) -> Vec<&'a str> {
        args.windows(2)
            .filter(|w| w[0] == flag)
            .map(|w| w[1].as_str())
            .collect()
    }

    #[tokio::test]
    async fn docker_runs_the_command_in_a_container_of_the_project() {
        let fake = FakeDocker::new(Engine::Up, false);
        let project = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let pkg = project.path().join("pkg");
        if let Err(e) = std::fs::create_dir(&pkg) {
            panic!("{e}");
        }
        let run = fake
            .runner(
                "env | sort; echo written > out.txt",
                &pkg,
                DEFAULT_TIMEOUT_FOR_TESTS,
            )
            .with_project_dir(project.path())
            .with_env("OPENAI_API_KEY", "sk-live-123")
            .with_env("GH_TOKEN", "ghp_456")
            .with_env("RUSTC_BOOTSTRAP", "1")
            .run_once(CancellationToken::new())
            .await;
        assert_eq!(run.status, RunStatus::Passed, "{}", run.output);

        let runs = fake.calls_of("run");
        assert_eq!(runs.len(), 1, "{:?}", fake.calls());
        let args = &runs[0];
        let name = values(args, "--name");
        assert!(
            name.len() == 1 && name[0].starts_with("ralph-") && name[0].len() == 38,
            "{name:?}"
        );
        let root = project.path().display().to_string();
        assert_eq!(values(args, "-v"), [format!("{root}:{root}")]);
        assert_eq!(values(args, "-w"), [pkg.display().to_string()]);
        assert_eq!(values(args, "--memory"), ["300m"]);
        assert_eq!(values(args, "--memory-swap"), ["300m"]);
        assert_eq!(values(args, "--pids-limit"), ["4096"]);
        assert_eq!(values(args, "--label"), ["ralph-loop"]);
        let (uid, gid) = caller_ids();
        assert_eq!(values(args, "--user"), [format!("{uid}:{gid}")]);
        assert!(args.contains(&"--init".to_owned()));
        assert!(!args.iter().any(|a| a == "--rm"));
        let env = values(args, "-e");
        for name in [
            "HOME=/tmp",
            "CI",
            "NO_COLOR",
            "FORCE_COLOR",
            "RUSTC_BOOTSTRAP",
        ] {
            assert!(env.contains(&name), "{name} not in {env:?}");
        }
        for name in ["PATH", "HOME", "OPENAI_API_KEY", "GH_TOKEN"] {
            assert!(!env.contains(&name), "{name} in {env:?}");
        }
        assert!(
            !args
                .iter()
                .any(|a| a.contains("sk-live") || a.contains("ghp_")),
            "{args:?}"
        );
        assert_eq!(
            args[args.len() - 4..],
            [
                "python:3.11-slim",
                "sh",
                "-c",
                "env | sort; echo written > out.txt"
            ]
        );

        // Inside: only what was passed, secrets absent.
        for line in [
            "CI=true\n",
            "HOME=/tmp\n",
            "RUSTC_BOOTSTRAP=1\n",
            "NO_COLOR=1\n",
        ] {
            assert!(run.output.contains(line), "{line} not in {}", run.output);
        }
        for secret in ["OPENAI_API_KEY", "sk-live", "GH_TOKEN", "ghp_", "PATH="] {
            assert!(!run.output.contains(secret), "{secret} in {}", run.output);
        }
        assert!(pkg.join("out.txt").is_file(), "not run in the workdir");

        // Removed after its exit; inspected only on a failure.
        assert_eq!(fake.calls_of("rm"), [vec!["rm", "-f", name[0]]]);
        assert!(fake.calls_of("inspect").is_empty());
        let sandbox = run.sandbox.unwrap_or_else(|| panic!("no sandbox"));
        assert_eq!(sandbox.kind, "docker");
        assert_eq!(sandbox.memory_limit_mb, Some(300));
        assert_eq!(sandbox.peak_memory_mb, None);
    }

    #[tokio::test]
    async fn a_directory_outside_the_project_is_mounted_too() {
        let fake = FakeDocker::new(Engine::Up, false);
        let project = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let elsewhere = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let run = fake
            .runner("true", elsewhere.path(), DEFAULT_TIMEOUT_FOR_TESTS)
            .with_project_dir(project.path())
            .run_once(CancellationToken::new())
            .await;
        assert_eq!(run.status, RunStatus::Passed, "{}", run.output);
        let runs = fake.calls_of("run");
        let mounts: Vec<String> = values(&runs[0], "-v")
            .into_iter()
            .map(str::to_owned)
            .collect();
        let p = project.path().display().to_string();
        let e = elsewhere.path().display().to_string();
        assert_eq!(mounts, [format!("{p}:{p}"), format!("{e}:{e}")]);
    }

    #[tokio::test]
    async fn a_timeout_kills_the_container_with_docker_kill() {
        let fake = FakeDocker::new(Engine::Up, false);
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let started = Instant::now();
        let run = fake
            .runner(
                "echo started; sleep 30",
                dir.path(),
                Duration::from_millis(500),
            )
            .run_once(CancellationToken::new())
            .await;
        assert_eq!(run.status, RunStatus::Timeout, "{}", run.output);
        assert!(started.elapsed() < Duration::from_secs(5));
        assert!(run.output.starts_with("started\n"), "{}", run.output);
        let runs = fake.calls_of("run");
        let name = values(&runs[0], "--name")[0].to_owned();
        assert_eq!(
            fake.calls_of("kill"),
            [vec!["kill".to_owned(), name.clone()]]
        );
        // Killed, then removed.
        let commands: Vec<String> = fake.calls().into_iter().map(|c| c[0].clone()).collect();
        assert_eq!(commands, ["info", "run", "kill", "rm"]);
        assert_eq!(
            fake.calls_of("rm"),
            [vec!["rm".to_owned(), "-f".into(), name]]
        );
    }

    #[tokio::test]
    async fn an_oom_killed_container_is_a_memory_limit_run() {
        let fake = FakeDocker::new(Engine::Up, true);
        let run = fake.run_in_temp("exit 137").await;
        assert_eq!(
            (run.status, run.exit_code),
            (RunStatus::MemoryLimit, Some(137)),
            "{}",
            run.output
        );
        assert!(
            run.output.contains(
                "[ralph-loop] killed: the container ran out of memory (Docker's memory limit of \
                 300 MB)"
            ),
            "{}",
            run.output
        );
        let name = values(&fake.calls_of("run")[0], "--name")[0].to_owned();
        assert_eq!(
            fake.calls_of("inspect"),
            [vec![
                "inspect".to_owned(),
                "--format".into(),
                "{{.State.OOMKilled}}".into(),
                name.clone()
            ]]
        );
        // Inspected before removal.
        let commands: Vec<String> = fake.calls().into_iter().map(|c| c[0].clone()).collect();
        assert_eq!(commands, ["info", "run", "inspect", "rm"]);
    }

    #[tokio::test]
    async fn exit_137_without_an_oom_kill_is_a_failure() {
        let fake = FakeDocker::new(Engine::Up, false);
        let run = fake.run_in_temp("exit 137").await;
        assert_eq!((run.status, run.exit_code), (RunStatus::Failed, Some(137)));
        assert_eq!(fake.calls_of("inspect").len(), 1);
    }

    #[tokio::test]
    async fn docker_run_failing_to_start_is_an_error_run() {
        let fake = FakeDocker::new(Engine::Up, false);
        let run = fake
            .run_in_temp("echo 'Unable to find image' >&2; exit 125")
            .await;
        assert_eq!((run.status, run.exit_code), (RunStatus::Error, Some(125)));
        assert!(run.output.contains("docker could not start the container"));
    }

    #[tokio::test]
    async fn a_dropped_run_removes_its_container() {
        let fake = FakeDocker::new(Engine::Up, false);
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let runner = fake.runner("sleep 30", dir.path(), DEFAULT_TIMEOUT_FOR_TESTS);
        let task = tokio::spawn(async move { runner.run_once(CancellationToken::new()).await });
        let mut name = None;
        for _ in 0..250 {
            tokio::time::sleep(Duration::from_millis(20)).await;
            name = fake
                .calls_of("run")
                .first()
                .and_then(|args| values(args, "--name").first().map(|n| n.to_string()));
            if name.is_some() {
                break;
            }
        }
        let name = name.unwrap_or_else(|| panic!("never ran: {:?}", fake.calls()));
        task.abort();
        let _ = task.await;
        let mut removed = false;
        for _ in 0..100 {
            if fake.calls_of("rm") == [vec!["rm".to_owned(), "-f".into(), name.clone()]] {
                removed = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(removed, "{:?}", fake.calls());
    }

    #[tokio::test]
    async fn no_engine_is_a_clear_error_and_probed_once() {
        let fake = FakeDocker::new(Engine::Down, false);
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let runner = fake.runner("true", dir.path(), DEFAULT_TIMEOUT_FOR_TESTS);
        for _ in 0..2 {
            let run = runner.run_once(CancellationToken::new()).await;
            assert_eq!(run.status, RunStatus::Error);
            assert_eq!(
                run.output,
                "[ralph-loop] sandbox.type is docker but no Docker engine is running (docker \
                 info: Cannot connect to the Docker daemon at unix:///fake.sock. Is the docker \
                 daemon running?): start Docker or set sandbox.type: process\n"
            );
            assert_eq!(run.sandbox.map(|s| s.kind).as_deref(), Some("docker"));
        }
        assert_eq!(fake.calls_of("info").len(), 1, "{:?}", fake.calls());
        assert!(fake.calls_of("run").is_empty());
    }

    #[test]
    fn an_engine_that_does_not_answer_counts_as_absent() {
        let fake = FakeDocker::new(Engine::Hanging, false);
        let started = Instant::now();
        let probe = probe_docker(&fake.bin, Duration::from_millis(300));
        assert!(started.elapsed() < Duration::from_secs(2));
        assert_eq!(
            probe,
            Err(SandboxError::NoEngine {
                detail: "no answer within 0.3 s".into()
            })
        );
    }

    #[tokio::test]
    async fn no_image_and_no_language_is_a_clear_error() {
        let fake = FakeDocker::new(Engine::Up, false);
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let run = fake
            .runner("true", dir.path(), DEFAULT_TIMEOUT_FOR_TESTS)
            .with_language(None)
            .run_once(CancellationToken::new())
            .await;
        assert_eq!(run.status, RunStatus::Error);
        assert!(run.output.contains("set sandbox.image"), "{}", run.output);
        assert!(fake.calls_of("run").is_empty());
    }

    #[tokio::test]
    async fn a_missing_client_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let run = ProcessRunner::new("true", dir.path(), DEFAULT_TIMEOUT_FOR_TESTS, 4096)
            .with_limits(&limits(
                DEFAULT_TIMEOUT_FOR_TESTS,
                None,
                SandboxKind::Docker {
                    image: Some("alpine".into()),
                },
            ))
            .with_docker_bin(dir.path().join("no-docker"))
            .run_once(CancellationToken::new())
            .await;
        assert_eq!(run.status, RunStatus::Error);
        assert!(
            run.output.contains("sandbox.type is docker but `")
                && run.output.contains("no-docker` could not be run"),
            "{}",
            run.output
        );
    }

    /// Against this machine's real `docker`: whatever `docker info` says decides what
    /// `check_docker` must say. Where the client is installed but no engine runs (as where this
    /// was written), that is the error asked for.
    #[tokio::test]
    async fn check_docker_tells_the_real_engines_state() {
        let direct = std::process::Command::new("docker")
            .args(["info", "--format", "{{.ServerVersion}}"])
            .stdin(Stdio::null())
            .output();
        let checked = check_docker();
        match direct {
            Err(_) => assert!(
                matches!(checked, Err(SandboxError::NoClient { .. })),
                "{checked:?}"
            ),
            Ok(out) if out.status.success() => assert_eq!(checked, Ok(())),
            Ok(out) => {
                let stderr = String::from_utf8_lossy(&out.stderr);
                let first = stderr.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
                let message = checked.map_err(|e| e.to_string());
                assert_eq!(
                    message,
                    Err(format!(
                        "sandbox.type is docker but no Docker engine is running (docker info: \
                         {}): start Docker or set sandbox.type: process",
                        first.trim()
                    ))
                );
                // A docker-mode run says the same, without trying to start a container.
                let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
                let run = ProcessRunner::new("true", dir.path(), DEFAULT_TIMEOUT_FOR_TESTS, 4096)
                    .with_limits(&limits(
                        DEFAULT_TIMEOUT_FOR_TESTS,
                        Some(512),
                        SandboxKind::Docker { image: None },
                    ))
                    .with_language(Some(Language::Rust))
                    .run_once(CancellationToken::new())
                    .await;
                assert_eq!(run.status, RunStatus::Error);
                assert!(
                    run.output
                        .contains("no Docker engine is running (docker info: "),
                    "{}",
                    run.output
                );
            }
        }
    }
}
