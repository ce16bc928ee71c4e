//! A fix run beside its own dashboard under attack (`--ui web`), whole process, on the release
//! `ralph-loop`: how much slower and larger a run gets while clients attack the dashboard it
//! serves. The run fixes the Python fixture in two iterations against a mock model with a fixed
//! latency; the attack starts as soon as the dashboard's URL is printed:
//!
//! - 600 connections that begin a request's head and never finish it (more than the 512 the
//!   dashboard keeps);
//! - 1000 connections asking for the run's event stream with the right token, never read;
//! - two threads sending requests with a wrong token, one after another, until the run ends.
//!
//! Quiet and attacked runs alternate, `RALPH_BENCH_ROUNDS` (3) of each; the model's latency is
//! `RALPH_BENCH_LATENCY_MS` (500). Prints the medians and the worst, and writes
//! `target/bench-attacked.json`. Speed is measured here, never asserted.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "common/env.rs"]
mod env;
#[path = "common/process.rs"]
mod process;
#[allow(dead_code)]
#[path = "../tests/suite/support.rs"]
mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use process::{knob, ralph_command, runtime, target_dir, NO_CHAOS};
use serde_json::json;
use support::{code, Answer, MockLlm, FIXED_PY, HALF_FIXED_PY};

/// One run: its wall time, its peak memory, and what became of the wrong-token requests:
/// answered `401`, or closed unanswered (the dashboard full).
struct Run {
    wall_ms: f64,
    peak_kib: u64,
    refused: usize,
    turned_away: usize,
}

fn main() {
    if !env::benchmarking("attacked") {
        return;
    }
    let rounds = knob("RALPH_BENCH_ROUNDS", 3);
    let latency = Duration::from_millis(knob("RALPH_BENCH_LATENCY_MS", 500) as u64);
    let rt = runtime();
    eprintln!("attacked: {}", *process::RALPH);
    let (mut quiet, mut attacked) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        quiet.push(run(&rt, latency, false));
        attacked.push(run(&rt, latency, true));
        eprintln!(
            "attacked: round {round}: quiet {:.0} ms {} KiB, attacked {:.0} ms {} KiB (wrong tokens: {} refused, {} closed unanswered)",
            quiet[round].wall_ms,
            quiet[round].peak_kib,
            attacked[round].wall_ms,
            attacked[round].peak_kib,
            attacked[round].refused,
            attacked[round].turned_away
        );
    }
    let summary = |runs: &[Run]| {
        let walls: Vec<f64> = runs.iter().map(|r| r.wall_ms).collect();
        let peaks: Vec<f64> = runs.iter().map(|r| r.peak_kib as f64).collect();
        json!({
            "wall_ms": { "median": median(&walls), "worst": worst(&walls) },
            "peak_rss_kib": { "median": median(&peaks), "worst": worst(&peaks) },
            "wrong_tokens_refused": runs.iter().map(|r| r.refused).sum::<usize>(),
            "wrong_tokens_closed_unanswered": runs.iter().map(|r| r.turned_away).sum::<usize>(),
        })
    };
    let results = json!({
        "latency_ms": latency.as_millis() as u64,
        "rounds": rounds,
        "quiet": summary(&quiet),
        "attacked": summary(&attacked),
    });
    println!("{}", serde_json::to_string_pretty(&results).unwrap());
    let out = target_dir().join("bench-attacked.json");
    match std::fs::write(&out, serde_json::to_string_pretty(&results).unwrap()) {
        Ok(()) => eprintln!("attacked: wrote {}", out.display()),
        Err(e) => eprintln!("attacked: cannot write {}: {e}", out.display()),
    }
}

fn median(xs: &[f64]) -> f64 {
    let mut xs = xs.to_vec();
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

fn worst(xs: &[f64]) -> f64 {
    xs.iter().copied().fold(f64::MIN, f64::max)
}

/// Fixes the Python fixture under `--ui web`, attacked or not.
fn run(rt: &tokio::runtime::Runtime, latency: Duration, attack: bool) -> Run {
    let dir = support::fixture("py-median");
    let llm = rt.block_on(MockLlm::start());
    let paced = |text: &str| Answer::Paced {
        text: code("python", text),
        delay: latency,
    };
    llm.helpful()
        .script("artisan", [paced(HALF_FIXED_PY)])
        .always("artisan", paced(FIXED_PY));
    let started = Instant::now();
    let mut child = ralph_command()
        .current_dir(dir.path())
        .env("HOME", dir.path())
        .env("RUST_LOG", "ralph_loop::exit=debug")
        .envs(llm.openai_env())
        .args(["median.py", "--ui", "web", "--ui-bind", "127.0.0.1:0"])
        .args(NO_CHAOS.iter())
        .args(["--models", "openai/gpt-4.1-mini"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, lines) = mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut all = String::new();
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line.clone());
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    let url = loop {
        let line = lines
            .recv_timeout(Duration::from_secs(30))
            .expect("the dashboard's URL");
        if let Some(at) = line.find("http://") {
            break line[at..].trim().to_string();
        }
    };
    let stop = Arc::new(AtomicBool::new(false));
    let refused = Arc::new(AtomicUsize::new(0));
    let turned_away = Arc::new(AtomicUsize::new(0));
    let mut held = Vec::new();
    let mut flood = Vec::new();
    if attack {
        let (port, token, session) = parts(&url);
        for i in 0..1600 {
            let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
                continue;
            };
            let head = match i % 8 {
                0..=2 => format!("GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Slow: "),
                _ => format!(
                    "GET /api/sessions/{session}/events HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nCookie: ralph_token={token}\r\n\r\n"
                ),
            };
            let _ = s.write_all(head.as_bytes());
            held.push(s);
        }
        for _ in 0..2 {
            let (stop, refused, turned_away) = (stop.clone(), refused.clone(), turned_away.clone());
            flood.push(std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    match bad_token(port) {
                        Some(true) => refused.fetch_add(1, Ordering::Relaxed),
                        Some(false) => turned_away.fetch_add(1, Ordering::Relaxed),
                        None => 0,
                    };
                }
            }));
        }
    }
    let status = child.wait().unwrap();
    let wall_ms = started.elapsed().as_secs_f64() * 1000.0;
    stop.store(true, Ordering::Relaxed);
    for f in flood {
        f.join().unwrap();
    }
    drop(held);
    let err = reader.join().unwrap();
    assert!(status.success(), "{status}: {err}");
    let (_, rest) = err.rsplit_once("peak_rss_kib=").expect("the exit log");
    let peak_kib = rest
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .unwrap()
        .parse()
        .unwrap();
    Run {
        wall_ms,
        peak_kib,
        refused: refused.load(Ordering::Relaxed),
        turned_away: turned_away.load(Ordering::Relaxed),
    }
}

/// The port, token and session of the dashboard's URL.
fn parts(url: &str) -> (u16, String, String) {
    let port = url
        .trim_start_matches("http://127.0.0.1:")
        .split('/')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let query = |key: &str| {
        url.split(&format!("{key}="))
            .nth(1)
            .unwrap()
            .split('&')
            .next()
            .unwrap()
            .to_string()
    };
    (port, query("token"), query("session"))
}

/// One request with a wrong token: `Some(true)` refused with `401`, `Some(false)` closed
/// unanswered, `None` no connection (the run has ended).
fn bad_token(port: u16) -> Option<bool> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    let head = format!(
        "GET /api/sessions HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\nCookie: ralph_token=wrong\r\n\r\n"
    );
    let _ = s.write_all(head.as_bytes());
    let mut raw = String::new();
    let _ = s.read_to_string(&mut raw);
    Some(raw.starts_with("HTTP/1.1 401") || raw.starts_with("HTTP/1.0 401"))
}
