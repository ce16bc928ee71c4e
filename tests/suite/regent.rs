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
    fn spawn(&self, piped: bool) -> std::process::Child {
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

    fn log(&self) -> Vec<String> {
        git(&self.root, &["log", "--format=%s"])
            .lines()
            .map(str::to_string)
            .collect()
    }
}

/// A shell line printing `value` as one JSON line.
fn emit(value: Value) -> String {
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

pub(super) fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

fn regent_actions(events: &[Value]) -> Vec<String> {
    of_type(events, "regent")
        .iter()
        .map(|e| e["action"].as_str().unwrap().to_string())
        .collect()
}

/// Works through the two tasks in two iterations, then signals completion; the tests pass.
const TWO_TASKS: &str = r#"case $n in
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
fn the_loop_works_through_the_tasks_commits_each_and_ends_at_the_exit_gate() {
    let p = project(&two_tasks(), "", "");
    let events = p.run_to(0);
    let finished = of_type(&events, "loop_finished");
    let report = &finished[0]["report"];
    assert_eq!(report["status"], "complete");
    assert_eq!(report["iterations"], 2);
    assert_eq!(report["tasks"], json!({"done": 2, "total": 2}));
    assert!((report["total_cost_usd"].as_f64().unwrap() - 0.03).abs() < 1e-9);
    assert_eq!(report["cost_estimated"], false);
    assert_eq!(
        report["history"][0]["tasks_checked"],
        json!(["T-1: Write work.txt"])
    );
    assert_eq!(report["history"][1]["newly_passing"], 1);

    // One commit per iteration, naming the task it completed.
    let log = p.log();
    assert_eq!(
        log[..2],
        [
            "[ralph] Complete T-2: Write done.txt",
            "[ralph] Complete T-1: Write work.txt"
        ],
        "{log:?}"
    );
    assert_eq!(git(&p.root, &["status", "--porcelain"]), "");

    // The prompt: the user's, the task list with its state, the tests, the status request.
    let first = p.prompt(1);
    assert!(first.starts_with("Make the tests pass."), "{first}");
    for part in [
        "TASKS.md: 0 of 2 done",
        "Work on the next task not done: T-1: Write work.txt.",
        "`test -f done.txt`",
        "---RALPH_STATUS---",
    ] {
        assert!(first.contains(part), "{part} missing:\n{first}");
    }
    assert!(p.prompt(2).contains("TASKS.md: 1 of 2 done"));

    // The state file.
    let state = p.state_file();
    assert_eq!(state["schema"], 1);
    assert_eq!(state["status"], "complete");
    assert_eq!(state["iteration"], 2);
    assert_eq!(state["consecutive_errors"], 0);
    assert!(state["ralph_pid"].as_u64().unwrap() > 0);
    assert!(state["last_output_at"].is_string());
    let head = git(&p.root, &["rev-parse", "--short", "HEAD"]);
    assert_eq!(state["last_commit"], head.trim());
    assert!((state["total_cost_usd"].as_f64().unwrap() - 0.03).abs() < 1e-9);
    assert_eq!(state["breaker"]["state"], "CLOSED");
    // A checkpoint was kept before each iteration.
    git(&p.root, &["rev-parse", "--verify", "refs/ralph/checkpoint"]);

    // `ralph-loop status` shows it.
    let mut status = assert_cmd::Command::cargo_bin("ralph-loop").unwrap();
    isolate(&mut status, &p.root);
    let out = status.arg("status").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_has(
        &text,
        &[
            "agent loop: complete",
            "breaker CLOSED",
            "tasks TASKS.md (2 of 2 done)",
        ],
    );
}

/// Iteration 1 changes only tracked files (committed without a `git add`); iteration 2 adds a
/// file and deletes one git never tracked (nothing git can commit, so left out of the commit).
#[test]
fn each_commit_holds_exactly_what_the_iteration_changed() {
    let body = r#"case $n in
1) sed -i 's/- \[ \] T-1/- [x] T-1/' TASKS.md; echo more >> PROMPT.md; RESULT;;
*) echo ok > done.txt; rm scratch.txt; sed -i 's/- \[ \] T-2/- [x] T-2/' TASKS.md; STATUS; SAY; RESULT;;
esac"#
        .replace("RESULT", &result(0.01))
        .replace("STATUS", &status("COMPLETE", true))
        .replace("SAY", &say("All tasks are complete."));
    let p = project(&body, "", "");
    std::fs::write(p.root.join("scratch.txt"), "never tracked").unwrap();
    // git's automatic maintenance, with a task that packs loose objects as soon as there is one.
    for (key, value) in [
        ("maintenance.gc.enabled", "false"),
        ("maintenance.loose-objects.enabled", "true"),
        ("maintenance.loose-objects.auto", "1"),
    ] {
        git(&p.root, &["config", key, value]);
    }
    let events = p.run_to(0);
    let report = &of_type(&events, "loop_finished")[0]["report"];
    // No warning (an empty list is left out).
    assert!(
        report["warnings"].as_array().is_none_or(Vec::is_empty),
        "{report:#}"
    );
    assert_eq!(report["commits"].as_array().unwrap().len(), 2, "{report:#}");
    let files = |rev: &str| {
        git(&p.root, &["show", "--name-status", "--format=", rev])
            .lines()
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert_eq!(files("HEAD~1"), ["M\tPROMPT.md", "M\tTASKS.md"]);
    assert_eq!(files("HEAD"), ["M\tTASKS.md", "A\tdone.txt"]);
    assert_eq!(git(&p.root, &["status", "--porcelain"]), "");
    // Each commit's short hash, as the report and the state file give it, is HEAD's.
    let head = git(&p.root, &["rev-parse", "--short", "HEAD"]);
    assert_eq!(report["commits"][1], head.trim());
    assert_eq!(p.state_file()["last_commit"], head.trim());
    // It ran once the loop's commits were made, and was done before the loop exited.
    let packs = std::fs::read_dir(p.root.join(".git/objects/pack"))
        .unwrap()
        .count();
    assert!(packs > 0, "git's maintenance ran at the end");
}

#[test]
fn the_human_view_marks_the_regents_lines_with_a_shield() {
    let p = project(&two_tasks(), "", "");
    let mut cmd = assert_cmd::Command::cargo_bin("ralph-loop").unwrap();
    isolate(&mut cmd, &p.root);
    let out = cmd
        .env("PATH", format!("{}:/usr/bin:/bin", p.bin.display()))
        .env("FAKE_STATE", &p.state)
        .args([
            "loop",
            "PROMPT.md",
            "--tasks",
            "TASKS.md",
            "--output",
            "human",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_has(
        &err,
        &[
            "ralph-loop loop · agent fake",
            "│ Writing work.txt.",
            "🛡 committed",
            "✔ complete",
        ],
    );
}

#[test]
fn a_crash_is_restarted_after_a_backoff_and_a_finished_run_resets_the_count() {
    let body = format!(
        "if [ $n -eq 1 ]; then echo 'boom' >&2; exit 3; fi\necho ok > done.txt\n{}\n{}\n{}\n{}",
        say("All tasks are complete."),
        status("COMPLETE", true),
        say("Everything is done."),
        result(0.01)
    );
    let p = project(&body, "", "");
    let events = p.run_to(0);
    let actions = regent_actions(&events);
    assert_eq!(
        actions[..3],
        ["crashed", "waiting", "restarted"],
        "{actions:?}"
    );
    let crashed = &of_type(&events, "regent")[0];
    assert!(
        crashed["message"]
            .as_str()
            .unwrap()
            .contains("exited with code 3"),
        "{crashed}"
    );
    let ended: Vec<&Value> = of_type(&events, "agent_ended");
    assert_eq!(ended[0]["exit_code"], 3);
    assert_eq!(ended[1]["exit_code"], 0);
    let report = &of_type(&events, "loop_finished")[0]["report"];
    assert_eq!(report["history"][0]["runs"], 2);
    assert_eq!(p.state_file()["consecutive_errors"], 0);
}

#[test]
fn an_agent_that_keeps_crashing_stops_the_loop_after_max_retries() {
    let p = project("exit 1", "  max_retries: 2\n", "");
    let events = p.run_to(6);
    assert_eq!(of_type(&events, "agent_started").len(), 3);
    let report = &of_type(&events, "loop_finished")[0]["report"];
    assert_eq!(report["status"], "agent_failed");
    assert!(report["reason"]
        .as_str()
        .unwrap()
        .contains("failed 3 times in a row"));
    let state = p.state_file();
    assert_eq!(state["status"], "agent_failed");
    assert_eq!(state["consecutive_errors"], 3);
}

#[test]
fn a_hung_agent_is_killed_and_restarted_and_a_busy_silent_one_is_left_to_work() {
    // Run 1 says a word and hangs; run 2 is silent for three hang timeouts but busy, then
    // finishes.
    let body = format!(
        "if [ $n -eq 1 ]; then {}; sleep 30; fi\nend=$(($(date +%s) + 2)); while [ $(date +%s) -lt $end ]; do :; done\necho ok > done.txt\n{}\n{}\n{}\n{}",
        say("Thinking."),
        say("All tasks are complete."),
        status("COMPLETE", true),
        say("Everything is done."),
        result(0.01)
    );
    let p = project(&body, "  hang_timeout_seconds: 0.6\n", "");
    let started = Instant::now();
    let events = p.run_to(0);
    assert!(started.elapsed() < Duration::from_secs(20));
    let actions = regent_actions(&events);
    assert!(actions.contains(&"hung".to_string()), "{actions:?}");
    assert!(
        actions.contains(&"silent_but_working".to_string()),
        "{actions:?}"
    );
    let ended = of_type(&events, "agent_ended");
    assert_eq!(ended[0]["ending"], "hung");
    assert_eq!(ended[1]["ending"], "exited");
    let hung = of_type(&events, "regent")
        .into_iter()
        .find(|e| e["action"] == "hung")
        .unwrap();
    assert!(
        hung["message"].as_str().unwrap().contains("no CPU"),
        "{hung}"
    );
    // Said as it happens, while run 2 works, not when it ends.
    let position = |pred: &dyn Fn(&Value) -> bool| events.iter().position(pred).unwrap();
    let busy = position(&|e| e["type"] == "regent" && e["action"] == "silent_but_working");
    let run2_ended = position(&|e| e["type"] == "agent_ended" && e["run"] == 2);
    assert!(busy < run2_ended, "{events:#?}");
    assert!(
        events[busy]["message"]
            .as_str()
            .unwrap()
            .contains("left to work"),
        "{}",
        events[busy]
    );
}

#[test]
fn failing_tests_after_a_commit_are_rolled_back() {
    // The tests pass at first; the agent deletes done.txt, the loop commits, the tests fail,
    // and the commit is reverted.
    let body = format!("rm done.txt\n{}\n{}", say("Removing a file."), result(0.01));
    let p = project(
        &body,
        "  rollback_on_test_failure: true\n",
        "budgets:\n  max_iterations: 1\n",
    );
    std::fs::write(p.root.join("done.txt"), "ok\n").unwrap();
    git(&p.root, &["add", "done.txt"]);
    git(&p.root, &["commit", "-q", "-m", "tests pass"]);
    let events = p.run_to(4);
    let log = p.log();
    assert!(
        log[0].starts_with("Revert \"[ralph] Work on T-1"),
        "{log:?}"
    );
    assert!(log[1].starts_with("[ralph] Work on T-1"), "{log:?}");
    assert!(p.root.join("done.txt").exists());
    let actions = regent_actions(&events);
    assert!(actions.contains(&"reverted".to_string()), "{actions:?}");
    let report = &of_type(&events, "loop_finished")[0]["report"];
    assert_eq!(report["reverts"].as_array().unwrap().len(), 1);
    assert!(p.prompt(1).contains("Make the tests pass."));
}

#[test]
fn a_revert_that_fails_stops_the_loop_with_the_tree_as_it_was() {
    // The agent makes a merge commit: `git revert` cannot revert it without a parent.
    let body = format!(
        "git checkout -q -b side && echo a > side.txt && git add side.txt && git commit -q -m side && git checkout -q main && git merge -q --no-ff -m merge side\n{}\n{}",
        say("Merged."),
        result(0.01)
    );
    let p = project(&body, "  rollback_on_test_failure: true\n", "");
    let events = p.run_to(7);
    let report = &of_type(&events, "loop_finished")[0]["report"];
    assert_eq!(report["status"], "revert_failed");
    assert!(report["reason"]
        .as_str()
        .unwrap()
        .contains("left as it was"));
    assert_eq!(p.log()[0], "merge");
    assert_eq!(git(&p.root, &["status", "--porcelain"]), "");
    assert!(!p.root.join(".git/REVERT_HEAD").exists());
}

#[test]
fn no_progress_opens_the_breaker_and_breaker_reset_closes_it() {
    let body = format!(
        "{}\n{}\n{}",
        say("Nothing to do."),
        status("IN_PROGRESS", false),
        result(0.0)
    );
    let p = project(&body, "", "");
    // The tests pass throughout: the breaker opens for want of progress alone.
    std::fs::write(p.root.join("done.txt"), "ok\n").unwrap();
    git(&p.root, &["add", "done.txt"]);
    git(&p.root, &["commit", "-q", "-m", "tests pass"]);
    let events = p.run_to(5);
    let moves: Vec<(String, String)> = of_type(&events, "breaker_changed")
        .iter()
        .map(|e| {
            (
                e["to"].as_str().unwrap().into(),
                e["reason"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(
        moves,
        [
            ("HALF_OPEN".to_string(), "no_progress_warning".to_string()),
            ("OPEN".to_string(), "no_progress_open".to_string())
        ]
    );
    // The third iteration was the one probe.
    assert_eq!(of_type(&events, "iteration_started").len(), 3);
    assert!(p.prompt(2).contains("made no test pass"));
    assert!(
        p.prompt(1).contains("`test -f done.txt`: "),
        "{}",
        p.prompt(1)
    );
    let state = p.state_file();
    assert_eq!(state["status"], "breaker_open");
    assert_eq!(state["breaker"]["state"], "OPEN");

    // A new loop finds the breaker open and stops at once.
    let (code, events) = p.run();
    assert_eq!(code, 5);
    assert!(of_type(&events, "iteration_started").is_empty());

    let mut reset = assert_cmd::Command::cargo_bin("ralph-loop").unwrap();
    isolate(&mut reset, &p.root);
    let out = reset.args(["breaker", "reset"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("it was OPEN (no_progress_open)"));
    let state = p.state_file();
    assert_eq!(state["breaker"]["state"], "CLOSED");
    assert_eq!(state["breaker"]["reason"], "manual_reset");
}

#[test]
fn an_exit_signal_the_tests_contradict_three_times_stops_with_gate_disagreement() {
    let body = format!(
        "echo $n > work-$n.txt\n{}\n{}\n{}",
        say("All tasks are complete."),
        status("COMPLETE", true),
        result(0.0)
    );
    let p = project(&body, "", "");
    let events = p.run_to(5);
    let report = &of_type(&events, "loop_finished")[0]["report"];
    assert_eq!(report["status"], "gate_disagreement");
    assert_eq!(report["iterations"], 3);
    assert!(p
        .prompt(2)
        .contains("You set EXIT_SIGNAL: true, but the tests do not pass"));
}

#[test]
fn the_budget_stops_the_loop_between_iterations_and_the_iteration_cap_kills_within_one() {
    let body = format!(
        "echo $n > work-$n.txt\n{}\n{}",
        say("Working."),
        result(0.3)
    );
    let p = project(&body, "", "");
    let out = p.ralph().args(["--budget", "0.5"]).output().unwrap();
    assert_eq!(out.status.code(), Some(3));
    let state = p.state_file();
    assert_eq!(state["status"], "budget_exceeded");
    assert_eq!(state["iteration"], 2);

    // A million input tokens at the fallback price ($3) cross a $0.50 cap: killed at once.
    let usage = emit(
        json!({"type": "assistant", "message": {"id": "m1", "content": [{"type": "text", "text": "Reading everything."}], "usage": {"input_tokens": 1_000_000, "output_tokens": 10}}}),
    );
    let p = project(
        &format!("{usage}\nsleep 20\n{}", result(0.0)),
        "  max_cost_per_iteration: 0.5\n",
        "budgets:\n  max_iterations: 1\n",
    );
    let started = Instant::now();
    let events = p.run_to(4);
    assert!(started.elapsed() < Duration::from_secs(10));
    let ended = &of_type(&events, "agent_ended")[0];
    assert_eq!(ended["ending"], "over_cost");
    assert!(regent_actions(&events).contains(&"over_cost".to_string()));
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
    let sent = Instant::now();
    signal(&child, nix::sys::signal::Signal::SIGINT);
    let code = super::support::wait_exit(&mut child, Duration::from_secs(10));
    assert_eq!(code, 130);
    assert!(
        sent.elapsed() < Duration::from_secs(1),
        "{:?}",
        sent.elapsed()
    );
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
    let sent = Instant::now();
    signal(&child, nix::sys::signal::Signal::SIGINT);
    let code = super::support::wait_exit(&mut child, Duration::from_secs(10));
    assert_eq!(code, 130);
    assert!(
        sent.elapsed() < Duration::from_secs(3),
        "{:?}",
        sent.elapsed()
    );
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
        "i=0\nwhile [ $i -lt 15 ]; do\n{}\nsleep 0.2\ni=$((i+1))\ndone\necho done > done.txt\n{}\n{}",
        say("Working."),
        status("COMPLETE", true),
        result(0.01)
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

    let (code, events) = p.run();
    assert_eq!(code, 0);
    let warning = of_type(&events, "warning")
        .into_iter()
        .find(|w| w["message"].as_str().unwrap().contains("could not be read"))
        .expect("a warning about the state file");
    assert!(warning["message"]
        .as_str()
        .unwrap()
        .contains("regent-state.json.bad"));
    assert_file(&p.root, ".ralph/regent-state.json.bad", "{not json");
    assert_eq!(p.state_file()["status"], "complete");
}

#[test]
fn without_an_agent_chosen_a_headless_run_refuses_with_the_list_and_a_terminal_asks() {
    let p = project(&two_tasks(), "", "");
    // No `regent.agent`: nothing is chosen.
    let config = std::fs::read_to_string(p.root.join("ralph.config.yaml"))
        .unwrap()
        .replace("  agent: fake\n", "");
    std::fs::write(p.root.join("ralph.config.yaml"), config).unwrap();
    let out = p.ralph().output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no agent chosen") && err.contains("fake"),
        "{err}"
    );

    let (code, screen) = super::support::in_terminal(
        "ralph-loop",
        &p.root,
        &[
            ("PATH", format!("{}:/usr/bin:/bin", p.bin.display())),
            ("FAKE_STATE", p.state.display().to_string()),
        ],
        &["loop", "PROMPT.md", "--tasks", "TASKS.md", "--ui", "lines"],
        &[("agent [1-", "fake")],
    );
    assert_eq!(code, 0, "{screen}");
    assert!(
        screen.contains("Which coding agent should run the loop?"),
        "{screen}"
    );
}

#[test]
fn an_agent_not_signed_in_is_refused_naming_its_variable() {
    let p = project(&two_tasks(), "", "");
    let config = std::fs::read_to_string(p.root.join("ralph.config.yaml"))
        .unwrap()
        .replace(
            "    prompt: stdin\n",
            "    prompt: stdin\n    auth:\n      env: [FAKE_AGENT_KEY]\n",
        );
    std::fs::write(p.root.join("ralph.config.yaml"), config).unwrap();
    let out = p.ralph().env_remove("FAKE_AGENT_KEY").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("Fake agent is not signed in: set $FAKE_AGENT_KEY"),
        "{err}"
    );
}

/// The loop in the TUI, in a real terminal: the agent's text in the thought stream, a pause
/// between iterations, the end, and the terminal restored after `q`.
#[test]
fn the_loop_in_the_tui_pauses_between_iterations_and_shows_the_agents_text() {
    use super::tui::{assert_restored, bin, Pane};
    // Each iteration takes a second, so that the pause lands between the two.
    let p = project(&format!("sleep 1\n{}", two_tasks()), "", "");
    let env = [
        ("PATH", format!("{}:/usr/bin:/bin", p.bin.display())),
        ("FAKE_STATE", p.state.display().to_string()),
    ];
    let command = format!("'{}' loop PROMPT.md --tasks TASKS.md", bin().display());
    let pane = Pane::start(&p.root, &env, &command, 110, 30);
    pane.wait_for("RALPH LOOP │ PROMPT.md", Duration::from_secs(30));
    pane.wait_for("→ #1", Duration::from_secs(30));
    pane.keys(&["p"]);
    let screen = pane.wait_for("PAUSED", Duration::from_secs(30));
    assert!(screen.contains("agent fake"), "{screen}");
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(
        std::fs::read_to_string(p.state.join("n")).unwrap().trim(),
        "1",
        "no iteration starts while paused"
    );
    pane.keys(&["p"]);
    let screen = pane.wait_for("finished: complete", Duration::from_secs(60));
    assert_has(&screen, &["All tasks are complete.", "✓ #2"]);
    pane.keys(&["q"]);
    pane.wait_for("EXIT=0", Duration::from_secs(10));
    assert_restored(&pane);
    assert_eq!(p.state_file()["status"], "complete");
}

/// The model picker in the loop's view: the agent's models as it lists them; the one chosen
/// runs the next iteration, and the state file says so.
#[test]
fn the_loops_model_picker_runs_the_next_iteration_on_the_chosen_model() {
    use super::tui::{assert_restored, bin, Pane};
    let body = format!(
        "echo \"$@\" > \"$FAKE_STATE/args-$n.txt\"\nsleep 3\n{}",
        two_tasks()
    );
    let p = project(&body, "  model: small\n", "");
    let config = std::fs::read_to_string(p.root.join("ralph.config.yaml"))
        .unwrap()
        .replace(
            "    args: [-p]\n",
            "    args: [-p, --model, \"{model}\"]\n    models:\n      fixed: { names: [small, large] }\n",
        );
    std::fs::write(p.root.join("ralph.config.yaml"), config).unwrap();
    git(&p.root, &["commit", "-qam", "models"]);
    let env = [
        ("PATH", format!("{}:/usr/bin:/bin", p.bin.display())),
        ("FAKE_STATE", p.state.display().to_string()),
    ];
    let command = format!("'{}' loop PROMPT.md --tasks TASKS.md", bin().display());
    let pane = Pane::start(&p.root, &env, &command, 110, 30);
    pane.wait_for("→ #1", Duration::from_secs(30));
    pane.keys(&["m"]);
    let screen = pane.wait_for("Models ·", Duration::from_secs(5));
    assert!(screen.contains("fake  small"), "{screen}");
    pane.keys(&["Enter"]);
    let screen = pane.wait_for("Change model", Duration::from_secs(5));
    assert!(
        screen.contains("small  (now)") && screen.contains("large"),
        "{screen}"
    );
    pane.keys(&["Down"]);
    pane.keys(&["Enter"]);
    pane.wait_for(
        "the agent runs on large from the next iteration",
        Duration::from_secs(5),
    );
    let screen = pane.wait_for("finished: complete", Duration::from_secs(60));
    assert!(
        screen.contains("model large"),
        "the header shows it:\n{screen}"
    );
    pane.keys(&["q"]);
    pane.wait_for("EXIT=0", Duration::from_secs(10));
    assert_restored(&pane);
    let args = |n: u32| std::fs::read_to_string(p.state.join(format!("args-{n}.txt"))).unwrap();
    assert!(args(1).contains("--model small"), "{}", args(1));
    assert!(args(2).contains("--model large"), "{}", args(2));
    assert_eq!(p.state_file()["model"], "large");
}

/// Waits (up to 10 s) for `path` to hold something; its content.
fn wait_for(path: &Path) -> String {
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

/// A Python project tested by pytest, written test-first: `test_a` passes, `test_b` waits for
/// its code.
fn tdd_project(body: &str, regent: &str) -> Project {
    let mut p = project(body, regent, "testing:\n  mode: tdd\n");
    // pytest is wherever this machine has it.
    p.path = format!("{}:{}", p.bin.display(), std::env::var("PATH").unwrap());
    // The project's own `testing:` replaces the helper's command: pytest is detected.
    let config = std::fs::read_to_string(p.root.join("ralph.config.yaml"))
        .unwrap()
        .replacen("testing:\n  command: test -f done.txt\n", "", 1);
    std::fs::write(p.root.join("ralph.config.yaml"), config).unwrap();
    std::fs::write(p.root.join("pytest.ini"), "[pytest]\n").unwrap();
    std::fs::write(
        p.root.join("calc.py"),
        "def a():\n    return 1\n\n\ndef b():\n    raise NotImplementedError\n",
    )
    .unwrap();
    std::fs::write(
        p.root.join("test_calc.py"),
        "from calc import a, b\n\n\ndef test_a():\n    assert a() == 1\n\n\ndef test_b():\n    assert b() == 2\n",
    )
    .unwrap();
    git(&p.root, &["add", "-A"]);
    git(&p.root, &["commit", "-q", "-m", "tests first"]);
    p
}

#[test]
fn tdd_fails_only_on_regressions_and_counts_tests_passing_anew() {
    // 1: b is written (test_b passes anew). 2: a is broken (a regression: rolled back).
    // 3: the agent signals completion, and no test regressed.
    let body = format!(
        "case $n in\n1) sed -i 's/raise NotImplementedError/return 2/' calc.py; {};;\n2) sed -i 's/return 1/return 0/' calc.py; {};;\n*) {}; {};;\nesac\n{}",
        say("Wrote b."),
        say("Changed a."),
        say("All tasks are complete."),
        status("COMPLETE", true),
        result(0.0)
    );
    let p = tdd_project(&body, "  rollback_on_test_failure: true\n");
    let events = p.run_to(0);
    let baseline = read_json(&p.root.join(".ralph/test_baseline.json"));
    assert_eq!(baseline["scope"], "global");
    assert_eq!(baseline["passing"], json!(["test_calc.py::test_a"]));
    assert_eq!(baseline["failing"], json!(["test_calc.py::test_b"]));
    let report = &of_type(&events, "loop_finished")[0]["report"];
    let history = report["history"].as_array().unwrap();
    assert_eq!(history[0]["newly_passing"], 1);
    assert!(history[0]["reverted"].is_null(), "no regression in 1");
    assert!(
        history[1]["reverted"].is_string(),
        "the regression of 2 is rolled back"
    );
    assert!(
        p.prompt(3).contains("test_calc.py::test_a"),
        "{}",
        p.prompt(3)
    );
    assert!(std::fs::read_to_string(p.root.join("calc.py"))
        .unwrap()
        .contains("return 1"));
}

#[test]
fn a_project_without_tests_bootstraps_then_turns_its_gates_on() {
    // 1: code, no test. 2: pytest and a test that passes. 3: done.
    let body = format!(
        "case $n in\n1) printf 'def f():\\n    return 1\\n' > calc.py; {};;\n2) printf '[pytest]\\n' > pytest.ini; printf 'from calc import f\\n\\n\\ndef test_f():\\n    assert f() == 1\\n' > test_calc.py; {};;\n*) {}; {};;\nesac\n{}",
        say("Wrote f."),
        say("Wrote its test."),
        say("All tasks are complete."),
        status("COMPLETE", true),
        result(0.0)
    );
    let mut p = project(&body, "", "");
    p.path = format!("{}:{}", p.bin.display(), std::env::var("PATH").unwrap());
    let config = std::fs::read_to_string(p.root.join("ralph.config.yaml"))
        .unwrap()
        .replacen(
            "testing:\n  command: test -f done.txt\n",
            "testing:\n  mode: tdd\n",
            1,
        );
    std::fs::write(p.root.join("ralph.config.yaml"), config).unwrap();
    let events = p.run_to(0);
    let notes: Vec<String> = of_type(&events, "note")
        .iter()
        .map(|n| n["message"].as_str().unwrap().to_string())
        .collect();
    assert!(
        notes
            .iter()
            .any(|n| n.starts_with("bootstrap phase: no tests yet")),
        "{notes:?}"
    );
    assert!(
        notes.contains(&"Bootstrap complete, verification gates now active".to_string()),
        "{notes:?}"
    );
    assert!(
        notes
            .iter()
            .any(|n| n.starts_with("TDD baseline captured after iteration 2")),
        "{notes:?}"
    );
    // The first tests ran after iteration 2.
    let tests: Vec<u64> = of_type(&events, "tests_finished")
        .iter()
        .map(|t| t["iteration"].as_u64().unwrap())
        .collect();
    assert_eq!(tests, [2, 3]);
    let baseline = read_json(&p.root.join(".ralph/test_baseline.json"));
    assert_eq!(baseline["passing"], json!(["test_calc.py::test_f"]));
    assert!(baseline["bootstrap_completed_at"].is_string());
}

#[test]
fn a_task_whose_tests_are_not_required_is_not_held_to_them() {
    let body = format!(
        "echo setup > setup.txt\nsed -i 's/- \\[ \\] T-1/- [x] T-1/' TASKS.md\n{}\n{}",
        say("Set up."),
        result(0.0)
    );
    let p = project(
        &body,
        "  rollback_on_test_failure: true\n",
        "budgets:\n  max_iterations: 1\n",
    );
    std::fs::write(
        p.root.join("TASKS.md"),
        "- [ ] T-1: Set up the project\n  > Tests: Not required (setup-only task)\n- [ ] T-2: Write done.txt\n",
    )
    .unwrap();
    git(&p.root, &["commit", "-qam", "tasks"]);
    let events = p.run_to(4);
    assert!(of_type(&events, "note").iter().any(|n| n["message"]
        .as_str()
        .unwrap()
        .contains("T-1: Set up the project says its tests are not required")));
    // The tests failed, but the task did not need them: no rollback.
    assert!(!regent_actions(&events).contains(&"reverted".to_string()));
    assert_eq!(p.log()[0], "[ralph] Complete T-1: Set up the project");
}

#[test]
fn breaker_reset_while_a_loop_runs_is_taken_before_its_next_iteration() {
    let body = format!(
        "echo $n > work-$n.txt\nif [ $n -eq 1 ]; then sleep 1.5; fi\n{}\n{}",
        say("Working."),
        result(0.0)
    );
    let p = project(&body, "", "budgets:\n  max_iterations: 2\n");
    let child = p.spawn(true);
    wait_for(&p.state.join("pid"));
    let mut reset = assert_cmd::Command::cargo_bin("ralph-loop").unwrap();
    isolate(&mut reset, &p.root);
    let out = reset.args(["breaker", "reset"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(said.contains("resets its breaker"), "{said}");
    // A second loop in the same project is refused while this one runs.
    let second = p.ralph().output().unwrap();
    assert_eq!(second.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&second.stderr).contains("another `ralph-loop loop` runs"));

    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(4));
    let events: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let reset = of_type(&events, "breaker_changed");
    assert_eq!(reset.len(), 1, "{reset:?}");
    assert_eq!(reset[0]["reason"], "manual_reset");
    assert_eq!(reset[0]["iteration"], 1);
    assert!(!p.root.join(".ralph/breaker-reset").exists());
    // Once it ended, `status` says so.
    let mut status = assert_cmd::Command::cargo_bin("ralph-loop").unwrap();
    isolate(&mut status, &p.root);
    let text = String::from_utf8_lossy(&status.arg("status").output().unwrap().stdout).into_owned();
    assert!(text.starts_with("agent loop: max_iterations"), "{text}");
}

#[test]
fn each_commit_is_pushed_when_asked_and_a_failed_push_is_a_warning() {
    let p = project(&two_tasks(), "", "git:\n  push: true\n");
    let remote = p.state.join("remote.git");
    git(
        &p.state,
        &[
            "init",
            "-q",
            "--bare",
            "-b",
            "main",
            remote.to_str().unwrap(),
        ],
    );
    git(
        &p.root,
        &["remote", "add", "origin", remote.to_str().unwrap()],
    );
    git(&p.root, &["push", "-q", "-u", "origin", "main"]);
    let events = p.run_to(0);
    assert_eq!(
        regent_actions(&events)
            .iter()
            .filter(|a| *a == "pushed")
            .count(),
        2
    );
    let pushed = git(&remote, &["log", "--format=%s", "main"]);
    assert!(pushed.starts_with("[ralph] Complete T-2"), "{pushed}");

    // No upstream to push to: the loop goes on, and says so.
    let p = project(&two_tasks(), "", "git:\n  push: true\n");
    let events = p.run_to(0);
    assert!(of_type(&events, "warning")
        .iter()
        .any(|w| w["message"].as_str().unwrap().starts_with("cannot push")));
}
