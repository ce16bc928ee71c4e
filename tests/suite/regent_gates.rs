//! `ralph-loop loop` under the Regent, its gates and commits: tasks worked through and committed,
//! rollback and a failed revert, the breaker, the exit gate, budget and caps, TDD and bootstrap,
//! and pushes.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::agent::git;
use super::regent::*;
use super::support::{assert_has, isolate, json_lines, read_json};

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
    let report = loop_report(&events);
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
fn failing_tests_after_a_commit_are_rolled_back() {
    // The tests pass at first; the agent deletes done.txt, the loop commits, the tests fail,
    // and the commit is reverted.
    let body = then_says("rm done.txt", "Removing a file.", 0.01);
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
    let report = loop_report(&events);
    assert_eq!(report["reverts"].as_array().unwrap().len(), 1);
    assert!(p.prompt(1).contains("Make the tests pass."));
}

#[test]
fn a_revert_that_fails_stops_the_loop_with_the_tree_as_it_was() {
    // The agent makes a merge commit: `git revert` cannot revert it without a parent.
    let body = then_says("git checkout -q -b side && echo a > side.txt && git add side.txt && git commit -q -m side && git checkout -q main && git merge -q --no-ff -m merge side", "Merged.", 0.01);
    let p = project(&body, "  rollback_on_test_failure: true\n", "");
    let events = p.run_to(7);
    let report = loop_report(&events);
    assert_eq!(report["status"], "revert_failed");
    assert_has(report["reason"].as_str().unwrap(), &["left as it was"]);
    assert_eq!(p.log()[0], "merge");
    assert_eq!(git(&p.root, &["status", "--porcelain"]), "");
    assert!(!p.root.join(".git/REVERT_HEAD").exists());
}

#[test]
fn no_progress_opens_the_breaker_and_breaker_reset_closes_it() {
    let body = format!(
        "{}\n{}",
        say("Nothing to do."),
        ends("IN_PROGRESS", false, 0.0)
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
    let events = p.run_to(5);
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
    let body = then_completes("echo $n > work-$n.txt", 0.0);
    let p = project(&body, "", "");
    let events = p.run_to(5);
    let report = loop_report(&events);
    assert_eq!(report["status"], "gate_disagreement");
    assert_eq!(report["iterations"], 3);
    assert!(p
        .prompt(2)
        .contains("You set EXIT_SIGNAL: true, but the tests do not pass"));
}

#[test]
fn the_budget_stops_the_loop_between_iterations_and_the_iteration_cap_kills_within_one() {
    let body = then_says("echo $n > work-$n.txt", "Working.", 0.3);
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

/// A Python project tested by pytest, written test-first: `test_a` passes, `test_b` waits for
/// its code.
fn tdd_project(body: &str, regent: &str) -> Project {
    let mut p = project(body, regent, "testing:\n  mode: tdd\n");
    // pytest is wherever this machine has it.
    p.path = format!("{}:{}", p.bin.display(), std::env::var("PATH").unwrap());
    // The project's own `testing:` replaces the helper's command: pytest is detected.
    p.edit_config("testing:\n  command: test -f done.txt\n", "");
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
    let report = loop_report(&events);
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
    p.edit_config(
        "testing:\n  command: test -f done.txt\n",
        "testing:\n  mode: tdd\n",
    );
    let events = p.run_to(0);
    let notes = messages_of(&events, "note");
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
    let body = then_says(
        "echo setup > setup.txt\nsed -i 's/- \\[ \\] T-1/- [x] T-1/' TASKS.md",
        "Set up.",
        0.0,
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
    let body = then_says(
        "echo $n > work-$n.txt\nif [ $n -eq 1 ]; then sleep 1.5; fi",
        "Working.",
        0.0,
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
    let events: Vec<Value> = json_lines(&String::from_utf8_lossy(&out.stdout));
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
