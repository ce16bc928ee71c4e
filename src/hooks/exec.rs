//! One run of one hook: `sh -c COMMAND` in the project's directory, in its own process group
//! (killed whole at the end), the request on stdin, the context in environment variables (the
//! provider keys and other secrets removed unless allowed), stdout and stderr kept apart and
//! capped, stopped at its timeout. The exit code is the contract: 0 passes (a plugin's stdout
//! is then its response), 2 blocks (stderr is the reason), anything else is a failure.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::process::groups::ProcessGroups;
use crate::process::sandbox::{self, Policy};
use crate::process::supervise::{self, Ending, Spec, Stream};
use crate::runner::env::is_secret_var;

/// The most of each stream kept: a hook that prints more is cut, not a memory hazard.
pub const MAX_STREAM_BYTES: usize = 1 << 20;

/// How a hook's run ended, when it ran to an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ran {
    /// Exit 0: its stdout.
    Passed { stdout: String },
    /// Exit 2: its stderr, the reason.
    Blocked { reason: String },
}

/// Why a hook's run is a failure.
#[derive(Debug, thiserror::Error)]
pub enum Failed {
    #[error("cannot start: {0}")]
    Spawn(String),
    #[error("exited with {code}{}", tail(.stderr))]
    Exit { code: i32, stderr: String },
    #[error("killed by signal {signal}{}", tail(.stderr))]
    Signal { signal: i32, stderr: String },
    #[error("timed out after {0:.1} s and was stopped")]
    TimedOut(f64),
    #[error("cancelled")]
    Cancelled,
    #[error("answered garbage: {0}")]
    Garbage(String),
    #[error("its model did not answer: {0}")]
    Model(#[from] ralph_actors::machine::hooks::AskError),
}

/// `: the last line of stderr`, or nothing.
fn tail(stderr: &str) -> String {
    stderr
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .map(|l| format!(": {}", cut(l.trim(), 300)))
        .unwrap_or_default()
}

/// `text` cut to `max` characters.
pub fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_string(),
    }
}

/// What to run.
pub struct Invocation<'a> {
    pub command: &'a str,
    pub dir: &'a Path,
    /// Added to the environment (after the secrets are removed).
    pub vars: Vec<(String, String)>,
    /// Secret-looking variables the hook may still see.
    pub allow_env: &'a [String],
    pub stdin: Vec<u8>,
    pub timeout: Duration,
    /// Run through the sandbox started from this binary, under this policy.
    pub sandbox: Option<(PathBuf, Policy)>,
}

/// Runs `inv` to its end.
pub async fn run(
    inv: Invocation<'_>,
    groups: &ProcessGroups,
    cancel: CancellationToken,
) -> Result<Ran, Failed> {
    let mut env: Vec<(OsString, OsString)> = std::env::vars_os()
        .filter(|(k, _)| {
            let name = k.to_string_lossy();
            !is_secret_var(&name) || inv.allow_env.iter().any(|a| *a == name)
        })
        .filter(|(k, _)| !inv.vars.iter().any(|(v, _)| k.to_str() == Some(v)))
        .collect();
    env.extend(
        inv.vars
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v))),
    );
    let (tx, mut rx) = mpsc::unbounded_channel();
    let (program, args) = match &inv.sandbox {
        Some((binary, policy)) => sandbox::wrap(
            binary,
            policy,
            "sh".into(),
            vec!["-c".into(), inv.command.into()],
        ),
        None => ("sh".into(), vec!["-c".into(), inv.command.into()]),
    };
    let mut spec = Spec::new(
        program,
        args,
        inv.dir,
        env,
        inv.timeout,
        // The interleaved copy is not used: each stream is kept below, apart.
        64 * 1024,
    );
    spec.stdin = Some(inv.stdin);
    spec.lines = Some(tx);
    let collect = tokio::spawn(async move {
        let (mut out, mut err) = (String::new(), String::new());
        while let Some(line) = rx.recv().await {
            let into = match line.stream {
                Stream::Stdout => &mut out,
                Stream::Stderr => &mut err,
            };
            if into.len() + line.text.len() < MAX_STREAM_BYTES {
                into.push_str(&line.text);
                into.push('\n');
            }
        }
        (out, err)
    });
    let outcome = supervise::run(spec, cancel, groups).await;
    let (stdout, stderr) = collect.await.unwrap_or_default();
    let outcome = outcome.map_err(|e| Failed::Spawn(e.to_string()))?;
    match outcome.ending {
        Ending::Exited(Some(status)) => {
            use std::os::unix::process::ExitStatusExt;
            match (status.code(), status.signal()) {
                (Some(0), _) => Ok(Ran::Passed { stdout }),
                (Some(2), _) => Ok(Ran::Blocked {
                    reason: stderr.trim().to_string(),
                }),
                (Some(code), _) => Err(Failed::Exit { code, stderr }),
                (None, Some(signal)) => Err(Failed::Signal { signal, stderr }),
                (None, None) => Err(Failed::Exit { code: -1, stderr }),
            }
        }
        Ending::Exited(None) => Err(Failed::Exit { code: -1, stderr }),
        Ending::TimedOut | Ending::Idle => Err(Failed::TimedOut(inv.timeout.as_secs_f64())),
        Ending::Cancelled => Err(Failed::Cancelled),
        Ending::OverMemory(_) => Err(Failed::Spawn("over its memory limit".into())),
    }
}

/// What the shell runs first in `command`, when it can be told and is not found: neither a
/// builtin, nor on `PATH`, nor a file (absolute or in `root`).
pub(crate) fn missing_program(command: &str, root: &Path) -> Option<String> {
    const BUILTINS: &[&str] = &[
        "!", ".", ":", "[", "[[", "{", "(", "alias", "break", "case", "cd", "command", "continue",
        "echo", "eval", "exec", "exit", "export", "false", "for", "if", "kill", "printf", "read",
        "return", "set", "shift", "source", "test", "times", "trap", "true", "type", "ulimit",
        "umask", "unset", "until", "wait", "while",
    ];
    let first = command
        .split_whitespace()
        .find(|w| !w.contains('=') || w.starts_with(['=', '"', '\'']))?;
    let program: String = first.chars().filter(|c| !matches!(c, '"' | '\'')).collect();
    let program = program.trim_end_matches(';');
    if program.is_empty() || program.contains(['$', '`', '(', '{']) || BUILTINS.contains(&program) {
        return None;
    }
    let found = if program.contains('/') {
        let path = Path::new(program);
        if path.is_absolute() {
            path.exists()
        } else {
            root.join(path).exists()
        }
    } else {
        crate::fsutil::which(program, std::env::var_os("PATH").as_deref()).is_some()
            || root.join(program).is_file()
    };
    (!found).then(|| program.to_string())
}
