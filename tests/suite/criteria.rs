//! The completion promise through the binary, on a real pytest project: flaky-test re-runs,
//! the test-integrity check and the coverage criterion (coverage.py).

use serde_json::Value;

use super::support::*;

const MODULE: &str = "stats/median.py";

const FIXED: &str = "def median(values):\n    if not values:\n        raise ValueError(\"median of an empty list\")\n    ordered = sorted(values)\n    mid = len(ordered) // 2\n    if len(ordered) % 2:\n        return ordered[mid]\n    return (ordered[mid - 1] + ordered[mid]) / 2\n";

/// Wrong for an even-length list: takes the upper middle value.
const BUGGY: &str = "def median(values):\n    if not values:\n        raise ValueError(\"median of an empty list\")\n    ordered = sorted(values)\n    return ordered[len(ordered) // 2]\n";

fn project(module: &str, config: &str) -> tempfile::TempDir {
    let dir = fixture("stacks/python");
    write(dir.path(), MODULE, module);
    write_config(dir.path(), config);
    dir
}

fn results(dir: &std::path::Path, n: u32) -> Value {
    read_json(&session_dir(dir).join(format!("test-results-iteration-{n}.json")))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_test_that_passes_on_the_rerun_is_flaky_and_the_run_succeeds() {
    // Wrong the first time only: a marker file remembers the first call.
    let flaky = FIXED.replace(
        "    if len(ordered) % 2:\n",
        "    import os\n    if len(ordered) % 2 == 0 and not os.path.exists(\".flaky-marker\"):\n        open(\".flaky-marker\", \"w\").close()\n        return ordered[mid]\n    if len(ordered) % 2:\n",
    );
    let dir = project(&flaky, "testing:\n  flaky_retries: 1\n");
    let llm = MockLlm::start().await;
    llm.helpful();

    ralph(dir.path(), &llm).args([MODULE]).assert().code(0);

    let report = report(dir.path());
    assert_eq!(report["iterations"], 0, "{report:#}");
    assert_eq!(report["tests_before"]["flaky"], 1, "{report:#}");
    assert!(
        report["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .all(|w| !w.as_str().unwrap().contains("entropy")),
        "{report:#}"
    );
    let baseline = results(dir.path(), 0);
    assert_eq!(baseline["status"], "passed", "{baseline:#}");
    assert_eq!(baseline["retries"], 1);
    let flaky: Vec<&Value> = baseline["tests"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["category"] == "FLAKY")
        .collect();
    assert_eq!(flaky.len(), 1, "{baseline:#}");
    assert!(flaky[0]["id"].as_str().unwrap().ends_with("test_even_list"));
    assert_eq!(flaky[0]["status"], "pass");
    assert!(llm.requests().await.is_empty(), "no model was needed");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_proposal_that_skips_tests_is_sent_back_with_the_reason() {
    let dir = project(BUGGY, "critic:\n  enabled: false\n");
    let llm = MockLlm::start().await;
    let cheat =
        format!("import pytest\n\npytest.skip(\"later\", allow_module_level=True)\n\n{BUGGY}");
    llm.helpful().script(
        "artisan",
        [text(code("python", &cheat)), text(code("python", FIXED))],
    );

    ralph(dir.path(), &llm).args([MODULE]).assert().code(0);

    let report = report(dir.path());
    assert_eq!(report["test_integrity_rejections"], 1, "{report:#}");
    assert_eq!(report["iterations"], 1);
    let second = last_prompt_of(&llm, "artisan", 2).await;
    assert_has(&second, &["test-integrity check", "pytest.skip()"]);
    assert_eq!(
        std::fs::read_to_string(dir.path().join(MODULE)).unwrap(),
        FIXED
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn passing_tests_under_the_coverage_threshold_are_not_yet_success() {
    let dir = project(
        BUGGY,
        "success_criteria:\n  coverage_threshold: 100\ncritic:\n  enabled: false\n",
    );
    let llm = MockLlm::start().await;
    // Passes the tests but adds code no test runs.
    let uncovered =
        format!("{FIXED}\n\ndef mode(values):\n    return max(set(values), key=values.count)\n");
    llm.helpful().script(
        "artisan",
        [
            text(code("python", &uncovered)),
            text(code("python", FIXED)),
        ],
    );

    ralph(dir.path(), &llm).args([MODULE]).assert().code(0);

    let report = report(dir.path());
    assert_eq!(report["iterations"], 2, "{report:#}");
    let first = results(dir.path(), 1);
    assert_eq!(first["status"], "passed", "{first:#}");
    let coverage = first["coverage"]["lines_pct"].as_f64().unwrap();
    assert!(coverage < 100.0, "{first:#}");
    assert_eq!(first["coverage"]["tool"], "coverage.py");
    let criterion = first["criteria"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "coverage_threshold")
        .unwrap();
    assert_eq!(criterion["met"], false, "{first:#}");
    let second = user_prompt(&llm.requests_of("artisan").await[1]);
    assert!(second.contains("success criteria are not met"), "{second}");
    let last = results(dir.path(), 2);
    assert_eq!(last["coverage"]["lines_pct"], 100.0, "{last:#}");
    assert_eq!(report["tests_after"]["criteria_met"], true);
}
