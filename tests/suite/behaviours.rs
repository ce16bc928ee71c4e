//! Promises of the command line and the config that no other test backs, each through the
//! binary as a user runs it: `--config PATH` (the file used, the project's own left unread, its
//! errors placed), `--adversarial` over `chaos.enabled: false`,
//! `success_criteria.adversarial_tests_pass: false`, `testing.mode: report` and
//! `build.bootstrap_check` of `ralph-loop loop`, and `memory.context_reset_frequency` above 1.

use std::path::Path;

use serde_json::Value;

use super::agent::git;
use super::regent::{loop_report, of_type, project, result, say, status, then_completes, Project};
use super::support::*;

/// Chaos's file that finds nothing: plain pytest, no Hypothesis to install.
const QUIET_PY: &str = "from median import median\n\n\ndef test_a_single_value():\n    assert median([7]) == 7\n\n\ndef test_negative_values():\n    assert median([-3, -1, -2]) == -2\n";

/// Chaos's file that breaks `FIXED_PY`: `(a + b) / 2` overflows for two huge values.
const OVERFLOW_PY: &str = "from median import median\n\n\ndef test_two_huge_equal_values():\n    assert median([1e308, 1e308]) == 1e308\n\n\ndef test_a_single_value():\n    assert median([7]) == 7\n";

fn chaos_reply(suite: &str) -> Answer {
    text(format!(
        "Boundary values for the middle pair.\n\n```python\n{suite}```\n"
    ))
}

fn keep_all() -> Answer {
    text("KEEP: test_two_huge_equal_values")
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// `--config PATH` names the file used, wherever it is: its settings apply (its
/// `budgets.max_iterations` stops the run, its `testing.command` runs, in the file's own
/// directory), and the project's own `ralph.config.yaml` is not read at all (a bad key in it
/// would stop the run). A bad file given so is refused (exit 2) naming that file, the line and
/// the key; a missing one is refused naming the path.
#[tokio::test(flavor = "multi_thread")]
async fn config_flag_uses_the_named_file_and_not_the_projects_own() {
    // Read, this file would stop the run at once (exit 2).
    let dir = fixture_with_config(
        "py-median",
        "budgets:\n  max_iterations: 7\nno_such_key: true\n",
    );
    let elsewhere = tempfile::Builder::new()
        .prefix("ralph-config-")
        .tempdir()
        .unwrap();
    let command = format!(
        "touch ran-here && cd '{}' && python3 -m pytest -q -p no:cacheprovider test_median.py",
        dir.path().display()
    );
    let config = elsewhere.path().join("custom.yaml");
    std::fs::write(
        &config,
        format!("budgets:\n  max_iterations: 1\ntesting:\n  command: \"{command}\"\n"),
    )
    .unwrap();
    let llm = MockLlm::start().await;
    // Never a whole fix: only the iteration cap can end the run this early.
    llm.helpful()
        .always("artisan", text(code("python", HALF_FIXED_PY)));

    let out = ralph(dir.path(), &llm)
        .args(["median.py", "--output", "json", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    let report = report(dir.path());
    assert_eq!(report["status"], "max_iterations", "{report:#}");
    assert_eq!(report["iterations"], 1, "{report:#}");
    assert_eq!(report["test_command"], command.as_str(), "{report:#}");
    assert_eq!(llm.requests_of("artisan").await.len(), 1);
    // The command ran where its config file is, not in the project.
    assert!(elsewhere.path().join("ran-here").is_file());
    assert!(!dir.path().join("ran-here").exists());

    // A bad file given with --config (here by a relative path) is named with its line and key.
    let bad = elsewhere.path().join("bad.yaml");
    std::fs::write(&bad, "budgets:\n  max_iterations: 2\n  max_cost: 1.0\n").unwrap();
    let relative = Path::new("..")
        .join(elsewhere.path().file_name().unwrap())
        .join("bad.yaml");
    let stderr = stderr_at(
        ralph(dir.path(), &llm)
            .args(["median.py", "--config"])
            .arg(&relative),
        2,
    );
    assert!(
        stderr.contains("bad.yaml:3:3: budgets.max_cost: unknown key"),
        "{stderr}"
    );
    assert!(!stderr.contains("ralph.config.yaml"), "{stderr}");

    // A path that names no file.
    assert_exits_saying(
        ralph(dir.path(), &llm).args(["median.py", "--config", "nowhere.yaml"]),
        2,
        &["nowhere.yaml: config file not found"],
    );
    // Neither refused run called a model.
    assert_eq!(llm.requests_of("artisan").await.len(), 1);
}

/// `--adversarial` turns Chaos on for a run whose config turns it off (`chaos.enabled: false`):
/// Chaos's model is asked for a file, the file runs, and the report has its round; without the
/// flag the same project never calls Chaos; and of `--adversarial` and `--no-adversarial` the
/// last given wins.
#[tokio::test(flavor = "multi_thread")]
async fn adversarial_flag_turns_chaos_on_over_the_config() {
    let run = |flags: &'static [&'static str]| async move {
        let dir = fixture_with_config("py-median", "chaos:\n  enabled: false\n");
        without_gates(dir.path());
        let llm = artisan_always("python", FIXED_PY).await;
        llm.always("chaos", chaos_reply(QUIET_PY));
        ralph_with_chaos(dir.path(), &llm)
            .args(["median.py", "--output", "json"])
            .args(flags)
            .assert()
            .code(0);
        let chaos = llm.requests_of("chaos").await.len();
        (report(dir.path()), chaos)
    };

    let (report, chaos) = run(&["--adversarial"]).await;
    assert_eq!(report["status"], "success", "{report:#}");
    assert_eq!(chaos, 1, "{report:#}");
    let a = &report["adversarial"];
    assert_eq!(a["rounds"], 1, "{a:#}");
    assert_eq!(a["tests_generated"], 2, "{a:#}");
    assert_eq!(a["failures_found"], 0, "{a:#}");
    assert!(
        report["reason"]
            .as_str()
            .unwrap()
            .contains("Chaos's adversarial tests pass too (1 round)"),
        "{report:#}"
    );

    // The config alone: no Chaos.
    let (report, chaos) = run(&[]).await;
    assert_eq!(chaos, 0);
    assert!(report.get("adversarial").is_none(), "{report:#}");

    // The last of the two flags wins.
    let (report, chaos) = run(&["--no-adversarial", "--adversarial"]).await;
    assert_eq!(chaos, 1);
    assert_eq!(report["adversarial"]["rounds"], 1, "{report:#}");
    let (report, chaos) = run(&["--adversarial", "--no-adversarial"]).await;
    assert_eq!(chaos, 0);
    assert!(report.get("adversarial").is_none(), "{report:#}");
}

/// `success_criteria.adversarial_tests_pass: false`: Chaos runs one round and what it finds is
/// reported, not fixed: the run succeeds on the unit tests with the finding open, the Artisan is
/// not asked again, and a note says so. With the default (true) the same finding goes back to
/// the Artisan, and a fix that never passes it spends the rounds (exit 4).
#[tokio::test(flavor = "multi_thread")]
async fn findings_are_reported_not_fixed_when_adversarial_tests_need_not_pass() {
    let run = |config: &'static str, exit: i32| async move {
        let dir = fixture("py-median");
        write_config(dir.path(), config);
        without_gates(dir.path());
        let llm = artisan_always("python", FIXED_PY).await;
        llm.always("chaos", chaos_reply(OVERFLOW_PY))
            .always("judge", keep_all());
        ralph_with_chaos(dir.path(), &llm)
            .args(["median.py", "--output", "json"])
            .assert()
            .code(exit);
        let artisan = llm.requests_of("artisan").await.len();
        let chaos = llm.requests_of("chaos").await.len();
        let file = std::fs::read_to_string(dir.path().join("median.py")).unwrap();
        (report(dir.path()), artisan, chaos, file)
    };

    let (report, artisan, chaos, file) = run(
        "chaos:\n  max_rounds: 2\nsuccess_criteria:\n  adversarial_tests_pass: false\n",
        0,
    )
    .await;
    assert_eq!(report["status"], "success", "{report:#}");
    assert_eq!(report["iterations"], 1, "{report:#}");
    assert_eq!((artisan, chaos), (1, 1), "one fix, one round");
    let a = &report["adversarial"];
    assert_eq!(a["rounds"], 1, "{a:#}");
    assert_eq!(a["failures_found"], 1, "{a:#}");
    assert_eq!(a["failures_fixed"], 0, "{a:#}");
    assert_eq!(a["findings"][0]["status"], "open", "{a:#}");
    assert!(
        a["findings"][0]["test"]
            .as_str()
            .unwrap()
            .ends_with("test_two_huge_equal_values"),
        "{a:#}"
    );
    let notes = strings(&report["notes"]);
    assert!(
        notes.iter().any(|n| n.contains(
            "Chaos found 1 failing adversarial test (success_criteria.adversarial_tests_pass is false: reported, not fixed)"
        )),
        "{notes:#?}"
    );
    // The reason does not claim the finding passes: it says it is still failing.
    let reason = report["reason"].as_str().unwrap();
    assert!(!reason.contains("adversarial tests pass too"), "{reason}");
    assert!(
        reason.ends_with(
            "1 adversarial test still failing (success_criteria.adversarial_tests_pass is false)"
        ),
        "{reason}"
    );
    assert_eq!(file, FIXED_PY);

    // The default: the finding must pass; a fix that never passes it spends the rounds.
    let (report, artisan, chaos, file) = run("chaos:\n  max_rounds: 2\n", 4).await;
    assert_eq!(report["status"], "max_iterations", "{report:#}");
    assert!(
        report["reason"]
            .as_str()
            .unwrap()
            .starts_with("chaos.max_rounds (2) spent with 1 adversarial test still failing"),
        "{report:#}"
    );
    assert!(artisan >= 2, "the finding went back to the Artisan");
    assert_eq!(chaos, 1);
    assert_eq!(report["adversarial"]["findings"][0]["status"], "open");
    assert_eq!(file, FIXED_PY);
}

fn messages(events: &[Value], kind: &str) -> Vec<String> {
    of_type(events, kind)
        .iter()
        .map(|e| e["message"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// Replaces the loop project's `testing:` section with `testing`, and commits the change.
fn set_testing(p: &Project, testing: &str) {
    p.edit_config("testing:\n  command: test -f done.txt\n", testing);
    git(&p.root, &["commit", "-qam", "testing"]);
}

/// `testing.mode: report`: the loop's tests run and are recorded, and judge nothing: an agent
/// that signals completion while they fail completes the loop (under `gate` that is a
/// disagreement), and `regent.rollback_on_test_failure` reverts nothing.
#[test]
fn report_mode_runs_and_records_the_tests_and_judges_nothing() {
    let body = then_completes("echo $n > work-$n.txt", 0.0);
    let p = project(&body, "  rollback_on_test_failure: true\n", "");
    set_testing(
        &p,
        "testing:\n  command: test -f done.txt\n  mode: report\n",
    );
    let (code, events, stderr) = p.run_told();
    assert_eq!(code, 0, "{stderr}\n{events:#?}");
    let report = loop_report(&events);
    assert_eq!(report["status"], "complete", "{report:#}");
    assert_eq!(report["iterations"], 1, "{report:#}");
    // The tests ran before and after the iteration, and failed both times: recorded.
    let runs: Vec<(u64, String)> = of_type(&events, "tests_finished")
        .iter()
        .map(|t| {
            (
                t["iteration"].as_u64().unwrap(),
                t["tests"]["status"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        runs,
        [(0, "failed".to_string()), (1, "failed".to_string())],
        "{events:#?}"
    );
    assert_eq!(
        report["history"][0]["tests"]["status"], "failed",
        "{report:#}"
    );
    // Judged by nothing: no revert, the iteration's commit stays.
    assert!(
        report["reverts"].as_array().is_none_or(Vec::is_empty),
        "{report:#}"
    );
    assert!(!of_type(&events, "regent")
        .iter()
        .any(|e| e["action"] == "reverted"));
    assert!(p.root.join("work-1.txt").is_file());
    assert!(git(&p.root, &["log", "-1", "--format=%s"]).starts_with("[ralph]"));
}

/// `build.bootstrap_check` (with `bootstrap_detection: manual`): while the command, run by the
/// shell in the project, exits 0, the project is bootstrapping and its tests are not run nor
/// judged; once it exits non-zero the gates turn on, said once, and the tests decide. `manual`
/// without a check is a config error naming the key.
#[test]
fn bootstrap_check_holds_the_test_gate_off_until_it_fails() {
    // 1: set-up, no tests yet. 2: ready.txt ends the bootstrap; the tests now fail although
    // the agent signals completion. 3: done.txt makes them pass.
    let body = format!(
        "case $n in\n1) echo one > work.txt; {};;\n2) echo ready > ready.txt; {}; {};;\n*) echo ok > done.txt; {}; {};;\nesac\n{}",
        say("Setting up."),
        say("All tasks are complete."),
        status("COMPLETE", true),
        say("All tasks are complete."),
        status("COMPLETE", true),
        result(0.0)
    );
    let p = project(
        &body,
        "",
        "build:\n  bootstrap_detection: manual\n  bootstrap_check: test ! -f ready.txt\n",
    );
    let (code, events, stderr) = p.run_told();
    assert_eq!(code, 0, "{stderr}\n{events:#?}");
    let notes = messages(&events, "note");
    let bootstrap: Vec<&String> = notes
        .iter()
        .filter(|n| n.starts_with("bootstrap phase:"))
        .collect();
    assert_eq!(
        bootstrap,
        ["bootstrap phase: `test ! -f ready.txt` (build.bootstrap_check) exited 0; the test gate is skipped until the project has tests"],
        "said once: {notes:#?}"
    );
    assert_eq!(
        notes
            .iter()
            .filter(|n| *n == "Bootstrap complete, verification gates now active")
            .count(),
        1,
        "{notes:#?}"
    );
    // No tests before the check failed (iterations 0 and 1); then every iteration's.
    let tests: Vec<u64> = of_type(&events, "tests_finished")
        .iter()
        .map(|t| t["iteration"].as_u64().unwrap())
        .collect();
    assert_eq!(tests, [2, 3], "{events:#?}");
    let report = loop_report(&events);
    assert_eq!(report["status"], "complete", "{report:#}");
    assert_eq!(report["iterations"], 3, "{report:#}");
    // Iteration 2's completion was held to the tests, which failed.
    let third = std::fs::read_to_string(p.state.join("prompt-3.txt")).unwrap();
    assert!(
        third.contains("You set EXIT_SIGNAL: true, but the tests do not pass"),
        "{third}"
    );

    // `manual` needs the check.
    let p = project(&body, "", "build:\n  bootstrap_detection: manual\n");
    let (code, events, stderr) = p.run_told();
    assert_eq!(code, 2, "{stderr}\n{events:#?}");
    assert!(
        stderr.contains("build.bootstrap_detection: manual needs build.bootstrap_check"),
        "{stderr}"
    );
    assert!(!p.state.join("n").exists(), "the agent never ran");
}

/// `memory.context_reset_frequency: 2`: the run warns (on stderr and in the report) that the
/// Artisan and Critic keep their conversation; the Artisan's second call of each pair carries
/// the first one's prompt and reply, and every 2 iterations the history is dropped (iteration 3
/// starts afresh), counted in `context_resets` and a `context_reset` event.
#[tokio::test(flavor = "multi_thread")]
async fn context_reset_frequency_keeps_history_and_drops_it_every_n_iterations() {
    let dir = fixture_with_config("py-median", "memory:\n  context_reset_frequency: 2\ncircuit_breaker:\n  entropy_threshold: 10\nbudgets:\n  max_iterations: 4\n");
    let llm = MockLlm::start().await;
    // The same partial fix every time: four iterations, the same failure.
    llm.helpful()
        .always("artisan", text(code("python", HALF_FIXED_PY)));
    let stderr = stderr_at(
        ralph(dir.path(), &llm).args(["median.py", "--ui", "lines"]),
        4,
    );
    let warning = "context_reset_frequency is 2: the Artisan and Critic keep their conversation for 2 iterations";
    assert!(stderr.contains(warning), "{stderr}");
    let report = report(dir.path());
    assert_eq!(report["iterations"], 4, "{report:#}");
    assert!(
        strings(&report["warnings"])
            .iter()
            .any(|w| w.starts_with(warning)),
        "{report:#}"
    );
    assert_eq!(report["context_resets"], 1, "{report:#}");

    let artisan = llm.requests_of("artisan").await;
    let shape: Vec<usize> = artisan
        .iter()
        .map(|r| r["messages"].as_array().unwrap().len())
        .collect();
    // system + user; then system + the last turn (user, assistant) + user; reset at 3.
    assert_eq!(shape, [2, 4, 2, 4], "{artisan:#?}");
    for (kept, asked) in [(1, 0), (3, 2)] {
        let messages = artisan[kept]["messages"].as_array().unwrap();
        assert_eq!(messages[1]["content"], user_prompt(&artisan[asked]));
        assert_eq!(messages[2]["role"], "assistant");
        assert!(
            messages[2]["content"]
                .as_str()
                .unwrap()
                .contains("I fixed the median."),
            "{messages:#?}"
        );
    }

    let log = std::fs::read_to_string(session_dir(dir.path()).join("events.jsonl")).unwrap();
    let resets: Vec<u64> = log
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["type"] == "context_reset")
        .map(|e| e["iteration"].as_u64().unwrap())
        .collect();
    assert_eq!(resets, [3]);
}
