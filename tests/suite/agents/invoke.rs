//! One supervised run of an agent (`ralph_loop::agents::invoke`), with scripted agents that
//! print Claude Code's stream-JSON: hangs, silent work, lingering after the result, the
//! active timeout, the prompt on stdin, and what escapes the group.

use std::path::Path;
use std::time::Duration;

use ralph_actors::tracker::status::Found;
use ralph_loop::agents::invoke::{invoke, AgentEnding, AgentOutcome, Invocation, Limits};

use ralph_loop::process::groups::ProcessGroups;
use tokio_util::sync::CancellationToken;

use super::super::support::assert_file;

const INIT: &str = r#"{"type":"system","subtype":"init","session_id":"s-1"}"#;
const TEXT: &str = r#"{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"Done.\n---RALPH_STATUS---\nSTATUS: COMPLETE\nEXIT_SIGNAL: true\n---END_RALPH_STATUS---"}]}}"#;
const RESULT: &str = r#"{"type":"result","subtype":"success","is_error":false,"result":"Done.\n---RALPH_STATUS---\nSTATUS: COMPLETE\nEXIT_SIGNAL: true\n---END_RALPH_STATUS---","total_cost_usd":0.02}"#;

fn limits(hang_ms: u64, active_ms: u64) -> Limits {
    Limits {
        hang: Duration::from_millis(hang_ms),
        active: Duration::from_millis(active_ms),
        result_grace: Duration::from_millis(500),
        max_output_bytes: 1 << 20,
    }
}

fn agent(dir: &Path, body: &str, limits: Limits) -> Invocation {
    super::super::agent_script::scripted(dir, body, limits)
}

/// Runs the scripted agent `body` in a fresh folder under `limits`; the folder and how it
/// ended.
fn run_script(body: &str, limits: Limits) -> (tempfile::TempDir, AgentOutcome) {
    let dir = tempfile::tempdir().unwrap();
    let outcome = run(agent(dir.path(), body, limits));
    (dir, outcome)
}

fn run(invocation: Invocation) -> AgentOutcome {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime
        .block_on(invoke(
            invocation,
            CancellationToken::new(),
            &ProcessGroups::new(),
            |_| {},
        ))
        .unwrap()
}

fn blocks(outcome: &AgentOutcome) -> usize {
    outcome
        .found
        .iter()
        .filter(|f| matches!(f, Found::Block(_)))
        .count()
}

/// Silent and idle: stopped within a second of its hang timeout (the measured latency is
/// the benchmark's; here only the bound).
#[test]
fn a_hung_agent_is_stopped_soon_after_its_hang_timeout() {
    let (_dir, outcome) = run_script(
        &format!("printf '%s\\n' '{INIT}'\nsleep 30"),
        limits(1000, 20_000),
    );
    assert_eq!(outcome.ending, AgentEnding::Hung);
    assert_eq!(outcome.silent_but_working, 0);
    assert!(
        outcome.duration >= Duration::from_millis(1000)
            && outcome.duration < Duration::from_millis(2000),
        "{:?}",
        outcome.duration
    );
}

/// Silent but computing: not killed at its hang timeout, and said so.
#[test]
fn a_silent_agent_at_work_is_not_killed() {
    let (_dir, outcome) = run_script(
        &format!(
            "printf '%s\\n' '{INIT}'\nend=$(( $(date +%s) + 3 ))\nwhile [ $(date +%s) -lt $end ]; do :; done\nprintf '%s\\n' '{TEXT}'\nprintf '%s\\n' '{RESULT}'"
        ),
        limits(1000, 20_000),
    );
    assert_eq!(outcome.ending, AgentEnding::Exited(Some(0)));
    assert!(outcome.silent_but_working >= 1, "{outcome:?}");
    assert!(outcome.finished());
    assert_eq!(blocks(&outcome), 1);
}

/// Its result given, an agent that does not exit is stopped after the grace period and
/// the run counts as finished (ralph-orchestrator #354); the block its result repeats is
/// read once.
#[test]
fn an_agent_that_lingers_after_its_result_finished_its_turn() {
    let (_dir, outcome) = run_script(
        &format!(
            "printf '%s\\n' '{INIT}'\nprintf '%s\\n' '{TEXT}'\nprintf '%s\\n' '{RESULT}'\nsleep 30"
        ),
        limits(10_000, 20_000),
    );
    assert_eq!(outcome.ending, AgentEnding::StoppedAfterResult);
    assert!(outcome.finished());
    assert_eq!(blocks(&outcome), 1, "{:?}", outcome.found);
    assert!(outcome.duration < Duration::from_secs(5));
}

/// Printing for ever is no way to finish: the active timeout stops it.
#[test]
fn an_agent_that_never_finishes_meets_its_active_timeout() {
    let (_dir, outcome) = run_script(
        &format!("while :; do printf '%s\\n' '{INIT}'; sleep 0.1; done"),
        limits(1000, 1500),
    );
    assert_eq!(outcome.ending, AgentEnding::ActiveTimeout);
    assert!(!outcome.finished());
}

/// The prompt arrives on stdin whole, and stdin is closed after it; what the agent started
/// in a session of its own is gone when the run returns.
#[test]
fn the_prompt_goes_on_stdin_and_nothing_outlives_the_run() {
    let (dir, outcome) = run_script(
        &format!(
            "cat > prompt.txt\nsetsid sleep 300 &\necho $! > escaped.pid\nprintf '%s\\n' '{TEXT}'\nprintf '%s\\n' '{RESULT}'"
        ),
        limits(10_000, 20_000),
    );
    assert_eq!(outcome.ending, AgentEnding::Exited(Some(0)));
    assert_file(dir.path(), "prompt.txt", "Fix the median.\n");
    let pid: i32 = std::fs::read_to_string(dir.path().join("escaped.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    super::assert_gone_within(pid, 2);
}
