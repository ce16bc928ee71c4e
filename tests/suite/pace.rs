//! What an iteration waits for (`critic.mode`, `librarian.analyze`): calls come off the
//! critical path only where they add nothing, and where the Critic and the Librarian change
//! the outcome they still do, under the defaults.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use super::support::*;

/// The iterations' lines of the session's `iterations.log`.
fn iterations(dir: &Path) -> Vec<Value> {
    read_json_lines(&session_dir(dir).join("iterations.log"))
}

/// Test runs the session made (the baseline is iteration 0).
fn test_runs(dir: &Path) -> usize {
    (0..)
        .take_while(|n| {
            session_dir(dir)
                .join(format!("test-results-iteration-{n}.json"))
                .is_file()
        })
        .count()
}

/// Fixes `src/median.js` in `dir` under `node --test`, which must succeed; the events it printed
/// (`--output jsonl`).
fn fix_js_events(dir: &Path, llm: &MockLlm) -> Vec<Value> {
    let out = ralph(dir, llm)
        .args([
            "src/median.js",
            "-t",
            "node --test test/",
            "--output",
            "jsonl",
        ])
        .assert()
        .code(0);
    json_lines(&stdout_of(&out))
}

const BROKEN_PY: &str = "def median(values:\n    return None\n";

/// py-median whose tests take a second and count their starts in `starts`; the Artisan's first
/// proposal does not parse and the Critic rejects it, its second is the fix. The report, the
/// iterations' log and how many times the tests started.
async fn slow_tests_and_a_bad_proposal(config: Option<&str>) -> (Value, Vec<Value>, usize) {
    let dir = fixture("py-median");
    if let Some(config) = config {
        write_config(dir.path(), config);
    }
    let llm = MockLlm::start().await;
    llm.script(
        "artisan",
        [
            text(code("python", BROKEN_PY)),
            text(code("python", FIXED_PY)),
        ],
    )
    .script(
        "critic",
        [
            text("The signature is not valid Python.\nVERDICT: REJECT"),
            text("Correct.\nVERDICT: APPROVE"),
        ],
    );
    let started = std::time::Instant::now();
    ralph(dir.path(), &llm)
        .args([
            "median.py",
            "-t",
            "echo >> starts; sleep 2; python3 -m pytest -q test_median.py",
        ])
        .assert()
        .code(0);
    let elapsed = started.elapsed();
    let starts = std::fs::read_to_string(dir.path().join("starts"))
        .unwrap()
        .lines()
        .count();
    let report = report(dir.path());
    assert_eq!(report["iterations"], 1);
    assert_eq!(report["critic_rejections"], 1);
    assert_eq!(
        test_runs(dir.path()),
        2,
        "the baseline and the approved fix: the rejected proposal's tests judged nothing"
    );
    assert_file(dir.path(), "median.py", FIXED_PY);
    // Three test runs of two seconds would take six: one was stopped early, or never started.
    assert!(elapsed < Duration::from_millis(5800), "{elapsed:?}");
    (report, iterations(dir.path()), starts)
}

#[tokio::test(flavor = "multi_thread")]
async fn slow_tests_run_beside_a_binding_review_that_stops_them_for_a_bad_proposal() {
    // Tests slower than any review: `auto` resolves to `binding`. The rejected proposal's
    // tests started beside its review and were stopped by the rejection.
    let (_, log, starts) = slow_tests_and_a_bad_proposal(None).await;
    assert_eq!(log[0]["critic"], "binding");
    assert_eq!(starts, 3, "the baseline, the stopped run, the approved fix");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_critic_in_gate_mode_stops_a_bad_proposal_before_its_tests_run() {
    let (_, log, starts) = slow_tests_and_a_bad_proposal(Some("critic: { mode: gate }\n")).await;
    assert_eq!(log[0]["critic"], "gate");
    assert_eq!(starts, 2, "the rejected proposal was never run");
}

#[tokio::test(flavor = "multi_thread")]
async fn fast_tests_run_beside_the_review_and_a_passing_fix_waits_for_its_verdict() {
    let dir = fixture("js-median");
    let llm = MockLlm::start().await;
    let slow = |text: String| Answer::Slow {
        text,
        delay: Duration::from_millis(1500),
    };
    llm.script(
        "artisan",
        [
            slow(code("javascript", HALF_FIXED_JS)),
            slow(code("javascript", FIXED_JS)),
        ],
    )
    .always("critic", slow("Correct.\nVERDICT: APPROVE".into()));
    // `node --test` takes well under the 1.5 s a reply takes here: `auto` resolves to
    // `parallel`.
    let events = fix_js_events(dir.path(), &llm);
    let report = report(dir.path());
    assert_eq!(report["status"], "success");
    assert_eq!(report["iterations"], 2);
    // The first review ended after the first proposal's tests did (it ran beside them, not
    // before them), and after the second Artisan call had started.
    let at = |kind: &str, role: Option<&str>, iteration: u64| {
        events
            .iter()
            .position(|e| {
                e["type"] == kind
                    && e["iteration"] == iteration
                    && role.is_none_or(|r| e["role"] == r)
            })
            .unwrap_or_else(|| panic!("no {kind} {role:?} {iteration}: {events:?}"))
    };
    let first_review = at("llm_call_finished", Some("critic"), 1);
    assert!(first_review > at("tests_finished", None, 1), "{events:?}");
    assert!(
        first_review > at("iteration_started", None, 2),
        "{events:?}"
    );
    let log = iterations(dir.path());
    assert!(log.iter().all(|l| l["critic"] == "parallel"), "{log:?}");
    assert_eq!(
        log[1]["critic_approved"], true,
        "the passing fix's verdict was awaited"
    );
    // Both reviews were paid for.
    assert!(report["cost_by_role"]["critic"].as_f64().unwrap() > 0.0);
    assert_eq!(report["tokens_by_role"]["critic"]["output_tokens"], 400);
}

#[tokio::test(flavor = "multi_thread")]
async fn beside_the_tests_a_rejected_passing_fix_is_a_note_and_a_late_rejection_reaches_the_artisan(
) {
    let dir = fixture_with_config("py-median", "critic: { mode: parallel }\n");
    let llm = MockLlm::start().await;
    llm.always(
        "artisan",
        if_prompt(
            "While its tests ran, the Critic rejected it",
            text(code("python", FIXED_PY)),
            text(code("python", HALF_FIXED_PY)),
        ),
    )
    .always(
        "critic",
        text("An empty list must raise ValueError.\nVERDICT: REJECT"),
    );
    // The tests take a second; the review comes in while they run.
    let report = ralph_report(
        dir.path(),
        &llm,
        &[
            "median.py",
            "-t",
            "sleep 1; python3 -m pytest -q test_median.py",
            "--output",
            "json",
        ],
        0,
    );
    assert_eq!(report["status"], "success");
    assert_eq!(report["iterations"], 2, "{report:#}");
    assert_file(dir.path(), "median.py", FIXED_PY);
    let artisan = llm.requests_of("artisan").await;
    assert!(user_prompt(&artisan[1]).contains("An empty list must raise ValueError."));
    let notes = report["notes"].to_string();
    assert!(
        notes.contains(
            "the Critic rejected the passing fix (kept as a note; critic.mode: gate sends it back)"
        ),
        "{notes}"
    );
    assert_eq!(report["critic_rejections"], 0, "nothing was sent back");
}

/// A reply after `ms` milliseconds, billed by its length as a real model's is.
fn after(ms: u64, answer: &str) -> Answer {
    Answer::Paced {
        text: answer.into(),
        delay: Duration::from_millis(ms),
    }
}

/// The case where the Artisan does not fix what it saw: it answers the file unchanged until
/// the Librarian's analysis is in its prompt. Each call takes a little time, the analysis less
/// than the Artisan's rewrite, as with real models. The run's report and its iterations' log.
async fn unfixed_until_analysed(config: Option<&str>) -> (Value, Vec<Value>, MockLlm) {
    let dir = fixture("py-median");
    if let Some(config) = config {
        write_config(dir.path(), config);
    }
    let llm = MockLlm::start().await;
    let original = std::fs::read_to_string(dir.path().join("median.py")).unwrap();
    llm.always(
        "librarian",
        after(
            500,
            "An empty list must raise ValueError; an even-length list averages the middle pair.",
        ),
    )
    .always("critic", text("Correct.\nVERDICT: APPROVE"))
    .always(
        "artisan",
        if_prompt(
            "The Librarian's analysis",
            after(900, &code("python", FIXED_PY)),
            after(900, &code("python", &original)),
        ),
    );
    ralph(dir.path(), &llm)
        .args(["median.py", "--output", "json"])
        .assert()
        .code(0);
    (report(dir.path()), iterations(dir.path()), llm)
}

#[tokio::test(flavor = "multi_thread")]
async fn the_librarian_s_analysis_runs_when_the_artisan_did_not_fix_what_it_saw() {
    // The defaults: the analysis of the repeated failure runs beside the Artisan's call of
    // iteration 2 and is in its call of iteration 3, which it changes.
    let (report, log, llm) = unfixed_until_analysed(None).await;
    assert_eq!(report["iterations"], 3, "{report:#}");
    assert!(log[0].get("analysis").is_none(), "{log:?}");
    assert_eq!(log[1]["analysis"], "the same failure as before");
    let artisan = llm.requests_of("artisan").await;
    assert!(!user_prompt(&artisan[1]).contains("The Librarian's analysis"));
    assert!(user_prompt(&artisan[2])
        .contains("# The Librarian's analysis of the tests as they failed before your last proposal\nAn empty list must raise ValueError"));
    // Iteration 3 asked again (the same failure); that one came in before its tests passed.
    assert_eq!(log[2]["analysis"], "the same failure as before");
    assert_eq!(llm.requests_of("librarian").await.len(), 2);
    assert!(report.get("abandoned_calls").is_none(), "{report:#}");
}

#[tokio::test(flavor = "multi_thread")]
async fn waiting_for_the_analysis_puts_it_in_the_same_iteration_s_call() {
    let (report, log, llm) =
        unfixed_until_analysed(Some("librarian: { wait_for_analysis: true }\n")).await;
    assert_eq!(report["iterations"], 2, "{report:#}");
    assert_eq!(log[1]["analysis"], "the same failure as before");
    assert_eq!(llm.requests_of("librarian").await.len(), 1);
}

/// js-median with a fifth test (an empty array), so that more than 3 tests fail at first; the
/// Artisan answers the whole fix only once the Librarian's analysis is in its prompt. The report
/// and the events.
async fn many_failures(
    config: Option<&str>,
    librarian_delay: Duration,
) -> (Value, Vec<Value>, Vec<Value>) {
    let dir = fixture("js-median");
    write(
        dir.path(),
        "test/empty.test.js",
        "const test = require('node:test');\nconst assert = require('node:assert');\nconst { median } = require('../src/median');\n\ntest('an empty array is an error', () => {\n  assert.throws(() => median([]));\n});\n",
    );
    if let Some(config) = config {
        write_config(dir.path(), config);
    }
    let fixed = FIXED_JS.replace(
        "function median(values) {\n",
        "function median(values) {\n  if (values.length === 0) throw new Error('median of an empty array');\n",
    );
    let llm = MockLlm::start().await;
    llm.always(
        "librarian",
        Answer::Slow {
            text: "Copy before sorting, sort numerically, average the middle pair, throw on empty."
                .into(),
            delay: librarian_delay,
        },
    )
    .always("critic", text("Correct.\nVERDICT: APPROVE"))
    .always(
        "artisan",
        if_prompt(
            "The Librarian's analysis",
            after(1200, &code("javascript", &fixed)),
            after(1200, &code("javascript", HALF_FIXED_JS)),
        ),
    );
    let events = fix_js_events(dir.path(), &llm);
    (report(dir.path()), events, iterations(dir.path()))
}

/// Where the first event of `kind` by `role` in `iteration` is (`role` is the phase of a
/// `phase_changed`).
fn position(events: &[Value], kind: &str, role: &str, iteration: u64) -> usize {
    let field = if kind == "phase_changed" {
        "phase"
    } else {
        "role"
    };
    events
        .iter()
        .position(|e| e["type"] == kind && e[field] == role && e["iteration"] == iteration)
        .unwrap_or_else(|| panic!("no {kind} of the {role} in iteration {iteration}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn many_failures_get_the_librarian_s_analysis_beside_the_first_call_and_in_the_second() {
    // The Artisan's first call starts before the analysis ends; the analysis is in before
    // that call ends, and reaches the next one.
    let (report, events, log) = many_failures(None, Duration::from_millis(600)).await;
    assert_eq!(report["iterations"], 2, "{report:#}");
    assert!(
        position(&events, "phase_changed", "generate", 1)
            < position(&events, "llm_call_finished", "librarian", 1),
        "the Artisan's first call waited for the analysis"
    );
    assert_eq!(log[0]["analysis"], "many tests fail");
    // The report's timings count the analysis beside the Artisan's call once: the overhead is
    // the time nothing was in flight, not the wall time less the calls added up.
    let calls: u64 = events
        .iter()
        .filter(|e| e["type"] == "llm_call_finished")
        .map(|e| e["duration_ms"].as_u64().unwrap())
        .sum();
    let t = &report["timings"];
    let (llm, overhead) = (
        t["llm_ms"].as_u64().unwrap(),
        t["overhead_ms"].as_u64().unwrap(),
    );
    assert!(llm + 500 <= calls, "{t} against {calls} ms of calls");
    assert!(llm <= report["duration_ms"].as_u64().unwrap(), "{report:#}");
    assert!(overhead > 0, "{t}");
}

#[tokio::test(flavor = "multi_thread")]
async fn many_failures_with_wait_for_analysis_are_fixed_in_one_iteration_as_before() {
    let (report, events, _) = many_failures(
        Some("librarian: { wait_for_analysis: true }\n"),
        Duration::from_millis(10),
    )
    .await;
    assert_eq!(report["iterations"], 1, "{report:#}");
    assert!(
        position(&events, "llm_call_finished", "librarian", 1)
            < position(&events, "phase_changed", "generate", 1)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_artisan_s_stable_prompt_prefix_is_read_from_anthropic_s_cache_on_its_second_call() {
    let anthropic = MockLlm::start_with(Protocol::Anthropic).await;
    let openai = MockLlm::start().await;
    openai.helpful();
    anthropic.script(
        "artisan",
        [
            text(code("python", HALF_FIXED_PY)),
            text(code("python", FIXED_PY)),
        ],
    );
    let dir = fixture("py-median");
    ralph_with_env(dir.path(), &[anthropic.env(), openai.env()].concat())
        .args([
            "median.py",
            "--no-adversarial",
            "--models",
            "artisan=claude",
            "--output",
            "json",
        ])
        .assert()
        .code(0);
    // Both calls ask to cache the same prefix: the tests, before anything that varies.
    let requests = anthropic.requests().await;
    assert_eq!(requests.len(), 2);
    let prefixes: Vec<&Value> = requests
        .iter()
        .map(|(_, body)| &body["messages"][0]["content"][0])
        .collect();
    assert_eq!(prefixes[0], prefixes[1]);
    assert_eq!(prefixes[0]["cache_control"]["type"], "ephemeral");
    assert_has(
        prefixes[0]["text"].as_str().unwrap(),
        &["def test_empty_list_is_an_error"],
    );
    // The report shows what was read from the cache and written to it.
    let report = report(dir.path());
    let artisan = &report["tokens_by_role"]["artisan"];
    assert!(
        artisan["cache_read_tokens"].as_u64().unwrap() > 0,
        "{report:#}"
    );
    assert_eq!(
        artisan["cache_read_tokens"], artisan["cache_write_tokens"],
        "written once, read once"
    );
    assert_eq!(
        report["tokens"]["cache_read_tokens"],
        artisan["cache_read_tokens"]
    );
}
