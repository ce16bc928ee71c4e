//! The import graph of a generated 10,000-file repository (TypeScript, TSX, JavaScript, Python,
//! Rust): a cold build (no cache), a warm build (cache present, tree unchanged), and a naive
//! baseline in the same run: walk the same files and regex-scan them for import lines, without
//! parsing or resolving. Run with `cargo bench --bench graph`. See `docs/performance.md`.

// A benchmark that cannot set up has nothing to measure: panicking with a message is right here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "common/rng.rs"]
mod rng;

use std::fmt::Write as _;
use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, SystemTime};

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use ralph_loop::context::cache::cache_path;
use ralph_loop::context::{BuildOptions, ImportGraph};
use regex::Regex;
use rng::Rng;

const FILES: usize = 10_000;
/// Files per directory: the size of a feature folder or a Python package.
const PER_DIR: usize = 50;

fn write(root: &Path, rel: &str, content: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

/// Pads a file to 20–80 lines with plausible bodies.
fn body(rng: &mut Rng, out: &mut String, line: impl Fn(usize) -> String) {
    let lines = 14 + rng.below(60);
    for i in 0..lines {
        out.push_str(&line(i));
        out.push('\n');
    }
}

/// 45% TypeScript (a fifth of it TSX), 15% JavaScript, 25% Python, 15% Rust, each file with
/// 2–6 imports: most resolve (relative, aliased, package-relative, `crate::`), some are external.
fn generate(root: &Path) {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let ts = FILES * 45 / 100;
    let js = FILES * 15 / 100;
    let py = FILES * 25 / 100;
    let rs = FILES - ts - js - py;

    write(
        root,
        "web/tsconfig.json",
        r#"{ "compilerOptions": { "baseUrl": ".", "paths": { "@/*": ["src/*"] } } }"#,
    );
    for i in 0..ts {
        let (dir, ext) = (i / PER_DIR, if i % 5 == 0 { "tsx" } else { "ts" });
        let mut s = String::new();
        for k in 0..2 + rng.below(5) {
            match k % 3 {
                0 => {
                    let j = dir * PER_DIR + rng.below(PER_DIR);
                    let _ = writeln!(s, "import {{ f{j} }} from './f{j}';");
                }
                1 => {
                    let j = rng.below(ts);
                    let _ = writeln!(s, "import {{ f{j} }} from '@/d{}/f{j}';", j / PER_DIR);
                }
                _ => s.push_str("import React from 'react';\n"),
            }
        }
        body(&mut rng, &mut s, |n| {
            format!("export function f{i}_{n}(x: number): number {{ return x + {n}; }}")
        });
        let _ = writeln!(s, "export const f{i} = 1;");
        write(root, &format!("web/src/d{dir}/f{i}.{ext}"), &s);
    }
    for i in 0..js {
        let dir = i / PER_DIR;
        let mut s = String::new();
        for k in 0..2 + rng.below(5) {
            if k % 3 == 2 {
                s.push_str("const express = require('express');\n");
            } else {
                let j = dir * PER_DIR + rng.below(PER_DIR.min(js - dir * PER_DIR));
                let _ = writeln!(s, "const m{k} = require('./g{j}');");
            }
        }
        body(&mut rng, &mut s, |n| {
            format!("function g{i}_{n}(x) {{ return x * {n}; }}")
        });
        let _ = writeln!(s, "module.exports = {{ g{i}: 1 }};");
        write(root, &format!("web/legacy/d{dir}/g{i}.js"), &s);
    }
    for i in 0..py {
        let pkg = i / PER_DIR;
        if i % PER_DIR == 0 {
            write(root, &format!("src/pkg{pkg}/__init__.py"), "");
        }
        let mut s = String::new();
        for k in 0..2 + rng.below(5) {
            match k % 3 {
                0 => {
                    let j = pkg * PER_DIR + rng.below(PER_DIR.min(py - pkg * PER_DIR));
                    let _ = writeln!(s, "from . import m{j}");
                }
                1 => {
                    let j = rng.below(py);
                    let _ = writeln!(s, "from pkg{}.m{j} import thing", j / PER_DIR);
                }
                _ => s.push_str("import os\n"),
            }
        }
        body(&mut rng, &mut s, |n| {
            if n % 3 == 0 {
                format!("def m{i}_{n}(x):")
            } else {
                format!("    return x + {n}")
            }
        });
        write(root, &format!("src/pkg{pkg}/m{i}.py"), &s);
    }
    write(
        root,
        "crates/core/Cargo.toml",
        "[package]\nname = \"core\"\nversion = \"0.1.0\"\n",
    );
    let modules = rs.div_ceil(PER_DIR);
    let mut lib = String::new();
    for m in 0..modules {
        let _ = writeln!(lib, "pub mod m{m};");
    }
    write(root, "crates/core/src/lib.rs", &lib);
    for m in 0..modules {
        let mut s = String::new();
        for i in m * PER_DIR..((m + 1) * PER_DIR).min(rs) {
            let _ = writeln!(s, "pub mod r{i};");
        }
        write(root, &format!("crates/core/src/m{m}/mod.rs"), &s);
    }
    for i in 0..rs {
        let m = i / PER_DIR;
        let mut s = String::new();
        for k in 0..2 + rng.below(5) {
            match k % 3 {
                0 => {
                    let j = rng.below(rs);
                    let _ = writeln!(s, "use crate::m{}::r{j}::Item{j};", j / PER_DIR);
                }
                1 => {
                    let j = m * PER_DIR + rng.below(PER_DIR.min(rs - m * PER_DIR));
                    let _ = writeln!(s, "use super::r{j};");
                }
                _ => s.push_str("use std::collections::HashMap;\n"),
            }
        }
        let _ = writeln!(s, "pub struct Item{i};");
        body(&mut rng, &mut s, |n| {
            format!("pub fn r{i}_{n}(x: u32) -> u32 {{ x + {n} }}")
        });
        write(root, &format!("crates/core/src/m{m}/r{i}.rs"), &s);
    }

    // A checked-out repository's files are not seconds old; a fresh mtime would make the cache
    // hash every file (its guard against writes within one timestamp tick).
    let old = SystemTime::now() - Duration::from_secs(3600);
    for entry in ignore::WalkBuilder::new(root)
        .hidden(false)
        .build()
        .flatten()
    {
        if entry.file_type().is_some_and(|t| t.is_file()) {
            let file = std::fs::File::options()
                .write(true)
                .open(entry.path())
                .unwrap();
            file.set_modified(old).unwrap();
        }
    }
}

/// The baseline: the same walk, each file read and its import lines matched by one regex; no
/// parsing, no resolution, no cache.
fn naive_scan(root: &Path, import_line: &Regex) -> usize {
    let mut found = 0;
    for entry in ignore::WalkBuilder::new(root).build().flatten() {
        let path = entry.path();
        let is_source = path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| matches!(e, "ts" | "tsx" | "js" | "py" | "rs"));
        if !is_source {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(path) else {
            continue;
        };
        found += text.lines().filter(|l| import_line.is_match(l)).count();
    }
    found
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    generate(root);
    let cold = ImportGraph::build(root).unwrap();
    eprintln!(
        "generated repository: {} files in the graph, {} import edges, {} parsed",
        cold.len(),
        cold.edge_count(),
        cold.parsed_files()
    );
    assert!(cold.len() >= FILES);

    let mut group = c.benchmark_group("graph");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(8));

    group.bench_function("cold_10k", |b| {
        b.iter_batched(
            || {
                let _ = std::fs::remove_file(cache_path(root));
            },
            |()| black_box(ImportGraph::build(root).unwrap()),
            BatchSize::PerIteration,
        )
    });

    ImportGraph::build(root).unwrap();
    group.bench_function("warm_10k", |b| {
        b.iter(|| {
            let graph = ImportGraph::build(root).unwrap();
            assert_eq!(graph.parsed_files(), 0);
            black_box(graph)
        })
    });

    let import_line = Regex::new(
        r#"^\s*(import\s|export\s.*\sfrom\s|from\s+\S+\s+import\s|use\s|mod\s+\w+;)|require\(|import\("#,
    )
    .unwrap();
    group.bench_function("naive_regex_scan_10k", |b| {
        b.iter(|| black_box(naive_scan(root, &import_line)))
    });
    group.finish();

    // Without the cache file: the parse-everything cost with nothing written.
    let mut group = c.benchmark_group("graph");
    group.sample_size(10);
    group.bench_function("cold_no_cache_io_10k", |b| {
        b.iter(|| {
            black_box(ImportGraph::build_with(root, &BuildOptions { use_cache: false }).unwrap())
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
