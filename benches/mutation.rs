//! Mutation testing's wall time, ralph-loop's way beside the tool run alone, on the bundled
//! one-file fixtures with their fixes (the lines changed from the fixture's bug):
//!
//! - **ralph-loop**: `chaos::mutation::run`, as Chaos calls it: the scratch copy, the tool's
//!   configuration written, the mutants of the changed lines run (mutmut: those of the functions
//!   the lines touch, by name pattern; StrykerJS: `mutate` ranges, in place in the copy), the
//!   report read into the one schema; cargo-mutants: the mutants listed, those on the changed
//!   lines chosen by name, tested in place in the copy);
//! - **tool alone**: the same tool as a user would run it on a copy of the project: `stryker run`
//!   (command runner, its own sandbox, the same ranges), `python3 -m mutmut run` (the file),
//!   `cargo mutants --in-diff` (the fix's diff, in its own copy).
//!
//! Alternating, `RALPH_BENCH_RUNS` (default 5) runs each; prints the medians and their ratio.
//! `RALPH_BENCH_FIXTURES` (`py,js,rs` by default) picks the fixtures.
//!
//! Then **the whole Chaos phase** (issue 15: within 60 s on a one-file fixture, mutation
//! included), whole-process: the `ralph-loop` binary fixes the fixture's bug against a scripted
//! model server with `success_criteria.mutation_score_min: 90`; Chaos's first round finds
//! nothing, the mutation run leaves survivors below the gate, Chaos's second file kills them and
//! the survivors run again (the Rust fixture's gate is 95 %: its tests leave one survivor of
//! fifteen). Timed from the `adversarial` phase's first event to the process's
//! exit, `RALPH_BENCH_PHASE_RUNS` (default 3) runs. Results go to `target/bench-mutation.json`. Needs StrykerJS in `tests/node-tools` and mutmut
//! and cargo-mutants (scripts/setup-deps installs them). Run with `cargo bench --bench mutation`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[allow(dead_code)]
#[path = "common/process.rs"]
mod process;
#[allow(dead_code)]
#[path = "../tests/suite/support.rs"]
mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use process::{knob, runtime, target_dir};
use ralph_actors::ports::chaos::MutationRequest;
use ralph_loop::chaos::mutation::{self, Job};
use ralph_loop::process::groups::ProcessGroups;
use ralph_loop::runner::language::Language;
use serde_json::json;
use std::io::BufRead;

use process::RALPH;
use support::{code, text, MockLlm, FIXED_JS, FIXED_PY, FIXED_RS};

struct Fixture {
    name: &'static str,
    dir: &'static str,
    target: &'static str,
    fixed: &'static str,
    language: Language,
    unit: &'static str,
    /// The lines the fix changed from the fixture's bug.
    lines: Vec<[u32; 2]>,
    /// The whole phase's `mutation_score_min`: above what the fixture's tests reach.
    gate: u32,
}

fn fixtures() -> Vec<Fixture> {
    let chosen = std::env::var("RALPH_BENCH_FIXTURES").unwrap_or_default();
    let all = vec![
        Fixture {
            name: "py",
            dir: "py-median",
            target: "median.py",
            fixed: FIXED_PY,
            language: Language::Python,
            unit: "python3 -m pytest -q",
            lines: vec![[2, 3], [5, 8]],
            gate: 90,
        },
        Fixture {
            name: "js",
            dir: "js-median",
            target: "src/median.js",
            fixed: FIXED_JS,
            language: Language::JavaScript,
            unit: "node --test test/",
            lines: vec![[1, 4]],
            gate: 90,
        },
        Fixture {
            name: "rs",
            dir: "rs-median",
            target: "src/lib.rs",
            fixed: FIXED_RS,
            language: Language::Rust,
            unit: "cargo test",
            lines: vec![[3, 5], [8, 13]],
            gate: 95,
        },
    ];
    all.into_iter()
        .filter(|f| chosen.is_empty() || chosen.split(',').any(|c| c == f.name))
        .collect()
}

/// A fresh project: the fixture with its fix, `node_modules` linked.
fn project(f: &Fixture) -> tempfile::TempDir {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::Builder::new()
        .prefix("ralph-bench-mutation-")
        .tempdir()
        .unwrap();
    let status = Command::new("cp")
        .arg("-r")
        .arg(root.join("tests/fixtures").join(f.dir).join("."))
        .arg(dir.path())
        .status()
        .unwrap();
    assert!(status.success());
    std::fs::write(dir.path().join(f.target), f.fixed).unwrap();
    if f.language == Language::JavaScript {
        std::os::unix::fs::symlink(
            root.join("tests/node-tools/node_modules"),
            dir.path().join("node_modules"),
        )
        .unwrap();
    }
    dir
}

/// ralph-loop's mutation run; its mutants.
fn ralph(rt: &tokio::runtime::Runtime, f: &Fixture) -> (Duration, usize) {
    let dir = project(f);
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let target = root.join(f.target);
    let unit = |_: &Path| f.unit.to_string();
    let suite = |file: &Path, _: &Path| format!("node --test {}", file.display());
    let request = MutationRequest {
        lines: f.lines.clone(),
        rounds: Vec::new(),
        only: Vec::new(),
        timeout: Duration::from_secs(300),
    };
    let groups = ProcessGroups::new();
    let krate = (f.language == Language::Rust)
        .then(|| ralph_loop::chaos::cargo::RustCrate::of(&target).unwrap());
    let job = Job {
        language: f.language,
        root: &root,
        cwd: &root,
        target: &target,
        unit_command: &unit,
        suites: Vec::new(),
        suite_command: &suite,
        env: Vec::new(),
        request: &request,
        krate: krate.as_ref(),
        memory_limit_mb: None,
        groups: &groups,
    };
    let started = Instant::now();
    let run = rt
        .block_on(mutation::run(job, Default::default()))
        .expect("mutation run");
    (started.elapsed(), run.mutants.len())
}

/// The tool as a user runs it on a copy of the project.
fn alone(f: &Fixture) -> Duration {
    let dir = project(f);
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut cmd = match f.language {
        Language::Python => {
            std::fs::write(
                dir.path().join("setup.cfg"),
                format!("[mutmut]\nsource_paths =\n    {}\n", f.target),
            )
            .unwrap();
            let mut c = Command::new("python3");
            c.args(["-m", "mutmut", "run"]);
            c
        }
        Language::Rust => {
            // The fix's diff from the fixture's bug, as `git diff` would give it.
            let bug = root.join("tests/fixtures").join(f.dir).join(f.target);
            let out = Command::new("diff")
                .args(["-u", "--label", "a/src/lib.rs", "--label", "b/src/lib.rs"])
                .arg(&bug)
                .arg(dir.path().join(f.target))
                .output()
                .unwrap();
            std::fs::write(dir.path().join("fix.diff"), out.stdout).unwrap();
            let mut c = Command::new("cargo");
            c.args(["mutants", "--in-diff", "fix.diff", "--no-shuffle"]);
            c
        }
        _ => {
            let mutate: Vec<String> = f
                .lines
                .iter()
                .map(|[a, b]| format!("{}:{a}-{b}", f.target))
                .collect();
            let config = json!({
                "testRunner": "command",
                "commandRunner": { "command": f.unit },
                "mutate": mutate,
                "reporters": ["json"],
                "concurrency": std::thread::available_parallelism().map_or(1, |n| n.get()).min(4),
                "logLevel": "warn",
            });
            std::fs::write(dir.path().join("stryker.config.json"), config.to_string()).unwrap();
            let mut c = Command::new(root.join("tests/node-tools/node_modules/.bin/stryker"));
            c.arg("run");
            c
        }
    };
    let started = Instant::now();
    let status = cmd
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    let took = started.elapsed();
    // cargo-mutants exits 2 when a mutant survives.
    let ok = status.success() || (f.language == Language::Rust && status.code() == Some(2));
    assert!(ok, "{} alone failed", f.name);
    took
}

/// Chaos's scripted files per fixture: a first round that finds nothing, then a file that kills
/// the survivors the fixture's tests leave.
fn chaos_files(f: &Fixture) -> [String; 2] {
    match f.language {
        Language::Rust => [
            "use rs_median::median;\n\n#[test]\nfn negative_values() {\n    assert_eq!(median(&[-3.0, -1.0, -2.0]), Some(-2.0));\n}\n".into(),
            "use rs_median::median;\n\n#[test]\nfn a_single_value() {\n    assert_eq!(median(&[7.0]), Some(7.0));\n}\n".into(),
        ],
        Language::Python => [
            "from median import median\n\n\ndef test_a_single_value():\n    assert median([7]) == 7\n".into(),
            "import pytest\n\nfrom median import median\n\n\ndef test_the_message():\n    with pytest.raises(ValueError, match=\"^median of an empty list$\"):\n        median([])\n".into(),
        ],
        _ => {
            let header = "const test = require('node:test');\nconst assert = require('node:assert');\nconst { median } = require('../../../src/median');\n";
            [
                format!("{header}\ntest('a single value', () => {{\n  assert.strictEqual(median([7]), 7);\n}});\n"),
                format!("{header}\ntest('odd length', () => {{\n  assert.strictEqual(median([3, 1, 2]), 2);\n}});\n\ntest('even length', () => {{\n  assert.strictEqual(median([4, 1, 3, 2]), 2.5);\n}});\n"),
            ]
        }
    }
}

/// One whole run with Chaos and a mutation gate: the Chaos phase's wall time, and the
/// mutation runs' share of it.
fn phase(rt: &tokio::runtime::Runtime, f: &Fixture) -> (f64, f64) {
    let dir = project(f);
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // The fixture's bug back, so that the run fixes it first.
    std::fs::copy(
        root.join("tests/fixtures").join(f.dir).join(f.target),
        dir.path().join(f.target),
    )
    .unwrap();
    if f.language == Language::JavaScript {
        // The fixture's tests reduced to the one the bug fails: weak enough to leave survivors.
        std::fs::write(
            dir.path().join("test/median.test.js"),
            "const test = require('node:test');\nconst assert = require('node:assert');\nconst { median } = require('../src/median');\n\ntest('sorts numbers numerically', () => {\n  assert.strictEqual(median([10, 9, 1]), 9);\n});\n",
        )
        .unwrap();
    }
    support::write(
        dir.path(),
        "ralph.config.yaml",
        &format!(
            "success_criteria:\n  mutation_score_min: {}\nchaos:\n  max_rounds: 2\n",
            f.gate
        ),
    );
    let llm = rt.block_on(MockLlm::start());
    let lang = match f.language {
        Language::Python => "python",
        Language::Rust => "rust",
        _ => "javascript",
    };
    let [quiet, kill] = chaos_files(f);
    llm.helpful()
        .always("artisan", text(code(lang, f.fixed)))
        .script(
            "chaos",
            [
                text(format!("Nothing breaks.\n\n```{lang}\n{quiet}```\n")),
                text(format!("These kill them.\n\n```{lang}\n{kill}```\n")),
            ],
        );
    // `HOME` moves to the project: cargo and rustup keep their own homes.
    let home = std::env::var("HOME").unwrap();
    let keep = |var: &str, default: &str| {
        std::env::var(var).unwrap_or_else(|_| format!("{home}/{default}"))
    };
    let mut child = Command::new(&*RALPH)
        .env("CARGO_HOME", keep("CARGO_HOME", ".cargo"))
        .env("RUSTUP_HOME", keep("RUSTUP_HOME", ".rustup"))
        .env("OPENAI_BASE_URL", llm.base_url())
        .env("OPENAI_API_KEY", "sk-bench")
        .env("HOME", dir.path())
        .env_remove("RUST_LOG")
        .args([f.target, "--output", "jsonl"])
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut started = None;
    for line in std::io::BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        if started.is_none() && line.contains("\"adversarial\"") {
            started = Some(Instant::now());
        }
    }
    let status = child.wait().unwrap();
    let took = started.expect("a Chaos phase").elapsed().as_secs_f64();
    let report = support::read_json(&support::session_dir(dir.path()).join("report.json"));
    assert!(status.success(), "the phase's run must succeed: {report}");
    let mutation_ms = report["adversarial"]["mutation"]["duration_ms"]
        .as_f64()
        .unwrap();
    (took, mutation_ms / 1000.0)
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(|a, b| a.total_cmp(b));
    xs[xs.len() / 2]
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let runs = knob("RALPH_BENCH_RUNS", 5);
    let rt = runtime();
    let mut results = Vec::new();
    println!("fixture  ralph-loop s  tool alone s  ratio  mutants");
    for f in fixtures() {
        // One untimed run of each warms the caches (node's, Python's bytecode).
        ralph(&rt, &f);
        alone(&f);
        let (mut ours, mut theirs, mut count) = (Vec::new(), Vec::new(), 0);
        for _ in 0..runs {
            let (t, n) = ralph(&rt, &f);
            ours.push(t.as_secs_f64());
            count = n;
            theirs.push(alone(&f).as_secs_f64());
        }
        let (a, b) = (median(ours.clone()), median(theirs.clone()));
        println!(
            "{:<8} {:>12.2}  {:>12.2}  {:>5.2}  {count}",
            f.name,
            a,
            b,
            a / b
        );
        results.push(json!({
            "fixture": f.name, "ralph_s": ours, "alone_s": theirs,
            "ralph_median_s": a, "alone_median_s": b, "ratio": a / b, "mutants": count,
        }));
    }
    let phase_runs = knob("RALPH_BENCH_PHASE_RUNS", 3);
    println!("fixture  Chaos phase s  of which mutation s  (target: under 60 s)");
    for f in fixtures() {
        let runs: Vec<(f64, f64)> = (0..phase_runs).map(|_| phase(&rt, &f)).collect();
        let (total, mutation) = (
            median(runs.iter().map(|r| r.0).collect()),
            median(runs.iter().map(|r| r.1).collect()),
        );
        println!("{:<8} {total:>13.2}  {mutation:>19.2}", f.name);
        results.push(json!({
            "fixture": f.name, "chaos_phase_s": runs.iter().map(|r| r.0).collect::<Vec<_>>(),
            "mutation_s": runs.iter().map(|r| r.1).collect::<Vec<_>>(),
            "chaos_phase_median_s": total, "mutation_median_s": mutation,
        }));
    }
    let out: PathBuf = target_dir().join("bench-mutation.json");
    std::fs::write(&out, serde_json::to_string_pretty(&results).unwrap()).unwrap();
    println!("mutation: wrote {}", out.display());
}
