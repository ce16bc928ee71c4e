//! LocalGuard's figures in a release build (issue 16): masking throughput on one core beside a
//! plain copy of the same text, detection recall on the generated corpus of planted secrets
//! and personal data, and false positives per 10,000 lines of ordinary code. Run with
//! `cargo bench --bench guard`; it prints a table and writes `target/bench-guard.json`. See
//! `docs/performance.md` and `docs/local-guard.md`.
//!
//! - **start**: building a guard as a run does (the bundled rules read, the keyword automaton
//!   built);
//! - **throughput**: real code (this repository's Rust sources, a 200 KiB prompt's worth and 2
//!   MiB; the JavaScript of `tests/node-tools/node_modules`, 8 MiB) and the generated ordinary
//!   corpus below (4 MiB, one planted value per 200 lines: the hardest text there is for it, all
//!   hashes, UUIDs, data URIs and numbers), each masked a second time by a guard whose table
//!   holds the values of the first (as in a run, where the target was masked first), beside
//!   `text.to_owned()` and a byte-wise checksum of the same text (the least a pass costs);
//! - **recall**: every planted value of `corpus::secrets::contexts` and `corpus::pii::planted`
//!   (`RALPH_BENCH_PER_KIND` values per kind, default 10), each in its own context line, counted
//!   found when no byte of it survives masking;
//! - **false positives**: findings on `RALPH_BENCH_LINES` (default 200,000) lines of
//!   `corpus::ordinary`, and on a real tree when `RALPH_BENCH_TREE` names one (this machine's
//!   cargo registry sources, say), reported apart: real code holds real test keys.
//!
//! The token-efficiency check counts `o200k_base` tokens from the compact table, as a run does.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "common/env.rs"]
mod env;

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ralph_guard::corpus;
use ralph_guard::tokens::O200k;
use ralph_guard::{Guard, GuardConfig};
use rand::SeedableRng;
use serde_json::json;

fn guard() -> Guard {
    Guard::new(&GuardConfig {
        lens: Some(Arc::new(O200k)),
        ..GuardConfig::all()
    })
    .unwrap()
}

/// Ordinary lines with one planted context every `every` lines, to at least `bytes`.
fn prompt(rng: &mut rand::rngs::StdRng, bytes: usize, every: usize) -> String {
    let planted = corpus::secrets::contexts(rng, 1);
    let mut out = String::with_capacity(bytes + 4096);
    let mut i = 0;
    while out.len() < bytes {
        for line in corpus::ordinary::lines(rng, every) {
            out.push_str(&line);
            out.push('\n');
        }
        out.push_str(&planted[i % planted.len()].1);
        i += 1;
    }
    out
}

/// The text of the source files under `dirs` (Rust, Python, JavaScript, TypeScript), in a fixed
/// order.
fn real_code(dirs: &[std::path::PathBuf]) -> String {
    let mut files: Vec<std::path::PathBuf> = dirs
        .iter()
        .flat_map(|d| {
            ignore::WalkBuilder::new(d)
                .git_ignore(false)
                .build()
                .flatten()
        })
        .map(|e| e.into_path())
        .filter(|p| {
            p.extension()
                .is_some_and(|x| ["rs", "py", "js", "ts"].iter().any(|e| x == *e))
        })
        .collect();
    files.sort();
    files
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .collect()
}

/// The first `bytes` of `text` (at a character boundary), repeated when it is shorter.
fn cut(text: &str, bytes: usize) -> String {
    let mut out = String::with_capacity(bytes + 4);
    while out.len() < bytes && !text.is_empty() {
        out.push_str(text);
    }
    let mut end = bytes.min(out.len());
    while !out.is_char_boundary(end) {
        end -= 1;
    }
    out.truncate(end);
    out
}

/// The median of `runs` timings of `f`.
fn median(runs: usize, mut f: impl FnMut()) -> Duration {
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .collect();
    times.sort();
    times[times.len() / 2]
}

fn mb_per_s(bytes: usize, d: Duration) -> f64 {
    bytes as f64 / 1e6 / d.as_secs_f64()
}

fn main() {
    if !env::benchmarking("guard") {
        return;
    }
    let mut rng = rand::rngs::StdRng::seed_from_u64(16);
    // What a run pays at start for its guard: the bundled rules read, the keyword automaton
    // built (regexes compile on first use).
    let build = median(21, || {
        black_box(guard());
    });
    println!("     guard built: {:.2} ms", build.as_secs_f64() * 1000.0);
    let g = guard();
    // Warm the tokenizer's table and the lazily compiled rules, as the first files of a run do.
    let warm = prompt(&mut rng, 256 * 1024, 200);
    black_box(g.mask(&warm, None));

    let mut throughput = Vec::new();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let sources = real_code(&[root.join("src"), root.join("actors/src")]);
    let js = real_code(&[root.join("tests/node-tools/node_modules")]);
    let texts = [
        (
            "prompt 200 KiB (our Rust sources)",
            cut(&sources, 200 * 1024),
            41,
        ),
        ("Rust sources 2 MiB", cut(&sources, 2 << 20), 9),
        ("JavaScript 8 MiB (node_modules)", cut(&js, 8 << 20), 5),
        (
            "ordinary corpus 4 MiB (generated)",
            prompt(&mut rng, 4 << 20, 200),
            5,
        ),
    ];
    for (name, text, runs) in texts {
        g.mask(&text, None);
        let mask = median(runs, || {
            black_box(g.mask(black_box(&text), None));
        });
        let copy = median(runs, || {
            black_box(black_box(&text).to_owned());
        });
        let sum = median(runs, || {
            black_box(
                black_box(text.as_bytes())
                    .iter()
                    .fold(0u64, |a, &b| a.wrapping_add(u64::from(b))),
            );
        });
        println!(
            "{name:>34}: mask {:.1} MB/s ({:.2} ms) · copy {:.0} MB/s · byte pass {:.0} MB/s",
            mb_per_s(text.len(), mask),
            mask.as_secs_f64() * 1000.0,
            mb_per_s(text.len(), copy),
            mb_per_s(text.len(), sum)
        );
        throughput.push(json!({
            "text": name, "bytes": text.len(),
            "mask_ms": mask.as_secs_f64() * 1000.0, "mask_mb_s": mb_per_s(text.len(), mask),
            "copy_mb_s": mb_per_s(text.len(), copy), "byte_pass_mb_s": mb_per_s(text.len(), sum),
        }));
    }

    // Recall: each planted value in its own context, masked by a fresh guard.
    let per_kind = env::setting::<usize>("RALPH_BENCH_PER_KIND", 10);
    let mut planted = corpus::secrets::contexts(&mut rng, per_kind);
    planted.extend(
        corpus::pii::planted(&mut rng, per_kind)
            .into_iter()
            .map(|p| {
                let text = corpus::embed(&mut rng, &p);
                (p, text)
            }),
    );
    let fresh = guard();
    let mut missed: std::collections::BTreeMap<String, usize> = Default::default();
    let mut kinds = std::collections::BTreeSet::new();
    for (p, text) in &planted {
        kinds.insert(p.kind.clone());
        if fresh.mask(text, None).text.contains(&p.value) {
            *missed.entry(p.kind.clone()).or_insert(0) += 1;
        }
    }
    let lost: usize = missed.values().sum();
    let recall = 100.0 * (planted.len() - lost) as f64 / planted.len() as f64;
    println!(
        "          recall: {recall:.2} % of {} planted values over {} kinds; missed: {missed:?}",
        planted.len(),
        kinds.len()
    );

    // False positives on ordinary code.
    let lines = env::setting::<usize>("RALPH_BENCH_LINES", 200_000);
    let ordinary = corpus::ordinary::lines(&mut rng, lines);
    let detector = g.detector();
    let mut fp: std::collections::BTreeMap<String, usize> = Default::default();
    let (mut line_count, mut bytes, mut masked_bytes) = (0, 0, 0);
    for chunk in ordinary.chunks(1000) {
        let text = chunk.join("\n");
        line_count += text.lines().count();
        bytes += text.len();
        for f in detector.scan(&text).findings {
            masked_bytes += f.len();
            *fp.entry(f.rule).or_insert(0) += 1;
        }
    }
    let fps: usize = fp.values().sum();
    let per_10k = fps as f64 * 10_000.0 / line_count as f64;
    let share = 100.0 * masked_bytes as f64 / bytes as f64;
    println!("  false positives: {fps} in {line_count} ordinary lines ({per_10k:.3} per 10,000; {share:.5} % of bytes masked); by rule: {fp:?}");

    let tree = std::env::var("RALPH_BENCH_TREE").ok().map(|root| {
        let cwd = std::path::PathBuf::from(&root);
        let outcome = ralph_loop::guard::scan::scan(detector, std::slice::from_ref(&cwd), &cwd);
        let mut lines = 0usize;
        for entry in ignore::WalkBuilder::new(&root).hidden(false).build().flatten() {
            if entry.file_type().is_some_and(|t| t.is_file()) {
                if let Ok(text) = std::fs::read_to_string(entry.path()) {
                    lines += text.lines().count();
                }
            }
        }
        let mut by_rule: std::collections::BTreeMap<String, usize> = Default::default();
        for h in &outcome.hits {
            *by_rule.entry(h.rule.clone()).or_insert(0) += 1;
        }
        println!(
            "       real tree: {} findings in {lines} lines of {} files ({:.2} per 10,000); by rule: {by_rule:?}",
            outcome.hits.len(),
            outcome.files,
            outcome.hits.len() as f64 * 10_000.0 / lines.max(1) as f64
        );
        json!({ "root": root, "files": outcome.files, "lines": lines, "findings": outcome.hits.len(), "by_rule": by_rule })
    });

    let out = json!({
        "build_ms": build.as_secs_f64() * 1000.0,
        "throughput": throughput,
        "recall": { "planted": planted.len(), "kinds": kinds.len(), "percent": recall, "missed": missed },
        "false_positives": { "lines": line_count, "findings": fps, "per_10k_lines": per_10k, "masked_share_pct": share, "by_rule": fp },
        "real_tree": tree,
    });
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-guard.json");
    let _ = std::fs::create_dir_all(path.parent().unwrap());
    std::fs::write(&path, serde_json::to_string_pretty(&out).unwrap()).unwrap();
    eprintln!("guard: wrote {}", path.display());
}
