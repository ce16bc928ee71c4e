//! One recording for every run of a batch or an agent (`--record`, `--replay`), and the bundled
//! spec folder `examples/specs-js` that runs offline from its recorded session.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use super::agent::{git, records, statuses, subjects};
use super::support::*;

const SPECS: [&str; 3] = [
    "specs/count-words.md",
    "specs/fix-clamp.md",
    "specs/slugs-drop-punctuation.md",
];
const BUNDLED: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/examples/specs-js.session.jsonl"
);

const FIXED_CLAMP: &str = "// Keeps a number within [low, high].\nfunction clamp(value, low, high) {\n  if (value < low) return low;\n  if (value > high) return high;\n  return value;\n}\n\nmodule.exports = { clamp };\n";
const FIXED_SLUGIFY: &str = "// Turns a title into the slug of its URL.\nfunction slugify(title) {\n  return title\n    .toLowerCase()\n    .replace(/[^a-z0-9]+/g, '-')\n    .replace(/^-+|-+$/g, '');\n}\n\nmodule.exports = { slugify };\n";
const FIXED_WORD_COUNT: &str = "// How many words a text has: runs of characters between white space.\nfunction wordCount(text) {\n  return text.split(/\\s+/).filter((word) => word.length > 0).length;\n}\n\nmodule.exports = { wordCount };\n";

/// The models of the example's recording: each answers for the target it is shown.
fn example_models(llm: &MockLlm) {
    llm.always(
        "planner",
        text("{\"targets\": [{\"file\": \"src/slugify.js\", \"test_file\": \"test/slugify.test.js\"}], \"reason\": \"slugify() makes the slugs, and keeps every character but spaces\"}"),
    );
    llm.always(
        "artisan",
        if_prompt(
            "# Target: `src/clamp.js`",
            text(code("javascript", FIXED_CLAMP)),
            if_prompt(
                "# Target: `src/slugify.js`",
                text(code("javascript", FIXED_SLUGIFY)),
                text(code("javascript", FIXED_WORD_COUNT)),
            ),
        ),
    );
    llm.always(
        "critic",
        text("The change does what the task asks and nothing else.\nVERDICT: APPROVE"),
    );
}

/// `ralph-loop` in `dir` with no server to reach and no key: only a recording can answer.
fn offline(dir: &Path) -> assert_cmd::Command {
    let mut cmd = assert_cmd::Command::cargo_bin("ralph-loop").unwrap();
    isolate(&mut cmd, dir);
    cmd.env("OPENAI_BASE_URL", "http://127.0.0.1:9/v1");
    cmd
}

/// The example's tree committed, as the agent wants it.
fn committed(dir: &Path) {
    git(dir, &["config", "user.name", "Test"]);
    git(dir, &["config", "user.email", "test@example.com"]);
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", "init"]);
}

fn batch_entries(dir: &Path) -> BTreeMap<String, Value> {
    let report = super::batch::batch_report(dir);
    report["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["name"].as_str().unwrap().to_string(), e.clone()))
        .collect()
}

/// The example's own tests, all of them: every spec's fix is in place.
fn all_tests_pass(dir: &Path) {
    node_tests_pass(dir, "test/");
}

/// The agent's work on the three specs, replayed from `tape`: one commit each, in queue order.
fn agent_replays(dir: &Path, tape: &str, parallel: &str) -> BTreeMap<String, (f64, u64)> {
    committed(dir);
    offline(dir)
        .args(["inbox", "add"])
        .args(SPECS)
        .assert()
        .code(0);
    let stderr = stderr_at(
        offline(dir).args(["agent", "--parallel", parallel, "--replay", tape]),
        0,
    );
    assert_eq!(statuses(dir), ["done", "done", "done"], "{stderr}");
    assert_eq!(
        subjects(dir),
        [
            "ralph: complete slugs-drop-punctuation",
            "ralph: complete fix-clamp",
            "ralph: complete count-words",
            "init"
        ]
    );
    assert_eq!(git(dir, &["status", "--porcelain"]), "");
    all_tests_pass(dir);
    records(dir)
        .iter()
        .map(|r| {
            let progress = read_json(&dir.join(format!(
                ".ralph/agent/{}/progress.json",
                r["id"].as_str().unwrap()
            )));
            let targets = progress["targets"].as_array().unwrap();
            let cost = progress["plan"]["cost_usd"].as_f64().unwrap()
                + targets
                    .iter()
                    .map(|t| t["cost_usd"].as_f64().unwrap())
                    .sum::<f64>();
            let iterations = targets
                .iter()
                .map(|t| t["iterations"].as_u64().unwrap())
                .sum();
            (r["spec"].as_str().unwrap().to_string(), (cost, iterations))
        })
        .collect()
}

/// A batch at `--parallel 3` records its three specs' runs, the planning of one of them too,
/// into one file, each exchange named by its spec; an agent at `--parallel 2`, offline, replays
/// that file to the same fixes, iterations and costs, whatever order its runs go in.
/// With `RALPH_WRITE_EXAMPLE_TAPE=1` the recording becomes the example's bundled one.
#[tokio::test(flavor = "multi_thread")]
async fn a_batch_records_one_tape_an_agent_replays_in_any_order() {
    let live = example("specs-js");
    let p = live.path();
    let llm = MockLlm::start().await;
    example_models(&llm);
    let tape = p.join("session.jsonl");
    ralph_with_chaos(p, &llm)
        .args([
            "batch",
            "--parallel",
            "3",
            "--record",
            tape.to_str().unwrap(),
        ])
        .args(SPECS)
        .assert()
        .code(0);
    let entries = batch_entries(p);
    assert!(entries.values().all(|e| e["status"] == "success"));
    all_tests_pass(p);

    let lines: Vec<Value> = std::fs::read_to_string(&tape)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).expect("one whole exchange per line"))
        .collect();
    assert_eq!(lines.len(), llm.requests().await.len());
    for spec in SPECS {
        let of = |role: &str| {
            lines
                .iter()
                .filter(|e| e["run"] == spec && e["role"] == role)
                .count()
        };
        assert_eq!(of("artisan"), 1, "{spec}");
        assert_eq!(of("critic"), 1, "{spec}");
        // The Librarian's model plans the spec that names no targets (the runs' context is
        // small enough to need no model).
        let planned = usize::from(spec.contains("slugs"));
        assert_eq!(of("librarian"), planned, "{spec}");
    }
    if std::env::var_os("RALPH_WRITE_EXAMPLE_TAPE").is_some() {
        std::fs::copy(&tape, BUNDLED).unwrap();
    }

    let replayed = example("specs-js");
    let agent = agent_replays(replayed.path(), tape.to_str().unwrap(), "2");
    for spec in SPECS {
        let batch = &entries[spec];
        let (cost, iterations) = agent[spec];
        assert!(
            (batch["cost_usd"].as_f64().unwrap() - cost).abs() < 1e-9,
            "{spec}"
        );
        assert_eq!(batch["iterations"].as_u64().unwrap(), iterations, "{spec}");
    }
    assert!(
        cost_of(&agent) > 0.0,
        "a replay costs what the live run did"
    );
}

fn cost_of(runs: &BTreeMap<String, (f64, u64)>) -> f64 {
    runs.values().map(|(cost, _)| cost).sum()
}

/// docs/batch.md's offline example: the bundled spec folder, fixed from its bundled recording
/// by a batch and by the agent, with no server and no key.
#[test]
fn the_example_spec_folder_runs_offline_from_its_recording() {
    let dir = example("specs-js");
    let p = dir.path();
    let shown = stderr_at(
        offline(p).args(["batch", "--replay", BUNDLED]).args(SPECS),
        0,
    );
    assert!(
        shown.contains("3 of 3 entries succeeded (0 failed, 0 skipped), 3 iterations"),
        "the summary says what was done\n{shown}"
    );
    let entries = batch_entries(p);
    for spec in SPECS {
        assert_eq!(entries[spec]["status"], "success", "{spec}");
        assert_eq!(entries[spec]["iterations"], 1, "{spec}");
    }
    all_tests_pass(p);

    let agent = example("specs-js");
    let runs = agent_replays(agent.path(), BUNDLED, "1");
    assert!(cost_of(&runs) > 0.0);

    // A recording that is not there stops the batch before anything runs.
    let missing = example("specs-js");
    let err = stderr_at(
        offline(missing.path())
            .args(["batch", "--replay", "no-such.jsonl"])
            .args(SPECS),
        2,
    );
    assert!(err.contains("no-such.jsonl"), "{err}");
    assert!(!missing.path().join(".ralph").exists());
}
