//! In-process micro-benchmarks of the hot parts of an iteration: the entropy fingerprint of a
//! failing run, code extraction from a reply, prompt rendering, and token counting. Run with
//! `cargo bench --bench core`. See `docs/performance.md`.

// A benchmark that cannot set up has nothing to measure: panicking with a message is right here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "common/env.rs"]
mod env;

use std::hint::black_box;
use std::time::Instant;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ralph_actors::policy::entropy::fingerprint;
use ralph_actors::ports::llm::{ChatMessage, TokenCounter};
use ralph_actors::prompt::reply::extract_code;
use ralph_actors::prompt::templates::Templates;
use ralph_actors::role::Role;
use ralph_actors::schema::test_run::TestRun;
use ralph_loop::providers::tokens::TiktokenCounter;
use serde_json::{json, Value};

/// A pytest-style traceback of about 1.2 KB, with what the breaker normalises away: absolute
/// paths, line numbers, addresses, durations, timestamps.
fn traceback(i: usize) -> String {
    format!(
        "_____________________________ test_case_{i} ______________________________\n\
         \n\
         values = [{i}, 3, 1, 2]\n\
         \n\
         \x20   def test_case_{i}(values):\n\
         >       assert median(values) == {i}.5\n\
         E       AssertionError: assert {i} == {i}.5\n\
         E        +  where {i} = median([{i}, 3, 1, 2])\n\
         \n\
         /home/runner/work/project/tests/test_median_{i}.py:{line}: AssertionError\n\
         ----------------------------- Captured log call ------------------------------\n\
         2026-11-22T07:05:{sec:02}.{i:03}Z DEBUG median called with <list object at 0x7f{i:010x}>\n\
         2026-11-22T07:05:{sec:02}.{i:03}Z DEBUG sorted in 0.{i:03}s, took {i} ms\n\
         \x20 File \"/home/runner/work/project/src/median.py\", line {line}, in median\n\
         \x20   return ordered[mid]\n\
         \x20 File \"/usr/lib/python3.12/site-packages/_pytest/python.py\", line 194, in pytest_pyfunc_call\n\
         \x20   result = testfunction(**testargs)\n\
         \x20 File \"/usr/lib/python3.12/site-packages/pluggy/_callers.py\", line 103, in _multicall\n\
         \x20   res = hook_impl.function(*args)\n\
         at Object.<anonymous> (/home/runner/work/project/src/median.js:{line}:17)\n\
         at Module._compile (node:internal/modules/cjs/loader:1554:14)\n\
         duration_ms: {i}.{line}\n\
         Expected values to be strictly equal:\n\n{i} !== {i}.5\n\n",
        line = 10 + i,
        sec = i % 60,
    )
}

/// A failed run whose failure text is about 16 KB.
fn failing_run() -> TestRun {
    let mut output = String::from("============================= test session starts ==============================\nplatform linux -- Python 3.12.3, pytest-8.3.4, pluggy-1.5.0\nrootdir: /home/runner/work/project\ncollected 40 items\n\ntests/test_median.py ....FFFFFFFFFFFFF                                [100%]\n\n=================================== FAILURES ===================================\n");
    let mut tests = Vec::new();
    let mut i = 0;
    while output.len() < 16 * 1024 - 1500 {
        let tb = traceback(i);
        output.push_str(&tb);
        tests.push(json!({"id": format!("tests/test_median_{i}.py::test_case_{i}"), "status": "fail", "message": tb}));
        i += 1;
    }
    output.push_str(&format!(
        "=========================== {i} failed, 27 passed in 0.84s ===========================\n"
    ));
    serde_json::from_value(json!({
        "schema_version": 1,
        "command": "python3 -m pytest -q",
        "status": "failed",
        "exit_code": 1,
        "duration_ms": 840,
        "parsed": true,
        "framework": "pytest",
        "totals": {"passed": 27, "failed": i, "skipped": 0},
        "tests": tests,
        "output": output,
        "output_truncated": false,
    }))
    .expect("a TestRun")
}

/// A source file of about `size` bytes.
fn source(size: usize) -> String {
    let mut s = String::from("'use strict';\n\n");
    let mut i = 0;
    while s.len() < size {
        s.push_str(&format!(
            "/** Helper {i}: the median of a slice, numerically. */\nfunction helper{i}(values) {{\n  const ordered = [...values].sort((a, b) => a - b);\n  const mid = Math.floor(ordered.length / 2);\n  return ordered.length % 2 ? ordered[mid] : (ordered[mid - 1] + ordered[mid]) / 2;\n}}\n\n"
        ));
        i += 1;
    }
    s
}

/// An Artisan reply of about 10 KB: prose, the whole file in one block, a closing paragraph.
fn artisan_reply() -> String {
    format!(
        "Here is the whole new file. I copied the input before sorting, sorted numerically and averaged the middle pair.\n\n```javascript\n{}```\n\nThe public interface is unchanged; `median` no longer mutates its argument.\n",
        source(10 * 1024 - 300)
    )
}

/// What the Artisan's template is rendered with: the shape of `ContextBundle` plus `critique`.
fn artisan_vars() -> Value {
    let run = failing_run();
    json!({
        "iteration": 2,
        "target": {"path": "src/median.js", "content": source(4 * 1024), "language": "javascript"},
        "test_file": {"path": "test/median.test.js", "content": source(3 * 1024)},
        "instructions": "Make median handle even-length inputs and never mutate its argument.",
        "manifest": {"path": "package.json", "content": "{\n  \"name\": \"js-median\",\n  \"scripts\": {\"test\": \"node --test test/\"}\n}\n"},
        "test_command": "node --test test/",
        "last_results": {
            "summary": "13 failed, 27 passed",
            "passed": false,
            "failing": run.failing_ids(),
            "output": &run.output[run.output.len() - 8 * 1024..],
        },
        "analysis": "`median` sorts lexicographically and in place; copy the array, sort with a numeric comparator and average the two middle values when the length is even.",
        "critique": null,
    })
}

/// A 20 KB prompt: a system message and a user message, code and test output.
fn prompt_20k() -> Vec<ChatMessage> {
    let run = failing_run();
    let mut user = source(10 * 1024);
    user.push_str(&run.output);
    user.truncate(20 * 1024 - 600);
    vec![
        ChatMessage::system("You are the Artisan of ralph-loop, a team of models that fixes one source file until its tests pass. Reply with the whole new content of the target file in exactly one fenced code block.".repeat(2)),
        ChatMessage::user(user),
    ]
}

/// The process's resident memory and its peak so far, in KiB.
#[derive(Clone, Copy)]
struct Resident {
    rss: u64,
    hwm: u64,
}

impl Resident {
    fn now() -> Self {
        Self {
            rss: env::status_kib("VmRSS:"),
            hwm: env::status_kib("VmHWM:"),
        }
    }
}

/// Prints what a one-off step took, and the resident memory and peak before and after it.
fn print_one_off(label: &str, took: std::time::Duration, before: Resident, after: Resident) {
    let mib = |kib: u64| kib as f64 / 1024.0;
    println!(
        "{label}: {:.1} ms, resident {:.1} -> {:.1} MiB (+{:.1}), peak {:.1} -> {:.1} MiB",
        took.as_secs_f64() * 1000.0,
        mib(before.rss),
        mib(after.rss),
        mib(after.rss.saturating_sub(before.rss)),
        mib(before.hwm),
        mib(after.hwm)
    );
}

fn bench_fingerprint(c: &mut Criterion) {
    let run = failing_run();
    let mut g = c.benchmark_group("entropy");
    g.throughput(Throughput::Bytes(run.output.len() as u64));
    g.bench_function("fingerprint_16k_failure", |b| {
        b.iter(|| fingerprint(black_box(&run)))
    });
    g.finish();
}

fn bench_extract(c: &mut Criterion) {
    let reply = artisan_reply();
    assert!(extract_code(&reply).is_some());
    let mut g = c.benchmark_group("reply");
    g.throughput(Throughput::Bytes(reply.len() as u64));
    g.bench_function("extract_code_10k_reply", |b| {
        b.iter(|| extract_code(black_box(&reply)))
    });
    g.finish();
}

fn bench_render(c: &mut Criterion) {
    let templates = Templates::default();
    let vars = artisan_vars();
    let [_, user] = templates.render(Role::Artisan, &vars).expect("renders");
    let mut g = c.benchmark_group("prompt");
    g.throughput(Throughput::Bytes(user.content.len() as u64));
    g.bench_function("render_artisan", |b| {
        b.iter(|| templates.render(Role::Artisan, black_box(&vars)))
    });
    g.finish();
}

fn bench_tokens(c: &mut Criterion) {
    let counter = TiktokenCounter::new();
    let messages = prompt_20k();
    let bytes: usize = messages.iter().map(|m| m.content.len()).sum();
    // What a run's first exact count costs: `o200k_base` from the compact table in the binary.
    // Then, as the baseline, what building `tiktoken-rs`'s table (which runs used before issue
    // 18) costs; both outside criterion's loop, as only a process's first count pays them.
    let before = Resident::now();
    let t = Instant::now();
    let tokens = counter.count("openai/gpt-4.1", &messages);
    let first = t.elapsed();
    let after = Resident::now();
    print_one_off(
        "tokens/first_count (compact o200k table)",
        first,
        before,
        after,
    );
    let t = Instant::now();
    let bpe = tiktoken_rs::o200k_base().expect("bundled table");
    let build = t.elapsed();
    print_one_off(
        "tokens/tiktoken_o200k_build (baseline, one-off)",
        build,
        after,
        Resident::now(),
    );
    let tiktoken = |messages: &[ChatMessage]| -> usize {
        messages
            .iter()
            .map(|m| bpe.encode_ordinary(&m.content).len())
            .sum()
    };
    println!("tokens/count_20k_prompt: {bytes} bytes, {tokens} tokens");
    let mut g = c.benchmark_group("tokens");
    g.throughput(Throughput::Bytes(bytes as u64));
    g.bench_function("count_20k_prompt", |b| {
        b.iter(|| counter.count(black_box("openai/gpt-4.1"), black_box(&messages)))
    });
    g.bench_function("count_20k_prompt_tiktoken", |b| {
        b.iter(|| tiktoken(black_box(&messages)))
    });
    g.finish();
}

criterion_group!(
    benches,
    bench_fingerprint,
    bench_extract,
    bench_render,
    bench_tokens
);
criterion_main!(benches);
