//! Agent mode stopped and started again: Ctrl-C and a restart, a session killed early, kill -9 at
//! random points, and the agent in the TUI.

use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use super::agent::*;
use super::support::*;

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
    let sessions = super::behaviours_agents::sessions(p);
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
    use super::tui::{bin, quit, Pane};
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
    let screen = quit(&pane, 0);
    assert!(screen.contains("1 specs completed, 1 failed"), "{screen}");
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
