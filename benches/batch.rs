//! Whole-process benchmarks of batch runs and the inbox, on the release `ralph-loop`:
//!
//! 1. **The batch's own overhead per entry**: `ralph-loop batch` over N specs at `--parallel 1`,
//!    its wall time less the sum of its runs' own times (`duration_ms` of each session), per
//!    entry; beside it the same for N single `ralph-loop` runs of the same specs' targets
//!    (a process each: start-up, planning, the session's files), the baseline a batch saves.
//! 2. **Model-bound throughput**: 100 queued specs against a mock with a fixed latency, at
//!    `--parallel 1` and `--parallel 4`; the wall-time ratio (near 4 when the model is what
//!    takes the time).
//!    The same 100 specs queued in the inbox and worked through by `ralph-loop agent` at
//!    `--parallel 1` and `--parallel 4` (each spec committed; at 4, each in a git worktree).
//! 3. **`inbox list` on 10,000 records**, whole process, beside `ralph-loop --version`.
//!
//! The entries' tests are a `grep` of the fixed line (a few ms), so the model's latency is what
//! the runs wait on. Run with `cargo bench --bench batch`; it prints a table and writes
//! `target/bench-batch.json`. Knobs: `RALPH_BENCH_SPECS` (100), `RALPH_BENCH_LATENCY_MS` (200),
//! `RALPH_BENCH_ENTRIES` (overhead entries, 20), `RALPH_BENCH_LISTS` (inbox list runs, 30).
//! Speed is measured here, never asserted.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "common/env.rs"]
mod env;
#[path = "common/process.rs"]
mod process;
#[allow(dead_code)]
#[path = "../tests/suite/support.rs"]
mod support;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use process::{knob, runtime, target_dir, NO_CHAOS, RALPH};
use serde_json::{json, Value};
use support::{code, Answer, MockLlm, FIXED_PY};

fn main() {
    if !env::benchmarking("batch") {
        return;
    }
    let specs = knob("RALPH_BENCH_SPECS", 100);
    let entries = knob("RALPH_BENCH_ENTRIES", 20);
    let lists = knob("RALPH_BENCH_LISTS", 30);
    let latency = Duration::from_millis(knob("RALPH_BENCH_LATENCY_MS", 200) as u64);
    let rt = runtime();
    eprintln!("batch: {}", *RALPH);

    eprintln!("batch: overhead, {entries} entries at --parallel 1 (latency 1 ms) and {entries} single runs");
    let quick = Duration::from_millis(1);
    let (batch, singles) = overhead(&rt, entries, quick);

    eprintln!("batch: {specs} specs, model latency {latency:?}, --parallel 1 then 4");
    let p1 = throughput(&rt, specs, latency, 1);
    let p4 = throughput(&rt, specs, latency, 4);
    eprintln!("batch: the same {specs} specs queued, `agent` at --parallel 1 then 4");
    let a1 = agent(&rt, specs, latency, 1);
    let a4 = agent(&rt, specs, latency, 4);

    eprintln!("batch: `inbox list` on 10,000 records, {lists} runs, and `--version`");
    let (list, version) = inbox_list(lists);

    let results = json!({
        "overhead_per_entry_ms": {
            "batch": batch,
            "single_runs": singles,
            "entries": entries,
        },
        "throughput": parallel(specs, latency, p1, p4),
        "agent": parallel(specs, latency, a1, a4),
        "inbox_list_10000_ms": { "list": list, "version": version },
    });
    eprintln!("{}", serde_json::to_string_pretty(&results).unwrap());
    let out = target_dir().join("bench-batch.json");
    match std::fs::write(&out, serde_json::to_string_pretty(&results).unwrap()) {
        Ok(()) => eprintln!("batch: wrote {}", out.display()),
        Err(e) => eprintln!("batch: cannot write {}: {e}", out.display()),
    }
}

/// One parallelism figure: `specs` specs at `latency` per model call, run one at a time (`p1`)
/// and four at a time (`p4`), and how much faster four were.
fn parallel(specs: usize, latency: Duration, p1: Value, p4: Value) -> Value {
    let wall_ratio = p1["wall_ms"].as_f64().unwrap() / p4["wall_ms"].as_f64().unwrap();
    json!({
        "specs": specs,
        "latency_ms": latency.as_millis() as u64,
        "parallel_1": p1,
        "parallel_4": p4,
        "wall_ratio": wall_ratio,
    })
}

/// A project of `n` broken medians, each with a spec whose test is a `grep` of the fix.
fn project(n: usize) -> tempfile::TempDir {
    let dir = support::fixture("py-median");
    let p = dir.path();
    let broken = std::fs::read_to_string(p.join("median.py")).unwrap();
    std::fs::create_dir(p.join("specs")).unwrap();
    for i in 0..n {
        support::write(p, &format!("median_{i}.py"), &broken);
        support::write(
            p,
            &format!("specs/median-{i}.md"),
            &format!("---\ntargets: [median_{i}.py]\ntest_command: grep -q 'mid - 1' median_{i}.py\nadversarial: false\n---\nFix the median.\n"),
        );
    }
    support::write(p, "ralph.config.yaml", "memory:\n  enabled: false\n");
    dir
}

fn mock(rt: &tokio::runtime::Runtime, latency: Duration) -> MockLlm {
    let llm = rt.block_on(MockLlm::start());
    let slow = |text: String| Answer::Slow {
        text,
        delay: latency,
    };
    llm.always("librarian", slow("Average the middle pair.".into()))
        .always(
            "critic",
            slow("The change is correct.\nVERDICT: APPROVE".into()),
        )
        .always("artisan", slow(code("python", FIXED_PY)));
    llm
}

fn ralph(dir: &Path, llm: &MockLlm) -> Command {
    let mut cmd = Command::new(&*RALPH);
    cmd.current_dir(dir)
        .env("HOME", dir)
        .env("OPENAI_BASE_URL", llm.base_url())
        .env("OPENAI_API_KEY", "sk-test-key")
        .env_remove("RUST_LOG")
        .env_remove("LD_LIBRARY_PATH")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    cmd
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn session_ms(dir: &Path, id: &str) -> f64 {
    let text =
        std::fs::read_to_string(dir.join(format!(".ralph/session-{id}/report.json"))).unwrap();
    let report: Value = serde_json::from_str(&text).unwrap();
    report["duration_ms"].as_f64().unwrap()
}

/// `ralph-loop batch` of the `n` specs in `dir` at `--parallel parallel`: its wall time (ms)
/// and its report.
fn batch(dir: &Path, llm: &MockLlm, n: usize, parallel: usize) -> (f64, Value) {
    let mut cmd = ralph(dir, llm);
    cmd.args([
        "batch",
        "--output",
        "json",
        "--parallel",
        &parallel.to_string(),
    ]);
    for i in 0..n {
        cmd.arg(format!("specs/median-{i}.md"));
    }
    let t = Instant::now();
    let out = cmd.output().expect("batch");
    let wall = ms(t.elapsed());
    (
        wall,
        serde_json::from_slice(&out.stdout).expect("the batch report"),
    )
}

/// Per entry: a batch's wall time less its runs' own, and the same for single runs.
fn overhead(rt: &tokio::runtime::Runtime, n: usize, latency: Duration) -> (Value, Value) {
    let dir = project(n);
    let llm = mock(rt, latency);
    let (wall, report) = batch(dir.path(), &llm, n, 1);
    assert_eq!(
        report["totals"]["succeeded"].as_u64(),
        Some(n as u64),
        "{report}"
    );
    let runs: f64 = report["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| session_ms(dir.path(), e["sessions"][0].as_str().unwrap()))
        .sum();
    let batch =
        json!({ "per_entry_ms": (wall - runs) / n as f64, "wall_ms": wall, "runs_ms": runs });

    let dir = project(n);
    let mut wall = 0.0;
    let mut runs = 0.0;
    for i in 0..n {
        let mut cmd = ralph(dir.path(), &llm);
        cmd.args(&*NO_CHAOS).args([
            &format!("median_{i}.py"),
            "--output",
            "json",
            "-t",
            &format!("grep -q 'mid - 1' median_{i}.py"),
        ]);
        let t = Instant::now();
        let out = cmd.output().expect("a run");
        wall += ms(t.elapsed());
        let report: Value = serde_json::from_slice(&out.stdout).expect("a report");
        runs += report["duration_ms"].as_f64().unwrap();
    }
    let singles =
        json!({ "per_entry_ms": (wall - runs) / n as f64, "wall_ms": wall, "runs_ms": runs });
    (batch, singles)
}

/// `n` specs at `--parallel p`: wall time and the batch's totals.
fn throughput(rt: &tokio::runtime::Runtime, n: usize, latency: Duration, parallel: usize) -> Value {
    let dir = project(n);
    let llm = mock(rt, latency);
    let (wall, report) = batch(dir.path(), &llm, n, parallel);
    json!({
        "wall_ms": wall,
        "succeeded": report["totals"]["succeeded"],
        "model_calls": rt.block_on(llm.requests()).len(),
    })
}

/// `n` specs queued in a committed project and worked through by `agent --parallel p`: wall
/// time, specs done and commits made.
fn agent(rt: &tokio::runtime::Runtime, n: usize, latency: Duration, parallel: usize) -> Value {
    let dir = project(n);
    let p = dir.path();
    let git = |args: &[&str]| {
        let ok = Command::new("git")
            .args(args)
            .current_dir(p)
            .stdout(Stdio::null())
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    };
    git(&["config", "user.name", "Bench"]);
    git(&["config", "user.email", "bench@example.com"]);
    git(&["add", "-A"]);
    git(&["commit", "-q", "-m", "init"]);
    let llm = mock(rt, latency);
    let mut add = ralph(p, &llm);
    add.args(["inbox", "add"]);
    for i in 0..n {
        add.arg(format!("specs/median-{i}.md"));
    }
    assert!(add.status().unwrap().success());
    // The worktrees go outside the project, as a user's do.
    let cache = tempfile::tempdir().unwrap();
    let t = Instant::now();
    let status = ralph(p, &llm)
        .args(["agent", "--parallel", &parallel.to_string()])
        .env("XDG_CACHE_HOME", cache.path())
        .status()
        .expect("agent");
    let wall = ms(t.elapsed());
    let inbox = std::fs::read_to_string(p.join(".ralph/inbox.jsonl")).unwrap();
    let log = Command::new("git")
        .args(["rev-list", "--count", "HEAD"])
        .current_dir(p)
        .output()
        .unwrap();
    let commits: u64 = String::from_utf8_lossy(&log.stdout).trim().parse().unwrap();
    json!({
        "wall_ms": wall,
        "exit": status.code(),
        "done": inbox.matches("\"status\":\"done\"").count(),
        "commits": commits - 1,
        "model_calls": rt.block_on(llm.requests()).len(),
    })
}

/// Median whole-process time of `inbox list` on 10,000 records, and of `--version`.
fn inbox_list(runs: usize) -> (Value, Value) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".ralph")).unwrap();
    let mut text = String::new();
    for i in 0..10_000 {
        let status = ["pending", "done", "failed", "done"][i % 4];
        text.push_str(&format!(
            "{{\"t\":\"inbox\",\"id\":\"q-{i:04x}\",\"spec\":\"specs/spec-{i}.md\",\"added_at\":\"2025-01-20T10:30:00Z\",\"status\":\"{status}\"}}\n"
        ));
    }
    std::fs::write(dir.path().join(".ralph/inbox.jsonl"), text).unwrap();
    let time = |args: &[&str]| -> Vec<f64> {
        (0..runs)
            .map(|_| {
                let t = Instant::now();
                let status = Command::new(&*RALPH)
                    .args(args)
                    .current_dir(dir.path())
                    .env("HOME", dir.path())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status()
                    .unwrap();
                assert!(status.success());
                ms(t.elapsed())
            })
            .collect()
    };
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        json!({ "median": v[v.len() / 2], "min": v[0], "max": v[v.len() - 1] })
    };
    let list = median(time(&["inbox", "list"]));
    let version = median(time(&["--version"]));
    (list, version)
}
