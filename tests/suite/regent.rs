//! `ralph-loop loop`: a scripted agent that prints Claude Code's stream-JSON, run again and
//! again under the Regent in a real git repository, with a real test command: completion by the
//! exit gate, commits, crash and hang restarts, rollback and a failed revert, the breaker and its
//! reset, the state file, signals, costs, and the agent's choice.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tempfile::TempDir;

use super::agent::git;
use super::support::{assert_file, assert_has, isolate, read_json};

pub(super) struct Project {
    pub(super) _dir: TempDir,
    pub(super) root: PathBuf,
    pub(super) bin: PathBuf,
    /// The scripted agent's own files, outside the project: its run count, the prompts it got.
    pub(super) state: PathBuf,
    /// The loop's PATH: the agent's folder and the system's (no agent installed elsewhere).
    pub(super) path: String,
}

/// A git repository with a prompt, two tasks and a test (`done.txt` must exist), configured to
/// run the agent `body` (a shell script; `$n` is the run's number, from 1) with `regent` lines
/// added to the `regent:` section and `extra` to the file.
pub(super) fn project(body: &str, regent: &str, extra: &str) -> Project {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("project");
    let bin = dir.path().join("bin");
    let state = dir.path().join("state");
    for d in [&root, &bin, &state] {
        std::fs::create_dir_all(d).unwrap();
    }
    let agent = bin.join("fake-agent");
    std::fs::write(
        &agent,
        format!(
            "#!/bin/sh\nn=$(cat \"$FAKE_STATE/n\" 2>/dev/null || echo 0); n=$((n+1)); echo $n > \"$FAKE_STATE/n\"\ncat > \"$FAKE_STATE/prompt-$n.txt\"\necho $$ > \"$FAKE_STATE/pid\"\n{body}\n"
        ),
    )
    .unwrap();
    std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(root.join("PROMPT.md"), "Make the tests pass.\n").unwrap();
    std::fs::write(
        root.join("TASKS.md"),
        "- [ ] T-1: Write work.txt\n- [ ] T-2: Write done.txt\n",
    )
    .unwrap();
    std::fs::write(root.join(".gitignore"), ".ralph/\n").unwrap();
    // The test's own `regent` lines win over these.
    let defaults: String = [
        "  agent: fake\n",
        "  retry_backoff_seconds: 0.05\n",
        "  max_backoff_seconds: 0.2\n",
        "  hang_timeout_seconds: 5\n",
    ]
    .iter()
    .filter(|line| !regent.contains(line.split(':').next().unwrap()))
    .copied()
    .collect();
    std::fs::write(
        root.join("ralph.config.yaml"),
        format!(
            "testing:\n  command: test -f done.txt\nregent:\n{defaults}{regent}{extra}agents:\n  - name: fake\n    title: Fake agent\n    binaries: [fake-agent]\n    args: [-p]\n    prompt: stdin\n    format: claude-stream-json\n    reports_cost: true\n"
        ),
    )
    .unwrap();
    git(&root, &["init", "-q", "-b", "main"]);
    git(&root, &["config", "user.email", "t@example.com"]);
    git(&root, &["config", "user.name", "T"]);
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-q", "-m", "init"]);
    let path = format!("{}:/usr/bin:/bin", bin.display());
    Project {
        _dir: dir,
        root,
        bin,
        state,
        path,
    }
}

impl Project {
    /// Rewrites the first `from` in the project's `ralph.config.yaml` as `to`; `from` must be
    /// there.
    pub(super) fn edit_config(&self, from: &str, to: &str) {
        let path = self.root.join("ralph.config.yaml");
        let config = std::fs::read_to_string(&path).unwrap();
        assert!(config.contains(from), "no {from:?} in:\n{config}");
        std::fs::write(&path, config.replacen(from, to, 1)).unwrap();
    }

    /// `ralph-loop loop PROMPT.md --tasks TASKS.md --output jsonl` here.
    pub(super) fn ralph(&self) -> assert_cmd::Command {
        let mut cmd = assert_cmd::Command::cargo_bin("ralph-loop").unwrap();
        isolate(&mut cmd, &self.root);
        cmd.env("PATH", &self.path)
            .env("FAKE_STATE", &self.state)
            .args([
                "loop",
                "PROMPT.md",
                "--tasks",
                "TASKS.md",
                "--output",
                "jsonl",
            ]);
        cmd
    }

    /// `ralph-loop loop PROMPT.md --output jsonl` started here in the background, its stdout
    /// piped when `piped`.
    pub(super) fn spawn(&self, piped: bool) -> std::process::Child {
        let out = if piped {
            std::process::Stdio::piped()
        } else {
            std::process::Stdio::null()
        };
        Command::new(assert_cmd::cargo::cargo_bin("ralph-loop"))
            .current_dir(&self.root)
            .env("HOME", &self.root)
            .env("PATH", &self.path)
            .env("FAKE_STATE", &self.state)
            .args(["loop", "PROMPT.md", "--output", "jsonl"])
            .stdout(out)
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap()
    }

    /// Runs the loop to its end: its exit code and its events.
    pub(super) fn run(&self) -> (i32, Vec<Value>) {
        let (code, events, _) = self.run_told();
        (code, events)
    }

    /// Runs the loop to its end and asserts it exits with `code` (showing the events when
    /// not): its events.
    #[track_caller]
    pub(super) fn run_to(&self, code: i32) -> Vec<Value> {
        let (got, events) = self.run();
        assert_eq!(got, code, "{events:#?}");
        events
    }

    /// Runs the loop to its end: its exit code, its events and what it said on stderr.
    pub(super) fn run_told(&self) -> (i32, Vec<Value>, String) {
        let out = self.ralph().output().unwrap();
        let events = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        (out.status.code().unwrap_or(-1), events, stderr)
    }

    pub(super) fn state_file(&self) -> Value {
        read_json(&self.root.join(".ralph/regent-state.json"))
    }

    pub(super) fn prompt(&self, n: u32) -> String {
        std::fs::read_to_string(self.state.join(format!("prompt-{n}.txt"))).unwrap()
    }

    pub(super) fn log(&self) -> Vec<String> {
        git(&self.root, &["log", "--format=%s"])
            .lines()
            .map(str::to_string)
            .collect()
    }
}

/// A shell line printing `value` as one JSON line.
pub(super) fn emit(value: Value) -> String {
    format!(
        "printf '%s\\n' '{}'",
        value.to_string().replace('\'', "'\"'\"'")
    )
}

/// The agent's text, in an assistant message.
pub(super) fn say(text: &str) -> String {
    emit(
        json!({"type": "assistant", "message": {"id": "m", "content": [{"type": "text", "text": text}]}}),
    )
}

/// Its final result, with its cost.
pub(super) fn result(cost: f64) -> String {
    emit(
        json!({"type": "result", "subtype": "success", "is_error": false, "result": "Done.", "total_cost_usd": cost}),
    )
}

pub(super) fn status(status: &str, exit: bool) -> String {
    say(&format!(
        "---RALPH_STATUS---\nSTATUS: {status}\nTASKS_COMPLETED_THIS_LOOP: 1\nFILES_MODIFIED: 1\nTESTS_STATUS: PASSING\nWORK_TYPE: IMPLEMENTATION\nEXIT_SIGNAL: {exit}\nRECOMMENDATION: go on\n---END_RALPH_STATUS---"
    ))
}

/// An agent's body: the shell `script`, then it says `words` and ends costing `cost`.
pub(super) fn then_says(script: &str, words: &str, cost: f64) -> String {
    format!("{script}\n{}\n{}", say(words), result(cost))
}

/// An agent's body: the shell `script`, then it says all tasks are complete, with a status that
/// asks to exit, and ends costing `cost`.
pub(super) fn then_completes(script: &str, cost: f64) -> String {
    format!(
        "{script}\n{}\n{}",
        say("All tasks are complete."),
        ends("COMPLETE", true, cost)
    )
}

/// The end of an agent's run: its status block (`status`, asking to exit when `exit`) and its
/// result costing `cost`.
pub(super) fn ends(status_word: &str, exit: bool, cost: f64) -> String {
    format!("{}\n{}", status(status_word, exit), result(cost))
}

pub(super) fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

/// The report the loop's `loop_finished` event carries.
pub(super) fn loop_report(events: &[Value]) -> &Value {
    &of_type(events, "loop_finished")[0]["report"]
}

/// The messages of the events of type `kind`, in order.
pub(super) fn messages_of(events: &[Value], kind: &str) -> Vec<String> {
    of_type(events, kind)
        .iter()
        .map(|e| e["message"].as_str().unwrap().to_string())
        .collect()
}

/// Sends SIGINT to the loop `child` and asserts it exits with 130 within `within`: when it was
/// sent.
fn sigint_exits_within(child: &mut std::process::Child, within: Duration) -> Instant {
    let sent = Instant::now();
    signal(child, nix::sys::signal::Signal::SIGINT);
    let code = super::support::wait_exit(child, Duration::from_secs(10));
    assert_eq!(code, 130);
    assert!(sent.elapsed() < within, "{:?}", sent.elapsed());
    sent
}

pub(super) fn regent_actions(events: &[Value]) -> Vec<String> {
    of_type(events, "regent")
        .iter()
        .map(|e| e["action"].as_str().unwrap().to_string())
        .collect()
}

/// Works through the two tasks in two iterations, then signals completion; the tests pass.
pub(super) const TWO_TASKS: &str = r#"case $n in
1) echo one > work.txt; sed -i 's/- \[ \] T-1/- [x] T-1/' TASKS.md; SAY1; STATUS1; RESULT1;;
*) echo ok > done.txt; sed -i 's/- \[ \] T-2/- [x] T-2/' TASKS.md; SAY2; STATUS2; RESULT2;;
esac"#;

pub(super) fn two_tasks() -> String {
    TWO_TASKS
        .replace("SAY1", &say("Writing work.txt."))
        .replace("STATUS1", &status("IN_PROGRESS", false))
        .replace("RESULT1", &result(0.01))
        .replace("SAY2", &say("All tasks are complete."))
        .replace("STATUS2", &status("COMPLETE", true))
        .replace("RESULT2", &result(0.02))
}

#[test]
fn sigint_finishes_the_iteration_and_its_commit_then_stops() {
    let body = format!(
        "{}\nsleep 1.5\necho one > work.txt\n{}\n{}",
        say("Starting."),
        say("Wrote work.txt."),
        result(0.01)
    );
    let p = project(&body, "", "");
    let mut child = p.spawn(false);
    wait_for(&p.state.join("pid"));
    std::thread::sleep(Duration::from_millis(300));
    signal(&child, nix::sys::signal::Signal::SIGINT);
    let code = super::support::wait_exit(&mut child, Duration::from_secs(30));
    assert_eq!(code, 130);
    assert!(p.root.join("work.txt").exists());
    assert_eq!(p.log()[0], "[ralph] Iteration 1");
    let state = p.state_file();
    assert_eq!(state["status"], "interrupted");
    assert_eq!(state["iteration"], 1);
}

#[test]
fn sigquit_kills_the_agent_now() {
    let body = format!("{}\nsleep 30\n{}", say("Starting."), result(0.01));
    let p = project(&body, "", "");
    let mut child = p.spawn(false);
    let agent: i32 = wait_for(&p.state.join("pid")).trim().parse().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let sent = Instant::now();
    signal(&child, nix::sys::signal::Signal::SIGQUIT);
    let code = super::support::wait_exit(&mut child, Duration::from_secs(10));
    assert_eq!(code, 131);
    assert!(sent.elapsed() < Duration::from_secs(3));
    assert!(
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(agent), None).is_err(),
        "the agent survived"
    );
    assert_eq!(p.state_file()["status"], "quit");
}

fn signal(child: &std::process::Child, signal: nix::sys::signal::Signal) {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), signal).unwrap();
}

/// Whether `pid` is gone (a zombie counts as gone: it runs nothing).
fn gone(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |stat| {
        stat.rsplit(')')
            .next()
            .is_some_and(|s| s.trim_start().starts_with('Z'))
    })
}

#[test]
fn a_second_sigint_stops_the_agent_and_what_escaped_its_group_and_exits_at_once() {
    // The agent also leaves a command in a session of its own, as Claude Code's shell tool does.
    let body = format!(
        "setsid sleep 30 &\necho $! > \"$FAKE_STATE/escaped\"\n{}\nsleep 30\n{}",
        say("Starting."),
        result(0.01)
    );
    let p = project(&body, "", "");
    let mut child = p.spawn(false);
    let agent: i32 = wait_for(&p.state.join("pid")).trim().parse().unwrap();
    let escaped: i32 = wait_for(&p.state.join("escaped")).trim().parse().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    signal(&child, nix::sys::signal::Signal::SIGINT);
    // The first lets the iteration finish: the agent is still at work.
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        child.try_wait().unwrap().is_none(),
        "the first SIGINT stopped the loop"
    );
    assert!(!gone(agent));
    let sent = sigint_exits_within(&mut child, Duration::from_secs(1));
    // The reaper stops the rest within its grace.
    while !(gone(agent) && gone(escaped)) && sent.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(gone(agent), "the agent survived");
    assert!(
        gone(escaped),
        "the command that left the agent's group survived"
    );
}

#[test]
fn sigint_during_a_restart_backoff_stops_without_waiting_it_out() {
    let body = format!("{}\nexit 1", say("Crashing."));
    let p = project(
        &body,
        "  retry_backoff_seconds: 30\n  max_backoff_seconds: 30\n",
        "",
    );
    let mut child = p.spawn(false);
    wait_for(&p.state.join("pid"));
    // The crash is seen and the 30 s backoff begun.
    std::thread::sleep(Duration::from_millis(800));
    sigint_exits_within(&mut child, Duration::from_secs(3));
    assert_eq!(
        std::fs::read_to_string(p.state.join("n")).unwrap().trim(),
        "1"
    );
    let state = p.state_file();
    assert_eq!(state["status"], "interrupted");
    assert_eq!(state["consecutive_errors"], 1);
}

#[test]
fn the_state_file_follows_a_working_agent_s_output() {
    // Output every 0.2 s for about 3 s: `last_output_at` is rewritten while it works (at most
    // once a second), not only when it ends.
    let body = format!(
        "i=0\nwhile [ $i -lt 15 ]; do\n{}\nsleep 0.2\ni=$((i+1))\ndone\necho done > done.txt\n{}",
        say("Working."),
        ends("COMPLETE", true, 0.01)
    );
    let p = project(&body, "", "budgets:\n  max_iterations: 1\n");
    let mut child = p.spawn(false);
    wait_for(&p.state.join("pid"));
    let file = p.root.join(".ralph/regent-state.json");
    let mut seen = std::collections::BTreeSet::new();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() && start.elapsed() < Duration::from_secs(20) {
        let state: Option<Value> = std::fs::read(&file)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok());
        if let Some(at) = state.and_then(|s| s["last_output_at"].as_str().map(String::from)) {
            seen.insert(at);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    super::support::wait_exit(&mut child, Duration::from_secs(20));
    assert!(
        seen.len() >= 2,
        "last_output_at while the agent worked: {seen:?}"
    );
    assert!(
        seen.len() <= 6,
        "rewritten more than once a second: {seen:?}"
    );
}

#[test]
fn a_corrupt_state_file_is_reported_kept_aside_and_replaced() {
    let p = project(&two_tasks(), "", "");
    std::fs::create_dir_all(p.root.join(".ralph")).unwrap();
    std::fs::write(p.root.join(".ralph/regent-state.json"), "{not json").unwrap();
    let mut status = assert_cmd::Command::cargo_bin("ralph-loop").unwrap();
    isolate(&mut status, &p.root);
    let out = status.arg("status").output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("cannot be read"));

    let events = p.run_to(0);
    let warning = of_type(&events, "warning")
        .into_iter()
        .find(|w| w["message"].as_str().unwrap().contains("could not be read"))
        .expect("a warning about the state file");
    assert_has(
        warning["message"].as_str().unwrap(),
        &["regent-state.json.bad"],
    );
    assert_file(&p.root, ".ralph/regent-state.json.bad", "{not json");
    assert_eq!(p.state_file()["status"], "complete");
}

/// Waits (up to 10 s) for `path` to hold something; its content.
pub(super) fn wait_for(path: &Path) -> String {
    let start = Instant::now();
    loop {
        if let Ok(text) = std::fs::read_to_string(path) {
            if !text.trim().is_empty() {
                return text;
            }
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{} never came",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
