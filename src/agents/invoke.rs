//! One run of a coding agent on a prompt, supervised: its own process group under the reaper
//! (nothing it starts outlives it), the prompt on its stdin or as an argument, its stdout read
//! line by line into `AgentEvent`s as it comes, and four ways it is stopped:
//!
//! - **hung**: no output for the hang timeout, and its whole tree uses no CPU and does no I/O
//!   over a short look after it (a silent agent still at work waits another hang timeout, and
//!   the outcome counts how often that happened);
//! - **active timeout**: it keeps printing but never finishes;
//! - **after its result**: it printed its final result event and then did not exit within
//!   the grace period (the result stands: the run counts as finished);
//! - **cancelled**: the caller's token (SIGQUIT: stop now).
//!
//! The Regent decides what each ending means for the loop (a crash, a restart); this module
//! only runs the agent once and says how it ended.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ralph_actors::schema::agent::AgentEvent;
use ralph_actors::tracker::status::{Found, StatusScanner};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::definition::{AgentDef, PromptVia};
use crate::process::groups::ProcessGroups;
use crate::process::supervise::{self, Ending, SpawnError, Spec, Stream};
use crate::process::tree::activity;

/// How long a silent agent's tree is watched for CPU time or I/O before it is called hung:
/// the hang is detected this long after its timeout at most.
pub(crate) const BUSY_LOOK: Duration = Duration::from_millis(300);

/// The limits of one agent run.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// No output for this long, and no activity in its tree: hung.
    pub hang: Duration,
    /// The whole run at most.
    pub active: Duration,
    /// After its final result event, how long it may take to exit.
    pub result_grace: Duration,
    pub max_output_bytes: usize,
}

/// What to run.
#[derive(Debug, Clone)]
pub struct Invocation {
    pub def: AgentDef,
    pub binary: PathBuf,
    pub prompt: String,
    pub model: Option<String>,
    pub cwd: PathBuf,
    /// The agent's whole environment.
    pub env: Vec<(OsString, OsString)>,
    pub limits: Limits,
    /// ralph-loop's own executable, to run the agent under its reaper (`None`: no reaper, for
    /// tests of this crate, whose executable is a test binary).
    pub reaper: Option<PathBuf>,
    /// Called each time the agent outlives its hang timeout silent but at work, as it happens
    /// (the log says so then, not when the run ends).
    pub on_busy: Option<OnBusy>,
}

/// What to do when a silent agent is found at work.
#[derive(Clone)]
pub struct OnBusy(pub Arc<dyn Fn() + Send + Sync>);

impl std::fmt::Debug for OnBusy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OnBusy(..)")
    }
}

/// How the run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgentEnding {
    /// It exited by itself: its code (`None`: its status was lost).
    Exited(Option<i32>),
    /// Silent and idle for the hang timeout.
    Hung,
    /// The active timeout passed.
    ActiveTimeout,
    /// It gave its final result and did not exit within the grace period.
    StoppedAfterResult,
    /// The caller's token.
    Cancelled,
    /// Its tree passed the memory limit.
    OverMemory,
}

/// What one run left.
#[derive(Debug)]
pub struct AgentOutcome {
    pub ending: AgentEnding,
    /// Every event of its stdout, in order.
    pub events: Vec<AgentEvent>,
    /// The status blocks and indicators in its text.
    pub found: Vec<Found>,
    /// Hang timeouts it outlived while silent but at work.
    pub silent_but_working: u32,
    pub duration: Duration,
    /// stdout and stderr as they came, capped.
    pub output: String,
}

impl AgentOutcome {
    /// Whether the agent finished its turn: it exited 0, or gave its result and lingered.
    pub fn finished(&self) -> bool {
        matches!(
            self.ending,
            AgentEnding::Exited(Some(0)) | AgentEnding::StoppedAfterResult
        ) && !self
            .events
            .iter()
            .any(|e| matches!(e, AgentEvent::Result { is_error: true, .. }))
    }
}

/// Runs the agent once; `observe` sees each event as it comes (the live view, the log).
pub async fn invoke(
    run: Invocation,
    cancel: CancellationToken,
    groups: &ProcessGroups,
    mut observe: impl FnMut(&AgentEvent),
) -> Result<AgentOutcome, SpawnError> {
    let args = run.def.run_args(&run.prompt, run.model.as_deref());
    let mut spec = Spec::new(
        &run.binary,
        args,
        &run.cwd,
        run.env.clone(),
        run.limits.active,
        run.limits.max_output_bytes,
    );
    spec.idle_timeout = Some(run.limits.hang);
    spec.reaper = run.reaper.clone();
    if run.def.prompt == PromptVia::Stdin {
        spec.stdin = Some(run.prompt.clone().into_bytes());
    }
    let on_busy = run.on_busy.clone();
    let reaped = spec.reaper.is_some();
    spec.still_working = Some(Box::new(move |pgid| {
        let on_busy = on_busy.clone();
        Box::pin(async move {
            // The group's leader is the reaper (or the agent): its tree is the agent's. At
            // work means CPU time or I/O within a short look, not at any time since it began.
            let root = pgid.as_raw();
            let Some(before) = activity(root, reaped) else {
                return false;
            };
            tokio::time::sleep(BUSY_LOOK).await;
            let busy = activity(root, reaped).is_some_and(|after| after.since(&before));
            if let (true, Some(OnBusy(tell))) = (busy, &on_busy) {
                tell();
            }
            busy
        })
    }));
    let (tx, mut rx) = mpsc::unbounded_channel();
    spec.lines = Some(tx);
    let stop = cancel.child_token();
    let after_result = Arc::new(AtomicBool::new(false));

    let supervised = supervise::run(spec, stop.clone(), groups);
    let reading = async {
        let mut reader = run.def.format.reader();
        let mut events = Vec::new();
        let mut fresh = Vec::new();
        while let Some(line) = rx.recv().await {
            if line.stream != Stream::Stdout {
                continue;
            }
            reader.line(&line.text, &mut fresh);
            for event in fresh.drain(..) {
                observe(&event);
                if matches!(event, AgentEvent::Result { .. }) {
                    // The result is in: the agent has the grace period to exit.
                    let (stop, flag, grace) =
                        (stop.clone(), after_result.clone(), run.limits.result_grace);
                    tokio::spawn(async move {
                        tokio::time::sleep(grace).await;
                        flag.store(true, Ordering::SeqCst);
                        stop.cancel();
                    });
                }
                events.push(event);
            }
        }
        reader.finish(&mut fresh);
        for event in fresh.drain(..) {
            observe(&event);
            events.push(event);
        }
        events
    };
    let (outcome, events) = tokio::join!(supervised, reading);
    let outcome = outcome?;
    let ending = match outcome.ending {
        Ending::Exited(status) => AgentEnding::Exited(status.and_then(|s| {
            use std::os::unix::process::ExitStatusExt;
            s.code().or_else(|| s.signal().map(|sig| 128 + sig))
        })),
        Ending::Idle => AgentEnding::Hung,
        Ending::TimedOut => AgentEnding::ActiveTimeout,
        Ending::OverMemory(_) => AgentEnding::OverMemory,
        Ending::Cancelled if after_result.load(Ordering::SeqCst) && !cancel.is_cancelled() => {
            AgentEnding::StoppedAfterResult
        }
        Ending::Cancelled => AgentEnding::Cancelled,
    };
    Ok(AgentOutcome {
        ending,
        found: scan(&events),
        events,
        silent_but_working: outcome.idle_extensions,
        duration: outcome.duration,
        output: outcome.output,
    })
}

/// The agent's text, event by event (its `Text` events).
pub fn texts(events: &[AgentEvent]) -> Vec<&str> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// The status blocks and indicators of a run's text. The final result's text is read only
/// when the agent wrote no other text: Claude Code repeats its last message there, and a block
/// read twice would count twice (ralph-claude-code #112).
pub fn scan(events: &[AgentEvent]) -> Vec<Found> {
    let mut scanner = StatusScanner::new();
    let mut found = Vec::new();
    let texts = texts(events);
    let results: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Result { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    for text in if texts.is_empty() { results } else { texts } {
        scanner.feed(text.as_bytes(), &mut found);
        scanner.feed(b"\n", &mut found);
    }
    scanner.finish(&mut found);
    found
}
