//! Agent mode working through specs: each committed in order, its limits, a dirty tree, a spec
//! without targets, and reset.

use super::agent::*;
use super::support::*;

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
    let ids = queue(p, &llm, &THREE_MEAN_ONCE);
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
    let (dir, llm) = project_and_fixer().await;
    let p = dir.path();
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
    let (dir, llm) = project_and_fixer().await;
    let p = dir.path();
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

#[tokio::test(flavor = "multi_thread")]
async fn a_spec_without_targets_is_planned_shown_by_dry_run_then_run() {
    let (dir, llm) = project_and_fixer().await;
    let p = dir.path();
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
    let asked = last_prompt_of(&llm, "planner", 1).await;
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
    write_config(
        p,
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
