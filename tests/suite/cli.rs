//! The command line's answers to bad input, and its small commands.

use predicates::prelude::*;

use super::support::*;

/// `ralph-loop args` in a copy of `py-median`, refused with `code` and saying each of `wants`:
/// the project and the server (which no role is scripted on).
async fn refused(args: &[&str], code: i32, wants: &[&str]) -> (tempfile::TempDir, MockLlm) {
    let dir = fixture("py-median");
    let llm = MockLlm::start().await;
    assert_exits_saying(ralph(dir.path(), &llm).args(args), code, wants);
    (dir, llm)
}

#[tokio::test(flavor = "multi_thread")]
async fn missing_file_is_a_usage_error() {
    let (dir, _llm) = refused(&["nope.py"], 2, &["target file not found: nope.py"]).await;
    assert!(
        !dir.path().join(".ralph").exists(),
        "nothing is written for a run that never started"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_config_names_file_line_and_key() {
    let dir = fixture_with_config(
        "py-median",
        "budgets:\n  max_iterations: 5\n  max_cost: 1.0\n",
    );
    let llm = MockLlm::start().await;
    assert_exits_saying(
        ralph(dir.path(), &llm).args(["median.py"]),
        2,
        &["ralph.config.yaml:3", "max_cost"],
    );

    write_config(dir.path(), "budgets:\n  max_cost_usd: lots\n");
    assert_exits_saying(
        ralph(dir.path(), &llm).args(["median.py"]),
        2,
        &["ralph.config.yaml:2", "budgets.max_cost_usd"],
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn no_test_command_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "lonely.py", "x = 1\n");
    let llm = MockLlm::start().await;
    assert_exits_saying(
        ralph(dir.path(), &llm).args(["lonely.py"]),
        2,
        &["no tests found", "-t"],
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_model_without_its_key_is_refused_at_start() {
    let (dir, _llm) = refused(
        &["median.py", "--models", "artisan=claude"],
        1,
        &["anthropic", "ANTHROPIC_API_KEY"],
    )
    .await;
    assert!(!dir.path().join(".ralph").exists());
}

#[test]
fn version_and_help() {
    let mut cmd = assert_cmd::Command::cargo_bin("ralph-loop").unwrap();
    cmd.arg("--version")
        .assert()
        .success()
        .stdout(predicate::str::starts_with("ralph-loop "));
    let mut cmd = assert_cmd::Command::cargo_bin("ralph-loop").unwrap();
    cmd.arg("--help")
        .assert()
        .success()
        .stdout(predicate::str::contains("--budget"));
}

#[tokio::test(flavor = "multi_thread")]
async fn status_prints_the_last_report() {
    let dir = fixture("py-median");
    let llm = artisan_always("python", FIXED_PY).await;
    ralph(dir.path(), &llm)
        .args(["median.py", "--output", "jsonl"])
        .assert()
        .code(0)
        .stdout(predicate::function(|out: &str| {
            let lines: Vec<serde_json::Value> = out
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect();
            lines
                .first()
                .is_some_and(|l| l["type"] == "session_started")
                && lines.last().is_some_and(|l| {
                    l["type"] == "session_finished" && l["report"]["status"] == "success"
                })
        }));
    ralph_with_chaos(dir.path(), &llm)
        .arg("status")
        .assert()
        .success()
        .stdout(predicate::str::contains("success").and(predicate::str::contains("1 iteration ·")));
    ralph_with_chaos(dir.path(), &llm)
        .args(["status", "--json"])
        .assert()
        .success()
        .stdout(predicate::str::contains("\"status\": \"success\""));
}

#[test]
fn a_missing_key_is_named_before_any_work() {
    let dir = fixture("py-median");
    let mut cmd = assert_cmd::Command::cargo_bin("ralph-loop").unwrap();
    isolate(&mut cmd, dir.path());
    assert_exits_saying(
        cmd.args(["median.py"]),
        1,
        &["openai", "OPENAI_API_KEY is not set"],
    );
    assert!(
        !dir.path().join(".ralph").exists(),
        "no session for a run that could not call its models"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unknown_or_absent_language_is_a_usage_error() {
    let (dir, llm) = refused(
        &["median.py", "--language", "cobol"],
        2,
        &["--language: unknown language `cobol`"],
    )
    .await;
    assert_exits_saying(
        ralph(dir.path(), &llm).args(["median.py", "--language", "rust"]),
        2,
        &["rust"],
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_test_file_target_needs_allow_test_edits() {
    let (_dir, llm) = refused(
        &["test_median.py"],
        2,
        &["is a test file", "--allow-test-edits"],
    )
    .await;
    assert!(llm.requests().await.is_empty());
}
