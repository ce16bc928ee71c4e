//! Chaos's mutation testing through the binary, with the real tools (mutmut on a pytest
//! project, StrykerJS on a project tested by node's runner) in a scratch copy of the project:
//! weak tests leave the score below `success_criteria.mutation_score_min` with the surviving
//! mutants listed; Chaos's tests written to kill them raise it above (Python: a mutant it argues
//! equivalent set aside, with its reason, within a tenth of them; JavaScript: every survivor
//! killed); without a gate the score is reported; a missing tool stops the run before any model
//! is called.

use std::path::Path;

use serde_json::Value;

use super::support::*;

/// Round 1's attack: tests the fix passes, which leave the error message untested.
const QUIET_PY: &str = "from median import median\n\n\ndef test_a_single_value():\n    assert median([7]) == 7\n\n\ndef test_negative_values():\n    assert median([-3, -1, -2]) == -2\n";

/// Meant to kill the message's mutants, but `match` searches: `XX…XX` still passes.
const KILL_PY: &str = "import pytest\n\nfrom median import median\n\n\ndef test_the_empty_list_error_names_the_problem():\n    with pytest.raises(ValueError, match=\"median of an empty list\"):\n        median([])\n";

const GATE: &str = "success_criteria:\n  mutation_score_min: 90\nchaos:\n  max_rounds: 2\n";

fn suite(lang: &str, body: &str, before: &str) -> Answer {
    text(format!("{before}\n\n```{lang}\n{body}```\n"))
}

/// Runs `ralph-loop <target>` with Chaos on in `dir`, whatever its exit code; the code and
/// the report.
fn run(dir: &Path, llm: &MockLlm, target: &str) -> (i32, Value) {
    let out = ralph_with_chaos(dir, llm)
        .args([target, "--output", "json"])
        .output()
        .unwrap();
    (out.status.code().unwrap_or(-1), report(dir))
}

fn py_project(config: &str) -> tempfile::TempDir {
    let dir = fixture("py-median");
    write_config(dir.path(), config);
    dir
}

/// How a gated run must end, its status and its exit code: below the gate, all rounds spent.
const BELOW_GATE: (&str, i32) = ("max_iterations", 4);
/// How a gated run must end, its status and its exit code: the gate cleared.
const CLEARED: (&str, i32) = ("success", 0);

/// Asserts `report`'s run, which exited with `code`, ended as `want` (see [`BELOW_GATE`]).
#[track_caller]
fn assert_ended(report: &Value, code: i32, want: (&str, i32)) {
    assert_eq!(report["status"], want.0, "{report:#}");
    assert_eq!(code, want.1);
}

/// The Python project under `GATE`, fixed by `FIXED_PY`, with Chaos's round 1 breaking nothing
/// and its round 2 answering `second`, its run asserted to end as `want`: its directory, the
/// mock and the report.
async fn gated_py(second: Answer, want: (&str, i32)) -> (tempfile::TempDir, MockLlm, Value) {
    let dir = py_project(GATE);
    let llm = artisan_always("python", FIXED_PY).await;
    llm.script(
        "chaos",
        [suite("python", QUIET_PY, "Nothing breaks."), second],
    );
    let (code, report) = run(dir.path(), &llm, "median.py");
    assert_ended(&report, code, want);
    (dir, llm, report)
}

#[tokio::test(flavor = "multi_thread")]
async fn weak_tests_leave_the_python_score_below_the_gate_with_the_survivors_listed() {
    let (dir, llm, report) = gated_py(suite("python", QUIET_PY, "Trying again."), BELOW_GATE).await;
    let reason = report["reason"].as_str().unwrap();
    assert_has(reason, &["mutation score", "mutation_score_min is 90%"]);
    let a = &report["adversarial"];
    let m = &a["mutation"];
    assert_eq!(m["tool"], "mutmut", "{a:#}");
    let score = a["mutation_score"].as_f64().unwrap();
    assert!(score < 90.0, "{a:#}");
    // The three mutants of the error message survive: each listed with its line and edit.
    let survivors = a["surviving_mutants"].as_array().unwrap();
    assert_eq!(survivors.len(), 3, "{a:#}");
    for s in survivors {
        assert_eq!(s["line"], 3, "{s}");
        assert_eq!(s["status"], "Survived");
        assert!(s["original"].as_str().unwrap().contains("raise ValueError"));
    }
    // Only the changed lines were mutated: the unchanged `ordered = sorted(values)` was not.
    assert!(
        m["lines"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r[0].as_u64().unwrap() > 4 || r[1].as_u64().unwrap() < 4),
        "{m}"
    );
    assert_eq!(m["runs"], 2, "the whole scope, then the survivors: {m}");
    // The report in the open schema, in the session folder.
    let path = m["report_path"].as_str().unwrap();
    let doc = read_json(&dir.path().join(path));
    let mutants = doc["files"]["median.py"]["mutants"].as_array().unwrap();
    assert_eq!(mutants.len() as u64, m["scores"]["total"].as_u64().unwrap());
    // Chaos's second call was shown the survivors to kill.
    let second = prompt_to(&llm, "chaos", 1).await;
    assert_has(
        &second,
        &[
            "# Mutants your tests must kill",
            "median.x_median__mutmut_2",
        ],
    );
    // The user's file was never mutated.
    assert_file(dir.path(), "median.py", FIXED_PY);
    assert!(!dir.path().join("mutants").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn chaos_kills_the_survivors_and_argues_one_equivalent() {
    let kill = suite("python", KILL_PY, "EQUIVALENT: median.x_median__mutmut_3: the message still contains the words, and the contract names only the words\nEQUIVALENT: median.x_median__mutmut_4: over the tenth");
    let (_dir, _llm, report) = gated_py(kill, CLEARED).await;
    let a = &report["adversarial"];
    let m = &a["mutation"];
    let equivalent = m["equivalent"].as_array().unwrap();
    assert_eq!(equivalent.len(), 1, "a tenth of the mutants at most: {m:#}");
    assert_eq!(equivalent[0]["id"], "median.x_median__mutmut_3");
    assert_has(
        equivalent[0]["reason"].as_str().unwrap(),
        &["contains the words"],
    );
    assert_eq!(a["mutation_score"], 100.0, "{a:#}");
    assert!(m["scores"]["strict"].as_f64().unwrap() < 100.0, "{m:#}");
    assert!(a["surviving_mutants"].is_null(), "none left: {a:#}");
    // The mutant argued beyond the tenth was refused, and said so.
    let warnings = report["warnings"].to_string();
    assert!(warnings.contains("median.x_median__mutmut_4"), "{warnings}");
    assert_has(report["reason"].as_str().unwrap(), &["mutation score 100%"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn javascript_mutation_score_is_reported_without_a_gate() {
    let dir = fixture_with_config("js-median", "chaos:\n  strategies: [boundary, mutation]\n");
    link_node_modules(dir.path());
    let llm = MockLlm::start().await;
    let quiet = "const test = require('node:test');\nconst assert = require('node:assert');\nconst { median } = require('../../../src/median');\n\ntest('a single value', () => {\n  assert.strictEqual(median([7]), 7);\n});\n";
    llm.helpful()
        .always("artisan", text(code("javascript", FIXED_JS)))
        .script("chaos", [suite("javascript", quiet, "Nothing breaks.")]);
    let (code, report) = run(dir.path(), &llm, "src/median.js");
    assert_eq!(code, 0, "{report:#}");
    let a = &report["adversarial"];
    let m = &a["mutation"];
    assert_eq!(m["tool"], "stryker", "{a:#}");
    let total = m["scores"]["total"].as_u64().unwrap();
    assert!(total >= 5, "{m:#}");
    let score = a["mutation_score"].as_f64().unwrap();
    assert!(score > 0.0 && score <= 100.0, "{a:#}");
    assert_eq!(a["strategies"], serde_json::json!(["boundary", "mutation"]));
    for s in a["surviving_mutants"].as_array().into_iter().flatten() {
        let line = s["line"].as_u64().unwrap();
        assert!((2..=4).contains(&line), "only the changed lines: {s}");
    }
    let reason = report["reason"].as_str().unwrap();
    assert!(reason.contains("mutation score"), "{reason}");
    assert_file(dir.path(), "src/median.js", FIXED_JS);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_missing_mutation_tool_stops_the_run_before_any_model_is_called() {
    let dir = fixture_with_config("js-median", "success_criteria:\n  mutation_score_min: 80\n");
    let llm = MockLlm::start().await;
    llm.helpful();
    let stderr = stderr_at(
        ralph_with_chaos(dir.path(), &llm).args(["src/median.js"]),
        2,
    );
    assert!(
        stderr.contains("npm install --save-dev @stryker-mutator/core"),
        "{stderr}"
    );
    assert!(llm.requests().await.is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn javascript_weak_tests_leave_survivors_that_chaos_s_tests_kill() {
    let dir = fixture("js-median");
    link_node_modules(dir.path());
    // The project's tests reduced to the one that fails on the bug: weak.
    write(
        dir.path(),
        "test/median.test.js",
        "const test = require('node:test');\nconst assert = require('node:assert');\nconst { median } = require('../src/median');\n\ntest('sorts numbers numerically', () => {\n  assert.strictEqual(median([10, 9, 1]), 9);\n});\n",
    );
    write_config(dir.path(), GATE);
    let header = "const test = require('node:test');\nconst assert = require('node:assert');\nconst { median } = require('../../../src/median');\n";
    let quiet = format!(
        "{header}\ntest('a single value', () => {{\n  assert.strictEqual(median([7]), 7);\n}});\n"
    );
    let strong = format!("{header}\ntest('odd length', () => {{\n  assert.strictEqual(median([3, 1, 2]), 2);\n}});\n\ntest('even length averages the middle pair', () => {{\n  assert.strictEqual(median([4, 1, 3, 2]), 2.5);\n}});\n\ntest('does not change its argument', () => {{\n  const input = [3, 1, 2];\n  median(input);\n  assert.deepStrictEqual(input, [3, 1, 2]);\n}});\n");
    let llm = artisan_always("javascript", FIXED_JS).await;
    llm.script(
        "chaos",
        [
            suite("javascript", &quiet, "Nothing breaks."),
            suite("javascript", &strong, "These kill them."),
        ],
    );
    let (code, report) = run(dir.path(), &llm, "src/median.js");
    assert_eq!(code, 0, "{report:#}");
    let a = &report["adversarial"];
    let m = &a["mutation"];
    assert_eq!(m["tool"], "stryker", "{a:#}");
    assert_eq!(m["runs"], 2, "the changed lines, then the survivors: {m:#}");
    assert_eq!(a["mutation_score"], 100.0, "{a:#}");
    // The weak tests left survivors: Chaos was shown them, by line and edit.
    let second = prompt_to(&llm, "chaos", 1).await;
    assert_has(
        &second,
        &["# Mutants your tests must kill", "ArithmeticOperator"],
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_python_without_mutmut_is_refused_with_the_install_command() {
    let dir = py_project("success_criteria:\n  mutation_score_min: 80\n");
    // A `python3` that sees no installed packages (`-S`): mutmut is not there.
    let bin = tempfile::tempdir().unwrap();
    let real = String::from_utf8(
        std::process::Command::new("sh")
            .args(["-c", "command -v python3"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let shim = bin.path().join("python3");
    std::fs::write(
        &shim,
        format!("#!/bin/sh\nexec {} -S \"$@\"\n", real.trim()),
    )
    .unwrap();
    let mut perms = std::fs::metadata(&shim).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&shim, perms).unwrap();
    let path = format!(
        "{}:{}",
        bin.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let llm = MockLlm::start().await;
    llm.helpful();
    let stderr = stderr_at(
        ralph_with_chaos(dir.path(), &llm).env("PATH", path).args([
            "median.py",
            "-t",
            "python3 -m unittest",
        ]),
        2,
    );
    assert!(stderr.contains("pip install 'mutmut>=3.8'"), "{stderr}");
    assert!(llm.requests().await.is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn the_project_s_own_mutmut_config_is_not_read_and_a_slow_tool_stops_a_gated_run() {
    // A `[tool.mutmut]` table naming a file that does not exist: mutmut would fail on it.
    let dir = py_project(
        "chaos:\n  strategies: [boundary, mutation]\nsuccess_criteria:\n  mutation_score_min: null\n",
    );
    let pyproject = std::fs::read_to_string(dir.path().join("pyproject.toml")).unwrap();
    write(
        dir.path(),
        "pyproject.toml",
        &format!("{pyproject}\n[tool.mutmut]\nsource_paths = [\"nowhere.py\"]\n"),
    );
    let llm = artisan_always("python", FIXED_PY).await;
    llm.script("chaos", [suite("python", QUIET_PY, "Nothing breaks.")]);
    let (exit, report) = run(dir.path(), &llm, "median.py");
    assert_eq!(exit, 0, "{report:#}");
    let total = report["adversarial"]["mutation"]["scores"]["total"]
        .as_u64()
        .unwrap();
    assert!(total > 0, "{report:#}");
    assert!(std::fs::read_to_string(dir.path().join("pyproject.toml"))
        .unwrap()
        .contains("[tool.mutmut]"));

    // With a gate, a tool past chaos.mutation_timeout_seconds ends the run as an error.
    let dir = py_project(
        "success_criteria:\n  mutation_score_min: 90\nchaos:\n  mutation_timeout_seconds: 1\n",
    );
    let llm = artisan_always("python", FIXED_PY).await;
    llm.script("chaos", [suite("python", QUIET_PY, "Nothing breaks.")]);
    let (_, report) = run(dir.path(), &llm, "median.py");
    assert_eq!(report["status"], "error", "{report:#}");
    let reason = report["reason"].as_str().unwrap();
    assert!(
        reason.contains("ran past chaos.mutation_timeout_seconds (1 s)"),
        "{reason}"
    );
}

/// Round 1's attack on `rs-median`: an odd length, as the crate's tests already check, which
/// leaves `len % 2` → `len / 2` alive (3 / 2 is 1 too).
const QUIET_RS: &str = "use rs_median::median;\n\n#[test]\nfn negative_values() {\n    assert_eq!(median(&[-3.0, -1.0, -2.0]), Some(-2.0));\n}\n";

/// Kills it: one value is odd, 1 / 2 is not 1.
const KILL_RS: &str = "use rs_median::median;\n\n#[test]\nfn a_single_value() {\n    assert_eq!(median(&[7.0]), Some(7.0));\n}\n";

/// The Rust crate under a 95 % gate, fixed by `FIXED_RS`, with Chaos's round 1 breaking nothing
/// and its round 2 answering `second`, and `config` added, its run asserted to end as `want`:
/// its directory, the mock and the report.
async fn gated_rs(
    second: Answer,
    config: &str,
    want: (&str, i32),
) -> (tempfile::TempDir, MockLlm, Value) {
    let dir = fixture_with_config(
        "rs-median",
        &format!("success_criteria:\n  mutation_score_min: 95\nchaos:\n  max_rounds: 2\n{config}"),
    );
    let llm = artisan_always("rust", FIXED_RS).await;
    llm.script(
        "chaos",
        [suite("rust", QUIET_RS, "Nothing breaks."), second],
    );
    let mut cmd = ralph_with_chaos(dir.path(), &llm);
    let out = cmd
        .timeout(std::time::Duration::from_secs(300))
        .args(["src/lib.rs", "--output", "json"])
        .output()
        .unwrap();
    let report = report(dir.path());
    assert_ended(&report, out.status.code().unwrap_or(-1), want);
    (dir, llm, report)
}

#[tokio::test(flavor = "multi_thread")]
async fn rust_weak_tests_leave_a_survivor_below_the_gate_and_keep_no_file() {
    let (dir, llm, report) = gated_rs(
        suite("rust", QUIET_RS, "Trying again."),
        "  keep_tests: true\n",
        BELOW_GATE,
    )
    .await;
    let a = &report["adversarial"];
    let m = &a["mutation"];
    assert_eq!(m["tool"], "cargo-mutants", "{a:#}");
    assert!(a["mutation_score"].as_f64().unwrap() < 95.0, "{a:#}");
    let survivors = a["surviving_mutants"].as_array().unwrap();
    assert_eq!(survivors.len(), 1, "{a:#}");
    let s = &survivors[0];
    assert_eq!(s["line"], 9, "{s}");
    assert_eq!(s["mutator"], "BinaryOperator", "{s}");
    assert_eq!(s["replacement"], "/", "{s}");
    assert!(s["original"].as_str().unwrap().contains("% 2"), "{s}");
    assert!(s["id"].as_str().unwrap().starts_with("9:"), "{s}");
    assert_eq!(m["runs"], 2, "the whole scope, then the survivor: {m}");
    let second = prompt_to(&llm, "chaos", 1).await;
    assert!(second.contains("replace % with / in median"), "{second}");
    // The report in the open schema; the user's tree untouched: no mutant, no cargo-mutants
    // output, and no Chaos file kept by a run that did not succeed.
    let doc = read_json(&dir.path().join(m["report_path"].as_str().unwrap()));
    assert!(
        doc["files"]["src/lib.rs"]["mutants"]
            .as_array()
            .unwrap()
            .len()
            > 1
    );
    assert_file(dir.path(), "src/lib.rs", FIXED_RS);
    assert!(!dir.path().join("mutants.out").exists());
    assert!(a["kept_tests"].is_null(), "{a:#}");
    let tests: Vec<String> = std::fs::read_dir(dir.path().join("tests"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(tests, ["median.rs"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn rust_chaos_s_test_kills_the_survivor_and_the_score_clears_the_gate() {
    let (_dir, _llm, report) = gated_rs(
        suite("rust", KILL_RS, "A single value has an odd length."),
        "",
        CLEARED,
    )
    .await;
    let a = &report["adversarial"];
    assert_eq!(a["mutation_score"], 100.0, "{a:#}");
    assert!(a["surviving_mutants"].is_null(), "{a:#}");
}

/// A Rust file of many functions: cargo-mutants lists every mutant of it with its diff (about
/// a kilobyte each, here over 200), and the listing is read whole, not cut as a failing tool's
/// output is.
#[tokio::test(flavor = "multi_thread")]
async fn a_rust_file_of_many_functions_has_its_whole_listing_read() {
    let padding: String = (0..40)
        .map(|i| {
            format!(
                "\n/// Step {i}.\npub fn step_{i:02}(x: i64) -> i64 {{\n    x * {} + {}\n}}\n",
                2 + i % 5,
                3 + i % 7
            )
        })
        .collect();
    let dir = fixture("rs-median");
    let broken = std::fs::read_to_string(dir.path().join("src/lib.rs")).unwrap();
    write(dir.path(), "src/lib.rs", &format!("{broken}{padding}"));
    write_config(
        dir.path(),
        "success_criteria:\n  coverage_threshold: null\n",
    );
    let fixed = format!("{FIXED_RS}{padding}");
    let llm = artisan_always("rust", &fixed).await;
    llm.always("chaos", suite("rust", KILL_RS, "A single value."));
    let (code, report) = run(dir.path(), &llm, "src/lib.rs");
    assert_eq!(report["status"], "success", "{report:#}");
    assert_eq!(code, 0);
    let a = &report["adversarial"];
    assert_eq!(a["mutation"]["tool"], "cargo-mutants", "{a:#}");
    assert!(a["mutation_score"].as_f64().unwrap() >= 80.0, "{a:#}");
}
