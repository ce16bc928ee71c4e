//! Chaos's counterexamples in each language: a Hypothesis, fast-check or proptest counterexample
//! becomes a named regression test that must pass.

use super::chaos::*;
use super::support::*;

/// A property the overflowing mean of `FIXED_PY` fails for some huge value, found by
/// Hypothesis (derandomized, so the run is the same every time).
const PROPERTY_PY: &str = "from hypothesis import given, settings, strategies as st\n\nfrom median import median\n\n\n@settings(max_examples=100, derandomize=True)\n@given(st.floats(min_value=1e307, max_value=1e308))\ndef test_two_equal_values(x):\n    assert median([x, x]) == x\n";

#[tokio::test(flavor = "multi_thread")]
async fn a_counterexample_becomes_a_named_regression_test_that_must_pass() {
    let dir = fixture("py-median");
    let llm = artisan_writes("python", [FIXED_PY, SAFE_PY]).await;
    chaos_then_quiet(&llm, PROPERTY_PY).always("judge", text("KEEP: test_two_equal_values"));
    let report = fix_py(dir.path(), &llm, 0);
    let a = &report["adversarial"];
    let findings = a["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 2, "{a:#}");
    let regression = &findings[1];
    let id = regression["test"].as_str().unwrap();
    assert!(id.ends_with("test_regression_two_equal_values"), "{id}");
    let message = regression["message"].as_str().unwrap();
    assert!(message.contains("test_two_equal_values(x="), "{message}");
    assert!(findings.iter().all(|f| f["status"] == "fixed"), "{a:#}");
    // The test is in round 1's file, replaying the input Hypothesis printed.
    let path = a["suites"][0]["path"].as_str().unwrap();
    let suite = std::fs::read_to_string(dir.path().join(path)).unwrap();
    assert_has(
        &suite,
        &[
            "def test_regression_two_equal_values():",
            "test_two_equal_values.hypothesis.inner_test(x=",
        ],
    );
    let notes = report["notes"].to_string();
    assert!(notes.contains("is kept as the regression test"), "{notes}");
    // It failed on the overflowing fix (checked before it became a finding: that run is the
    // last of round 1's file in iteration 1) and passes on the fix kept.
    let session = session_dir(dir.path());
    let replay = read_json(&session.join("test-results-chaos-iteration-1-round-1.json"));
    let case = replay["tests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| {
            t["id"]
                .as_str()
                .unwrap()
                .ends_with("test_regression_two_equal_values")
        })
        .expect("the replay ran");
    assert_eq!(case["status"], "fail", "{case}");
    assert_file(dir.path(), "median.py", SAFE_PY);
}

/// Averages the middle pair without overflowing.
const SAFE_JS: &str = "function median(values) {\n  const ordered = [...values].sort((a, b) => a - b);\n  const mid = Math.floor(ordered.length / 2);\n  return ordered.length % 2 ? ordered[mid] : ordered[mid - 1] / 2 + ordered[mid] / 2;\n}\n\nmodule.exports = { median };\n";

#[tokio::test(flavor = "multi_thread")]
async fn a_fast_check_counterexample_becomes_a_regression_test_chaos_writes() {
    let dir = fixture("js-median");
    let llm = MockLlm::start().await;
    let header = "const test = require('node:test');\nconst assert = require('node:assert');\nconst fc = require('fast-check');\nconst { median } = require('../../../src/median');\n";
    let property = format!("{header}\ntest('two equal values give that value', () => {{\n  fc.assert(\n    fc.property(fc.double({{ min: 1e307, max: 1e308, noNaN: true }}), (x) => median([x, x]) === x),\n    {{ numRuns: 100, seed: 42 }},\n  );\n}});\n");
    let quiet = format!(
        "{header}\ntest('a single value', () => {{\n  assert.strictEqual(median([7]), 7);\n}});\n"
    );
    let replay = "test('regression: two equal huge values give that value', () => {\n  assert.strictEqual(median([1e308, 1e308]), 1e308);\n});\n";
    llm.helpful()
        .script(
            "artisan",
            [
                text(code("javascript", FIXED_JS)),
                text(code("javascript", SAFE_JS)),
            ],
        )
        .script(
            "chaos",
            [
                chaos_reply("javascript", &property),
                chaos_reply("javascript", &quiet),
            ],
        )
        .always("replay", text(code("javascript", replay)))
        .always("judge", text("KEEP: two equal values give that value"));
    ralph_with_chaos(dir.path(), &llm)
        .args(["src/median.js", "--output", "json"])
        .assert()
        .code(0);
    let report = report(dir.path());
    let a = &report["adversarial"];
    let findings = a["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 2, "{a:#}");
    let regression = &findings[1];
    assert!(
        regression["test"]
            .as_str()
            .unwrap()
            .contains("regression: two equal huge values"),
        "{regression}"
    );
    assert!(regression["message"]
        .as_str()
        .unwrap()
        .starts_with("replays the counterexample of"));
    assert!(findings.iter().all(|f| f["status"] == "fixed"), "{a:#}");
    // Chaos's model was shown the counterexample fast-check printed, with its seed.
    let prompt = last_prompt_of(&llm, "replay", 1).await;
    assert_has(&prompt, &["The input it failed on: `[", "(seed 42"]);
    // The test is at the end of round 1's file.
    let path = a["suites"][0]["path"].as_str().unwrap();
    let suite = std::fs::read_to_string(dir.path().join(path)).unwrap();
    assert!(suite.trim_end().ends_with(replay.trim_end()), "{suite}");
    assert_file(dir.path(), "src/median.js", SAFE_JS);
}

/// Averages the middle pair without overflowing.
const SAFE_RS: &str = "/// The median of a list of numbers; `None` for an empty list.\npub fn median(values: &[f64]) -> Option<f64> {\n    if values.is_empty() {\n        return None;\n    }\n    let mut ordered = values.to_vec();\n    ordered.sort_by(f64::total_cmp);\n    let mid = ordered.len() / 2;\n    if ordered.len() % 2 == 1 {\n        Some(ordered[mid])\n    } else {\n        Some(ordered[mid - 1] / 2.0 + ordered[mid] / 2.0)\n    }\n}\n";

#[tokio::test(flavor = "multi_thread")]
async fn rust_chaos_finds_the_overflow_with_proptest_and_replays_its_counterexample() {
    let dir = fixture_with_config("rs-median", "chaos:\n  keep_tests: true\n");
    let manifest = std::fs::read_to_string(dir.path().join("Cargo.toml")).unwrap();
    let llm = MockLlm::start().await;
    let attack = "use proptest::prelude::*;\nuse rs_median::median;\n\n#[test]\nfn two_huge_equal_values() {\n    assert_eq!(median(&[1e308, 1e308]), Some(1e308));\n}\n\nproptest! {\n    #![proptest_config(ProptestConfig::with_cases(100))]\n    #[test]\n    fn two_equal_values_give_that_value(x in 1e307f64..1e308) {\n        prop_assert_eq!(median(&[x, x]), Some(x));\n    }\n}\n";
    let quiet = "use rs_median::median;\n\n#[test]\nfn a_single_value() {\n    assert_eq!(median(&[7.0]), Some(7.0));\n}\n";
    let replay = "#[test]\nfn regression_two_equal_huge_values() {\n    assert_eq!(median(&[1e308, 1e308]), Some(1e308));\n}\n";
    llm.helpful()
        .script(
            "artisan",
            [text(code("rust", FIXED_RS)), text(code("rust", SAFE_RS))],
        )
        .script(
            "chaos",
            [chaos_reply("rust", attack), chaos_reply("rust", quiet)],
        )
        .always("replay", text(code("rust", replay)))
        .always(
            "judge",
            text("KEEP: two_huge_equal_values\nKEEP: two_equal_values_give_that_value"),
        );
    let mut cmd = ralph_with_chaos(dir.path(), &llm);
    cmd.timeout(std::time::Duration::from_secs(300))
        .args(["src/lib.rs", "--output", "json"])
        .assert()
        .code(0);
    let report = report(dir.path());
    assert_eq!(report["status"], "success", "{report:#}");
    let a = &report["adversarial"];
    assert_eq!(a["rounds"], 2, "{a:#}");
    let findings = a["findings"].as_array().unwrap();
    let tests: Vec<&str> = findings
        .iter()
        .map(|f| f["test"].as_str().unwrap())
        .collect();
    assert_eq!(findings.len(), 3, "{a:#}");
    // The round's two failures, in the order libtest's threads finished them, then the replay.
    let mut first_two = [tests[0], tests[1]];
    first_two.sort_unstable();
    assert!(
        first_two[0].ends_with("two_equal_values_give_that_value")
            && first_two[1].ends_with("two_huge_equal_values"),
        "{tests:?}"
    );
    assert!(
        tests[2].ends_with("regression_two_equal_huge_values"),
        "{tests:?}"
    );
    assert!(findings.iter().all(|f| f["status"] == "fixed"), "{a:#}");
    // Chaos's model was shown the input proptest shrank the failure to.
    let asked = llm.requests_of("replay").await;
    assert_eq!(asked.len(), 1);
    let prompt = user_prompt(&asked[0]);
    assert!(prompt.contains("The input it failed on: `x = "), "{prompt}");
    let system = asked[0]["messages"][0]["content"].to_string();
    assert!(system.contains("fn regression_"), "{system}");
    // Chaos's prompt says how a Rust file reaches the crate.
    let chaos = llm.requests_of("chaos").await;
    let first = user_prompt(&chaos[0]);
    assert_has(
        &first,
        &[
            "Framework: cargo (rust)",
            "`use rs_median::...;",
            "integration test of the crate `rs-median`",
            "proptest",
        ],
    );
    // The files ran in a harness crate of the session folder; the project's manifest is as it
    // was, and the property ran with the fixed seed, leaving no regressions file behind.
    let session = session_dir(dir.path());
    assert!(session.join("chaos/Cargo.toml").is_file());
    assert_file(dir.path(), "Cargo.toml", manifest);
    assert!(!session.join("chaos/proptest-regressions").exists());
    let run = read_json(&session.join("test-results-chaos-iteration-1-round-1.json"));
    assert_eq!(run["framework"], "cargo", "{run:#}");
    // `chaos.keep_tests`: both files are added as integration tests of the crate; the first
    // uses proptest, which the crate lacks, and the run says so.
    let kept = a["kept_tests"].as_array().unwrap();
    assert_eq!(kept.len(), 2, "{a:#}");
    for path in kept {
        let path = path.as_str().unwrap();
        assert!(
            path.starts_with("tests/chaos_") && path.ends_with(".rs"),
            "{path}"
        );
        assert!(dir.path().join(path).is_file());
    }
    let warnings = report["warnings"].to_string();
    assert!(warnings.contains("uses proptest"), "{warnings}");
    assert_file(dir.path(), "src/lib.rs", SAFE_RS);
}
