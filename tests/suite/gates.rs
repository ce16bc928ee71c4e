//! The seed's completion promise by default, through the binary on real projects: a default
//! run's success needs the coverage of the lines it changed (coverage.py, c8) and the mutation
//! score gates, on top of the tests, the Critic and Chaos; a thin suite reaches the coverage gate
//! through a Chaos round written for the lines no test runs; rounds spent below it stop the run
//! naming them; a default gate whose tool is missing is reported `unavailable`, never passed;
//! `--quick` keeps the tests and the Critic only, and every summary says which promise it kept;
//! a Rust crate's changed lines are read from cargo-llvm-cov.

use std::path::Path;

use serde_json::Value;

use super::support::*;

/// Returns the middle element of the list as it is given: the odd-length test fails.
const UNSORTED_PY: &str = "def median(values):\n    return values[len(values) // 2]\n";

/// Only the odd length: the empty list's error and the even length's average go untested.
const THIN_TESTS_PY: &str =
    "from median import median\n\n\ndef test_odd_length():\n    assert median([3, 1, 2]) == 2\n";

/// Round 1: an attack the fix passes, running no new line.
const ODD_ONLY_PY: &str = "from median import median\n\n\ndef test_a_single_value():\n    assert median([7]) == 7\n\n\ndef test_negative_values():\n    assert median([-3, -1, -2]) == -2\n";

/// A coverage round: the even length and the empty list, as the contract says.
const COVERS_PY: &str = "import pytest\n\nfrom median import median\n\n\ndef test_even_length_averages_the_middle_pair():\n    assert median([4, 1, 3, 2]) == 2.5\n\n\ndef test_the_empty_list_is_an_error():\n    with pytest.raises(ValueError):\n        median([])\n";

fn suite(body: &str) -> Answer {
    text(format!("Here is the file.\n\n```python\n{body}```\n"))
}

/// A Python project of `median.py` (unsorted) and thin tests, under `config`.
fn thin_py(config: &str) -> tempfile::TempDir {
    let dir = fixture("py-median");
    write(dir.path(), "median.py", UNSORTED_PY);
    write(dir.path(), "test_median.py", THIN_TESTS_PY);
    write_config(dir.path(), config);
    dir
}

/// `ralph-loop median.py` with `args`, whatever its exit code: the code, what it printed (stdout
/// and stderr) and the report.
fn run(dir: &Path, llm: &MockLlm, args: &[&str]) -> (i32, String, Value) {
    let out = ralph_with_chaos(dir, llm)
        .arg("median.py")
        .args(args)
        .output()
        .unwrap();
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), printed, report(dir))
}

fn check<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["promise"]["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no {name} check: {report:#}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_thin_suite_reaches_the_coverage_gate_through_a_chaos_round() {
    let dir = thin_py("success_criteria:\n  mutation_score_min: null\n");
    let llm = artisan_always("python", FIXED_PY).await;
    llm.script("chaos", [suite(ODD_ONLY_PY), suite(COVERS_PY)]);
    let (code, printed, report) = run(dir.path(), &llm, &["--output", "human", "--ui", "lines"]);
    assert_eq!(report["status"], "success", "{report:#}");
    assert_eq!(code, 0);
    let c = &report["adversarial"]["coverage"];
    assert_eq!(c["tool"], "coverage.py", "{c:#}");
    assert_eq!(c["pct"], 100.0, "{c:#}");
    assert_eq!(
        c["runs"], 2,
        "measured, then again with the coverage round's file: {c:#}"
    );
    assert_eq!(c["min"], 90.0, "the default gate: {c:#}");
    assert_eq!(report["adversarial"]["rounds"], 2);
    // The second Chaos call was shown the lines no test ran, with their code.
    let chaos = prompts_of(&llm, "chaos", 2).await;
    assert_has(
        &chaos[1],
        &[
            "# Changed lines no test runs",
            "line 3: `raise ValueError(\"median of an empty list\")`",
            "line 8: `return (ordered[mid - 1] + ordered[mid]) / 2`",
        ],
    );
    assert!(!chaos[0].contains("# Changed lines no test runs"));
    // The promise it kept, in the report and in the summary.
    assert_eq!(report["promise"]["profile"], "full");
    assert_eq!(check(&report, "coverage")["status"], "met");
    assert_eq!(check(&report, "adversarial")["status"], "met");
    let mutation = check(&report, "mutation");
    assert_eq!(mutation["status"], "off", "{mutation}");
    assert_has(
        mutation["detail"].as_str().unwrap(),
        &["mutation_score_min is null"],
    );
    assert_has(
        &printed,
        &[
            "coverage: 100% of 7 changed lines by coverage.py (at least 90% asked)",
            "promise (full): tests met",
            "coverage met (100% of 7 changed line(s) by coverage.py, at least 90%)",
        ],
    );
    // The user's tests are as they were: Chaos's files stay in the session folder.
    assert_file(dir.path(), "test_median.py", THIN_TESTS_PY);
}

/// Returns the middle element of the list as it is given: the odd-length test fails.
const UNSORTED_RS: &str =
    "pub fn median(values: &[f64]) -> Option<f64> {\n    values.get(values.len() / 2).copied()\n}\n";

/// `rs-median`'s odd length only: the empty list and the even length go untested.
const THIN_TESTS_RS: &str =
    "use rs_median::median;\n\n#[test]\nfn odd_length() {\n    assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));\n}\n";

/// Round 1 on the Rust crate: an attack the fix passes, running no new line.
const ODD_ONLY_RS: &str = "use rs_median::median;\n\n#[test]\nfn a_single_value() {\n    assert_eq!(median(&[7.0]), Some(7.0));\n}\n";

/// A coverage round: the even length and the empty list.
const COVERS_RS: &str = "use rs_median::median;\n\n#[test]\nfn even_length_averages_the_middle_pair() {\n    assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));\n}\n\n#[test]\nfn the_empty_list_has_none() {\n    assert_eq!(median(&[]), None);\n}\n";

/// The same for a Rust crate: cargo-llvm-cov's lines of the fix, the unit tests' and those of
/// Chaos's files (run in the session's harness crate) together.
#[tokio::test(flavor = "multi_thread")]
async fn a_thin_rust_suite_reaches_the_coverage_gate_through_a_chaos_round() {
    let dir = fixture("rs-median");
    write(dir.path(), "src/lib.rs", UNSORTED_RS);
    write(dir.path(), "tests/median.rs", THIN_TESTS_RS);
    write_config(
        dir.path(),
        "success_criteria:\n  mutation_score_min: null\n",
    );
    let llm = MockLlm::start().await;
    let reply = |body: &str| text(format!("Here is the file.\n\n```rust\n{body}```\n"));
    llm.helpful()
        .always("artisan", text(code("rust", FIXED_RS)))
        .script("chaos", [reply(ODD_ONLY_RS), reply(COVERS_RS)]);
    let out = ralph_with_chaos(dir.path(), &llm)
        .timeout(std::time::Duration::from_secs(300))
        .args(["src/lib.rs", "--output", "json"])
        .output()
        .unwrap();
    let report = report(dir.path());
    assert_eq!(report["status"], "success", "{report:#}\n{out:?}");
    assert_eq!(out.status.code(), Some(0));
    let c = &report["adversarial"]["coverage"];
    assert_eq!(c["tool"], "cargo-llvm-cov", "{report:#}");
    assert_eq!(c["pct"], 100.0, "{c:#}");
    assert_eq!(c["runs"], 2, "{c:#}");
    assert_eq!(report["adversarial"]["rounds"], 2);
    let second = prompt_to(&llm, "chaos", 1).await;
    assert_has(
        &second,
        &[
            "# Changed lines no test runs",
            "line 4: `return None;`",
            "line 12: `Some((ordered[mid - 1] + ordered[mid]) / 2.0)`",
        ],
    );
    assert_eq!(check(&report, "coverage")["status"], "met");
    assert_file(dir.path(), "tests/median.rs", THIN_TESTS_RS);
}

#[tokio::test(flavor = "multi_thread")]
async fn rounds_spent_below_the_coverage_gate_stop_the_run_naming_the_lines() {
    let dir = thin_py("success_criteria:\n  mutation_score_min: null\nchaos:\n  max_rounds: 2\n");
    let llm = artisan_always("python", FIXED_PY).await;
    llm.always("chaos", suite(ODD_ONLY_PY));
    let (code, _, report) = run(dir.path(), &llm, &["--output", "json"]);
    assert_eq!(report["status"], "max_iterations", "{report:#}");
    assert_eq!(code, 4);
    let reason = report["reason"].as_str().unwrap();
    assert!(
        reason.contains("71.43% of the changed lines covered")
            && reason.contains("coverage_threshold is 90%")
            && reason.contains("no test runs lines 3, 8"),
        "{reason}"
    );
    assert_eq!(
        report["adversarial"]["coverage"]["uncovered"],
        serde_json::json!([3, 8])
    );
    assert_eq!(check(&report, "coverage")["status"], "unmet");
    // The fix stays: its unit tests pass.
    assert_file(dir.path(), "median.py", FIXED_PY);
}

#[tokio::test(flavor = "multi_thread")]
async fn quick_keeps_the_tests_and_the_critic_and_says_so() {
    let dir = thin_py("");
    let llm = artisan_always("python", FIXED_PY).await;
    let (code, printed, report) = run(
        dir.path(),
        &llm,
        &["--quick", "--output", "human", "--ui", "lines"],
    );
    assert_eq!(
        (code, &report["status"]),
        (0, &Value::from("success")),
        "{report:#}"
    );
    assert!(
        llm.requests_of("chaos").await.is_empty(),
        "no Chaos under --quick"
    );
    assert!(report["adversarial"].is_null());
    assert_eq!(report["promise"]["profile"], "quick");
    for gate in ["adversarial", "coverage", "mutation"] {
        let c = check(&report, gate);
        assert_eq!(
            (c["status"].as_str(), c["detail"].as_str()),
            (Some("off"), Some("the quick profile")),
            "{gate}"
        );
    }
    assert_eq!(check(&report, "tests")["status"], "met");
    assert_eq!(check(&report, "critic")["status"], "met");
    assert!(printed.contains("promise (quick): tests met"), "{printed}");
    // `profile: quick` in the config does the same; `--quick` and `--adversarial` conflict.
    let dir = thin_py("profile: quick\n");
    let (code, _, report) = run(dir.path(), &llm, &["--output", "json"]);
    assert_eq!(
        (code, &report["promise"]["profile"]),
        (0, &Value::from("quick"))
    );
    let out = ralph_with_chaos(dir.path(), &llm)
        .args(["median.py", "--quick", "--adversarial"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot be used with"));
}

/// Every session report under `dir/.ralph`, by the target it fixed.
fn reports_by_target(dir: &Path) -> std::collections::BTreeMap<String, Value> {
    std::fs::read_dir(dir.join(".ralph"))
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path().join("report.json"))
        .filter(|p| p.is_file())
        .map(|p| read_json(&p))
        .map(|r| (r["target"].as_str().unwrap_or_default().to_string(), r))
        .collect()
}

/// `batch --quick` and `agent --quick` run each spec's targets quick, unless the spec (or the
/// batch entry) sets a `profile` of its own.
#[tokio::test(flavor = "multi_thread")]
async fn batch_and_agent_quick_run_every_spec_quick_unless_it_sets_its_profile() {
    let dir = super::batch::medians(2);
    let p = dir.path();
    let llm = artisan_always("python", FIXED_PY).await;
    write(
        p,
        "specs/full.md",
        "---\ntargets: [median_1.py]\ntest_command: python3 -m pytest -q test_median_1.py\nprofile: full\nadversarial: false\n---\nFix the median.\n",
    );
    ralph_with_chaos(p, &llm)
        .args(["batch", "specs/median-0.md", "specs/full.md", "--quick"])
        .assert()
        .code(0);
    let reports = reports_by_target(p);
    let profile = |target: &str| reports[target]["promise"]["profile"].clone();
    assert_eq!(profile("median_0.py"), "quick", "{reports:#?}");
    assert_eq!(
        profile("median_1.py"),
        "full",
        "the spec's own profile wins"
    );
    assert!(
        llm.requests_of("chaos").await.is_empty(),
        "no Chaos: one entry quick, the other with Chaos off"
    );

    let dir = super::agent::project();
    let p = dir.path();
    super::agent::fixer(&llm);
    super::agent::spec(p, "fix-median", "median.py", "");
    super::agent::inbox_add(p, &llm, &["specs/fix-median.md"]);
    ralph_with_chaos(p, &llm)
        .args(["agent", "--quick"])
        .assert()
        .code(0);
    let reports = reports_by_target(p);
    assert_eq!(reports["median.py"]["promise"]["profile"], "quick");
    assert_eq!(
        reports["median.py"]["promise"]["checks"][2]["detail"],
        "the quick profile"
    );
}

/// A JavaScript project tested by node's runner: c8 measures the changed lines' coverage when
/// the project has it; without c8 and StrykerJS, both default gates are `unavailable`, said at
/// the start, and the run still ends on its tests, Critic and Chaos.
#[tokio::test(flavor = "multi_thread")]
async fn a_missing_tool_leaves_a_default_gate_unavailable_never_met() {
    let attack = "const test = require('node:test');\nconst assert = require('node:assert');\nconst { median } = require('../../../src/median');\n\ntest('a single value', () => {\n  assert.strictEqual(median([5]), 5);\n});\n";
    let reply = text(format!("Attacking.\n\n```javascript\n{attack}```\n"));
    let dir = fixture("js-median");
    let llm = artisan_always("javascript", FIXED_JS).await;
    llm.always("chaos", reply.clone());
    let out = ralph_with_chaos(dir.path(), &llm)
        .args(["src/median.js", "--output", "json"])
        .output()
        .unwrap();
    let report = report(dir.path());
    assert_eq!(out.status.code(), Some(0), "{report:#}");
    let coverage = check(&report, "coverage");
    assert_eq!(coverage["status"], "unavailable", "{coverage}");
    assert!(
        coverage["detail"]
            .as_str()
            .unwrap()
            .contains("c8 is not installed"),
        "{coverage}"
    );
    let mutation = check(&report, "mutation");
    assert_eq!(mutation["status"], "unavailable", "{mutation}");
    assert!(
        mutation["detail"].as_str().unwrap().contains("StrykerJS"),
        "{mutation}"
    );
    let notes = report["notes"].to_string();
    assert_has(
        &notes,
        &[
            "the coverage gate is unavailable",
            "the mutation gate is unavailable",
        ],
    );
    assert_eq!(check(&report, "adversarial")["status"], "met");
    assert!(report["adversarial"]["coverage"].is_null());

    // With c8 in the project, its per-line report is read: the unit tests run every changed line.
    let dir = fixture("js-median");
    link_node_modules(dir.path());
    write_config(
        dir.path(),
        "success_criteria:\n  mutation_score_min: null\n",
    );
    let out = ralph_with_chaos(dir.path(), &llm)
        .args(["src/median.js", "--output", "json"])
        .output()
        .unwrap();
    let report = super::support::report(dir.path());
    assert_eq!(out.status.code(), Some(0), "{report:#}");
    let c = &report["adversarial"]["coverage"];
    assert_eq!(
        (c["tool"].as_str(), c["pct"].as_f64()),
        (Some("c8"), Some(100.0)),
        "{c:#}"
    );
    assert!(c["coverable"].as_u64().unwrap() >= 2, "{c:#}");
    assert_eq!(check(&report, "coverage")["status"], "met");

    // A gate the config sets, with its tool missing, stops the run before any model is called.
    let dir = fixture_with_config("js-median", "success_criteria:\n  coverage_threshold: 90\n");
    let calls = llm.requests().await.len();
    let out = ralph_with_chaos(dir.path(), &llm)
        .args(["src/median.js"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("coverage_threshold is set but c8 is not installed"));
    assert_eq!(llm.requests().await.len(), calls);
}
