//! Chaos through the binary, on real projects run by their real tools (pytest with Hypothesis,
//! vitest with fast-check, the libraries installed aside when the project lacks them): a fix
//! that passes its unit tests but fails a boundary case Chaos exposes is fixed in the next
//! round; a wrong expectation is dropped by the Critic; a broken test file is repaired; a
//! proposal that breaks the unit tests mid-round is undone; rounds spent with findings open stop
//! the run without the breaker counting them; a budget too small for Chaos's call stops the run
//! with the file at its passing state; `--no-adversarial` and micro-agent never call Chaos.

use std::path::Path;

use serde_json::Value;

use super::support::*;

/// Averages the middle pair without overflowing: the fix Chaos's boundary test asks for.
pub(super) const SAFE_PY: &str = "def median(values):\n    if not values:\n        raise ValueError(\"median of an empty list\")\n    ordered = sorted(values)\n    mid = len(ordered) // 2\n    if len(ordered) % 2:\n        return ordered[mid]\n    return ordered[mid - 1] / 2 + ordered[mid] / 2\n";

/// Round 1 against `FIXED_PY`: a boundary value its `(a + b) / 2` overflows on, and a property
/// over 100 generated lists that holds.
const ATTACK_PY: &str = "import math\n\nfrom hypothesis import given, settings, strategies as st\n\nfrom median import median\n\n\ndef test_two_huge_equal_values():\n    assert median([1e308, 1e308]) == 1e308\n\n\n@settings(max_examples=100, derandomize=True)\n@given(st.lists(st.integers(min_value=-10**6, max_value=10**6), min_size=1))\ndef test_between_min_and_max(values):\n    assert min(values) <= median(values) <= max(values)\n";

/// A later round that finds nothing.
pub(super) const QUIET_PY: &str = "from median import median\n\n\ndef test_a_single_value():\n    assert median([7]) == 7\n\n\ndef test_negative_values():\n    assert median([-3, -1, -2]) == -2\n";

pub(super) fn chaos_reply(lang: &str, suite: &str) -> Answer {
    text(format!(
        "The mean of the middle pair can overflow.\n\n```{lang}\n{suite}```\n"
    ))
}

/// Scripts Chaos's two rounds: the Python suite `first`, then [`QUIET_PY`], which finds nothing.
pub(super) fn chaos_then_quiet<'a>(llm: &'a MockLlm, first: &str) -> &'a MockLlm {
    llm.script(
        "chaos",
        [
            chaos_reply("python", first),
            chaos_reply("python", QUIET_PY),
        ],
    )
}

pub(super) fn keep_all() -> Answer {
    text(
        "KEEP: test_two_huge_equal_values\nKEEP: the median of two equal huge values is that value",
    )
}

/// Fixes `median.py` in `dir` with Chaos on, expecting exit `code`; the report.
pub(super) fn fix_py(dir: &Path, llm: &MockLlm, code: i32) -> Value {
    ralph_with_chaos(dir, llm)
        .args(["median.py", "--output", "json"])
        .assert()
        .code(code);
    report(dir)
}

#[tokio::test(flavor = "multi_thread")]
async fn python_chaos_finds_an_overflow_and_the_next_round_finds_nothing() {
    let dir = fixture("py-median");
    let llm = artisan_writes("python", [FIXED_PY, SAFE_PY]).await;
    chaos_then_quiet(&llm, ATTACK_PY).always("judge", keep_all());
    let report = fix_py(dir.path(), &llm, 0);
    assert_eq!(report["status"], "success", "{report:#}");
    assert_eq!(report["iterations"], 2);
    let a = &report["adversarial"];
    assert_eq!(a["rounds"], 2, "{a:#}");
    assert_eq!(
        a["strategies"],
        serde_json::json!(["boundary", "property", "concurrency"])
    );
    assert_eq!(a["tests_generated"], 4, "{a:#}");
    assert_eq!(a["failures_found"], 1, "{a:#}");
    assert_eq!(a["failures_fixed"], 1, "{a:#}");
    let finding = &a["findings"][0];
    assert!(
        finding["test"]
            .as_str()
            .unwrap()
            .ends_with("test_two_huge_equal_values"),
        "{finding}"
    );
    assert_eq!(finding["status"], "fixed");
    // Both files stay in the session folder, never among the project's files.
    for suite in a["suites"].as_array().unwrap() {
        let path = suite["path"].as_str().unwrap();
        assert!(path.starts_with(".ralph/session-"), "{path}");
        assert!(dir.path().join(path).is_file(), "{path}");
    }
    assert!(!dir.path().join("test_chaos_round_1.py").exists());
    // Every run of a file is kept in the unified schema: round 1's, its re-run, round 2's.
    let session = session_dir(dir.path());
    for name in [
        "test-results-chaos-iteration-1-round-1.json",
        "test-results-chaos-iteration-2-round-1.json",
        "test-results-chaos-iteration-2-round-2.json",
    ] {
        let run = read_json(&session.join(name));
        assert_eq!(run["framework"], "pytest", "{name}");
    }
    // Their time is test time, not overhead.
    let timings = &report["timings"];
    assert!(timings["test_ms"].as_u64().unwrap() > timings["overhead_ms"].as_u64().unwrap());
    // The Artisan was shown the finding and Chaos's file, apart from the unit tests.
    let second = prompt_to(&llm, "artisan", 1).await;
    assert_has(
        &second,
        &[
            "# Adversarial tests that fail",
            "test_two_huge_equal_values",
            "max_examples=100",
        ],
    );
    // Chaos's first prompt says how its file runs and what to try.
    let first = prompt_to(&llm, "chaos", 0).await;
    assert_has(
        &first,
        &[
            "Framework: pytest (python)",
            "Import the target exactly as: `import median",
            "Hypothesis",
        ],
    );
    assert_file(dir.path(), "median.py", SAFE_PY);
}

#[tokio::test(flavor = "multi_thread")]
async fn typescript_chaos_finds_the_overflow_of_the_middle_pair() {
    let dir = fixture("stacks/ts-vitest");
    link_node_modules(dir.path());
    let fixed = std::fs::read_to_string(dir.path().join("src/median.ts")).unwrap();
    // The starting bug: the upper middle value instead of the mean of the middle pair.
    write(
        dir.path(),
        "src/median.ts",
        &fixed.replace(
            "return ordered.length % 2 ? ordered[mid] : (ordered[mid - 1] + ordered[mid]) / 2;",
            "return ordered[mid];",
        ),
    );
    let safe = fixed.replace(
        "(ordered[mid - 1] + ordered[mid]) / 2",
        "ordered[mid - 1] / 2 + ordered[mid] / 2",
    );
    assert_ne!(safe, fixed);
    // From `.ralph/session-<id>/chaos/`, as the prompt tells Chaos.
    let attack = "import { expect, it } from 'vitest';\nimport fc from 'fast-check';\nimport { median } from '../../../src/median';\n\nit('the median of two equal huge values is that value', () => {\n  expect(median([Number.MAX_VALUE, Number.MAX_VALUE])).toBe(Number.MAX_VALUE);\n});\n\nit('lies between the smallest and the largest value', () => {\n  fc.assert(\n    fc.property(fc.array(fc.integer({ min: -1000000, max: 1000000 }), { minLength: 1 }), (xs) => {\n      const m = median(xs);\n      return m >= Math.min(...xs) && m <= Math.max(...xs);\n    }),\n    { numRuns: 100, seed: 42 },\n  );\n});\n";
    let quiet = "import { expect, it } from 'vitest';\nimport { median } from '../../../src/median';\n\nit('a single value is its own median', () => {\n  expect(median([7])).toBe(7);\n});\n";
    let llm = artisan_writes("typescript", [&fixed, &safe]).await;
    llm.script(
        "chaos",
        [
            chaos_reply("typescript", attack),
            chaos_reply("typescript", quiet),
        ],
    )
    .always("judge", keep_all());
    ralph_with_chaos(dir.path(), &llm)
        .args(["src/median.ts", "--output", "json"])
        .assert()
        .code(0);
    let report = report(dir.path());
    assert_eq!(report["status"], "success", "{report:#}");
    let a = &report["adversarial"];
    assert_eq!(
        (a["rounds"].as_u64(), a["failures_fixed"].as_u64()),
        (Some(2), Some(1)),
        "{a:#}"
    );
    assert_eq!(a["tests_generated"], 3, "{a:#}");
    let first = prompt_to(&llm, "chaos", 0).await;
    assert_has(
        &first,
        &[
            "Framework: vitest (typescript)",
            "import { ... } from '../../../src/median';",
            "fast-check",
        ],
    );
    assert_file(dir.path(), "src/median.ts", safe);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_wrong_expectation_is_dropped_by_the_critic() {
    let dir = fixture("py-median");
    without_gates(dir.path());
    let wrong = "from median import median\n\n\ndef test_empty_is_none():\n    assert median([]) is None\n\n\ndef test_single():\n    assert median([4]) == 4\n";
    let llm = artisan_always("python", FIXED_PY).await;
    llm.script("chaos", [chaos_reply("python", wrong)]).always(
        "judge",
        text("DROP: test_empty_is_none: the unit tests require a ValueError for an empty list"),
    );
    let report = fix_py(dir.path(), &llm, 0);
    assert_eq!(report["status"], "success", "{report:#}");
    assert_eq!(report["iterations"], 1);
    let a = &report["adversarial"];
    assert_eq!(a["tests_rejected"], 1, "{a:#}");
    assert_eq!(a["findings"], serde_json::json!([]));
    assert_eq!(
        a["rejected"][0]["reason"],
        "the unit tests require a ValueError for an empty list"
    );
    // The judge saw the failure as pytest reported it.
    let judge = llm.requests_of("judge").await;
    assert!(user_prompt(&judge[0]).contains("test_empty_is_none"));
    assert_eq!(llm.requests_of("artisan").await.len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_test_file_that_cannot_run_is_repaired() {
    let dir = fixture("py-median");
    without_gates(dir.path());
    let broken = QUIET_PY.replace("from median import", "from medain import");
    let llm = artisan_always("python", FIXED_PY).await;
    chaos_then_quiet(&llm, &broken);
    let a = fix_py(dir.path(), &llm, 0)["adversarial"].clone();
    assert_eq!(a["suites"][0]["repairs"], 1, "{a:#}");
    assert_eq!(a["tests_generated"], 2, "{a:#}");
    let repair = last_prompt_of(&llm, "chaos", 2).await;
    assert_has(&repair, &["# Your last test file could not run", "medain"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_proposal_that_breaks_the_unit_tests_mid_round_is_undone() {
    let dir = fixture("py-median");
    let llm = artisan_script([
        text(code("python", FIXED_PY)),
        // Drops the empty-list check: a unit test fails again.
        text(code("python", HALF_FIXED_PY)),
        text(code("python", SAFE_PY)),
    ])
    .await;
    chaos_then_quiet(&llm, ATTACK_PY).always("judge", keep_all());
    let report = fix_py(dir.path(), &llm, 0);
    assert_eq!(report["status"], "success", "{report:#}");
    assert_eq!(report["iterations"], 3);
    assert_eq!(report["reverts"], 1);
    let third = prompt_to(&llm, "artisan", 2).await;
    assert!(third.contains("so it was undone"), "{third}");
    assert!(third.contains(FIXED_PY.lines().nth(2).unwrap()), "{third}");
    assert!(
        third.contains("# Adversarial tests that fail"),
        "the finding is still open: {third}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn findings_left_open_spend_the_rounds_and_never_trip_the_breaker() {
    let dir = fixture_with_config(
        "py-median",
        "circuit_breaker:\n  entropy_threshold: 2\nchaos:\n  max_rounds: 2\n",
    );
    let llm = artisan_always("python", FIXED_PY).await;
    llm.script("chaos", [chaos_reply("python", ATTACK_PY)])
        .always("judge", keep_all());
    let report = fix_py(dir.path(), &llm, 4);
    assert_eq!(report["status"], "max_iterations", "{report:#}");
    let reason = report["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("chaos.max_rounds (2) spent with 1 adversarial test still failing:"),
        "{reason}"
    );
    // One attack, then two fixes that did not pass it: three iterations, no entropy stop.
    assert_eq!(report["iterations"], 3, "{report:#}");
    assert_eq!(llm.requests_of("chaos").await.len(), 1);
    assert_eq!(report["adversarial"]["findings"][0]["status"], "open");
    // The file left passes its unit tests.
    assert_file(dir.path(), "median.py", FIXED_PY);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_budget_too_small_for_chaos_stops_with_the_passing_fix_on_disk() {
    // Chaos's model costs so much that its prompt alone is over what is left of the budget.
    let dir = fixture_with_config("py-median", "models:\n  chaos: openai/gpt-4.1\nprices:\n  openai/gpt-4.1: { input: 1000, output: 1000 }\n");
    let llm = artisan_always("python", FIXED_PY).await;
    ralph_with_chaos(dir.path(), &llm)
        .args([
            "median.py",
            "--models",
            "artisan=gpt-mini,critic=gpt-mini,librarian=gpt-mini",
        ])
        .args(["--budget", "0.5", "--output", "json"])
        .assert()
        .code(3);
    let report = report(dir.path());
    assert_eq!(report["status"], "budget_exceeded", "{report:#}");
    assert_eq!(report["adversarial"]["rounds"], 1, "{report:#}");
    assert!(llm.requests_of("chaos").await.is_empty());
    assert_file(dir.path(), "median.py", FIXED_PY);
}

#[tokio::test(flavor = "multi_thread")]
async fn no_adversarial_and_micro_agent_never_call_chaos() {
    let dir = fixture("py-median");
    write_config(dir.path(), "chaos:\n  enabled: true\n");
    let llm = artisan_always("python", FIXED_PY).await;
    ralph(dir.path(), &llm)
        .args(["median.py", "--output", "json"])
        .assert()
        .code(0);
    assert!(report(dir.path()).get("adversarial").is_none());

    let again = fixture_with_config("py-median", "chaos:\n  enabled: true\n");
    let mut cmd = assert_cmd::Command::cargo_bin("micro-agent").unwrap();
    isolate(&mut cmd, again.path());
    cmd.env("OPENAI_API_ENDPOINT", llm.base_url())
        .env("OPENAI_KEY", "sk-micro")
        .args(["median.py", "-t", "python3 -m pytest -q test_median.py"])
        .assert()
        .code(0);
    assert!(report(again.path()).get("adversarial").is_none());
    assert!(llm.requests_of("chaos").await.is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn keep_tests_adds_chaos_s_files_to_the_project_and_they_run_there() {
    // JavaScript: the file lands beside the unit tests, its import rewritten for there.
    let dir = fixture_with_config("js-median", "chaos:\n  keep_tests: true\n");
    let llm = MockLlm::start().await;
    let quiet = "const test = require('node:test');\nconst assert = require('node:assert');\nconst { median } = require('../../../src/median');\n\ntest('a single value', () => {\n  assert.strictEqual(median([7]), 7);\n});\n";
    llm.helpful()
        .always("artisan", text(code("javascript", FIXED_JS)))
        .script("chaos", [chaos_reply("javascript", quiet)]);
    ralph_with_chaos(dir.path(), &llm)
        .args(["src/median.js", "--output", "json"])
        .assert()
        .code(0);
    let report = report(dir.path());
    let kept = report["adversarial"]["kept_tests"].as_array().unwrap();
    assert_eq!(kept.len(), 1, "{report:#}");
    let path = kept[0].as_str().unwrap();
    assert!(
        path.starts_with("test/chaos_") && path.ends_with("_round_1.test.js"),
        "{path}"
    );
    let kept_text = std::fs::read_to_string(dir.path().join(path)).unwrap();
    assert!(
        kept_text.contains("require('../src/median')"),
        "{kept_text}"
    );
    // The project's own test command runs it, and it passes.
    node_tests_pass(dir.path(), path);
    // The unit test file is untouched.
    let unit = std::fs::read_to_string(dir.path().join("test/median.test.js")).unwrap();
    assert!(!unit.contains("a single value"));

    // Python: beside test_median.py, run by the project's pytest.
    let dir = fixture_with_config("py-median", "chaos:\n  keep_tests: true\n");
    without_gates(dir.path());
    let llm = artisan_always("python", FIXED_PY).await;
    llm.script("chaos", [chaos_reply("python", QUIET_PY)]);
    let report = fix_py(dir.path(), &llm, 0);
    let path = report["adversarial"]["kept_tests"][0]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        path.starts_with("test_chaos_") && path.ends_with("_round_1.py"),
        "{path}"
    );
    let out = std::process::Command::new("python3")
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("5 passed"),
        "{stdout}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_passing_fix_s_review_runs_beside_chaos_s_round_and_its_verdict_is_reported() {
    let dir = fixture_with_config("py-median", "critic: { mode: parallel }\n");
    let llm = MockLlm::start().await;
    let slow = |text: String, ms: u64| Answer::Slow {
        text,
        delay: std::time::Duration::from_millis(ms),
    };
    llm.helpful()
        .always("artisan", text(code("python", SAFE_PY)))
        .always("critic", slow("Correct.\nVERDICT: APPROVE".into(), 1500))
        .script(
            "chaos",
            [slow(
                format!("Nothing breaks.\n\n```python\n{QUIET_PY}```\n"),
                2500,
            )],
        );
    let out = ralph_with_chaos(dir.path(), &llm)
        .args(["median.py", "--output", "jsonl"])
        .assert()
        .code(0);
    let events: Vec<Value> = json_lines(&stdout_of(&out));
    let first = |what: &dyn Fn(&Value) -> bool| events.iter().position(what).unwrap();
    // Chaos's round began before the review of the fix it attacks came in.
    let attack = first(&|e| e["type"] == "phase_changed" && e["phase"] == "adversarial");
    let verdict = first(&|e| e["type"] == "critic_verdict");
    assert!(attack < verdict, "{events:?}");
    let report = report(dir.path());
    assert_eq!(report["status"], "success");
    assert_eq!(
        report["fix_review"],
        serde_json::json!({"iteration": 1, "verdict": "approved"})
    );
    let log = std::fs::read_to_string(session_dir(dir.path()).join("iterations.log")).unwrap();
    assert!(log.contains("\"review_pending\":true"), "{log}");
}
