//! Promises of agent mode and of the agent loop that no other test pins down: a second Ctrl+C
//! in `ralph-loop agent`, SIGTERM to `ralph-loop loop` (once, and twice), and what the loop
//! pushes after it reverts an iteration's commits.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde_json::Value;

use super::agent::{
    git, inbox_add, project as agent_project, ralph_in, records, spawn_agent_to, status_json,
    subjects,
};
use super::regent::{project as loop_project, result, say, status, then_says, Project};
use super::support::*;

/// A process the test started, killed and reaped if the test ends before it exits, with the
/// `sleep`s whose pids the files hold: a failing test leaves nothing running.
struct Watched {
    child: Child,
    pid_files: Vec<PathBuf>,
}

impl Watched {
    fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    fn signal(&self, signal: Signal) {
        kill(Pid::from_raw(self.pid()), signal).unwrap();
    }

    fn running(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        for file in &self.pid_files {
            let pid = std::fs::read_to_string(file)
                .ok()
                .and_then(|s| s.trim().parse::<i32>().ok());
            let comm =
                pid.and_then(|pid| std::fs::read_to_string(format!("/proc/{pid}/comm")).ok());
            if let (Some(pid), Some(comm)) = (pid, comm) {
                if comm.trim() == "sleep" {
                    let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
                }
            }
        }
    }
}

/// Whether `pid` is gone (a zombie counts as gone: it runs nothing).
fn gone(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |stat| {
        stat.rsplit(')')
            .next()
            .is_some_and(|s| s.trim_start().starts_with('Z'))
    })
}

/// The pid the file at `path` holds, once it holds one.
fn pid_in(path: &Path, timeout: Duration) -> i32 {
    let mut pid = None;
    wait_for(&path.display().to_string(), timeout, || {
        pid = std::fs::read_to_string(path)
            .ok()
            .and_then(|s| s.trim().parse().ok());
        pid.is_some()
    });
    pid.unwrap()
}

/// How many folders of the fix loop's sessions `.ralph/` holds.
pub(super) fn sessions(root: &Path) -> usize {
    std::fs::read_dir(root.join(".ralph"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with("session-")
        })
        .count()
}

/// `ralph-loop loop PROMPT.md --output jsonl` started in the project, its stderr kept in the
/// scripted agent's state folder.
fn spawn_loop(p: &Project, pid_files: Vec<PathBuf>) -> Watched {
    let stderr = std::fs::File::create(p.state.join("loop.stderr")).unwrap();
    let child = Command::new(assert_cmd::cargo::cargo_bin("ralph-loop"))
        .current_dir(&p.root)
        .env("HOME", &p.root)
        .env("PATH", &p.path)
        .env("FAKE_STATE", &p.state)
        .env_remove("RUST_LOG")
        .args(["loop", "PROMPT.md", "--output", "jsonl"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .unwrap();
    Watched { child, pid_files }
}

/// What the backgrounded loop said on stderr.
fn loop_stderr(p: &Project) -> String {
    std::fs::read_to_string(p.state.join("loop.stderr")).unwrap_or_default()
}

/// `ralph-loop loop PROMPT.md --output jsonl` run to its end: its exit code and its events.
/// Runs [`run_loop`] and asserts it exits with `code` (showing the events when not): its events.
#[track_caller]
fn run_loop_to(p: &Project, code: i32) -> Vec<Value> {
    let (got, events) = run_loop(p);
    assert_eq!(got, code, "{events:#?}");
    events
}

fn run_loop(p: &Project) -> (i32, Vec<Value>) {
    let mut cmd = assert_cmd::Command::cargo_bin("ralph-loop").unwrap();
    isolate(&mut cmd, &p.root);
    let out = cmd
        .env("PATH", &p.path)
        .env("FAKE_STATE", &p.state)
        .args(["loop", "PROMPT.md", "--output", "jsonl"])
        .output()
        .unwrap();
    let events = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    (out.status.code().unwrap_or(-1), events)
}

fn log_of(dir: &Path, rev: &str) -> Vec<String> {
    git(dir, &["log", "--format=%s", rev])
        .lines()
        .map(str::to_string)
        .collect()
}

/// The Regent's actions among `wanted`, in order.
fn actions(events: &[Value], wanted: &[&str]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["type"] == "regent")
        .filter_map(|e| e["action"].as_str())
        .filter(|a| wanted.contains(a))
        .map(str::to_string)
        .collect()
}

fn warnings(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["type"] == "warning")
        .filter_map(|e| e["message"].as_str())
        .map(str::to_string)
        .collect()
}

/// A bare repository beside the project, its `main` the project's upstream, holding what the
/// project has committed so far.
fn with_remote(p: &Project) -> PathBuf {
    let remote = p.state.join("remote.git");
    let shown = remote.to_str().unwrap();
    git(&p.state, &["init", "-q", "--bare", "-b", "main", shown]);
    git(&p.root, &["remote", "add", "origin", shown]);
    git(&p.root, &["push", "-q", "-u", "origin", "main"]);
    remote
}

/// The scripted agent of the signal tests: run 1 as given, then a run that writes `done.txt`
/// (the tests pass) and signals completion, so a later loop ends at the exit gate.
fn first_run_then_done(first: &str) -> String {
    format!(
        "case $n in\n1) {first};;\n*) echo ok > done.txt; {}; {}; {}; {};;\nesac",
        say("All tasks are complete."),
        status("COMPLETE", true),
        say("Everything is done."),
        result(0.01)
    )
}

/// docs/batch.md, agent mode: the first Ctrl+C lets the iteration under way finish; "a second
/// Ctrl+C kills the tests and exits at once", with 130 ("130 when interrupted"). Like a killed
/// agent it leaves the record active and its session file, so the next `ralph-loop agent` (no
/// `--allow-dirty` needed for the spec's own half-done file) resumes the spec's session and
/// commits it once.
#[tokio::test(flavor = "multi_thread")]
async fn a_second_ctrl_c_in_agent_mode_kills_the_tests_at_once_and_the_next_agent_finishes() {
    let dir = agent_project();
    let p = dir.path();
    let outside = tempfile::tempdir().unwrap();
    let slow = outside.path().join("slow");
    let test_pid = outside.path().join("test.pid");
    // While `slow` exists the tests of the fixed file never end (the sleeping process's pid
    // written first); the baseline, on the broken file, runs pytest as usual.
    write(
        p,
        "slowtest.sh",
        &format!(
            "if [ -f '{}' ] && grep -q ValueError median.py; then echo $$ > '{}'; exec sleep 30; fi\nexec python3 -m pytest -q test_median.py\n",
            slow.display(),
            test_pid.display()
        ),
    );
    git(p, &["add", "slowtest.sh"]);
    git(p, &["commit", "-q", "-m", "slow tests"]);
    write(
        p,
        "specs/fix-median.md",
        "---\ntargets: [median.py]\ntest_command: sh slowtest.sh\nadversarial: false\n---\nMake the tests of median.py pass.\n",
    );
    std::fs::write(&slow, "").unwrap();
    let llm = artisan_always("python", FIXED_PY).await;
    let ids = inbox_add(p, &llm, &["specs/fix-median.md"]);
    let stderr_path = outside.path().join("agent.stderr");
    let stderr = std::fs::File::create(&stderr_path).unwrap();
    let mut agent = Watched {
        child: spawn_agent_to(p, &llm, &[], Stdio::from(stderr)),
        pid_files: vec![test_pid.clone()],
    };
    let said = || std::fs::read_to_string(&stderr_path).unwrap_or_default();

    // Iteration 1's tests are under way.
    let tests = pid_in(&test_pid, Duration::from_secs(60));
    assert_eq!(records(p)[0]["status"], "active");
    agent.signal(Signal::SIGINT);
    // The first asks the iteration to finish: its tests go on, and so does the agent.
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        agent.running(),
        "the first Ctrl+C ended the agent\n{}",
        said()
    );
    assert!(!gone(tests), "the first Ctrl+C stopped the tests");
    let sent = Instant::now();
    agent.signal(Signal::SIGINT);
    let code = wait_exit(&mut agent.child, Duration::from_secs(10));
    assert_eq!(code, 130, "{}", said());
    assert!(
        sent.elapsed() < Duration::from_secs(3),
        "the second Ctrl+C waited {:?}",
        sent.elapsed()
    );
    wait_for("the test process to die", Duration::from_secs(5), || {
        gone(tests)
    });

    // Consistent: the record still active (a killed agent's), the session file naming it, no
    // agent running.
    let all = records(p);
    assert_eq!(all.len(), 1);
    assert_eq!(all[0]["id"], ids[0].as_str());
    assert_eq!(all[0]["status"], "active", "{all:?}");
    let session = read_json(&p.join(".ralph/agent-session.json"));
    assert_eq!(session["current_spec_id"], ids[0].as_str());
    let json = status_json(p, &llm);
    assert_eq!(json["mode"], "agent");
    assert_eq!(json["running"], false);
    assert_eq!(json["inbox"]["active"], 1);
    assert_eq!(subjects(p)[0], "slow tests", "nothing was committed");

    // Resumable: the next agent finishes the spec in the same session and commits it once.
    std::fs::remove_file(&slow).unwrap();
    ralph_in(p, &llm).arg("agent").assert().code(0);
    assert_eq!(records(p)[0]["status"], "done");
    let log = subjects(p);
    assert_eq!(
        log[..2],
        ["ralph: complete fix-median", "slow tests"],
        "{log:?}"
    );
    assert_eq!(
        git(p, &["show", "--name-only", "--format=", "HEAD"]).trim(),
        "median.py"
    );
    assert_file(p, "median.py", FIXED_PY);
    assert_eq!(sessions(p), 1, "the interrupted session went on");
    assert!(!p.join(".ralph/agent-session.json").exists());
    let porcelain = git(p, &["status", "--porcelain"]);
    assert!(
        porcelain.lines().all(|l| l.starts_with("??")),
        "{porcelain}"
    );
}

/// docs/agents.md, Signals: SIGTERM, as Ctrl+C, lets the iteration under way finish ("its
/// tests, commit and push included"), then the loop stops `interrupted` with exit 130; the state
/// file and the report say so, and the next loop goes on to its end.
#[test]
fn sigterm_lets_the_loop_s_iteration_finish_and_commit_then_stops_with_130() {
    let body = first_run_then_done(&format!(
        "{}; sleep 1.5; echo one > work.txt; {}; {}",
        say("Starting."),
        say("Wrote work.txt."),
        result(0.01)
    ));
    let p = loop_project(&body, "", "");
    let mut ralph = spawn_loop(&p, Vec::new());
    let agent = pid_in(&p.state.join("pid"), Duration::from_secs(30));
    std::thread::sleep(Duration::from_millis(300));
    ralph.signal(Signal::SIGTERM);
    // The agent is not stopped: it finishes its turn.
    std::thread::sleep(Duration::from_millis(300));
    assert!(ralph.running(), "SIGTERM ended the loop at once");
    assert!(!gone(agent), "SIGTERM killed the agent mid-turn");
    let code = wait_exit(&mut ralph.child, Duration::from_secs(30));
    assert_eq!(code, 130, "{}", loop_stderr(&p));
    assert!(gone(agent));

    // The iteration's work is committed, and nothing else is left in the tree.
    assert!(p.root.join("work.txt").exists());
    assert_eq!(
        log_of(&p.root, "HEAD"),
        ["[ralph] Iteration 1", "init"],
        "{}",
        loop_stderr(&p)
    );
    assert_eq!(git(&p.root, &["status", "--porcelain"]), "");
    let state = p.state_file();
    assert_eq!(state["status"], "interrupted");
    assert_eq!(state["iteration"], 1);
    assert_eq!(state["ralph_pid"], ralph.pid());
    let head = git(&p.root, &["rev-parse", "--short", "HEAD"]);
    assert_eq!(state["last_commit"], head.trim());
    let report = read_json(&p.root.join(".ralph/loop/report.json"));
    assert_eq!(report["status"], "interrupted");
    assert_eq!(report["exit_code"], 130);
    assert_eq!(report["commits"].as_array().unwrap().len(), 1);

    // The next loop runs (the lock is free) and ends at the exit gate.
    run_loop_to(&p, 0);
    assert_eq!(p.state_file()["status"], "complete");
    assert_eq!(git(&p.root, &["ls-files", "done.txt"]).trim(), "done.txt");
    assert_eq!(git(&p.root, &["status", "--porcelain"]), "");
}

/// docs/agents.md, Signals: "The same signal again exits at once": a second SIGTERM kills the
/// agent's whole tree (its process group and what left it, through the reaper) and exits 143
/// (128 + SIGTERM), without committing. The state file is the last one saved, `running` with a
/// pid now gone, which `status` reports as a killed loop; the next loop runs to its end.
#[test]
fn a_second_sigterm_kills_the_agent_s_tree_at_once_and_the_next_loop_goes_on() {
    let body = first_run_then_done(&format!(
        "sleep 30 & echo $! > \"$FAKE_STATE/child\"; setsid sleep 30 & echo $! > \"$FAKE_STATE/escaped\"; {}; sleep 30; {}",
        say("Starting."),
        result(0.01)
    ));
    let p = loop_project(&body, "", "");
    let (child_file, escaped_file) = (p.state.join("child"), p.state.join("escaped"));
    let mut ralph = spawn_loop(&p, vec![child_file.clone(), escaped_file.clone()]);
    let agent = pid_in(&p.state.join("pid"), Duration::from_secs(30));
    let child = pid_in(&child_file, Duration::from_secs(10));
    let escaped = pid_in(&escaped_file, Duration::from_secs(10));
    std::thread::sleep(Duration::from_millis(300));
    ralph.signal(Signal::SIGTERM);
    std::thread::sleep(Duration::from_millis(500));
    assert!(ralph.running(), "the first SIGTERM ended the loop at once");
    assert!(!gone(agent), "the first SIGTERM killed the agent");
    let sent = Instant::now();
    ralph.signal(Signal::SIGTERM);
    let code = wait_exit(&mut ralph.child, Duration::from_secs(10));
    assert_eq!(code, 143, "{}", loop_stderr(&p));
    assert!(
        sent.elapsed() < Duration::from_secs(3),
        "the second SIGTERM waited {:?}",
        sent.elapsed()
    );
    // The reaper stops the tree within its grace.
    wait_for("the agent's tree to die", Duration::from_secs(5), || {
        gone(agent) && gone(child) && gone(escaped)
    });

    // Nothing committed; the state saved before is there, and says a loop was killed.
    assert_eq!(log_of(&p.root, "HEAD"), ["init"]);
    let state = p.state_file();
    assert_eq!(state["schema"], 1);
    assert_eq!(state["status"], "running");
    assert_eq!(state["iteration"], 1);
    assert_eq!(state["ralph_pid"], ralph.pid());
    let mut status_cmd = assert_cmd::Command::cargo_bin("ralph-loop").unwrap();
    isolate(&mut status_cmd, &p.root);
    let out = status_cmd.arg("status").output().unwrap();
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        shown.starts_with(&format!(
            "agent loop: killed (pid {} is gone; run it again to go on)",
            ralph.pid()
        )),
        "{shown}"
    );

    // The next loop is not refused (the lock went with the process) and ends at the gate.
    run_loop_to(&p, 0);
    let state = p.state_file();
    assert_eq!(state["status"], "complete");
    assert_ne!(state["ralph_pid"], ralph.pid());
    assert_eq!(log_of(&p.root, "HEAD"), ["[ralph] Iteration 1", "init"]);
    assert_eq!(git(&p.root, &["status", "--porcelain"]), "");
}

/// A loop of one iteration of the agent `body` that rolls back on failing tests and pushes to a
/// remote, on a tree whose tests pass (`done.txt` committed), run to its end: the tests fail
/// after it (exit 4). The project, the remote and the loop's events.
fn rolled_back_and_pushed(body: &str) -> (Project, PathBuf, Vec<Value>) {
    let p = loop_project(
        body,
        "  rollback_on_test_failure: true\n",
        "budgets:\n  max_iterations: 1\ngit:\n  push: true\n",
    );
    std::fs::write(p.root.join("done.txt"), "ok\n").unwrap();
    git(&p.root, &["add", "done.txt"]);
    git(&p.root, &["commit", "-q", "-m", "tests pass"]);
    let remote = with_remote(&p);

    let events = run_loop_to(&p, 4);
    (p, remote, events)
}

/// docs/agents.md, Git: with `git.push: true` there is "a push after each commit and each
/// revert": when the tests fail after an iteration's commit, the commit (pushed) is reverted
/// and the revert pushed, so the remote's branch ends at the revert, on the tree the tests
/// passed on.
#[test]
fn a_rollback_is_pushed_so_the_remote_ends_at_the_revert() {
    let body = then_says("rm done.txt", "Removing a file.", 0.01);
    let (p, remote, events) = rolled_back_and_pushed(&body);
    let log = log_of(&p.root, "HEAD");
    assert_eq!(
        log[..3],
        [
            "Revert \"[ralph] Iteration 1\"",
            "[ralph] Iteration 1",
            "tests pass"
        ],
        "{log:?}"
    );
    assert_eq!(
        actions(&events, &["committed", "pushed", "reverted"]),
        ["committed", "pushed", "reverted", "pushed"]
    );
    let warned = warnings(&events);
    assert!(
        !warned.iter().any(|w| w.starts_with("cannot push")),
        "{warned:?}"
    );
    // The remote holds what the project holds: the bad commit, then its revert on top.
    assert_eq!(
        git(&remote, &["rev-parse", "main"]),
        git(&p.root, &["rev-parse", "HEAD"])
    );
    assert_eq!(log_of(&remote, "main"), log);
    assert!(git(&remote, &["ls-tree", "--name-only", "main"])
        .lines()
        .any(|f| f == "done.txt"));
    let report = read_json(&p.root.join(".ralph/loop/report.json"));
    let head = git(&p.root, &["rev-parse", "--short", "HEAD"]);
    assert_eq!(report["reverts"][0], head.trim());
    assert_eq!(report["history"][0]["reverted"], head.trim());
}

/// docs/agents.md, Git: the rollback reverts every commit since the checkpoint, "the loop's,
/// and any the agent made itself", "and pushed when pushing": an agent that commits twice
/// itself (nothing left for the loop to commit, so no push before) has both reverted, and the
/// push after the revert brings the remote to the reverted tree.
#[test]
fn the_agent_s_own_commits_reverted_are_pushed_with_their_reverts() {
    let body = then_says("git rm -q done.txt && git commit -q -m 'agent: drop done.txt' && echo x > extra.txt && git add extra.txt && git commit -q -m 'agent: add extra'", "Committed twice.", 0.01);
    let (p, remote, events) = rolled_back_and_pushed(&body);
    let log = log_of(&p.root, "HEAD");
    assert_eq!(
        log[..5],
        [
            "Revert \"agent: drop done.txt\"",
            "Revert \"agent: add extra\"",
            "agent: add extra",
            "agent: drop done.txt",
            "tests pass"
        ],
        "{log:?}"
    );
    assert_eq!(
        actions(&events, &["committed", "pushed", "reverted"]),
        ["reverted", "pushed"]
    );
    assert_eq!(
        git(&remote, &["rev-parse", "main"]),
        git(&p.root, &["rev-parse", "HEAD"])
    );
    let files: Vec<String> = git(&remote, &["ls-tree", "--name-only", "main"])
        .lines()
        .map(str::to_string)
        .collect();
    assert!(files.contains(&"done.txt".to_string()), "{files:?}");
    assert!(!files.contains(&"extra.txt".to_string()), "{files:?}");
    assert_eq!(git(&p.root, &["status", "--porcelain"]), "");
}
