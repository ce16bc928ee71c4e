//! One supervised command: spawned in its own process group with stdin closed and exactly the
//! environment it is given, its output captured (capped) and streamed line by line, stopped at
//! its total or idle timeout, at a cancel, or when its memory passes the limit, and its whole
//! group killed, leftovers included. What the test runner, hooks and agent CLIs build on.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use nix::unistd::Pid;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;
use tokio::sync::{mpsc, Notify};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::process::capture::Capture;
use crate::process::groups::{terminate_group, Cleanup, ProcessGroups};
use crate::process::lines::Lines;
use crate::process::memory::watch_memory;

/// After the command exits, how long a process it left behind may keep the pipes open (still
/// writing) before it is stopped.
const DRAIN_AFTER_EXIT: Duration = Duration::from_secs(1);
/// After the group is killed, how long to wait for the pipes to close: a process that escaped the
/// group (setsid) may hold them open for ever.
const DRAIN_AFTER_KILL: Duration = Duration::from_millis(500);

/// What to run and within what.
pub struct Spec {
    pub program: OsString,
    pub args: Vec<OsString>,
    pub cwd: PathBuf,
    /// The whole environment of the command: nothing else is inherited.
    pub env: Vec<(OsString, OsString)>,
    pub timeout: Duration,
    /// Stopped when no output came for this long (`None`: never).
    pub idle_timeout: Option<Duration>,
    pub max_output_bytes: usize,
    /// Resident memory the group may use together (`None`: no limit).
    pub memory_limit_mb: Option<u64>,
    /// Receives every line of output as it arrives, stdout and stderr interleaved.
    pub lines: Option<mpsc::UnboundedSender<Line>>,
    /// Awaited before the group is stopped at a timeout or a cancel (a container's
    /// `docker kill`, which the local client cannot pass on).
    pub before_stop: Option<BoxFuture<'static, ()>>,
    /// Run when the group is killed without being waited for (a dropped run, a hard exit).
    pub cleanup: Option<Cleanup>,
    /// Written to the command's stdin, which is then closed (`None`: closed at once).
    pub stdin: Option<Vec<u8>>,
    /// Runs the command under the reaper started from this executable (ralph-loop's own), so
    /// that no descendant outlives it, whatever its group or session (see `process::reaper`).
    pub reaper: Option<PathBuf>,
    /// Asked, with the group's id, when no output came for the idle timeout: `true` (the
    /// command is still at work) waits another idle timeout instead of stopping it.
    pub still_working: Option<Box<dyn FnMut(Pid) -> BoxFuture<'static, bool> + Send>>,
}

impl Spec {
    /// `program args` in `cwd` with `env`, a timeout, and no other limit.
    pub fn new(
        program: impl Into<OsString>,
        args: impl IntoIterator<Item = impl Into<OsString>>,
        cwd: impl Into<PathBuf>,
        env: Vec<(OsString, OsString)>,
        timeout: Duration,
        max_output_bytes: usize,
    ) -> Self {
        Self {
            program: program.into(),
            args: args.into_iter().map(Into::into).collect(),
            cwd: cwd.into(),
            env,
            timeout,
            idle_timeout: None,
            max_output_bytes,
            memory_limit_mb: None,
            lines: None,
            before_stop: None,
            cleanup: None,
            stdin: None,
            reaper: None,
            still_working: None,
        }
    }
}

/// A line of output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub stream: Stream,
    /// Without its line break; a last line without one is sent at the end.
    pub text: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

/// How the command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// It exited (or was killed by a signal from elsewhere); `None` when its status was lost.
    Exited(Option<ExitStatus>),
    TimedOut,
    /// No output for the idle timeout.
    Idle,
    Cancelled,
    /// The watchdog killed the group; the bytes it saw in use.
    OverMemory(u64),
}

/// What a supervised command left.
#[derive(Debug)]
pub struct Outcome {
    pub ending: Ending,
    /// stdout and stderr as they arrived, capped (see [`Capture`]).
    pub output: String,
    pub truncated: bool,
    pub duration: Duration,
    /// The most resident memory seen, when the watchdog sampled at all.
    pub peak_memory_bytes: Option<u64>,
    /// Processes were still running after the command exited and were stopped.
    pub stopped_leftovers: bool,
    /// Idle timeouts the command outlived because it was still at work (`Spec::still_working`).
    pub idle_extensions: u32,
}

/// Why the command never ran.
#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    #[error("{0}")]
    Spawn(#[source] std::io::Error),
    #[error("the command exited before it could be watched")]
    Vanished,
}

/// `program` as a path: itself when it names one, else the first executable of that name in
/// the `PATH` of `env` (the child's environment), as the exec would search it.
fn resolve(program: &std::ffi::OsStr, env: &[(OsString, OsString)]) -> OsString {
    if program.as_encoded_bytes().contains(&b'/') {
        return program.to_os_string();
    }
    let path = env
        .iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.as_os_str());
    program
        .to_str()
        .and_then(|name| crate::fsutil::which(name, path))
        .map_or_else(|| program.to_os_string(), PathBuf::into_os_string)
}

/// Runs `spec` to its end; see the module's documentation.
pub async fn run(
    spec: Spec,
    cancel: CancellationToken,
    groups: &ProcessGroups,
) -> Result<Outcome, SpawnError> {
    let started = Instant::now();
    let (program, args) = match &spec.reaper {
        Some(reaper) => {
            crate::process::reaper::wrap(reaper, spec.program.clone(), spec.args.clone())
        }
        None => (spec.program.clone(), spec.args.clone()),
    };
    // Named by its path, the program is started with posix_spawn (vfork, then exec) rather
    // than fork: std falls back to fork to search a PATH the child's environment changes,
    // and a fork copies the page tables of this whole process (0.8 ms here, and the pages it
    // writes next fault once each). Not found, the name is left for the spawn to report.
    let program = resolve(&program, &spec.env);
    let mut command = Command::new(&program);
    command
        .args(&args)
        .current_dir(&spec.cwd)
        .stdin(if spec.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env_clear()
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .process_group(0)
        .kill_on_drop(true);
    let mut child = command.spawn().map_err(SpawnError::Spawn)?;
    let Some(pgid) = child
        .id()
        .and_then(|id| i32::try_from(id).ok())
        .map(Pid::from_raw)
    else {
        return Err(SpawnError::Vanished);
    };
    let mut guard = groups.guard(pgid, spec.cleanup.clone(), spec.reaper.is_some());
    let feeding = match (spec.stdin, child.stdin.take()) {
        (Some(bytes), Some(mut pipe)) => Some(tokio::spawn(async move {
            use tokio::io::AsyncWriteExt;
            // A command that exits without reading it all closes the pipe: not an error here.
            let _ = pipe.write_all(&bytes).await;
            let _ = pipe.shutdown().await;
        })),
        _ => None,
    };

    let capture = Arc::new(Mutex::new(Capture::new(spec.max_output_bytes)));
    let heard = Arc::new(Notify::new());
    let mut pumps = JoinSet::new();
    if let Some(out) = child.stdout.take() {
        let sink = Sink::new(Stream::Stdout, &capture, &heard, spec.lines.clone());
        pumps.spawn(pump(out, sink));
    }
    if let Some(err) = child.stderr.take() {
        let sink = Sink::new(Stream::Stderr, &capture, &heard, spec.lines.clone());
        pumps.spawn(pump(err, sink));
    }

    let mut peak_bytes = None;
    let mut idle_extensions = 0;
    let mut still_working = spec.still_working;
    let idle_watch = async {
        loop {
            idle(&heard, spec.idle_timeout).await;
            let busy = match still_working.as_mut() {
                Some(probe) => probe(pgid).await,
                None => false,
            };
            if !busy {
                return;
            }
            idle_extensions += 1;
        }
    };
    let ending = tokio::select! {
        status = child.wait() => Ending::Exited(status.ok()),
        () = tokio::time::sleep(spec.timeout) => Ending::TimedOut,
        () = idle_watch => Ending::Idle,
        () = cancel.cancelled() => Ending::Cancelled,
        used = watch_memory(pgid, spec.memory_limit_mb, &mut peak_bytes) => {
            Ending::OverMemory(used)
        }
    };
    if matches!(ending, Ending::TimedOut | Ending::Idle | Ending::Cancelled) {
        if let Some(stop) = spec.before_stop {
            stop.await;
        }
    }
    if matches!(ending, Ending::Exited(_)) {
        // Usually the pipes are already closed; a background process may still write.
        drain(&mut pumps, DRAIN_AFTER_EXIT).await;
    }
    let stopped = terminate_group(pgid, &mut child).await;
    drain(&mut pumps, DRAIN_AFTER_KILL).await;
    pumps.abort_all();
    if let Some(feeding) = feeding {
        feeding.abort();
    }
    guard.armed = false;
    drop(guard);
    let (output, truncated) = lock(&capture).render();
    Ok(Outcome {
        ending,
        output,
        truncated,
        duration: started.elapsed(),
        peak_memory_bytes: peak_bytes,
        stopped_leftovers: stopped && matches!(ending, Ending::Exited(_)),
        idle_extensions,
    })
}

/// Returns when no output came for `limit`; never without one.
async fn idle(heard: &Notify, limit: Option<Duration>) {
    let Some(limit) = limit else {
        return std::future::pending().await;
    };
    loop {
        if tokio::time::timeout(limit, heard.notified()).await.is_err() {
            return;
        }
    }
}

/// Where one pipe's bytes go: the shared capture, the idle watch and the line stream.
struct Sink {
    stream: Stream,
    capture: Arc<Mutex<Capture>>,
    heard: Arc<Notify>,
    lines: Option<mpsc::UnboundedSender<Line>>,
    partial: Lines,
}

impl Sink {
    fn new(
        stream: Stream,
        capture: &Arc<Mutex<Capture>>,
        heard: &Arc<Notify>,
        lines: Option<mpsc::UnboundedSender<Line>>,
    ) -> Self {
        Self {
            stream,
            capture: capture.clone(),
            heard: heard.clone(),
            lines,
            partial: Lines::default(),
        }
    }

    fn push(&mut self, data: &[u8]) {
        lock(&self.capture).push(data);
        self.heard.notify_one();
        let Some(lines) = &self.lines else {
            return;
        };
        let stream = self.stream;
        self.partial.push(data, |text| {
            let _ = lines.send(Line { stream, text });
        });
    }

    fn finish(&mut self) {
        if let Some(lines) = &self.lines {
            let stream = self.stream;
            self.partial.finish(|text| {
                let _ = lines.send(Line { stream, text });
            });
        }
    }
}

/// Copies one pipe into its sink until it closes.
async fn pump<R: AsyncRead + Unpin>(mut pipe: R, mut sink: Sink) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => sink.push(&buf[..n]),
        }
    }
    sink.finish();
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn sh(script: &str, timeout: Duration) -> Spec {
        let env = std::env::vars_os().collect();
        Spec::new(
            "sh",
            ["-c", script],
            std::env::temp_dir(),
            env,
            timeout,
            64 * 1024,
        )
    }

    /// A bare name is looked up in the child's PATH, so the spawn needs no fork; anything
    /// else is left for the spawn as given.
    #[test]
    fn a_program_is_named_by_its_path_in_the_childs_path() {
        let dir = tempfile::tempdir().unwrap();
        let tool = dir.path().join("tool");
        std::fs::write(&tool, "#!/bin/sh\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
        let path =
            std::env::join_paths([std::path::Path::new("/nonexistent"), dir.path()]).unwrap();
        let env = vec![(OsString::from("PATH"), path)];
        assert_eq!(resolve("tool".as_ref(), &env), tool.into_os_string());
        assert_eq!(resolve("no-such-tool".as_ref(), &env), "no-such-tool");
        assert_eq!(resolve("./tool".as_ref(), &env), "./tool");
        assert_eq!(resolve("tool".as_ref(), &[]), "tool");
    }

    fn alive(pid: i32) -> bool {
        crate::process::memory::scan_group(Pid::from_raw(pid)).is_some_and(|s| s.live > 0)
    }

    #[tokio::test]
    async fn lines_stream_as_they_come_and_the_output_is_kept() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut spec = sh(
            "echo one; echo two >&2; printf 'three\\r\\nfour'",
            Duration::from_secs(10),
        );
        spec.lines = Some(tx);
        let outcome = run(spec, CancellationToken::new(), &ProcessGroups::new())
            .await
            .unwrap();
        assert!(matches!(outcome.ending, Ending::Exited(Some(s)) if s.success()));
        // Each stream in its order; the two pipes race each other.
        let (mut out, mut err) = (Vec::new(), Vec::new());
        while let Ok(line) = rx.try_recv() {
            match line.stream {
                Stream::Stdout => out.push(line.text),
                Stream::Stderr => err.push(line.text),
            }
        }
        assert_eq!(out, ["one", "three", "four"]);
        assert_eq!(err, ["two"]);
        for part in ["one\n", "two\n", "three\r\nfour"] {
            assert!(outcome.output.contains(part), "{:?}", outcome.output);
        }
    }

    #[tokio::test]
    async fn a_silent_command_is_stopped_at_the_idle_timeout_with_its_group() {
        let mut spec = sh("echo $$; sleep 30", Duration::from_secs(60));
        spec.idle_timeout = Some(Duration::from_millis(300));
        let started = Instant::now();
        let outcome = run(spec, CancellationToken::new(), &ProcessGroups::new())
            .await
            .unwrap();
        assert_eq!(outcome.ending, Ending::Idle);
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        let pgid: i32 = outcome.output.trim().parse().unwrap();
        assert!(!alive(pgid), "the group survived");
    }

    #[tokio::test]
    async fn output_keeps_an_idle_command_alive() {
        let mut spec = sh(
            "for i in 1 2 3 4 5 6; do echo $i; sleep 0.1; done",
            Duration::from_secs(10),
        );
        spec.idle_timeout = Some(Duration::from_millis(400));
        let outcome = run(spec, CancellationToken::new(), &ProcessGroups::new())
            .await
            .unwrap();
        assert!(matches!(outcome.ending, Ending::Exited(Some(s)) if s.success()));
    }

    #[tokio::test]
    async fn a_run_is_registered_while_it_runs_and_kill_all_stops_it() {
        let groups = ProcessGroups::new();
        let cleaned = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let mut spec = sh("echo $$; sleep 30", Duration::from_secs(60));
        let flag = cleaned.clone();
        spec.cleanup = Some(Arc::new(move || {
            flag.store(true, std::sync::atomic::Ordering::SeqCst)
        }));
        let (tx, mut rx) = mpsc::unbounded_channel();
        spec.lines = Some(tx);
        let task = {
            let groups = groups.clone();
            tokio::spawn(async move { run(spec, CancellationToken::new(), &groups).await })
        };
        let pgid: i32 = rx.recv().await.unwrap().text.parse().unwrap();
        assert!(groups.contains(pgid));
        groups.kill_all();
        let outcome = tokio::time::timeout(Duration::from_secs(5), task)
            .await
            .expect("the run ends")
            .unwrap()
            .unwrap();
        assert!(matches!(outcome.ending, Ending::Exited(_)));
        assert!(cleaned.load(std::sync::atomic::Ordering::SeqCst));
        assert!(!groups.contains(pgid), "unregistered at the end");
        assert!(!alive(pgid));
    }

    #[tokio::test]
    async fn a_cancel_runs_before_stop_then_stops_the_group() {
        let (said, mut heard) = mpsc::unbounded_channel();
        let mut spec = sh("sleep 30", Duration::from_secs(60));
        spec.before_stop = Some(Box::pin(async move {
            let _ = said.send("before");
        }));
        let cancel = CancellationToken::new();
        let stopper = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            stopper.cancel();
        });
        let outcome = run(spec, cancel, &ProcessGroups::new()).await.unwrap();
        assert_eq!(outcome.ending, Ending::Cancelled);
        assert_eq!(heard.try_recv(), Ok("before"));
    }

    #[tokio::test]
    async fn a_program_that_cannot_start_is_a_spawn_error() {
        let spec = Spec::new(
            "/nonexistent/program",
            Vec::<OsString>::new(),
            std::env::temp_dir(),
            Vec::new(),
            Duration::from_secs(1),
            1024,
        );
        let err = run(spec, CancellationToken::new(), &ProcessGroups::new())
            .await
            .expect_err("no such program");
        assert!(matches!(err, SpawnError::Spawn(_)), "{err:?}");
    }
}
