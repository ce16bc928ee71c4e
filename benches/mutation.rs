//! Mutation testing's wall time, ralph-loop's way beside the tool run alone, on the bundled
//! one-file fixtures with their fixes (the lines changed from the fixture's bug):
//!
//! - **ralph-loop**: `chaos::mutation::run`, as Chaos calls it: the scratch copy, the tool's
//!   configuration written, the mutants of the changed lines run (mutmut: those of the functions
//!   the lines touch, by name pattern; StrykerJS: `mutate` ranges, in place in the copy), the
//!   report read into the one schema;
//! - **tool alone**: the same tool as a user would run it on a copy of the project: `stryker run`
//!   (command runner, its own sandbox, the same ranges), `python3 -m mutmut run` (the file).
//!
//! Alternating, `RALPH_BENCH_RUNS` (default 5) runs each; prints the medians and their ratio,
//! and writes `target/bench-mutation.json`. Needs StrykerJS in `tests/node-tools` and mutmut
//! (scripts/setup-deps installs both). Run with `cargo bench --bench mutation`.

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
use support::{FIXED_JS, FIXED_PY};

struct Fixture {
    name: &'static str,
    dir: &'static str,
    target: &'static str,
    fixed: &'static str,
    language: Language,
    unit: &'static str,
    /// The lines the fix changed from the fixture's bug.
    lines: Vec<[u32; 2]>,
}

fn fixtures() -> Vec<Fixture> {
    vec![
        Fixture {
            name: "py",
            dir: "py-median",
            target: "median.py",
            fixed: FIXED_PY,
            language: Language::Python,
            unit: "python3 -m pytest -q",
            lines: vec![[2, 3], [5, 8]],
        },
        Fixture {
            name: "js",
            dir: "js-median",
            target: "src/median.js",
            fixed: FIXED_JS,
            language: Language::JavaScript,
            unit: "node --test test/",
            lines: vec![[1, 4]],
        },
    ]
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
    assert!(status.success(), "{} alone failed", f.name);
    took
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
    let out: PathBuf = target_dir().join("bench-mutation.json");
    std::fs::write(&out, serde_json::to_string_pretty(&results).unwrap()).unwrap();
    println!("mutation: wrote {}", out.display());
}
