//! What an iteration waits for (`critic.mode`, `librarian.analyze`): calls come off the
//! critical path only where they add nothing, and where the Critic and the Librarian change
//! the outcome they still do, under the defaults.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use super::support::*;

/// The iterations' lines of the session's `iterations.log`.
fn iterations(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(session_dir(dir).join("iterations.log"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
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

const BROKEN_PY: &str = "def median(values:\n    return None\n";

#[tokio::test(flavor = "multi_thread")]
async fn the_critic_gates_slow_tests_and_stops_a_bad_proposal_before_they_run() {
    let dir = fixture("py-median");
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
    // Tests slower than any review: `auto` resolves to `gate`.
    ralph(dir.path(), &llm)
        .args([
            "median.py",
            "-t",
            "sleep 1; python3 -m pytest -q test_median.py",
        ])
        .assert()
        .code(0);
    let report = report(dir.path());
    assert_eq!(report["iterations"], 1);
    assert_eq!(report["critic_rejections"], 1);
    assert_eq!(
        test_runs(dir.path()),
        2,
        "the baseline and the approved fix: the rejected proposal was never tested"
    );
    assert_eq!(iterations(dir.path())[0]["critic"], "gate");
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
    let out = ralph(dir.path(), &llm)
        .args([
            "src/median.js",
            "-t",
            "node --test test/",
            "--output",
            "jsonl",
        ])
        .assert()
        .code(0);
    let report = report(dir.path());
    assert_eq!(report["status"], "success");
    assert_eq!(report["iterations"], 2);
    // The first review ended after the first proposal's tests did (it ran beside them, not
    // before them), and after the second Artisan call had started.
    let events: Vec<Value> = String::from_utf8_lossy(&out.get_output().stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
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
    let dir = fixture("py-median");
    write(
        dir.path(),
        "ralph.config.yaml",
        "critic: { mode: parallel }\n",
    );
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
    ralph(dir.path(), &llm)
        .args([
            "median.py",
            "-t",
            "sleep 1; python3 -m pytest -q test_median.py",
            "--output",
            "json",
        ])
        .assert()
        .code(0);
    let report = report(dir.path());
    assert_eq!(report["status"], "success");
    assert_eq!(report["iterations"], 2, "{report:#}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("median.py")).unwrap(),
        FIXED_PY
    );
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

#[tokio::test(flavor = "multi_thread")]
async fn the_librarian_s_analysis_runs_when_the_artisan_did_not_fix_what_it_saw() {
    let dir = fixture("py-median");
    let llm = MockLlm::start().await;
    let original = std::fs::read_to_string(dir.path().join("median.py")).unwrap();
    llm.always(
        "librarian",
        text("An empty list must raise ValueError; an even-length list averages the middle pair."),
    )
    .always("critic", text("Correct.\nVERDICT: APPROVE"))
    .always(
        "artisan",
        if_prompt(
            "The Librarian's analysis",
            text(code("python", FIXED_PY)),
            text(code("python", &original)),
        ),
    );
    ralph(dir.path(), &llm)
        .args(["median.py", "--output", "json"])
        .assert()
        .code(0);
    let log = iterations(dir.path());
    assert_eq!(log.len(), 2, "{log:?}");
    assert!(log[0].get("analysis").is_none(), "{log:?}");
    assert_eq!(log[1]["analysis"], "the same failure as before");
    assert_eq!(llm.requests_of("librarian").await.len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn many_failures_get_the_librarian_s_analysis_from_the_first_iteration() {
    let dir = fixture("js-median");
    write(
        dir.path(),
        "test/empty.test.js",
        "const test = require('node:test');\nconst assert = require('node:assert');\nconst { median } = require('../src/median');\n\ntest('an empty array is an error', () => {\n  assert.throws(() => median([]));\n});\n",
    );
    let fixed = FIXED_JS.replace(
        "function median(values) {\n",
        "function median(values) {\n  if (values.length === 0) throw new Error('median of an empty array');\n",
    );
    let llm = MockLlm::start().await;
    llm.always(
        "librarian",
        text("Copy before sorting, sort numerically, average the middle pair, throw on empty."),
    )
    .always("critic", text("Correct.\nVERDICT: APPROVE"))
    .always(
        "artisan",
        if_prompt(
            "The Librarian's analysis",
            text(code("javascript", &fixed)),
            text(code("javascript", HALF_FIXED_JS)),
        ),
    );
    ralph(dir.path(), &llm)
        .args([
            "src/median.js",
            "-t",
            "node --test test/",
            "--output",
            "json",
        ])
        .assert()
        .code(0);
    let report = report(dir.path());
    assert_eq!(report["iterations"], 1, "as before `auto`: {report:#}");
    assert_eq!(iterations(dir.path())[0]["analysis"], "many tests fail");
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
    let mut cmd = assert_cmd::Command::cargo_bin("ralph-loop").unwrap();
    isolate(&mut cmd, dir.path());
    cmd.env("ANTHROPIC_BASE_URL", anthropic.uri())
        .env("ANTHROPIC_API_KEY", "sk-ant-test")
        .env("OPENAI_BASE_URL", openai.base_url())
        .env("OPENAI_API_KEY", "sk-test")
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
    assert!(prefixes[0]["text"]
        .as_str()
        .unwrap()
        .contains("def test_empty_list_is_an_error"));
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
