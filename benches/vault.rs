//! MemoryVault figures in a release build: top-5 recall over 10,000 recorded attempts (p50,
//! p99), insert throughput (one attempt per write, as a run records them, and in batches, as
//! `vault import` does), and memory. Run with `cargo bench --bench vault`; it prints a table
//! and writes `target/bench-vault.json`. See `docs/performance.md`.
//!
//! Baseline in the same run: an exhaustive cosine scan over the same 10,000 vectors held in
//! memory, which is the least any recall must cost.
//!
//! Knobs (environment): `RALPH_BENCH_ATTEMPTS` (default 10,000), `RALPH_BENCH_QUERIES` (default
//! 1,000), `RALPH_BENCH_SINGLE_WRITES` (default 300).

// A benchmark that cannot set up has nothing to measure: panicking with a message is right here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "common/env.rs"]
mod env;
#[path = "common/rng.rs"]
mod rng;

use std::time::{Duration, Instant};

use ralph_actors::memory::rank::cosine;
use ralph_actors::ports::memory::{Embedder, GuardedTexts};
use ralph_actors::schema::attempt::{FixAttempt, Origin};
use ralph_loop::vault::embed::HashedNgrams;
use ralph_loop::vault::store::table_name;
use ralph_loop::vault::{LanceStore, PROJECT_TABLE};
use rng::Rng;
use serde_json::json;

const ERRORS: &[&str] = &[
    "AssertionError: expected {a} to equal {b}",
    "TypeError: Cannot read properties of undefined (reading '{w}')",
    "ValueError: invalid literal for int() with base 10: '{w}'",
    "KeyError: '{w}'",
    "assertion `left == right` failed\n  left: {a}\n right: {b}",
    "ModuleNotFoundError: No module named '{w}'",
    "IndexError: list index out of range in {w}",
    "ZeroDivisionError: division by zero in {w}",
];
const WORDS: &[&str] = &[
    "median", "parse", "config", "user", "total", "price", "order", "token", "cache", "queue",
    "items", "score", "range", "limit", "graph", "node", "path", "index", "value", "field",
];

fn signature(rng: &mut Rng) -> String {
    let mut lines = Vec::new();
    for _ in 0..1 + rng.below(3) {
        let w = WORDS[rng.below(WORDS.len())];
        let test = format!("test_{}_{}", w, WORDS[rng.below(WORDS.len())]);
        let message = ERRORS[rng.below(ERRORS.len())]
            .replace("{a}", &rng.below(100).to_string())
            .replace("{b}", &rng.below(100).to_string())
            .replace("{w}", w);
        lines.push(format!("LOGIC {test}: {message}"));
    }
    lines.join("\n")
}

fn attempt(rng: &mut Rng, n: usize) -> FixAttempt {
    FixAttempt {
        id: format!("a{n}"),
        project_id: "bench".into(),
        signature: signature(rng),
        category: None,
        test_ids: vec![format!("tests/test_x.py::t{n}")],
        hypothesis: "Sort before taking the middle element; handle the empty list.".into(),
        diff: "--- a/x.py\n+++ b/x.py\n@@ -1,3 +1,4 @@\n def f(xs):\n-    return xs[0]\n+    ordered = sorted(xs)\n+    return ordered[len(ordered) // 2]\n".repeat(4),
        success: rng.below(3) != 0,
        timestamp_ms: 1_700_000_000_000 + n as i64,
        tokens: 1_000 + rng.below(5_000) as u64,
        cost_usd: 0.01,
        model: "anthropic/claude-sonnet-4-5".into(),
        language: "python".into(),
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1_000.0
}

/// Top-5 recall for `queries` stored signatures picked at random: search (50 candidates at 0.85)
/// and ranking, as the MemoryVault actor does. The store is opened anew, as a run opens it, and
/// its first search, which reads the table into memory, is reported on its own.
async fn recall(uri: &str, vectors: &[Vec<f32>], queries: usize, label: &str) -> serde_json::Value {
    let embedder = HashedNgrams::default();
    let store = LanceStore::open(uri, PROJECT_TABLE, &embedder.id(), embedder.dims())
        .await
        .unwrap();
    let t = Instant::now();
    store.search(&vectors[0], 50, 0.85).await.unwrap();
    let first = t.elapsed();
    eprintln!(
        "vault: first recall ({label}), reading {} rows: {:.1} ms",
        vectors.len(),
        ms(first)
    );
    let mut q = Rng(42);
    let probes: Vec<&Vec<f32>> = (0..queries)
        .map(|_| &vectors[q.below(vectors.len())])
        .collect();
    let mut times = Vec::with_capacity(queries);
    let mut found = 0;
    for probe in probes {
        let t = Instant::now();
        let hits = store.search(probe, 50, 0.85).await.unwrap();
        let ranked = ralph_actors::memory::rank::rank(
            hits.into_iter().map(|h| (h, Origin::Project)).collect(),
            5,
        );
        times.push(t.elapsed());
        found += ranked.len();
    }
    times.sort();
    eprintln!(
        "vault: recall ({label}): p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms, {:.1} recalled per query",
        ms(percentile(&times, 0.5)),
        ms(percentile(&times, 0.99)),
        ms(*times.last().unwrap()),
        found as f64 / queries as f64
    );
    json!({
        "first_recall_ms": ms(first),
        "p50_ms": ms(percentile(&times, 0.5)),
        "p90_ms": ms(percentile(&times, 0.9)),
        "p99_ms": ms(percentile(&times, 0.99)),
        "max_ms": ms(*times.last().unwrap()),
        "recalled_per_query": found as f64 / queries as f64,
    })
}

/// The same queries as LanceDB vector queries on the table (cosine, 50 candidates at 0.85, the
/// attempt's columns): what recall cost before the store kept its rows in memory.
async fn lance_queries(uri: &str, vectors: &[Vec<f32>], queries: usize) -> serde_json::Value {
    use futures::TryStreamExt;
    use lancedb::query::{ExecutableQuery, QueryBase, Select};
    let embedder = HashedNgrams::default();
    let db = lancedb::connect(uri).execute().await.unwrap();
    let table = db
        .open_table(table_name(PROJECT_TABLE, &embedder.id()))
        .execute()
        .await
        .unwrap();
    let columns: Vec<String> = table
        .schema()
        .await
        .unwrap()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .filter(|n| n != "vector")
        .collect();
    let mut q = Rng(42);
    let mut times = Vec::with_capacity(queries);
    for _ in 0..queries {
        let probe = &vectors[q.below(vectors.len())];
        let t = Instant::now();
        let batches: Vec<arrow::array::RecordBatch> = table
            .query()
            .nearest_to(probe.as_slice())
            .unwrap()
            .distance_type(lancedb::DistanceType::Cosine)
            .distance_range(None, Some(0.15))
            .select(Select::columns(&columns))
            .limit(50)
            .execute()
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        std::hint::black_box(&batches);
        times.push(t.elapsed());
    }
    baseline("LanceDB vector query", times)
}

/// Prints a baseline's p50 and p99 and returns them for the JSON report.
fn baseline(label: &str, mut times: Vec<Duration>) -> serde_json::Value {
    times.sort();
    let (p50, p99) = (ms(percentile(&times, 0.5)), ms(percentile(&times, 0.99)));
    eprintln!("vault: baseline {label}: p50 {p50:.3} ms, p99 {p99:.3} ms");
    json!({ "p50_ms": p50, "p99_ms": p99 })
}

fn main() {
    if !env::benchmarking("vault") {
        return;
    }
    let total = env::setting::<usize>("RALPH_BENCH_ATTEMPTS", 10_000);
    let queries = env::setting::<usize>("RALPH_BENCH_QUERIES", 1_000);
    let singles = env::setting::<usize>("RALPH_BENCH_SINGLE_WRITES", 300).min(total);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let dir = tempfile::tempdir().unwrap();
    let uri = dir.path().join("memory.db").to_string_lossy().into_owned();
    let embedder = HashedNgrams::default();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let attempts: Vec<FixAttempt> = (0..total).map(|n| attempt(&mut rng, n)).collect();
    let rss_start = env::status_kib("VmRSS:");

    let report = rt.block_on(async {
        let started = Instant::now();
        let texts = attempts.iter().map(|a| a.signature.clone()).collect();
        let texts = GuardedTexts::seal(&ralph_guard::Guard::off(), texts).unwrap();
        let vectors = embedder
            .embed(texts)
            .await
            .unwrap();
        let embed_each = started.elapsed() / total as u32;
        let store = LanceStore::open(&uri, PROJECT_TABLE, &embedder.id(), embedder.dims())
            .await
            .unwrap();

        // One attempt per write, as runs record them.
        let started = Instant::now();
        for (a, v) in attempts.iter().zip(&vectors).take(singles) {
            store.add(vec![(a.clone(), v.clone())]).await.unwrap();
        }
        let single_elapsed = started.elapsed();

        // The rest in batches of 500, as `vault import` writes.
        let started = Instant::now();
        let rest: Vec<_> = attempts
            .iter()
            .cloned()
            .zip(vectors.iter().cloned())
            .skip(singles)
            .collect();
        let batched = rest.len();
        for chunk in rest.chunks(500) {
            store.add(chunk.to_vec()).await.unwrap();
        }
        let batch_elapsed = started.elapsed();
        assert_eq!(store.count().await.unwrap(), total);
        let fragments_before = store.fragments().await.unwrap();

        let before = recall(&uri, &vectors, queries, "before compaction").await;
        let started = Instant::now();
        let compacted = store.compact().await.unwrap();
        let compact_ms = ms(started.elapsed());
        let after = recall(&uri, &vectors, queries, "compacted").await;
        let lance = lance_queries(&uri, &vectors, queries).await;

        // The baseline: the same queries as a scan over vectors in memory.
        let mut q = Rng(42);
        let mut scan = Vec::with_capacity(queries);
        for _ in 0..queries {
            let probe = &vectors[q.below(total)];
            let t = Instant::now();
            let mut best: Vec<(f32, usize)> = vectors
                .iter()
                .enumerate()
                .map(|(i, v)| (cosine(probe, v), i))
                .filter(|(s, _)| *s >= 0.85)
                .collect();
            best.sort_by(|a, b| b.0.total_cmp(&a.0));
            best.truncate(5);
            std::hint::black_box(&best);
            scan.push(t.elapsed());
        }
        let scan = baseline("in-memory scan", scan);
        eprintln!(
            "vault: inserts: {singles} single writes {:.1}/s ({:.2} ms each), {batched} in batches of 500 {:.0}/s; embedding {:.1} µs each",
            singles as f64 / single_elapsed.as_secs_f64(),
            ms(single_elapsed) / singles as f64,
            batched as f64 / batch_elapsed.as_secs_f64(),
            embed_each.as_secs_f64() * 1e6
        );
        eprintln!(
            "vault: compaction {compact_ms:.0} ms, {} -> {} data files; {} bytes on disk",
            fragments_before,
            compacted.fragments_after,
            store.bytes().await.unwrap()
        );
        json!({
            "attempts": total,
            "queries": queries,
            "recall_before_compaction": before,
            "recall_compacted": after,
            "baseline_lance_query_compacted": lance,
            "baseline_scan": scan,
            "single_writes": singles,
            "single_writes_per_s": singles as f64 / single_elapsed.as_secs_f64(),
            "single_write_ms": ms(single_elapsed) / singles as f64,
            "batched_writes_per_s": batched as f64 / batch_elapsed.as_secs_f64(),
            "embed_us": embed_each.as_secs_f64() * 1e6,
            "compaction_ms": compact_ms,
            "fragments_before": fragments_before,
            "fragments_after": compacted.fragments_after,
            "bytes_on_disk": store.bytes().await.unwrap(),
        })
    });
    let (rss_end, hwm) = (env::status_kib("VmRSS:"), env::status_kib("VmHWM:"));
    eprintln!(
        "vault: memory: RSS {:.1} MiB at start, {:.1} MiB at the end, peak {:.1} MiB",
        rss_start as f64 / 1024.0,
        rss_end as f64 / 1024.0,
        hwm as f64 / 1024.0
    );
    let mut report = report;
    report["rss_start_mib"] = json!(rss_start as f64 / 1024.0);
    report["rss_end_mib"] = json!(rss_end as f64 / 1024.0);
    report["peak_rss_mib"] = json!(hwm as f64 / 1024.0);
    let out = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-vault.json");
    let _ = std::fs::write(&out, serde_json::to_string_pretty(&report).unwrap());
    eprintln!("vault: wrote {}", out.display());
}
