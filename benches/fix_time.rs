//! Time to a fix, whole-process: the release `ralph-loop` binary fixing the same two-iteration
//! bug in a Python (pytest) and a JavaScript (`node --test`) project, against a scripted model
//! server that answers each call after a fixed latency plus the reply's tokens at a token rate.
//! Beside the defaults, in the same run and interleaved, it times two configurations of the
//! same binary:
//!
//! - **single**: one model call per iteration (`critic.mode: off`, `librarian.analyze:
//!   never`): the single-model loop the brief's SC-014 compares with;
//! - **sequential**: every call on the critical path (`critic.mode: gate`, `librarian.analyze:
//!   always`): the pipeline before issue 14;
//! - **micro-agent**, when `RALPH_BENCH_MICRO_AGENT` names BuilderIO's `micro-agent` (from npm):
//!   the tool itself, on the same server, the same fixture and the same two replies.
//!
//! Chaos is off in every ralph-loop run (`--no-adversarial`): SC-014 compares the loop up to
//! green tests, which is what a single-model loop does; Chaos's rounds are a phase after it.
//!
//! Reported per fixture, latency and configuration: wall time (median), calls in total, calls
//! on the critical path (the union of the calls' intervals, in calls: a call hidden behind
//! another call adds nothing), cost, and the ratio to **single**. Run with `cargo bench --bench
//! fix_time`; it prints a table and writes `target/bench-fix-time.json`. See
//! `docs/performance.md`.
//!
//! Knobs (environment): `RALPH_BENCH_LATENCIES` (seconds, comma-separated; default
//! `0.2,2,10`), `RALPH_BENCH_TOKEN_RATE` (reply tokens per second; default 100),
//! `RALPH_BENCH_RUNS` (runs of each configuration; default 3), `RALPH_BENCH_FIXTURES`
//! (`py,js`), `RALPH_BENCH_BIN` (another build of `ralph-loop`), `RALPH_BENCH_MICRO_AGENT`
//! (the path of BuilderIO's `micro-agent`, installed with `npm install --ignore-scripts
//! @builder.io/micro-agent`; its install script downloads a browser it needs only for `-v`).

// A benchmark that cannot set up has nothing to measure: panicking with a message is right here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "common/process.rs"]
mod process;
#[allow(dead_code)]
#[path = "../tests/suite/support.rs"]
mod support;

use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use process::{knob, runtime, target_dir, NO_CHAOS, RALPH};
use serde_json::{json, Value};
use support::{
    code, role_of_system, Answer, MockLlm, FIXED_JS, FIXED_PY, HALF_FIXED_JS, HALF_FIXED_PY,
};

/// A loop timed: ralph-loop under a project config, or BuilderIO's micro-agent.
#[derive(Clone)]
enum Loop {
    /// The `ralph.config.yaml` the run's project gets.
    Ralph(&'static str),
    /// The path of micro-agent's executable.
    MicroAgent(String),
}

/// The loops timed, by name; `single` first, as every ratio's denominator.
fn loops() -> Vec<(&'static str, Loop)> {
    let mut loops = vec![
        (
            "single",
            Loop::Ralph("critic: { mode: off }\nlibrarian: { analyze: never }\n"),
        ),
        (
            "sequential",
            Loop::Ralph("critic: { mode: gate }\nlibrarian: { analyze: always }\n"),
        ),
        ("default", Loop::Ralph("")),
    ];
    if let Ok(path) = std::env::var("RALPH_BENCH_MICRO_AGENT") {
        loops.push(("micro-agent", Loop::MicroAgent(path)));
    }
    loops
}

struct Fixture {
    name: &'static str,
    dir: &'static str,
    target: &'static str,
    test_command: &'static str,
    test_file: &'static str,
    lang: &'static str,
    half: &'static str,
    fixed: &'static str,
}

const FIXTURES: [Fixture; 2] = [
    Fixture {
        name: "py",
        dir: "py-median",
        target: "median.py",
        test_command: "python3 -m pytest -q test_median.py",
        test_file: "test_median.py",
        lang: "python",
        half: HALF_FIXED_PY,
        fixed: FIXED_PY,
    },
    Fixture {
        name: "js",
        dir: "js-median",
        target: "src/median.js",
        test_command: "node --test test/",
        test_file: "test/median.test.js",
        lang: "javascript",
        half: HALF_FIXED_JS,
        fixed: FIXED_JS,
    },
];

const ANALYSIS: &str = "The median must copy the list, sort it numerically, average the middle pair of an even-length list and refuse an empty one.";
const APPROVAL: &str = "The proposal handles the cases the tests check.\nVERDICT: APPROVE";

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        eprintln!("fix_time: skipped (run it with `cargo bench --bench fix_time`)");
        return;
    }
    let latencies: Vec<f64> = std::env::var("RALPH_BENCH_LATENCIES")
        .unwrap_or_else(|_| "0.2,2,10".into())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    let rate: f64 = std::env::var("RALPH_BENCH_TOKEN_RATE")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|r: &f64| *r > 0.0)
        .unwrap_or(100.0);
    let runs = knob("RALPH_BENCH_RUNS", 3);
    let wanted = std::env::var("RALPH_BENCH_FIXTURES").unwrap_or_else(|_| "py,js".into());
    let rt = runtime();
    eprintln!("fix_time: {}", *RALPH);
    let mut rows = Vec::new();
    for fixture in FIXTURES.iter().filter(|f| wanted.contains(f.name)) {
        for &latency in &latencies {
            eprintln!(
                "fix_time: {} at {latency} s per call + {rate} tokens/s, {runs} runs of each",
                fixture.name
            );
            let loops = loops();
            let mut by_config: Vec<Vec<Measured>> = vec![Vec::new(); loops.len()];
            // Interleaved, so that a slow moment of the machine hits every configuration.
            for _ in 0..runs {
                for (i, (_, timed)) in loops.iter().enumerate() {
                    by_config[i].push(fix(&rt, fixture, latency, rate, timed));
                }
            }
            let single = median(&by_config[0].iter().map(|m| m.wall_s).collect::<Vec<_>>());
            for ((name, _), measured) in loops.iter().zip(&by_config) {
                let wall = median(&measured.iter().map(|m| m.wall_s).collect::<Vec<_>>());
                rows.push(json!({
                    "fixture": fixture.name,
                    "latency_s": latency,
                    "token_rate": rate,
                    "config": name,
                    "runs": measured.len(),
                    "wall_s": wall,
                    "wall_s_all": measured.iter().map(|m| m.wall_s).collect::<Vec<_>>(),
                    "ratio_to_single": wall / single,
                    "calls": median(&measured.iter().map(|m| m.calls as f64).collect::<Vec<_>>()),
                    "critical_path_calls": median(&measured.iter().map(|m| m.critical_calls).collect::<Vec<_>>()),
                    "cost_usd": measured.iter().map(|m| m.cost_usd).collect::<Option<Vec<_>>>().map(|c| median(&c)),
                    "iterations": median(&measured.iter().map(|m| m.iterations as f64).collect::<Vec<_>>()),
                }));
            }
        }
    }
    print_table(&rows);
    let out = target_dir().join("bench-fix-time.json");
    match std::fs::write(&out, serde_json::to_string_pretty(&rows).expect("json")) {
        Ok(()) => eprintln!("fix_time: wrote {}", out.display()),
        Err(e) => eprintln!("fix_time: cannot write {}: {e}", out.display()),
    }
}

/// What one run measured.
#[derive(Clone)]
struct Measured {
    wall_s: f64,
    calls: usize,
    /// The union of the calls' intervals, divided by their mean length.
    critical_calls: f64,
    /// As the run's report gives it; micro-agent reports none.
    cost_usd: Option<f64>,
    iterations: u64,
}

/// A matcher that never matches and notes each request's role and arrival; mounted first, it
/// sees every request before the scripted responder answers it.
struct Arrivals(Arc<Mutex<Vec<(String, Instant)>>>);

impl wiremock::Match for Arrivals {
    fn matches(&self, request: &wiremock::Request) -> bool {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        let role = role_of_system(body["messages"][0]["content"].as_str().unwrap_or(""));
        self.0
            .lock()
            .expect("arrivals")
            .push((role, Instant::now()));
        false
    }
}

/// A reply after `latency` plus its tokens (about 4 characters each) at `rate` per second.
fn paced(text: String, latency: f64, rate: f64) -> (Answer, Duration) {
    let tokens = text.len() as f64 / 4.0;
    let delay = Duration::from_secs_f64(latency + tokens / rate);
    (Answer::Slow { text, delay }, delay)
}

fn fix(
    rt: &tokio::runtime::Runtime,
    fixture: &Fixture,
    latency: f64,
    rate: f64,
    timed: &Loop,
) -> Measured {
    let dir = support::fixture(fixture.dir);
    let llm = rt.block_on(MockLlm::start());
    let (half, half_delay) = paced(code(fixture.lang, fixture.half), latency, rate);
    let (fixed, fixed_delay) = paced(code(fixture.lang, fixture.fixed), latency, rate);
    let (analysis, analysis_delay) = paced(ANALYSIS.into(), latency, rate);
    let (approval, approval_delay) = paced(APPROVAL.into(), latency, rate);
    // micro-agent's one prompt is none of ralph-loop's roles: the mock files it as `unknown`.
    let writer = match timed {
        Loop::Ralph(_) => "artisan",
        Loop::MicroAgent(_) => "unknown",
    };
    llm.script(writer, [half, fixed])
        .always("librarian", analysis)
        .always("critic", approval);
    let delay_of = |role: &str, nth: usize| match role {
        "artisan" | "unknown" if nth == 0 => half_delay,
        "artisan" | "unknown" => fixed_delay,
        "librarian" => analysis_delay,
        _ => approval_delay,
    };
    let arrivals = Arc::new(Mutex::new(Vec::new()));
    rt.block_on(
        wiremock::Mock::given(Arrivals(arrivals.clone()))
            .respond_with(wiremock::ResponseTemplate::new(500))
            .with_priority(1)
            .mount(&llm.server),
    );
    let mut command = match timed {
        Loop::Ralph(config) => {
            if !config.is_empty() {
                support::write(dir.path(), "ralph.config.yaml", config);
            }
            let mut c = Command::new(&*RALPH);
            c.env("OPENAI_BASE_URL", llm.base_url())
                .env("OPENAI_API_KEY", "sk-bench")
                .args([
                    fixture.target,
                    "-t",
                    fixture.test_command,
                    "--output",
                    "json",
                ])
                .args(&*NO_CHAOS);
            c
        }
        Loop::MicroAgent(path) => {
            let mut c = Command::new(path);
            c.env("OPENAI_API_ENDPOINT", llm.base_url())
                .env("OPENAI_KEY", "sk-bench")
                .args([
                    fixture.target,
                    "-t",
                    fixture.test_command,
                    "-f",
                    fixture.test_file,
                ]);
            c
        }
    };
    let started = Instant::now();
    let status = command
        .current_dir(dir.path())
        .env("HOME", dir.path())
        .env_remove("LD_LIBRARY_PATH")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("spawn the loop");
    let wall_s = started.elapsed().as_secs_f64();
    let arrivals = arrivals.lock().expect("arrivals").clone();
    let (iterations, cost_usd) = match timed {
        Loop::Ralph(_) => {
            let report = support::read_json(&support::session_dir(dir.path()).join("report.json"));
            assert!(
                status.success() && report["iterations"] == 2,
                "the benchmark run must be a two-iteration success: {report}"
            );
            (
                report["iterations"].as_u64().unwrap_or(0),
                report["cost_usd"].as_f64(),
            )
        }
        Loop::MicroAgent(_) => {
            let left = std::fs::read_to_string(dir.path().join(fixture.target)).expect("target");
            let generated = arrivals.iter().filter(|(r, _)| r == "unknown").count();
            // micro-agent writes the code block as it came, without its last line break.
            assert!(
                status.success() && left.trim_end() == fixture.fixed.trim_end() && generated == 2,
                "micro-agent must fix the file in two generations ({generated} asked, {status}):\n{left}"
            );
            (generated as u64, None)
        }
    };
    let mut seen = std::collections::BTreeMap::<String, usize>::new();
    let intervals: Vec<(f64, f64)> = arrivals
        .iter()
        .map(|(role, at)| {
            let nth = seen.entry(role.clone()).or_default();
            let start = at.duration_since(started).as_secs_f64();
            let end = start + delay_of(role, *nth).as_secs_f64();
            *nth += 1;
            (start, end)
        })
        .collect();
    let mean = intervals.iter().map(|(s, e)| e - s).sum::<f64>() / intervals.len().max(1) as f64;
    Measured {
        wall_s,
        calls: intervals.len(),
        critical_calls: union(&intervals) / mean,
        cost_usd,
        iterations,
    }
}

/// The total length covered by `intervals`.
fn union(intervals: &[(f64, f64)]) -> f64 {
    let mut sorted = intervals.to_vec();
    sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut total = 0.0;
    let mut current: Option<(f64, f64)> = None;
    for (s, e) in sorted {
        current = match current {
            Some((cs, ce)) if s <= ce => Some((cs, ce.max(e))),
            Some((cs, ce)) => {
                total += ce - cs;
                Some((s, e))
            }
            None => Some((s, e)),
        };
    }
    total + current.map_or(0.0, |(s, e)| e - s)
}

fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

fn print_table(rows: &[Value]) {
    println!(
        "{:<4} {:>7} {:<11} {:>8} {:>6} {:>6} {:>9} {:>9}",
        "fix", "latency", "config", "wall s", "ratio", "calls", "on path", "cost $"
    );
    for r in rows {
        let cost = r["cost_usd"]
            .as_f64()
            .map_or_else(|| "-".to_string(), |c| format!("{c:.5}"));
        println!(
            "{:<4} {:>7} {:<11} {:>8.2} {:>6.2} {:>6} {:>9.1} {:>9}",
            r["fixture"].as_str().unwrap_or(""),
            r["latency_s"],
            r["config"].as_str().unwrap_or(""),
            r["wall_s"].as_f64().unwrap_or(0.0),
            r["ratio_to_single"].as_f64().unwrap_or(0.0),
            r["calls"],
            r["critical_path_calls"].as_f64().unwrap_or(0.0),
            cost,
        );
    }
}
