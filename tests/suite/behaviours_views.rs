//! Promises of the views and the plugin SDK that no other test backs, each as a person meets
//! them: the dashboard's Abort button, clicked with the mouse in headless Chromium on a run
//! that is mid-way, its confirmation answered at the browser (Cancel leaves the run alone, OK
//! stops it as Ctrl+C does: exit 130, saved, resumable, the page showing the stop); and the
//! JavaScript plugin SDK (`sdk/typescript`, `require("ralph-plugin")`) in real runs: a plugin
//! that changes each proposal and vetoes a success, with an async handler, plugins that throw
//! (their error on stderr, in the warning, the Artisan's prompt or the stop's reason, as their
//! `on_failure` says). The docs' tutorial plugin run by hand is in `behaviours_sdk.rs`.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::cdp::{artifacts, Browser};
use super::regent::of_type;
use super::support::*;
use super::web::Served;

// --- the dashboard's Abort button ------------------------------------------------------------

fn text_of(browser: &mut Browser, selector: &str) -> String {
    browser
        .eval(&format!("document.querySelector('{selector}').textContent"))
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// docs/views.md: the dashboard's Abort "asks first; it stops the run as Ctrl+C in its
/// terminal does: saved, resumable". A fix run under `--ui web` whose second Artisan call takes
/// 30 s is watched in headless Chromium; Abort is clicked with the mouse. Cancel at the
/// confirmation leaves the run going. OK stops it at once (exit 130, not after the slow
/// reply), its session saved as interrupted, the page showing the stop with its buttons
/// disabled and staying on it after the dashboard closes; `ralph-loop resume` then finishes
/// the fix from the saved session (its baseline and money carried over).
#[tokio::test(flavor = "multi_thread")]
async fn the_dashboards_abort_button_asks_then_stops_the_run_saved_and_resumable() {
    let dir = fixture("py-median");
    let llm = artisan_script([
        text(code("python", HALF_FIXED_PY)),
        slow(code("python", FIXED_PY), Duration::from_secs(30)),
        text(code("python", FIXED_PY)),
    ])
    .await;
    let env = llm.openai_env();
    let root = dir.path().to_path_buf();
    let (mut served, browser) = tokio::task::spawn_blocking(move || {
        let browser = Browser::launch();
        let served = Served::start(
            &root,
            &["median.py", "--no-adversarial", "--ui", "web"],
            &env,
        );
        (served, browser)
    })
    .await
    .unwrap();
    let id = served.url.split("session=").nth(1).unwrap().to_string();
    let url = served.url.clone();
    let (exit, clicked_at_ok, mut browser) = tokio::task::spawn_blocking(move || {
        let mut browser = browser;
        browser.navigate(&url);
        // Mid-way: the first iteration's tests shown, the second waiting on the Artisan, and
        // the buttons of a run that takes requests.
        browser.wait_for(
            "document.querySelector('#timeline .iteration[data-n=\"1\"] .bad') !== null \
             && document.querySelector('#status').textContent.startsWith('iteration 2 of') \
             && document.querySelector('#status').textContent.includes('generate') \
             && !document.querySelector('#abort').hidden \
             && !document.querySelector('#abort').disabled",
            Duration::from_secs(60),
        );
        assert_eq!(text_of(&mut browser, "#abort"), "Abort");

        // Cancel: nothing is asked of the run, which goes on.
        let (kind, message) = browser.click_answering("#abort", false);
        assert_eq!(kind, "confirm");
        assert_eq!(message, "Abort the run? It is saved and can be resumed.");
        assert_eq!(
            served.wait(Duration::from_millis(1500)),
            None,
            "Cancel leaves the run going"
        );
        assert_eq!(text_of(&mut browser, "#said"), "");
        assert!(
            text_of(&mut browser, "#status").starts_with("iteration 2 of"),
            "{}",
            text_of(&mut browser, "#status")
        );

        // OK: the run stops at once, not after the Artisan's 30 s.
        let (kind, _) = browser.click_answering("#abort", true);
        let clicked = Instant::now();
        assert_eq!(kind, "confirm");
        browser.wait_for(
            "document.querySelector('#said').textContent === \
             'stopping: the step under way ends, the run is saved and can be resumed'",
            Duration::from_secs(10),
        );
        let exit = served.wait(Duration::from_secs(15));
        let took = clicked.elapsed();
        browser.wait_for(
            "document.querySelector('#status').textContent.startsWith('finished: interrupted')",
            Duration::from_secs(10),
        );
        // The dashboard closed with the run; the page stays on how it ended, in its list too.
        browser.wait_for(
            "document.querySelector('#conn').textContent === 'ended'",
            Duration::from_secs(15),
        );
        browser.wait_for(
            "document.querySelector('#sessions li.current .status').textContent === 'interrupted'",
            Duration::from_secs(5),
        );
        browser.screenshot(&artifacts().join("dashboard-aborted.png"));
        (exit, took, browser)
    })
    .await
    .unwrap();
    assert_eq!(exit, Some(130), "exits as Ctrl+C does");
    assert!(
        clicked_at_ok < Duration::from_secs(10),
        "the step under way was ended, not waited for: {clicked_at_ok:?}"
    );
    let page = tokio::task::spawn_blocking(move || {
        let status = text_of(&mut browser, "#status");
        let disabled = browser.eval(
            "['#abort', '#pause'].map(b => document.querySelector(b).disabled).join(' ')",
        );
        let rows = browser.eval(
            "[...document.querySelectorAll('#timeline .iteration .n')].map(e => e.textContent).join(' ')",
        );
        (status, disabled, rows)
    })
    .await
    .unwrap();
    assert!(page.0.starts_with("finished: interrupted · "), "{}", page.0);
    assert_eq!(page.1, "true true", "a stopped run takes no more requests");
    assert_eq!(page.2, "base #1 #2", "the iterations it got to");
    assert_eq!(llm.requests_of("artisan").await.len(), 2);
    assert_eq!(
        llm.requests_of("critic").await.len(),
        1,
        "the second proposal was never reviewed"
    );

    // Saved: the session says interrupted, announces no process, and resumes to the fix.
    let session = dir.path().join(".ralph").join(&id);
    let state = read_json(&session.join("state.json"));
    assert_eq!(state["status"], "interrupted");
    let stopped = read_json(&session.join("report.json"));
    assert_eq!(stopped["status"], "interrupted");
    assert_eq!(stopped["exit_code"], 130);
    assert!(!session.join("control.json").exists());
    let spent = state["ledger"]["spent"].as_f64().unwrap();
    assert!(spent > 0.0);
    ralph_with_chaos(dir.path(), &llm)
        .arg("resume")
        .assert()
        .code(0);
    let resumed = report(dir.path());
    assert_eq!(resumed["session_id"], stopped["session_id"]);
    assert_eq!(resumed["status"], "success");
    assert_eq!(resumed["tests_before"]["failed"], 2, "the baseline is kept");
    assert!(resumed["cost_usd"].as_f64().unwrap() >= spent);
    assert_file(dir.path(), "median.py", FIXED_PY);
    assert_eq!(llm.requests_of("artisan").await.len(), 3);
}

// --- the JavaScript plugin SDK ---------------------------------------------------------------

/// `FIXED_PY` with a docstring.
const DOCUMENTED_PY: &str = "def median(values):\n    \"\"\"The median of a non-empty list: the middle value, or the mean of the middle pair.\"\"\"\n    if not values:\n        raise ValueError(\"median of an empty list\")\n    ordered = sorted(values)\n    mid = len(ordered) // 2\n    if len(ordered) % 2:\n        return ordered[mid]\n    return (ordered[mid - 1] + ordered[mid]) / 2\n";

/// A house-style plugin: an async handler that reads its rules from its folder, stamps each
/// proposal (`change`, with a note), vetoes a success while the file lacks a docstring, and
/// otherwise returns nothing. It records each request it got, and the SDK it was given.
const HOUSE_STYLE_JS: &str = r#"// @ts-check
const fs = require("fs");
const path = require("path");
const rp = require("ralph-plugin");

rp.run(async (/** @type {import("ralph-plugin").Request} */ req) => {
  const rules = JSON.parse(await fs.promises.readFile(path.join(__dirname, "rules.json"), "utf8"));
  await new Promise((resolve) => setTimeout(resolve, 50));
  const sdk = require.resolve("ralph-plugin");
  const seen = { stage: req.stage, iteration: req.iteration, hook: req.hook, target: req.target,
    language: rp.language(req), config: req.config, protocol: rp.PROTOCOL, sdk };
  await fs.promises.appendFile(".hook-out/requests.jsonl", JSON.stringify(seen) + "\n");
  await fs.promises.copyFile(sdk, ".hook-out/sdk.js");
  if (req.stage === "on_after_gen") {
    return rp.change(`${req.code.trimEnd()}\n${req.config.stamp}\n`,
      [`${req.hook} stamped ${req.target} (${rp.language(req)})`]);
  }
  if (req.stage === "on_before_success" && !req.code.includes(rules.required)) {
    return rp.veto([`${req.target}: ${rules.why}`]);
  }
});
"#;

/// Reads a rules file that is not there: a synchronous throw.
const STRICT_STYLE_JS: &str = r#"const fs = require("fs");
const rp = require("ralph-plugin");

rp.run((req) => {
  const rules = JSON.parse(fs.readFileSync(".style-rules.json", "utf8"));
  return rules.strict ? rp.veto([`${req.target} is not strict`]) : rp.pass();
});
"#;

/// Looks for a coverage report after failing tests: an async handler that throws after it
/// awaited (a rejected promise).
const COVERAGE_JS: &str = r#"const fs = require("fs");
const rp = require("ralph-plugin");

rp.run(async (req) => {
  const summary = await fs.promises.readFile("coverage/summary.json", "utf8").catch(() => null);
  if (summary === null) {
    throw new Error(`no coverage report after ${req.tests.failed} failing tests`);
  }
  return rp.pass([summary]);
});
"#;

/// The events of the only session of `dir`.
fn events(dir: &Path) -> Vec<Value> {
    read_json_lines(&session_dir(dir).join("events.jsonl"))
}

/// Writes `files` into `dir`, trusts the project's hooks as a user who read them would, and
/// fixes `median.py`: the exit code and the report.
fn fix_with(dir: &Path, llm: &MockLlm, files: &[(&str, &str)]) -> (i32, Value) {
    for (name, content) in files {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }
    std::fs::create_dir_all(dir.join(".hook-out")).unwrap();
    trust_hooks(dir);
    let assert = ralph(dir, llm)
        .args(["median.py", "--output", "json"])
        .assert();
    let code = assert.get_output().status.code().unwrap_or(-1);
    (code, report(dir))
}

/// docs/plugins.md and sdk/README.md: a JavaScript plugin gets `require("ralph-plugin")`
/// without an install (the SDK of `sdk/typescript`, put on `NODE_PATH` by the run), its handler
/// may be async, `change()` at `on_after_gen` replaces the proposal (its notes reach the
/// Artisan), `veto()` at `on_before_success` stops the success and its reasons reach the
/// Artisan, and a handler that returns nothing passes. Declared in `ralph-plugins.yaml` with a
/// `config`, trusted, run under the sandbox.
#[tokio::test(flavor = "multi_thread")]
async fn a_javascript_plugin_made_with_the_sdk_changes_each_proposal_and_vetoes_a_success() {
    let dir = fixture("py-median");
    let llm = artisan_writes("python", [FIXED_PY, DOCUMENTED_PY]).await;

    let (code, report) = fix_with(
        dir.path(),
        &llm,
        &[
            ("plugins/house-style/plugin.js", HOUSE_STYLE_JS),
            (
                "plugins/house-style/rules.json",
                r#"{"required": "\"\"\"", "why": "every function needs a docstring"}"#,
            ),
            (
                "ralph-plugins.yaml",
                "plugins:\n  - name: house-style\n    version: 1.0.0\n    command: node plugins/house-style/plugin.js\n    hooks: [on_after_gen, on_before_success, on_success]\n    on_failure: abort_loop\n    timeout_seconds: 30\n    config: {stamp: '# house style: checked'}\n",
            ),
        ],
    );
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["status"], "success");
    assert_eq!(report["iterations"], 2, "the veto cost an iteration");
    assert!(
        warnings(&report).iter().all(|w| !w.contains("house-style")),
        "{report:#}"
    );
    // The file written is the plugin's change of the second proposal.
    assert_file(
        dir.path(),
        "median.py",
        format!("{DOCUMENTED_PY}# house style: checked\n"),
    );
    // The veto's reason and the change's note reached the Artisan's next prompt, not before.
    let prompts = prompts_of(&llm, "artisan", 2).await;
    assert_told_next(&prompts, "median.py: every function needs a docstring");
    assert!(
        prompts[1].contains("house-style stamped median.py (python)"),
        "{}",
        prompts[1]
    );
    // The run's events: both proposals amended by it, the first success vetoed with its reason.
    let events = events(dir.path());
    let amended = of_type(&events, "proposal_amended");
    assert_eq!(amended.len(), 2, "{amended:?}");
    assert!(amended.iter().all(|e| e["hook"] == "house-style"));
    let vetoed = of_type(&events, "success_vetoed");
    assert_eq!(vetoed.len(), 1, "{vetoed:?}");
    assert_eq!(vetoed[0]["iteration"], 1);
    assert_eq!(vetoed[0]["hook"], "house-style");
    assert_eq!(
        vetoed[0]["reasons"],
        json!(["median.py: every function needs a docstring"])
    );
    // What the plugin was asked, through the SDK: each stage once per occasion, with its
    // config, and the SDK it got is the repository's `sdk/typescript/index.js`.
    let seen: Vec<Value> = read_json_lines(&dir.path().join(".hook-out/requests.jsonl"));
    let stages: Vec<String> = seen
        .iter()
        .map(|s| format!("{} {}", s["stage"].as_str().unwrap(), s["iteration"]))
        .collect();
    assert_eq!(
        stages,
        [
            "on_after_gen 1",
            "on_before_success 1",
            "on_after_gen 2",
            "on_before_success 2",
            "on_success 2"
        ]
    );
    for s in &seen {
        assert_eq!(s["hook"], "house-style");
        assert_eq!(s["target"], "median.py");
        assert_eq!(s["language"], "python");
        assert_eq!(s["protocol"], 1);
        assert_eq!(s["config"], json!({"stamp": "# house style: checked"}));
        let sdk = s["sdk"].as_str().unwrap();
        assert!(sdk.ends_with("node_modules/ralph-plugin/index.js"), "{sdk}");
        assert!(
            !sdk.starts_with(&dir.path().display().to_string())
                && !sdk.starts_with(env!("CARGO_MANIFEST_DIR")),
            "given by the run, not installed: {sdk}"
        );
    }
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("sdk/typescript/index.js");
    assert_file(
        dir.path(),
        ".hook-out/sdk.js",
        std::fs::read_to_string(shipped).unwrap(),
    );
}

/// docs/plugins.md and sdk/README.md: "a handler that raises or throws makes the plugin exit
/// 1, with the error on stderr: a failure, which the entry's `on_failure` handles". A
/// synchronous throw under `warn_continue` warns (the warning says the error) and the proposal
/// is kept as it was; an async handler's rejection under `ask_agent` reaches the Artisan's next
/// prompt; both are in `.ralph/plugin-errors.log` with the stack; the run succeeds.
#[tokio::test(flavor = "multi_thread")]
async fn a_javascript_plugin_that_throws_fails_as_its_on_failure_says_and_says_why() {
    let dir = fixture("py-median");
    let llm = artisan_writes("python", [HALF_FIXED_PY, FIXED_PY]).await;

    let (code, report) = fix_with(
        dir.path(),
        &llm,
        &[
            ("plugins/strict-style.js", STRICT_STYLE_JS),
            ("plugins/coverage.js", COVERAGE_JS),
            (
                "ralph.config.yaml",
                "hooks:\n  on_after_gen:\n    - type: plugin\n      name: strict-style\n      command: node plugins/strict-style.js\n      on_failure: warn_continue\n  on_test_fail:\n    - type: plugin\n      name: coverage\n      command: node plugins/coverage.js\n      on_failure: ask_agent\n",
            ),
        ],
    );
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["status"], "success");
    assert_eq!(report["iterations"], 2);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("median.py")).unwrap(),
        FIXED_PY,
        "the proposal is kept as it was"
    );
    let warned = warnings(&report);
    let strict: Vec<&String> = warned
        .iter()
        .filter(|w| w.contains("strict-style"))
        .collect();
    assert_eq!(strict.len(), 2, "once an iteration: {warned:?}");
    // The warning says what went wrong, as the Python SDK's traceback ends with it.
    assert!(
        strict[0].contains(
            "exited with 1: Error: ENOENT: no such file or directory, open '.style-rules.json'"
        ),
        "{warned:?}"
    );
    let coverage = "Error: no coverage report after 1 failing tests";
    assert!(
        warned
            .iter()
            .any(|w| w.contains("coverage") && w.contains(coverage)),
        "{warned:?}"
    );
    // ask_agent: the async failure reached the Artisan's next prompt.
    let prompts = prompts_of(&llm, "artisan", 2).await;
    assert_told_next(&prompts, coverage);
    assert!(
        !prompts[1].contains("ENOENT"),
        "warn_continue tells the Artisan nothing"
    );
    // The log holds each failure with the stack the SDK printed.
    let log = std::fs::read_to_string(dir.path().join(".ralph/plugin-errors.log")).unwrap();
    assert_eq!(
        log.matches("strict-style at on_after_gen: exited with 1")
            .count(),
        2,
        "{log}"
    );
    assert_has(
        &log,
        &[
            "coverage at on_test_fail: exited with 1",
            "plugins/strict-style.js:5",
            "plugins/coverage.js:7",
        ],
    );
    assert!(log.contains(coverage), "{log}");
}

/// docs/plugins.md: `abort_loop` "stops before its next step with status `error` (exit 1) and
/// the reason `stopped by a hook: …`", for a JavaScript plugin whose handler throws: the
/// reason says the error, and no second iteration runs.
#[tokio::test(flavor = "multi_thread")]
async fn a_throwing_javascript_plugin_under_abort_loop_stops_the_run_with_its_error() {
    let dir = fixture("py-median");
    let llm = artisan_always("python", HALF_FIXED_PY).await;
    let (code, report) = fix_with(
        dir.path(),
        &llm,
        &[
            ("plugins/strict-style.js", STRICT_STYLE_JS),
            (
                "ralph-plugins.yaml",
                "plugins:\n  - name: strict-style\n    command: node plugins/strict-style.js\n    hooks: [on_after_gen]\n    on_failure: abort_loop\n",
            ),
        ],
    );
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(report["status"], "error");
    let reason = report["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("stopped by a hook: ") && reason.contains("strict-style"),
        "{reason}"
    );
    assert!(
        reason.contains("Error: ENOENT: no such file or directory, open '.style-rules.json'"),
        "{reason}"
    );
    assert_eq!(
        llm.requests_of("artisan").await.len(),
        1,
        "no second iteration"
    );
    assert_untouched(
        dir.path(),
        "py-median",
        "median.py",
        "the proposal its plugin could not check is never written",
    );
}
