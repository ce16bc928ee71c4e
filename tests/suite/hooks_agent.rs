//! `agent` hooks: a prompt with `${VAR}`s filled from the stage's context, sent to a model of the
//! run (metered, through LocalGuard); the reply reaches the Artisan's next prompt.

use super::support::*;

const WRONG_PY: &str = "def median(values):\n    return 0\n";

fn trusted_run(dir: &std::path::Path, llm: &MockLlm) -> assert_cmd::assert::Assert {
    ralph_with_chaos(dir, llm)
        .args(["hooks", "trust"])
        .assert()
        .success();
    ralph(dir, llm)
        .args(["median.py", "--output", "json"])
        .assert()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_agent_hook_asks_its_model_and_the_reply_reaches_the_artisan() {
    let dir = fixture("py-median");
    let llm = artisan_writes("python", [WRONG_PY, FIXED_PY]).await;

    llm.always(
        "hook",
        text("Sort the values first; average the middle two."),
    );
    write_config(dir.path(), "hooks:\n  on_test_fail:\n    - type: agent\n      name: explain\n      model: openai/gpt-4o-mini\n      prompt: \"Iteration ${ITERATION}: the tests of ${TARGET} failed (${TESTS_SUMMARY}).\\n${FAILURES}\\nWhy?\"\n      on_failure: warn_continue\n");
    let assert = trusted_run(dir.path(), &llm);
    assert_eq!(assert.get_output().status.code(), Some(0));
    let report = report(dir.path());
    assert_eq!(report["status"], "success");

    let asked = llm.requests_of("hook").await;
    // Once per failing test run of an iteration: the first's.
    assert_eq!(asked.len(), 1, "{asked:#?}");
    let prompt = user_prompt(&asked[0]);
    assert!(
        prompt.starts_with("Iteration 1: the tests of median.py failed ("),
        "{prompt}"
    );
    assert!(
        prompt.contains("test_median.py::"),
        "the failures are listed: {prompt}"
    );
    assert_eq!(asked[0]["model"], "gpt-4o-mini");
    let second = user_prompt(&llm.requests_of("artisan").await[1]);
    assert!(
        second.contains("The hook `explain` says: Sort the values first"),
        "{second}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_agent_hook_with_an_unknown_variable_is_refused_with_its_line() {
    let dir = fixture("py-median");
    let llm = MockLlm::start().await;
    write_config(dir.path(), "hooks:\n  on_test_fail:\n    - type: agent\n      prompt: \"Why did ${TARGET} fail? ${STACK}\"\n      on_failure: warn_continue\n");
    let stderr = stderr_at(ralph(dir.path(), &llm).args(["median.py"]), 2);
    assert_has(&stderr, &["ralph.config.yaml:", "${STACK}"]);
    assert!(llm.requests().await.is_empty());
}

/// An `agent` hook asks a model of the run, through the run's LocalGuard and ledger; a
/// coding-agent CLI as its model is refused before anything runs.
#[tokio::test(flavor = "multi_thread")]
async fn an_agent_hook_whose_model_is_an_agent_cli_is_refused() {
    let dir = fixture("py-median");
    let llm = MockLlm::start().await;
    write_config(dir.path(), "hooks:\n  on_test_fail:\n    - type: agent\n      prompt: \"Why did ${TARGET} fail?\"\n      model: agent:claude\n      on_failure: warn_continue\n");
    let stderr = stderr_at(ralph(dir.path(), &llm).args(["median.py"]), 2);
    assert_has(&stderr, &["ralph.config.yaml:", "is an agent CLI"]);
    assert!(llm.requests().await.is_empty());
}
