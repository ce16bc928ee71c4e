//! Every parser of outside input on 10 MB of the inputs that cost parsers most: one line with no
//! end, millions of short lines, millions of events, JSON nested ten million deep, one huge JSON
//! array, XML nested deep, and a long line arriving in 1 KiB pieces. Each parser is reached
//! through its fuzz target (`ralph_loop::fuzzing`, the entry points the program itself uses),
//! its first byte picking the parser. The target is under 1 s per parser and shape
//! (docs/reliability.md). Run with
//! `cargo bench --bench hostile --no-default-features --features fuzzing [-- FILTER]` (no
//! LanceDB: no parser needs it); it prints a line per parser
//! (its worst shape) and writes every time to `$CARGO_TARGET_DIR/bench-hostile.json`.

// A benchmark that cannot set up has nothing to measure: panicking with a message is right here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use ralph_loop::fuzzing::input::CUT;
use ralph_loop::fuzzing::TARGETS;

const SIZE: usize = 10 << 20;

/// `unit` repeated to [`SIZE`] bytes, between `head` and `tail`.
fn repeat(head: &str, unit: &str, tail: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(SIZE + head.len() + tail.len());
    out.extend_from_slice(head.as_bytes());
    while out.len() < SIZE {
        out.extend_from_slice(unit.as_bytes());
    }
    out.extend_from_slice(tail.as_bytes());
    out
}

fn shapes() -> Vec<(&'static str, Vec<u8>)> {
    let mut cut_line = repeat("data: ", "x", "\n\n");
    for i in (1024..cut_line.len()).step_by(1024) {
        cut_line[i] = CUT;
    }
    vec![
        ("one line", repeat("", "x", "")),
        ("short lines", repeat("", "x\n", "")),
        ("sse events", repeat("", "data: {\"a\":1}\n\n", "")),
        (
            "json lines",
            repeat("", "{\"type\":\"text\",\"text\":\"x\",\"seq\":1}\n", ""),
        ),
        ("nested json", repeat("", "[", "")),
        ("json array", repeat("[", "{\"a\":\"b\",\"n\":1},", "{}]")),
        ("nested xml", repeat("<testsuites>", "<testsuite>", "")),
        ("line in 1 KiB pieces", cut_line),
    ]
}

fn main() {
    let filter = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let shapes = shapes();
    let mut all = Vec::new();
    let mut worst_overall = Duration::ZERO;
    for target in TARGETS.iter() {
        if filter.as_deref().is_some_and(|f| !target.name.contains(f)) {
            continue;
        }
        for parser in 0..target.parsers {
            let mut worst = (Duration::ZERO, "");
            for (shape, body) in &shapes {
                let mut input = Vec::with_capacity(body.len() + 1);
                if target.parsers > 1 {
                    input.push(parser);
                }
                input.extend_from_slice(body);
                let started = Instant::now();
                (target.run)(&input);
                let took = started.elapsed();
                all.push(serde_json::json!({
                    "target": target.name, "parser": parser, "shape": shape,
                    "ms": took.as_secs_f64() * 1e3,
                }));
                if took > worst.0 {
                    worst = (took, shape);
                }
            }
            worst_overall = worst_overall.max(worst.0);
            println!(
                "{:<18} parser {:>2}: worst {:>8.1} ms ({}){}",
                target.name,
                parser,
                worst.0.as_secs_f64() * 1e3,
                worst.1,
                if worst.0 > Duration::from_secs(1) {
                    "  OVER 1 s"
                } else {
                    ""
                }
            );
        }
    }
    println!("worst of all: {:.1} ms", worst_overall.as_secs_f64() * 1e3);
    let dir = std::env::var("CARGO_TARGET_DIR").unwrap_or_else(|_| "target".into());
    let out = std::path::Path::new(&dir).join("bench-hostile.json");
    std::fs::write(&out, serde_json::to_vec_pretty(&all).unwrap()).unwrap();
}
