//! Specs, the inbox and agent mode, with real git, real pytest and the mock model server.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde_json::Value;
use tempfile::TempDir;

use super::support::*;

/// `mean.py` returns the mean of all but the last value; `FIXED_MEAN` is right.
pub(super) const BROKEN_MEAN: &str =
    "def mean(values):\n    return sum(values[:-1]) / len(values)\n";
pub(super) const FIXED_MEAN: &str = "def mean(values):\n    return sum(values) / len(values)\n";
pub(super) const TEST_MEAN: &str =
    "from mean import mean\n\n\ndef test_mean():\n    assert mean([1, 2, 3]) == 2\n";
/// `mode.py` returns the first value; `FIXED_MODE` the most common.
pub(super) const BROKEN_MODE: &str = "def mode(values):\n    return values[0]\n";
pub(super) const FIXED_MODE: &str =
    "def mode(values):\n    return max(set(values), key=values.count)\n";
pub(super) const TEST_MODE: &str =
    "from mode import mode\n\n\ndef test_mode():\n    assert mode([1, 2, 2]) == 2\n";

pub(super) fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).to_string()
}

/// `py-median` with `mean.py` and `mode.py` beside it, each with its test, committed; specs in
/// `specs/`.
pub(super) fn project() -> TempDir {
    let dir = fixture("py-median");
    let p = dir.path();
    write(p, "mean.py", BROKEN_MEAN);
    write(p, "test_mean.py", TEST_MEAN);
    write(p, "mode.py", BROKEN_MODE);
    write(p, "test_mode.py", TEST_MODE);
    write(p, ".gitignore", "__pycache__/\n.pytest_cache/\n");
    // Each spec's model answers from the file it is shown: no recalled attempts at others.
    write(p, "ralph.config.yaml", "memory:\n  enabled: false\n");
    std::fs::create_dir(p.join("specs")).unwrap();
    git(p, &["config", "user.name", "Test"]);
    git(p, &["config", "user.email", "test@example.com"]);
    git(p, &["add", "-A"]);
    git(p, &["commit", "-q", "-m", "init"]);
    dir
}

/// A spec fixing `target` (Chaos off), its tests alone run.
pub(super) fn spec(dir: &Path, name: &str, target: &str, extra: &str) {
    write(
        dir,
        &format!("specs/{name}.md"),
        &format!("---\ntargets: [{target}]\ntest_command: python3 -m pytest -q test_{target}\nadversarial: false\n{extra}---\nMake the tests of {target} pass.\n"),
    );
}

/// A model that fixes whichever file it is shown.
pub(super) fn fixer(llm: &MockLlm) {
    llm.helpful().always(
        "artisan",
        from_prompt(|prompt| {
            if prompt.contains("def mean") {
                code("python", FIXED_MEAN)
            } else if prompt.contains("def mode") {
                code("python", FIXED_MODE)
            } else {
                code("python", FIXED_PY)
            }
        }),
    );
}

pub(super) fn ralph_in(dir: &Path, llm: &MockLlm) -> assert_cmd::Command {
    ralph_with_chaos(dir, llm)
}

/// `ralph-loop status --json` in `dir`, which must succeed: what it prints.
pub(super) fn status_json(dir: &Path, llm: &MockLlm) -> Value {
    let out = ralph_in(dir, llm)
        .args(["status", "--json"])
        .assert()
        .code(0);
    serde_json::from_slice(&out.get_output().stdout).unwrap()
}

/// The three specs most tests queue, in the order they queue them.
pub(super) const FIX_THREE: [&str; 3] = [
    "specs/fix-median.md",
    "specs/fix-mean.md",
    "specs/fix-mode.md",
];

/// Writes each spec `(name, target, extra)` (see [`spec`]) and queues them all in that order;
/// their ids.
pub(super) fn queue(dir: &Path, llm: &MockLlm, specs: &[(&str, &str, &str)]) -> Vec<String> {
    for (name, target, extra) in specs {
        spec(dir, name, target, extra);
    }
    let paths: Vec<String> = specs
        .iter()
        .map(|(name, _, _)| format!("specs/{name}.md"))
        .collect();
    let paths: Vec<&str> = paths.iter().map(String::as_str).collect();
    inbox_add(dir, llm, &paths)
}

pub(super) fn inbox_add(dir: &Path, llm: &MockLlm, specs: &[&str]) -> Vec<String> {
    let mut cmd = ralph_in(dir, llm);
    cmd.args(["inbox", "add"]).args(specs);
    let out = cmd.assert().code(0).get_output().stdout.clone();
    String::from_utf8(out)
        .unwrap()
        .lines()
        .map(|l| {
            assert!(l.starts_with("Queued: q-"), "{l}");
            l.split_whitespace().nth(1).unwrap().to_string()
        })
        .collect()
}

pub(super) fn records(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join(".ralph/inbox.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Each record's status, in queue order.
pub(super) fn statuses(dir: &Path) -> Vec<String> {
    records(dir)
        .iter()
        .map(|r| r["status"].as_str().unwrap().to_string())
        .collect()
}

pub(super) fn subjects(dir: &Path) -> Vec<String> {
    git(dir, &["log", "--format=%s"])
        .lines()
        .map(String::from)
        .collect()
}

pub(super) fn agent_log(dir: &Path) -> String {
    let logs = dir.join(".ralph/logs");
    let mut all: Vec<_> = std::fs::read_dir(&logs)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .collect();
    all.sort();
    all.iter()
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect::<Vec<_>>()
        .join("")
}

#[tokio::test(flavor = "multi_thread")]
async fn the_inbox_adds_lists_removes_clears_and_answers_queries() {
    let dir = project();
    let p = dir.path();
    let llm = MockLlm::start().await;
    let ids = queue(
        p,
        &llm,
        &[
            ("fix-median", "median.py", ""),
            ("fix-mean", "mean.py", ""),
            ("fix-mode", "mode.py", ""),
        ],
    );
    assert_eq!(ids.len(), 3);
    let list = ralph_in(p, &llm).arg("inbox").assert().code(0);
    let list = stdout_of(&list);
    assert!(list.starts_with("Inbox (3 specs):\n"), "{list}");
    assert!(
        list.contains(&format!(
            "  {}  pending   specs/fix-median.md  (added just now)",
            ids[0]
        )),
        "{list}"
    );

    // A missing spec and bad front matter are refused, and nothing is queued.
    let missing = ralph_in(p, &llm)
        .args(["inbox", "add", "specs/fix-median.md", "specs/nope.md"])
        .assert()
        .code(2);
    assert!(stderr_of(&missing).contains("specs/nope.md: spec not found"));
    write(
        p,
        "specs/bad.md",
        "---\ntargets: [median.py]\nbudget: lots\n---\nx\n",
    );
    let bad = ralph_in(p, &llm)
        .args(["inbox", "add", "specs/bad.md"])
        .assert()
        .code(2);
    let stderr = stderr_of(&bad);
    assert!(
        stderr.contains("specs/bad.md:3:9: budget: invalid type"),
        "{stderr}"
    );
    assert_eq!(records(p).len(), 3);

    // An active record cannot be removed; a pending one can, by id or by spec.
    let text = std::fs::read_to_string(p.join(".ralph/inbox.jsonl")).unwrap();
    std::fs::write(
        p.join(".ralph/inbox.jsonl"),
        text.replacen("\"status\":\"pending\"", "\"status\":\"active\"", 1),
    )
    .unwrap();
    let active = ralph_in(p, &llm)
        .args(["inbox", "remove", &ids[0]])
        .assert()
        .code(2);
    assert!(stderr_of(&active).contains("is active"));
    ralph_in(p, &llm)
        .args(["inbox", "remove", &ids[1]])
        .assert()
        .code(0)
        .stdout(format!("Removed: {} specs/fix-mean.md\n", ids[1]));
    ralph_in(p, &llm)
        .args(["inbox", "remove", "specs/fix-mode.md"])
        .assert()
        .code(0)
        .stdout(format!("Removed: {} specs/fix-mode.md\n", ids[2]));
    ralph_in(p, &llm)
        .args(["inbox", "remove", "q-zzzz"])
        .assert()
        .code(2);

    inbox_add(p, &llm, &["specs/fix-mean.md", "specs/fix-mode.md"]);
    ralph_in(p, &llm)
        .args(["inbox", "clear"])
        .assert()
        .code(0)
        .stdout("Cleared 2 pending specs\n");
    let query = ralph_in(p, &llm).args(["query", "inbox"]).assert().code(0);
    let json: Value = serde_json::from_slice(&query.get_output().stdout).unwrap();
    let all = json.as_array().unwrap();
    assert_eq!(all.len(), 1, "{json}");
    assert_eq!(all[0]["id"], ids[0].as_str());
    assert_eq!(all[0]["status"], "active");
    assert_eq!(all[0]["spec"], "specs/fix-median.md");
    assert!(all[0]["added_at"].as_str().unwrap().ends_with('Z'));
}

#[tokio::test(flavor = "multi_thread")]
async fn eight_processes_adding_at_once_lose_nothing_and_share_no_id() {
    let dir = project();
    let p = dir.path();
    spec(p, "fix-median", "median.py", "");
    let llm = MockLlm::start().await;
    let children: Vec<Child> = (0..8)
        .map(|_| {
            Command::new(assert_cmd::cargo::cargo_bin("ralph-loop"))
                .args(["inbox", "add"])
                .args(std::iter::repeat_n("specs/fix-median.md", 5))
                .current_dir(p)
                .env("HOME", p)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut child in children {
        assert!(child.wait().unwrap().success());
    }
    let all = records(p);
    assert_eq!(all.len(), 40);
    let ids: std::collections::BTreeSet<&str> =
        all.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), 40, "every id is unique");
    drop(llm);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_torn_last_line_is_kept_aside_and_a_corrupt_line_stops_with_its_number() {
    let dir = project();
    let p = dir.path();
    spec(p, "fix-median", "median.py", "");
    let llm = MockLlm::start().await;
    let ids = inbox_add(p, &llm, &["specs/fix-median.md"]);
    let inbox = p.join(".ralph/inbox.jsonl");
    let good = std::fs::read_to_string(&inbox).unwrap();
    std::fs::write(&inbox, format!("{good}{{\"t\":\"inbox\",\"id\":\"q-to")).unwrap();
    let list = ralph_in(p, &llm).args(["inbox", "list"]).assert().code(0);
    let out = list.get_output();
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("Inbox (1 spec):"));
    let warning = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(
        warning.contains("cut short") && warning.contains("inbox.torn.jsonl"),
        "{warning}"
    );
    assert_eq!(std::fs::read_to_string(&inbox).unwrap(), good);
    assert_file(
        p,
        ".ralph/inbox.torn.jsonl",
        "{\"t\":\"inbox\",\"id\":\"q-to\n",
    );

    std::fs::write(&inbox, format!("not a record\n{good}")).unwrap();
    for args in [vec!["inbox"], vec!["query", "inbox"], vec!["agent"]] {
        let stderr = stderr_at(ralph_in(p, &llm).args(&args), 2);
        assert!(
            stderr.contains(".ralph/inbox.jsonl:1: not an inbox record"),
            "{args:?}: {stderr}"
        );
    }
    assert!(std::fs::read_to_string(&inbox).unwrap().contains(&ids[0]));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_agent_commits_each_spec_in_order_and_stashes_a_failure() {
    let dir = project();
    let p = dir.path();
    let llm = artisan_answers(from_prompt(|prompt| {
        if prompt.contains("def mean") {
            // Never right: the spec fails at its one iteration.
            code("python", "def mean(values):\n    return 0\n")
        } else if prompt.contains("def mode") {
            code("python", FIXED_MODE)
        } else {
            code("python", FIXED_PY)
        }
    }))
    .await;
    let ids = queue(
        p,
        &llm,
        &[
            ("fix-median", "median.py", ""),
            ("fix-mean", "mean.py", "max_iterations: 1\n"),
            ("fix-mode", "mode.py", ""),
        ],
    );
    // Work of the user's that no spec touches stays out of every commit.
    write(p, "notes.txt", "my own notes\n");
    // git's automatic maintenance, with a task that packs loose objects as soon as there is one.
    for (key, value) in [
        ("maintenance.gc.enabled", "false"),
        ("maintenance.loose-objects.enabled", "true"),
        ("maintenance.loose-objects.auto", "1"),
    ] {
        git(p, &["config", key, value]);
    }

    let stderr = stderr_at(ralph_in(p, &llm).arg("agent"), 1);
    assert!(
        stderr.contains("agent: Inbox empty. Agent stopping."),
        "{stderr}"
    );

    assert_eq!(
        subjects(p),
        [
            "ralph: complete fix-mode",
            "ralph: complete fix-median",
            "init"
        ],
        "{}",
        agent_log(p)
    );
    assert_eq!(
        git(p, &["show", "--format=", "--name-only", "HEAD~1"]),
        "median.py\n"
    );
    assert_eq!(
        git(p, &["show", "--format=", "--name-only", "HEAD"]),
        "mode.py\n"
    );
    let body = git(p, &["log", "-1", "--format=%b", "HEAD~1"]);
    for line in [
        "Spec: specs/fix-median.md",
        "Targets: median.py",
        "Iterations: 1",
        "Duration: ",
        "Cost: $",
        &format!("Inbox: {}", ids[0]),
    ] {
        assert!(body.contains(line), "{line} in\n{body}");
    }
    assert_file(p, "median.py", FIXED_PY);
    assert_eq!(
        git(p, &["status", "--porcelain"]),
        "?? notes.txt\n?? specs/\n"
    );

    // The failure: its work in a stash and under a private ref, the file as committed.
    assert_file(p, "mean.py", BROKEN_MEAN);
    assert!(git(p, &["stash", "list"]).contains("ralph: failed fix-mean"));
    let kept = git(
        p,
        &["show", &format!("refs/ralph/failed/{}:mean.py", ids[1])],
    );
    assert_eq!(kept, "def mean(values):\n    return 0\n");

    let all = records(p);
    let statuses: Vec<&str> = all.iter().map(|r| r["status"].as_str().unwrap()).collect();
    assert_eq!(statuses, ["done", "failed", "done"]);
    for r in &all {
        assert!(
            r["started_at"].is_string() && r["completed_at"].is_string(),
            "{r}"
        );
    }
    let error = all[1]["error"].as_str().unwrap();
    assert!(
        error.contains("max_iterations") && error.contains("refs/ralph/failed/"),
        "{error}"
    );
    assert!(!p.join(".ralph/agent-session.json").exists());

    let log = agent_log(p);
    let steps: Vec<&str> = log
        .lines()
        .map(|l| l.split_once("] ").unwrap().1)
        .map(|m| m.split(':').next().unwrap())
        .collect();
    assert_eq!(steps[0], "Agent started");
    for step in ["FETCH", "PLAN", "RUN", "COMMIT", "FAILED", "STASH"] {
        assert!(steps.contains(&step), "{step} in\n{log}");
    }
    assert!(
        log.contains(&format!("FETCH: {} specs/fix-median.md", ids[0])),
        "{log}"
    );
    assert_has(
        &log,
        &[
            "RUN: starting iteration 1",
            "Session summary: 2 specs completed, 1 failed",
        ],
    );
    // It ran once the session's commits were made, before the agent exited.
    let packs = std::fs::read_dir(p.join(".git/objects/pack"))
        .unwrap()
        .count();
    assert!(packs > 0, "git's maintenance ran at the end");
}

#[tokio::test(flavor = "multi_thread")]
async fn each_limit_stops_the_agent_and_a_success_resets_the_failure_count() {
    let dir = project();
    let p = dir.path();
    let llm = MockLlm::start().await;
    fixer(&llm);
    spec(p, "fix-median", "median.py", "");
    spec(p, "fix-mode", "mode.py", "");
    spec(p, "missing", "nowhere.py", "");
    // --max-specs 1: one done, the other pending.
    inbox_add(p, &llm, &["specs/fix-median.md", "specs/fix-mode.md"]);
    let out = ralph_in(p, &llm)
        .args(["agent", "--max-specs", "1"])
        .assert()
        .code(0);
    assert!(stderr_of(&out).contains("--max-specs reached"));
    assert_eq!(statuses(p), ["done", "pending"]);

    // Failures in a row: fail, done, fail with --max-failures 2 runs all three.
    ralph_in(p, &llm).args(["inbox", "clear"]).assert().code(0);
    inbox_add(
        p,
        &llm,
        &["specs/missing.md", "specs/fix-mode.md", "specs/missing.md"],
    );
    ralph_in(p, &llm)
        .args(["agent", "--max-failures", "2"])
        .assert()
        .code(1);
    assert_eq!(statuses(p)[1..], ["failed", "done", "failed"]);
    let error = records(p)[1]["error"].as_str().unwrap().to_string();
    assert!(error.contains("nowhere.py"), "{error}");

    // Two in a row stop it, the third left pending.
    inbox_add(
        p,
        &llm,
        &[
            "specs/missing.md",
            "specs/missing.md",
            "specs/fix-median.md",
        ],
    );
    let out = ralph_in(p, &llm)
        .args(["agent", "--max-failures", "2"])
        .assert()
        .code(1);
    assert!(stderr_of(&out).contains("2 consecutive failed specs"));
    let last: Vec<String> = statuses(p).into_iter().rev().take(3).collect();
    assert_eq!(last, ["pending", "failed", "failed"]);

    // --max-cost: the first spec spends past it; the agent stops with the next one pending.
    ralph_in(p, &llm).args(["inbox", "clear"]).assert().code(0);
    git(p, &["reset", "-q", "--hard", "HEAD~2"]);
    inbox_add(p, &llm, &["specs/fix-median.md", "specs/fix-mode.md"]);
    let stderr = stderr_at(ralph_in(p, &llm).args(["agent", "--max-cost", "0.0001"]), 0);
    assert!(stderr.contains("--max-cost reached"), "{stderr}");
    let last: Vec<String> = statuses(p).into_iter().rev().take(2).collect();
    assert!(last.contains(&"pending".to_string()), "{last:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_dirty_tree_is_refused_and_allow_dirty_commits_only_the_spec_s_files() {
    let dir = project();
    let p = dir.path();
    let llm = MockLlm::start().await;
    fixer(&llm);
    queue(p, &llm, &[("fix-median", "median.py", "")]);
    write(
        p,
        "mode.py",
        "def mode(values):\n    return values[-1]  # mine\n",
    );
    let stderr = stderr_at(ralph_in(p, &llm).arg("agent"), 2);
    assert!(
        stderr.contains("uncommitted changes (mode.py)") && stderr.contains("--allow-dirty"),
        "{stderr}"
    );
    assert_eq!(records(p)[0]["status"], "pending");

    ralph_in(p, &llm)
        .args(["agent", "--allow-dirty"])
        .assert()
        .code(0);
    assert_eq!(
        git(p, &["show", "--format=", "--name-only", "HEAD"]),
        "median.py\n"
    );
    assert_eq!(
        git(p, &["status", "--porcelain"]),
        " M mode.py\n?? specs/\n"
    );
}

pub(super) fn spawn_agent(dir: &Path, llm: &MockLlm, args: &[&str]) -> Child {
    spawn_agent_to(dir, llm, args, Stdio::null())
}

/// `ralph-loop agent args` in `dir`, its stderr to `stderr`.
pub(super) fn spawn_agent_to(dir: &Path, llm: &MockLlm, args: &[&str], stderr: Stdio) -> Child {
    Command::new(assert_cmd::cargo::cargo_bin("ralph-loop"))
        .arg("agent")
        .args(args)
        .current_dir(dir)
        .env("HOME", dir)
        .env("OPENAI_BASE_URL", llm.base_url())
        .env("OPENAI_API_KEY", "sk-test-key")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn ctrl_c_finishes_the_iteration_and_a_restart_resumes_the_spec() {
    let dir = project();
    let p = dir.path();
    let llm = artisan_script([
        slow(code("python", HALF_FIXED_PY), Duration::from_secs(3)),
        text(code("python", FIXED_PY)),
    ])
    .await;
    let ids = queue(p, &llm, &[("fix-median", "median.py", "")]);
    let mut child = spawn_agent(p, &llm, &[]);
    let start = Instant::now();
    while futures::executor::block_on(llm.requests_of("artisan")).is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no artisan request"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    kill(Pid::from_raw(child.id() as i32), Signal::SIGINT).unwrap();
    assert_eq!(wait_exit(&mut child, Duration::from_secs(60)), 130);

    // The iteration under way finished: its fix is on disk, its tests ran, nothing more.
    assert_file(p, "median.py", HALF_FIXED_PY);
    assert_eq!(llm.requests_of("artisan").await.len(), 1);
    let record = &records(p)[0];
    assert_eq!(record["status"], "pending");
    let session = read_json(&p.join(".ralph/agent-session.json"));
    assert_eq!(session["current_spec_id"], ids[0].as_str());
    let status = ralph_in(p, &llm).arg("status").assert().code(0);
    let status = stdout_of(&status);
    assert!(status.starts_with("Mode: agent (interrupted"), "{status}");
    assert!(
        status.contains(&format!(
            "Current spec: specs/fix-median.md ({}, pending)",
            ids[0]
        )),
        "{status}"
    );
    assert!(
        status.contains("Inbox: 1 pending, 0 active, 0 done, 0 failed"),
        "{status}"
    );
    let json = status_json(p, &llm);
    assert_eq!(json["mode"], "agent");
    assert_eq!(json["running"], false);
    assert_eq!(json["inbox"]["pending"], 1);
    assert_eq!(json["last_report"]["status"], "interrupted");

    // The restart resumes the session: iteration 2, the first counted, none run twice. Begun
    // in the tree, it goes on in the tree, though the agent now runs specs in worktrees.
    ralph_in(p, &llm)
        .args(["agent", "--parallel", "2"])
        .assert()
        .code(0);
    assert!(!p.join(".cache/ralph-loop/worktrees").exists());
    assert_eq!(llm.requests_of("artisan").await.len(), 2);
    assert_eq!(records(p)[0]["status"], "done");
    let body = git(p, &["log", "-1", "--format=%b"]);
    assert!(body.contains("Iterations: 2"), "{body}");
    let sessions = std::fs::read_dir(p.join(".ralph"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with("session-")
        })
        .count();
    assert_eq!(sessions, 1, "the same session went on");
    assert!(!p.join(".ralph/agent-session.json").exists());
}

/// A kill between the spec's progress naming its new session and that session's first save
/// (the window the random kills below found) leaves a session folder without `run.json`: the
/// next agent starts that target afresh, nothing having been done in it, and finishes the spec.
#[tokio::test(flavor = "multi_thread")]
async fn a_session_killed_before_its_first_save_is_started_afresh() {
    let dir = project();
    let p = dir.path();
    let llm = artisan_answers(slow(code("python", FIXED_PY), Duration::from_secs(2))).await;
    queue(p, &llm, &[("fix-median", "median.py", "")]);
    let mut child = spawn_agent(p, &llm, &[]);
    wait_for("the artisan's request", Duration::from_secs(60), || {
        !futures::executor::block_on(llm.requests_of("artisan")).is_empty()
    });
    kill(Pid::from_raw(child.id() as i32), Signal::SIGKILL).unwrap();
    child.wait().unwrap();
    // As if the kill had come before the session's first save.
    let session = session_dir(p);
    for name in ["run.json", "state.json"] {
        std::fs::remove_file(session.join(name)).unwrap();
    }
    assert_eq!(records(p)[0]["status"], "active");

    ralph_in(p, &llm).arg("agent").assert().code(0);
    assert_eq!(records(p)[0]["status"], "done", "{}", agent_log(p));
    assert_file(p, "median.py", FIXED_PY);
    assert!(subjects(p)[0].starts_with("ralph: complete fix-median"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_spec_without_targets_is_planned_shown_by_dry_run_then_run() {
    let dir = project();
    let p = dir.path();
    let llm = MockLlm::start().await;
    fixer(&llm);
    llm.always(
        "planner",
        text("{\"targets\": [{\"file\": \"median.py\", \"test_file\": \"test_median.py\"}], \"reason\": \"the median is wrong\"}"),
    );
    write(
        p,
        "specs/median.md",
        "---\nadversarial: false\nbudget: 0.5\ntest_command: python3 -m pytest -q test_median.py\n---\nThe median of an even-length list must average the middle pair.\n",
    );
    write(p, "specs/unplannable.md", "The moon is made of cheese.\n");
    let ids = inbox_add(p, &llm, &["specs/median.md"]);
    let dry = ralph_in(p, &llm)
        .args(["agent", "--dry-run"])
        .assert()
        .code(0);
    let shown = stdout_of(&dry);
    assert!(
        shown.contains(&format!(
            "{}  specs/median.md  (1 target, planned by openai/",
            ids[0]
        )),
        "{shown}"
    );
    assert_has(
        &shown,
        &[
            "    median.py  (tests: test_median.py)",
            "why: the median is wrong",
            "settings: budget=$0.50",
        ],
    );
    let planner = llm.requests_of("planner").await;
    assert_eq!(planner.len(), 1);
    let asked = user_prompt(&planner[0]);
    assert!(
        asked.contains("median.py (python)") && asked.contains("def median(values)"),
        "{asked}"
    );
    assert_eq!(
        records(p)[0]["status"],
        "pending",
        "a dry run changes nothing"
    );
    assert_eq!(subjects(p).len(), 1);

    ralph_in(p, &llm).arg("agent").assert().code(0);
    assert_eq!(
        llm.requests_of("planner").await.len(),
        1,
        "the dry run's plan was kept"
    );
    assert_eq!(subjects(p)[0], "ralph: complete median");
    let progress = read_json(&p.join(format!(".ralph/agent/{}/progress.json", ids[0])));
    assert_eq!(progress["plan"]["source"], "planned");

    // A plan naming no file of the project fails the spec, with the reason.
    llm.always(
        "planner",
        text("{\"targets\": [{\"file\": \"cheese.py\"}]}"),
    );
    inbox_add(p, &llm, &["specs/unplannable.md"]);
    ralph_in(p, &llm).arg("agent").assert().code(1);
    let error = records(p)[1]["error"].as_str().unwrap().to_string();
    assert!(
        error.contains("planning failed")
            && error.contains("cheese.py is not a file of the project"),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn reset_puts_a_failed_spec_s_files_back_and_keeps_its_work_under_the_ref() {
    let dir = project();
    let p = dir.path();
    write(
        p,
        "ralph.config.yaml",
        "memory:\n  enabled: false\nagent:\n  on_failure: reset\n",
    );
    git(p, &["commit", "-q", "-am", "reset failed work"]);
    let llm = artisan_answers(text(code("python", "def mean(values):\n    return 0\n"))).await;
    let ids = queue(p, &llm, &[("fix-mean", "mean.py", "max_iterations: 1\n")]);

    // A second agent is refused while the first holds the project.
    let held = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(p.join(".ralph/agent.lock"))
        .unwrap();
    let lock = nix::fcntl::Flock::lock(held, nix::fcntl::FlockArg::LockExclusive).unwrap();
    let refused = ralph_in(p, &llm).arg("agent").assert().code(2);
    assert!(stderr_of(&refused).contains("another agent is working through this inbox"));
    drop(lock);

    ralph_in(p, &llm).arg("agent").assert().code(1);
    assert_file(p, "mean.py", BROKEN_MEAN);
    assert_eq!(git(p, &["stash", "list"]), "", "no stash entry with reset");
    let kept = git(
        p,
        &["show", &format!("refs/ralph/failed/{}:mean.py", ids[0])],
    );
    assert_eq!(kept, "def mean(values):\n    return 0\n");
    assert!(records(p)[0]["error"]
        .as_str()
        .unwrap()
        .contains("files reset"));
}

/// `k` broken copies of the median, each with its test and a spec; the model gives the
/// half-fixed version first and the fix once it is shown the half-fixed one, so each spec takes
/// two iterations.
pub(super) fn median_specs(p: &Path, k: usize) -> Vec<String> {
    let broken = std::fs::read_to_string(p.join("median.py")).unwrap();
    let test = std::fs::read_to_string(p.join("test_median.py")).unwrap();
    let mut specs = Vec::new();
    for i in 0..k {
        write(p, &format!("median_{i}.py"), &broken);
        write(
            p,
            &format!("test_median_{i}.py"),
            &test.replace("from median import", &format!("from median_{i} import")),
        );
        spec(p, &format!("median-{i}"), &format!("median_{i}.py"), "");
        specs.push(format!("specs/median-{i}.md"));
    }
    git(p, &["add", "-A"]);
    git(p, &["commit", "-q", "-m", "medians"]);
    specs
}

/// A model that half fixes a median, then fixes the half-fixed one: two iterations a spec.
pub(super) fn two_step_fixer(llm: &MockLlm) {
    llm.helpful().always(
        "artisan",
        from_prompt(|prompt| {
            if prompt.contains("ordered[mid - 1]") {
                code("python", FIXED_PY)
            } else {
                code("python", HALF_FIXED_PY)
            }
        }),
    );
}

/// Starts `agent args` again and again, each killed with SIGKILL after a random wait of up to
/// `within`, until `kills` kills (or an agent finished everything); after each, every record is
/// still there, once. The kills made.
pub(super) fn kill_agents_at_random(
    p: &Path,
    llm: &MockLlm,
    args: &[&str],
    ids: &[String],
    kills: u64,
    within: Duration,
) -> u64 {
    use rand::Rng;
    let mut rng = rand::rng();
    let mut made = 0;
    while made < kills {
        let mut child = spawn_agent(p, llm, args);
        let wait = rng.random_range(Duration::ZERO..within);
        let start = Instant::now();
        let mut exited = false;
        while start.elapsed() < wait {
            if child.try_wait().unwrap().is_some() {
                exited = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        if !exited {
            kill(Pid::from_raw(child.id() as i32), Signal::SIGKILL).unwrap();
            made += 1;
        }
        child.wait().unwrap();
        // No record lost, none torn, none doubled: every line parses, every id once.
        let all = records(p);
        let mut seen: Vec<&str> = all.iter().map(|r| r["id"].as_str().unwrap()).collect();
        seen.sort();
        let mut want: Vec<&str> = ids.iter().map(String::as_str).collect();
        want.sort();
        assert_eq!(seen, want, "after {made} kills");
        if exited && all.iter().all(|r| r["status"] == "done") {
            // Everything finished between kills.
            break;
        }
    }
    made
}

/// After the agents of `kill_agents_at_random` and one more to the end: every median spec
/// done, committed once, in queue order, and the Artisan asked at most `per_kill` more times
/// per kill than the iterations the reports count.
pub(super) async fn assert_medians_done_once(
    p: &Path,
    llm: &MockLlm,
    ids: &[String],
    kills: u64,
    per_kill: u64,
) {
    let all = records(p);
    assert!(all.iter().all(|r| r["status"] == "done"), "{all:?}");
    let completes: Vec<String> = subjects(p)
        .into_iter()
        .filter(|s| s.starts_with("ralph: complete"))
        .rev()
        .collect();
    let want: Vec<String> = (0..ids.len())
        .map(|i| format!("ralph: complete median-{i}"))
        .collect();
    assert_eq!(completes, want, "{}", agent_log(p));
    let mut iterations = 0;
    for (i, id) in ids.iter().enumerate() {
        assert_eq!(
            std::fs::read_to_string(p.join(format!("median_{i}.py"))).unwrap(),
            FIXED_PY
        );
        let progress = read_json(&p.join(format!(".ralph/agent/{id}/progress.json")));
        iterations += progress["targets"][0]["iterations"].as_u64().unwrap();
    }
    let asked = llm.requests_of("artisan").await.len() as u64;
    eprintln!("{kills} kills; {asked} artisan calls for {iterations} iterations");
    assert!(
        asked <= iterations + per_kill * kills,
        "{asked} artisan calls for {iterations} iterations and {kills} kills"
    );
    assert!(kills >= 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn kill_9_at_a_hundred_random_points_loses_no_record_and_redoes_at_most_an_iteration() {
    let dir = project();
    let p = dir.path();
    let llm = MockLlm::start().await;
    two_step_fixer(&llm);
    let specs = median_specs(p, 40);
    let refs: Vec<&str> = specs.iter().map(String::as_str).collect();
    let ids = inbox_add(p, &llm, &refs);
    let kills = kill_agents_at_random(p, &llm, &[], &ids, 100, Duration::from_millis(1200));
    // Let the last agent finish what is left.
    ralph_in(p, &llm).arg("agent").assert().code(0);
    // Each kill redid at most the iteration under way.
    assert_medians_done_once(p, &llm, &ids, kills, 1).await;
}

/// The agent in the TUI, in a real terminal: the inbox's specs listed, the one running skipped
/// mid-call (its record failed as skipped, not counted as a failure), the next one committed.
#[tokio::test(flavor = "multi_thread")]
async fn the_agent_in_the_tui_lists_the_inbox_and_skips_the_spec_asked() {
    use super::tui::{assert_restored, bin, Pane};
    let dir = project();
    let p = dir.path();
    spec(p, "mean", "mean.py", "");
    spec(p, "mode", "mode.py", "");
    let llm = artisan_answers(if_prompt(
        "def mean",
        slow(code("python", FIXED_MEAN), Duration::from_secs(30)),
        text(code("python", FIXED_MODE)),
    ))
    .await;
    let ids = inbox_add(p, &llm, &["specs/mean.md", "specs/mode.md"]);
    let command = format!("'{}' agent", bin().display());
    let pane = Pane::start(p, &llm.openai_env(), &command, 120, 34);
    let screen = pane.wait_for("· generate", Duration::from_secs(60));
    assert_has(&screen, &["›→ specs/mean.md", "○ specs/mode.md"]);
    let asked = Instant::now();
    pane.keys(&["s"]);
    pane.wait_for("Skip specs/mean.md?", Duration::from_secs(5));
    pane.keys(&["y"]);
    let screen = pane.wait_for("✓ specs/mode.md", Duration::from_secs(60));
    assert!(
        asked.elapsed() < Duration::from_secs(25),
        "the skipped call was waited for"
    );
    assert!(screen.contains("⊘ specs/mean.md"), "{screen}");
    pane.wait_for("q to quit", Duration::from_secs(30));
    pane.keys(&["q"]);
    let screen = pane.wait_for("EXIT=0", Duration::from_secs(10));
    assert!(screen.contains("1 specs completed, 1 failed"), "{screen}");
    assert_restored(&pane);
    assert_eq!(statuses(p), ["failed", "done"]);
    let first = &records(p)[0];
    assert_eq!(first["id"], ids[0].as_str());
    assert!(
        first["error"]
            .as_str()
            .unwrap()
            .starts_with("skipped in the view"),
        "{first}"
    );
    assert_file(p, "mean.py", BROKEN_MEAN);
    assert_file(p, "mode.py", FIXED_MODE);
}
