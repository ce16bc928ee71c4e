//! Lifecycle hooks and plugins in the fix loop: each stage fires once per occasion with its
//! context, a formatter changes the written file, a veto keeps the run from succeeding and its
//! reasons reach the Artisan, each failure mode, a crashing, hanging, garbage-printing or flooding
//! plugin, a disabled plugin, and bad declarations refused with their file and line.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::support::*;

const WRONG_PY: &str = "def median(values):\n    return 0\n";

/// Writes the config `yaml`, trusts its hooks and fixes `median.py` (wrong first, then right
/// unless `right_first`), hooks writing what they get under `out`; the exit code and the report.
fn fix(dir: &Path, llm: &MockLlm, yaml: &str, out: &Path) -> (i32, Value) {
    write_config(dir, yaml);
    trust_hooks(dir);
    let assert = ralph(dir, llm)
        .env("HOOK_OUT", out)
        .args(["median.py", "--output", "json"])
        .assert();
    let code = assert.get_output().status.code().unwrap_or(-1);
    (code, report(dir))
}

/// Where the tests' hooks write what they get: in the project, which the sandbox lets them
/// write.
pub(super) fn out_dir(project: &Path) -> std::path::PathBuf {
    let out = project.join(".hook-out");
    std::fs::create_dir_all(&out).unwrap();
    out
}

/// A `py-median` project, the folder its hooks write to (see [`out_dir`]), and a server whose
/// Artisan answers as `artisan` scripts it.
pub(super) async fn project(
    artisan: fn(&MockLlm),
) -> (tempfile::TempDir, std::path::PathBuf, MockLlm) {
    let dir = fixture("py-median");
    let out = out_dir(dir.path());
    let llm = MockLlm::start().await;
    artisan(&llm);
    (dir, out, llm)
}

/// Runs [`fix`] and asserts the run succeeded; its report.
pub(super) fn fixed(dir: &Path, llm: &MockLlm, yaml: &str, out: &Path) -> Value {
    let (code, report) = fix(dir, llm, yaml, out);
    assert_eq!(code, 0, "{report:#}");
    report
}

/// Runs [`fix`] and asserts a hook stopped the run with an error (exit 1); its report.
fn aborted(dir: &Path, llm: &MockLlm, yaml: &str, out: &Path) -> Value {
    let (code, report) = fix(dir, llm, yaml, out);
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(report["status"], "error");
    report
}

pub(super) fn fixes_at_once(llm: &MockLlm) {
    llm.helpful()
        .always("artisan", text(code("python", FIXED_PY)));
}

fn two_tries(llm: &MockLlm) {
    llm.helpful().script(
        "artisan",
        [
            text(code("python", WRONG_PY)),
            text(code("python", FIXED_PY)),
        ],
    );
}

/// Asserts some warning names `name` and says `what`.
pub(super) fn warned(w: &[String], name: &str, what: &str) {
    assert!(
        w.iter().any(|w| w.contains(name) && w.contains(what)),
        "{name}, {what}: {w:?}"
    );
}

/// The Artisan's prompts, in order.
async fn artisan_prompts(llm: &MockLlm) -> Vec<String> {
    llm.requests_of("artisan")
        .await
        .iter()
        .map(user_prompt)
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn each_stage_fires_once_per_occasion_with_its_context() {
    let (dir, out, llm) = project(two_tries).await;
    let record = r#"cat > "$HOOK_OUT/$RALPH_STAGE-$ITERATION.json""#;
    let yaml: String = [
        "on_before_gen",
        "on_after_gen",
        "on_test_fail",
        "on_before_success",
        "on_success",
    ]
    .iter()
    .map(|s| {
        format!(
            "  {s}:\n    - type: shell\n      command: '{record}'\n      on_failure: abort_loop\n"
        )
    })
    .collect();
    let report = fixed(dir.path(), &llm, &format!("hooks:\n{yaml}"), &out);
    assert_eq!(report["iterations"], 2);
    let mut fired: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    fired.sort();
    assert_eq!(
        fired,
        [
            "on_after_gen-1.json",
            "on_after_gen-2.json",
            "on_before_gen-1.json",
            "on_before_gen-2.json",
            "on_before_success-2.json",
            "on_success-2.json",
            "on_test_fail-1.json",
        ]
    );
    let got = |name: &str| read_json(&out.join(name));
    let after = got("on_after_gen-1.json");
    assert_eq!(after["protocol"], 1);
    assert_eq!(after["stage"], "on_after_gen");
    assert_eq!(after["target"], "median.py");
    assert_eq!(after["language"], "python");
    assert_eq!(
        after["code"], WRONG_PY,
        "the proposal, before it is written"
    );
    assert!(after["budget"]["max_cost_usd"].as_f64().unwrap() > 0.0);
    let failed = got("on_test_fail-1.json");
    assert!(
        failed["tests"]["failed"].as_u64().unwrap() > 0,
        "{failed:#}"
    );
    assert_eq!(failed["tests"]["criteria_met"], false);
    assert!(!failed["tests"]["failures"].as_array().unwrap().is_empty());
    assert_eq!(failed["code"], WRONG_PY, "the file as written");
    let gate = got("on_before_success-2.json");
    assert_eq!(gate["tests"]["criteria_met"], true);
    let done = got("on_success-2.json");
    assert_eq!(done["code"], FIXED_PY);
    assert_eq!(done["session_id"], report["session_id"]);
    assert_file(dir.path(), "median.py", FIXED_PY);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_shell_formatter_changes_the_written_file() {
    let (dir, out, llm) = project(fixes_at_once).await;
    let yaml = "hooks:\n  on_after_gen:\n    - type: shell\n      name: stamp\n      command: printf '# formatted\\n' >> \"$RALPH_PROPOSAL_FILE\"\n      on_failure: warn_continue\n";
    fixed(dir.path(), &llm, yaml, &out);
    assert_file(dir.path(), "median.py", format!("{FIXED_PY}# formatted\n"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_veto_keeps_the_run_from_succeeding_and_its_reasons_reach_the_artisan() {
    let (dir, out, llm) = project(fixes_at_once).await;
    // Vetoes once (exit 2, the reason on stderr), then passes.
    let yaml = "hooks:\n  on_before_success:\n    - type: shell\n      name: docs\n      command: 'if [ ! -f \"$HOOK_OUT/vetoed\" ]; then touch \"$HOOK_OUT/vetoed\"; echo \"median needs a docstring\" >&2; exit 2; fi'\n      on_failure: abort_loop\n";
    let report = fixed(dir.path(), &llm, yaml, &out);
    assert_eq!(report["iterations"], 2, "the veto cost an iteration");
    assert_told_next(
        &prompts_of(&llm, "artisan", 2).await,
        "median needs a docstring",
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn warn_continue_logs_the_failure_and_the_run_goes_on() {
    let (dir, out, llm) = project(two_tries).await;
    let yaml = "hooks:\n  on_before_gen:\n    - type: shell\n      name: lint-db\n      command: echo 'lint db missing' >&2; exit 1\n      on_failure: warn_continue\n";
    let report = fixed(dir.path(), &llm, yaml, &out);
    let warned: Vec<String> = warnings(&report)
        .into_iter()
        .filter(|w| w.contains("lint-db"))
        .collect();
    assert_eq!(warned.len(), 2, "once an iteration: {warned:?}");
    assert!(
        warned[0].contains("exited with 1: lint db missing"),
        "{warned:?}"
    );
    let log = std::fs::read_to_string(dir.path().join(".ralph/plugin-errors.log")).unwrap();
    assert_eq!(
        log.matches("lint-db at on_before_gen: exited with 1")
            .count(),
        2,
        "{log}"
    );
    assert!(log.contains("    lint db missing"), "{log}");
    // Nothing reached the Artisan.
    assert!(artisan_prompts(&llm)
        .await
        .iter()
        .all(|p| !p.contains("lint db missing")));
}

#[tokio::test(flavor = "multi_thread")]
async fn ask_agent_puts_the_failure_in_the_artisans_next_prompt() {
    let (dir, out, llm) = project(two_tries).await;
    let yaml = "hooks:\n  on_test_fail:\n    - type: shell\n      name: coverage\n      command: echo 'coverage tool crashed' >&2; exit 3\n      on_failure: ask_agent\n";
    let report = fixed(dir.path(), &llm, yaml, &out);
    let prompts = artisan_prompts(&llm).await;
    assert!(
        prompts[1].contains("coverage tool crashed"),
        "{}",
        prompts[1]
    );
    assert!(warnings(&report)
        .iter()
        .any(|w| w.contains("told to the Artisan")));
}

#[tokio::test(flavor = "multi_thread")]
async fn abort_loop_stops_the_run_at_the_failing_hook() {
    let (dir, out, llm) = project(two_tries).await;
    let yaml = "hooks:\n  on_test_fail:\n    - type: shell\n      name: guard\n      command: exit 1\n      on_failure: abort_loop\n";
    let report = aborted(dir.path(), &llm, yaml, &out);
    assert_eq!(report["iterations"], 1);
    let reason = report["reason"].as_str().unwrap();
    assert!(
        reason.contains("stopped by a hook") && reason.contains("guard"),
        "{reason}"
    );
    assert_eq!(artisan_prompts(&llm).await.len(), 1, "no second iteration");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_aborting_gate_lets_no_success_through() {
    let (dir, out, llm) = project(fixes_at_once).await;
    let yaml = "hooks:\n  on_before_success:\n    - type: plugin\n      name: scanner\n      command: kill -9 $$\n      on_failure: abort_loop\n";
    let report = aborted(dir.path(), &llm, yaml, &out);
    assert!(
        report["reason"]
            .as_str()
            .unwrap()
            .contains("killed by signal 9"),
        "{report:#}"
    );
}

/// A plugin in Python: reads the request, answers per stage.
const PLUGIN: &str = r##"import json, sys
req = json.load(sys.stdin)
open(sys.argv[1] + "/" + req["stage"], "a").write(json.dumps(req["config"]) + "\n")
if req["stage"] == "on_after_gen":
    print(json.dumps({"protocol": 1, "action": "change", "code": req["code"] + "# checked by plugin\n", "notes": ["the plugin saw it"]}))
else:
    print(json.dumps({"protocol": 1, "action": "pass"}))
"##;

#[tokio::test(flavor = "multi_thread")]
async fn plugins_from_their_file_answer_the_protocol_and_disabled_ones_do_not_run() {
    let (dir, out, llm) = project(two_tries).await;
    write(dir.path(), "plugin.py", PLUGIN);
    write(
        dir.path(),
        "ralph-plugins.yaml",
        "plugins:\n  - name: checker\n    version: 1.0.0\n    command: python3 plugin.py \"$HOOK_OUT\"\n    hooks: [on_after_gen, on_success]\n    on_failure: abort_loop\n    config: {level: strict}\n  - name: off\n    enabled: false\n    command: touch \"$HOOK_OUT/off-ran\"\n    hooks: [on_before_gen]\n    on_failure: abort_loop\n",
    );
    fixed(dir.path(), &llm, "", &out);
    assert_file(
        dir.path(),
        "median.py",
        format!("{FIXED_PY}# checked by plugin\n"),
    );
    let seen = std::fs::read_to_string(out.join("on_after_gen")).unwrap();
    assert_eq!(
        seen, "{\"level\": \"strict\"}\n{\"level\": \"strict\"}\n",
        "its config, twice"
    );
    assert!(out.join("on_success").exists());
    assert!(
        !out.join("off-ran").exists(),
        "a disabled plugin does not run"
    );
    // The plugin's note reached the second prompt.
    assert!(artisan_prompts(&llm).await[1].contains("the plugin saw it"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hanging_garbage_or_flooding_plugin_is_a_logged_failure_and_the_run_goes_on() {
    let (dir, out, llm) = project(fixes_at_once).await;
    let yaml = "hooks:\n  on_before_gen:\n    - type: plugin\n      name: sleeper\n      command: sleep 30\n      timeout_seconds: 1\n      on_failure: warn_continue\n    - type: plugin\n      name: talker\n      command: echo 'hello, not json'\n      on_failure: warn_continue\n    - type: plugin\n      name: flood\n      command: head -c 20000000 /dev/zero | tr '\\0' x\n      on_failure: warn_continue\n";
    let started = Instant::now();
    let report = fixed(dir.path(), &llm, yaml, &out);
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the hang was cut at its timeout"
    );
    let w = warnings(&report);
    warned(&w, "sleeper", "timed out after 1.0 s");
    warned(&w, "talker", "answered garbage");
    warned(&w, "flood", "answered garbage");
    let log = std::fs::read_to_string(dir.path().join(".ralph/plugin-errors.log")).unwrap();
    for name in ["sleeper", "talker", "flood"] {
        assert!(log.contains(&format!("{name} at on_before_gen")), "{log}");
    }
    assert!(
        log.len() < 10_000,
        "the flood is not copied: {} bytes",
        log.len()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_declarations_are_refused_with_their_file_and_line() {
    let dir = fixture("py-median");
    let llm = MockLlm::start().await;
    // A hook without on_failure.
    write_config(
        dir.path(),
        "hooks:\n  on_success:\n    - type: shell\n      command: true\n",
    );
    let stderr = stderr_at(ralph(dir.path(), &llm).arg("median.py"), 2);
    assert_has(
        &stderr,
        &["ralph.config.yaml:3:", "hooks.on_success[0]", "on_failure"],
    );
    // An unknown stage.
    write_config(dir.path(), "hooks:\n  on_lunch:\n    - type: shell\n      command: true\n      on_failure: warn_continue\n");
    let stderr = stderr_at(ralph(dir.path(), &llm).arg("median.py"), 2);
    assert!(
        stderr.contains("ralph.config.yaml:2:") && stderr.contains("on_before_gen"),
        "{stderr}"
    );
    // A plugins file with a bad value.
    std::fs::remove_file(dir.path().join("ralph.config.yaml")).unwrap();
    write(
        dir.path(),
        "ralph-plugins.yaml",
        "plugins:\n  - name: fmt\n    command: fmt\n    hooks: [on_after_gen]\n    on_failure: sometimes\n",
    );
    let stderr = stderr_at(ralph(dir.path(), &llm).arg("median.py"), 2);
    assert_has(&stderr, &["ralph-plugins.yaml:5:", "warn_continue"]);
    assert!(llm.requests().await.is_empty(), "nothing ran");
}
