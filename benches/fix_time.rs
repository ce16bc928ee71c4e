//! Time to a fix on every shape of bug, whole-process: the release `ralph-loop` binary fixing
//! generated projects (`common/shapes.rs`) against a scripted model server whose every call
//! takes a time to the first token plus its reply's tokens at a rate, as a real API's does.
//!
//! The matrix: failing tests at the start {1, 3, 8, 30} × attempts to the fix {1, 2, 3} ×
//! latency profiles {0.5 s + 150 tokens/s, 1 s + 100 tokens/s, 4 s + 40 tokens/s} × Python
//! (pytest) and JavaScript (`node --test`). In each cell, interleaved and side by side, the
//! configurations of the same binary:
//!
//! - **single**: one model call per iteration (`critic.mode: off`, `librarian.analyze:
//!   never`, Chaos off): the single-model loop the brief's SC-014 compares with;
//! - **one**: the defaults, Chaos off, every role's calls at the profile's latency (every role
//!   on one model: the worst case);
//! - **roles**: the defaults, Chaos off, the Librarian's and the Critic's calls on a small
//!   model's latency (a third of the time to the first token, twice the rate), as the default
//!   models are;
//! - **one+chaos**, **roles+chaos**: the same with Chaos on (its file finds nothing, so one
//!   round), the coverage and mutation gates off;
//! - **quick** and **gates** (asked for by `RALPH_BENCH_CONFIGS`): `--quick` and the default
//!   promise (Chaos, and the coverage and mutation gates on the changed lines, with c8 and
//!   StrykerJS linked into a JavaScript project), on the Librarian's and Critic's small-model
//!   pacing and the test command detected; `gates` reports what it added beyond `quick` and the
//!   mutation tool's own time apart;
//! - **micro-agent**, when `RALPH_BENCH_MICRO_AGENT` names BuilderIO's `micro-agent` (from
//!   npm): the tool itself, on the same server, project and replies.
//!
//! Reported per cell and configuration: wall time, its ratio to **single**, the calls in all,
//! the calls on the path (a call is on the path when, for some moment, nothing else is in
//! flight: no other call, no test run) and what the path waited for (seconds each role's calls
//! were alone in flight), the cost per fix, and the orchestration overhead: the wall time less
//! the union of the server's time for each call and the test runs (their durations in the
//! session's results, ending when the session's events say they did). For Chaos on, also the
//! time beyond the Chaos-off run of the same pacing and Chaos's own time (its calls and its
//! test runs).
//!
//! Run with `cargo bench --bench fix_time`: about 20 minutes, 8 runs at once (the runs mostly
//! wait on the server), started half a second apart; a cell's configurations run one after the
//! other in the queue, so that a slow moment of the machine hits them alike. It prints the table and a summary, and writes
//! `target/bench-fix-time.json` (every run, every cell, the summary).
//!
//! Knobs (environment): `RALPH_BENCH_JOBS` (runs at once; 8), `RALPH_BENCH_RUNS` (runs of each
//! configuration per cell; 1), `RALPH_BENCH_LANGS` (`py,js`; `rs` adds Rust), `RALPH_BENCH_FAILING`
//! (`1,3,8,30`), `RALPH_BENCH_ITERATIONS` (`1,2,3`), `RALPH_BENCH_PROFILES` (`fast,mid,slow`),
//! `RALPH_BENCH_CONFIGS` (`single,one,roles,one+chaos,roles+chaos`), `RALPH_BENCH_BIN` (another
//! build of `ralph-loop`), `RALPH_BENCH_OUT` (the JSON's path), `RALPH_BENCH_MICRO_AGENT` (the
//! path of BuilderIO's `micro-agent`, installed with `npm install --ignore-scripts
//! @builder.io/micro-agent`), `RALPH_BENCH_KEEP` (keep each run's project folder, printing its
//! path: for a look at a session), `RALPH_BENCH_WRAPPER` (a command every ralph-loop run goes
//! under, such as `strace -f -ttt -o FILE`: for a diagnosis, the timings then mean little).

// A benchmark that cannot set up has nothing to measure: panicking with a message is right here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "common/env.rs"]
mod env;
#[path = "common/process.rs"]
mod process;
#[path = "common/rng.rs"]
mod rng;
#[path = "common/shapes.rs"]
mod shapes;
#[allow(dead_code)]
#[path = "../tests/suite/support.rs"]
mod support;
#[path = "common/timeline.rs"]
mod timeline;

use std::collections::{BTreeMap, VecDeque};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use process::{knob, ralph_command, runtime, target_dir, NO_CHAOS, RALPH};
use rng::Rng;
use serde_json::{json, Value};
use shapes::{Lang, Shape};
use support::{code, role_of_system, Answer, MockLlm};
use timeline::{Span, Timeline};

/// A latency profile: each call takes `ttft` plus its reply's tokens at `rate` per second.
#[derive(Clone, Copy, Debug)]
struct Profile {
    name: &'static str,
    ttft: f64,
    rate: f64,
}

const PROFILES: [Profile; 3] = [
    Profile {
        name: "fast",
        ttft: 0.5,
        rate: 150.0,
    },
    Profile {
        name: "mid",
        ttft: 1.0,
        rate: 100.0,
    },
    Profile {
        name: "slow",
        ttft: 4.0,
        rate: 40.0,
    },
];

/// How the roles' calls are paced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pacing {
    /// Every call at the profile's latency.
    One,
    /// The Librarian's and the Critic's calls on a small model: a third of the time to the
    /// first token, twice the rate.
    Roles,
}

#[derive(Clone, Debug)]
enum Kind {
    Single,
    Default {
        pacing: Pacing,
        chaos: bool,
    },
    /// `--quick`: the tests and the Critic only, the test command detected.
    Quick,
    /// The default promise: Chaos and the coverage and mutation gates, the test command
    /// detected (so coverage can be added) and, for JavaScript, c8 and StrykerJS in the
    /// project's `node_modules`.
    Gates,
    MicroAgent(String),
}

#[derive(Clone, Debug)]
struct Config {
    name: &'static str,
    kind: Kind,
}

fn configs() -> Vec<Config> {
    let wanted = list(
        "RALPH_BENCH_CONFIGS",
        "single,one,roles,one+chaos,roles+chaos",
    );
    let mut all = vec![
        Config {
            name: "single",
            kind: Kind::Single,
        },
        Config {
            name: "one",
            kind: Kind::Default {
                pacing: Pacing::One,
                chaos: false,
            },
        },
        Config {
            name: "roles",
            kind: Kind::Default {
                pacing: Pacing::Roles,
                chaos: false,
            },
        },
        Config {
            name: "one+chaos",
            kind: Kind::Default {
                pacing: Pacing::One,
                chaos: true,
            },
        },
        Config {
            name: "roles+chaos",
            kind: Kind::Default {
                pacing: Pacing::Roles,
                chaos: true,
            },
        },
    ];
    all.extend([
        Config {
            name: "quick",
            kind: Kind::Quick,
        },
        Config {
            name: "gates",
            kind: Kind::Gates,
        },
    ]);
    all.retain(|c| c.name == "single" || wanted.iter().any(|w| w == c.name));
    if let Ok(path) = std::env::var("RALPH_BENCH_MICRO_AGENT") {
        all.push(Config {
            name: "micro-agent",
            kind: Kind::MicroAgent(path),
        });
    }
    all
}

/// One cell of the matrix: a shape of bug at a latency profile.
#[derive(Clone, Copy, Debug)]
struct Cell {
    shape: Shape,
    profile: Profile,
}

impl Cell {
    fn name(&self) -> String {
        format!(
            "{} f{} k{} {}",
            self.shape.lang.name(),
            self.shape.failing,
            self.shape.iterations,
            self.profile.name
        )
    }
}

const ANALYSIS: &str = "Steps 0 to 7 add one too many: each must return its slope times x plus its offset, as its docstring says. Remove the extra `+ 1` from every step that has it and change nothing else.";
const APPROVAL: &str = "The proposal handles the cases the tests check.\nVERDICT: APPROVE";
const JUDGEMENT: &str = "KEEP: every test";

fn main() {
    if !env::benchmarking("fix_time") {
        return;
    }
    let langs: Vec<Lang> = list("RALPH_BENCH_LANGS", "py,js")
        .iter()
        .filter_map(|l| match l.as_str() {
            "py" => Some(Lang::Python),
            "js" => Some(Lang::JavaScript),
            "rs" => Some(Lang::Rust),
            _ => None,
        })
        .collect();
    let failing = numbers("RALPH_BENCH_FAILING", "1,3,8,30");
    let iterations = numbers("RALPH_BENCH_ITERATIONS", "1,2,3");
    let profiles: Vec<Profile> = list("RALPH_BENCH_PROFILES", "fast,mid,slow")
        .iter()
        .filter_map(|p| PROFILES.iter().find(|q| q.name == p).copied())
        .collect();
    let runs = knob("RALPH_BENCH_RUNS", 1);
    PYTHON.get_or_init(|| {
        let out = Command::new("python3")
            .args(["-c", "import sys; print(sys.executable)"])
            .output()
            .expect("python3");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    });
    let jobs = knob("RALPH_BENCH_JOBS", 8);
    let configs = configs();
    let mut cells = Vec::new();
    for &lang in &langs {
        for &f in &failing {
            for &k in &iterations {
                for &profile in &profiles {
                    cells.push(Cell {
                        shape: Shape {
                            lang,
                            failing: f,
                            iterations: k,
                        },
                        profile,
                    });
                }
            }
        }
    }
    // Each cell's configurations side by side, the cells' order mixed so that the slow
    // profiles do not all come at the end.
    let mut order: Vec<usize> = (0..cells.len()).collect();
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    for i in (1..order.len()).rev() {
        order.swap(i, rng.below(i + 1));
    }
    let mut tasks = VecDeque::new();
    for rep in 0..runs {
        for &c in &order {
            for k in 0..configs.len() {
                tasks.push_back((c, k, rep));
            }
        }
    }
    eprintln!(
        "fix_time: {} on {} cells × {} configurations × {runs} run(s), {jobs} at once",
        *RALPH,
        cells.len(),
        configs.len()
    );
    let total = tasks.len();
    let tasks = Arc::new(Mutex::new(tasks));
    let results: Arc<Mutex<Vec<(usize, usize, Measured)>>> = Arc::default();
    let rt = Arc::new(runtime());
    let started = Instant::now();
    // No two runs start within half a second of each other: runs alike started together would
    // run their tests at the same moments and compete for the two cores. The wait is not timed.
    let next_start = Arc::new(Mutex::new(started));
    std::thread::scope(|s| {
        for _ in 0..jobs {
            let (tasks, results, rt) = (tasks.clone(), results.clone(), rt.clone());
            let next_start = next_start.clone();
            let (cells, configs) = (&cells, &configs);
            s.spawn(move || loop {
                let Some((c, k, _)) = tasks.lock().unwrap().pop_front() else {
                    return;
                };
                let slot = {
                    let mut next = next_start.lock().unwrap();
                    let slot = (*next).max(Instant::now());
                    *next = slot + Duration::from_millis(500);
                    slot
                };
                std::thread::sleep(slot.saturating_duration_since(Instant::now()));
                let measured = fix(&rt, &cells[c], &configs[k]);
                let mut results = results.lock().unwrap();
                results.push((c, k, measured));
                let done = results.len();
                if done % 20 == 0 || done == total {
                    eprintln!(
                        "fix_time: {done}/{total} runs, {:.1} min",
                        started.elapsed().as_secs_f64() / 60.0
                    );
                }
            });
        }
    });
    let minutes = started.elapsed().as_secs_f64() / 60.0;
    let results = std::mem::take(&mut *results.lock().unwrap());
    let table = aggregate(&cells, &configs, &results);
    print_table(&table, &configs);
    let summary = summarise(&table, &configs);
    println!(
        "\n{}\n(whole matrix: {minutes:.1} min)",
        serde_json::to_string_pretty(&summary).expect("json")
    );
    let runs_json: Vec<Value> = results
        .iter()
        .map(|(c, k, m)| {
            json!({
                "cell": cells[*c].name(), "config": configs[*k].name, "ok": m.ok,
                "problem": m.problem, "wall_s": m.wall_s, "calls": m.calls,
                "on_path": m.on_path, "waits_s": m.waits, "cost_usd": m.cost_usd,
                "overhead_ms": m.overhead_ms, "chaos_own_s": m.chaos_own_s,
                "test_ms": m.test_ms, "mutation_ms": m.mutation_ms, "own_ms": m.own_ms,
                "gaps_ms": m.gaps_ms,
            })
        })
        .collect();
    let out = std::env::var("RALPH_BENCH_OUT")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| target_dir().join("bench-fix-time.json"));
    let doc = json!({"binary": *RALPH, "minutes": minutes, "summary": summary, "cells": table, "runs": runs_json});
    match std::fs::write(&out, serde_json::to_string_pretty(&doc).expect("json")) {
        Ok(()) => eprintln!("fix_time: wrote {}", out.display()),
        Err(e) => eprintln!("fix_time: cannot write {}: {e}", out.display()),
    }
}

/// The Python interpreter's own path (not a version manager's shim).
static PYTHON: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// What one run measured.
#[derive(Clone, Debug, Default)]
struct Measured {
    /// The run ended as scripted: success after the shape's iterations.
    ok: bool,
    problem: Option<String>,
    wall_s: f64,
    calls: usize,
    on_path: usize,
    /// Seconds each role's calls were alone in flight.
    waits: BTreeMap<String, f64>,
    /// As the run's report gives it; micro-agent reports none.
    cost_usd: Option<f64>,
    overhead_ms: f64,
    /// Chaos's calls (and the Critic's judgement of its tests) and its test runs, in seconds.
    chaos_own_s: f64,
    /// Where the overhead went: each stretch with nothing in flight, in milliseconds.
    gaps_ms: Vec<(String, f64)>,
    /// Every test run's time, as the report gives it (with coverage when a gate gathers it,
    /// Chaos's files, and the mutation tool's run).
    test_ms: f64,
    /// The mutation tool's own time (StrykerJS, mutmut), as the report gives it.
    mutation_ms: f64,
    /// ralph-loop's own time as the report gives it: the run's time with no call and no test
    /// run (coverage's and the mutation tool's included) in flight.
    own_ms: f64,
}

/// A run's project folder: removed after the run, or kept for a look.
enum Kept {
    Temp(tempfile::TempDir),
    Path(std::path::PathBuf),
}

impl Kept {
    fn path(&self) -> &Path {
        match self {
            Kept::Temp(t) => t.path(),
            Kept::Path(p) => p,
        }
    }
}

/// A matcher that never matches and notes each request's role, arrival and the time the
/// server will take over it; mounted first, it sees every request before the responder does.
struct Arrivals {
    seen: Arc<Mutex<Vec<(String, Instant, Duration)>>>,
    delay: DelayOf,
}

/// The time the server takes over the `n`th call of a role.
type DelayOf = Box<dyn Fn(&str, usize) -> Duration + Send + Sync>;

impl wiremock::Match for Arrivals {
    fn matches(&self, request: &wiremock::Request) -> bool {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        let role = role_of_system(body["messages"][0]["content"].as_str().unwrap_or(""));
        let mut seen = self.seen.lock().expect("arrivals");
        let nth = seen.iter().filter(|(r, _, _)| *r == role).count();
        let delay = (self.delay)(&role, nth);
        seen.push((role, Instant::now(), delay));
        false
    }
}

/// The time a call takes: `ttft` plus the reply's tokens (about 4 characters each) at `rate`.
fn delay_of(text: &str, profile: Profile, small: bool) -> Duration {
    let (ttft, rate) = if small {
        (profile.ttft / 3.0, profile.rate * 2.0)
    } else {
        (profile.ttft, profile.rate)
    };
    Duration::from_secs_f64(ttft + text.len() as f64 / 4.0 / rate)
}

fn fix(rt: &tokio::runtime::Runtime, cell: &Cell, config: &Config) -> Measured {
    let shape = cell.shape;
    let lang = shape.lang;
    let dir = tempfile::Builder::new()
        .prefix("ralph-fix-time-")
        .tempdir()
        .expect("temp dir");
    shape.write(dir.path());
    let dir = if std::env::var_os("RALPH_BENCH_KEEP").is_some() {
        let kept = dir.keep();
        eprintln!(
            "fix_time: {} {} in {}",
            cell.name(),
            config.name,
            kept.display()
        );
        Kept::Path(kept)
    } else {
        Kept::Temp(dir)
    };
    let llm = rt.block_on(MockLlm::start());
    let attempts: Vec<String> = (1..=shape.iterations)
        .map(|j| code(lang.tag(), &shape.target(shape.wrong_after(j))))
        .collect();
    let chaos = format!(
        "Boundary values at zero and below.\n\n```{}\n{}```\n",
        lang.tag(),
        shape.chaos_suite()
    );
    let small = matches!(
        config.kind,
        Kind::Default {
            pacing: Pacing::Roles,
            ..
        } | Kind::Quick
            | Kind::Gates
    );
    let profile = cell.profile;
    let writer = match config.kind {
        Kind::MicroAgent(_) => "unknown",
        _ => "artisan",
    };
    let paced = |text: &str, small: bool| Answer::Paced {
        text: text.to_string(),
        delay: delay_of(text, profile, small),
    };
    llm.script(writer, attempts.iter().map(|a| paced(a, false)))
        .always("librarian", paced(ANALYSIS, small))
        .always("critic", paced(APPROVAL, small))
        .always("judge", paced(JUDGEMENT, small))
        .always("chaos", paced(&chaos, false));
    let texts = attempts.clone();
    let chaos_text = chaos.clone();
    let arrivals = Arc::new(Mutex::new(Vec::new()));
    rt.block_on(
        wiremock::Mock::given(Arrivals {
            seen: arrivals.clone(),
            delay: Box::new(move |role, nth| match role {
                "artisan" | "unknown" => delay_of(&texts[nth.min(texts.len() - 1)], profile, false),
                "librarian" => delay_of(ANALYSIS, profile, small),
                "critic" => delay_of(APPROVAL, profile, small),
                "judge" => delay_of(JUDGEMENT, profile, small),
                _ => delay_of(&chaos_text, profile, false),
            }),
        })
        .respond_with(wiremock::ResponseTemplate::new(500))
        .with_priority(1)
        .mount(&llm.server),
    );
    let test_command = lang.test_command(PYTHON.get().map_or("python3", String::as_str));
    let mut command = match &config.kind {
        Kind::Single | Kind::Default { .. } | Kind::Quick | Kind::Gates => {
            match config.kind {
                Kind::Single => support::write(
                    dir.path(),
                    "ralph.config.yaml",
                    "critic: { mode: off }\nlibrarian: { analyze: never }\n",
                ),
                // Chaos's rounds alone, as these configurations measured before the gates
                // were on by default: `gates` measures those.
                Kind::Default { chaos: true, .. } => support::without_gates(dir.path()),
                Kind::Gates if lang == Lang::JavaScript => support::link_node_modules(dir.path()),
                _ => {}
            }
            let mut c = ralph_command();
            c.env("OPENAI_BASE_URL", llm.base_url())
                .env("OPENAI_API_KEY", "sk-bench")
                .args([lang.target(), "--output", "json"]);
            match config.kind {
                // The test command detected, as a user's run has it: coverage can be added.
                Kind::Quick => {
                    c.arg("--quick");
                }
                Kind::Gates => {}
                Kind::Default { chaos: true, .. } => {
                    c.args(["-t", &test_command]);
                }
                _ => {
                    c.args(["-t", &test_command]).args(&*NO_CHAOS);
                }
            }
            c
        }
        Kind::MicroAgent(path) => {
            let mut c = Command::new(path);
            c.env("OPENAI_API_ENDPOINT", llm.base_url())
                .env("OPENAI_KEY", "sk-bench")
                .args([lang.target(), "-t", &test_command, "-f", lang.test_file()]);
            c
        }
    };
    let wall_clock = SystemTime::now();
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
    let mut spans: Vec<Span> = arrivals
        .iter()
        .map(|(role, at, delay)| {
            let start = at.duration_since(started).as_secs_f64();
            Span::new(role, start, start + delay.as_secs_f64())
        })
        .collect();
    let mut m = Measured {
        wall_s,
        calls: arrivals.len(),
        ..Measured::default()
    };
    match &config.kind {
        Kind::MicroAgent(_) => {
            let left = std::fs::read_to_string(dir.path().join(lang.target())).expect("target");
            let fixed = shape.target(0);
            m.ok = status.success() && left.trim_end() == fixed.trim_end();
            if !m.ok {
                m.problem = Some(format!("micro-agent did not fix the file ({status})"));
            }
        }
        _ => {
            let session = support::session_dir(dir.path());
            let report = support::read_json(&session.join("report.json"));
            m.ok = status.success() && report["iterations"] == shape.iterations as u64;
            if !m.ok {
                m.problem = Some(format!(
                    "{}: {} after {} iterations (expected success after {})",
                    report["status"], report["reason"], report["iterations"], shape.iterations
                ));
            }
            m.cost_usd = report["cost_usd"].as_f64();
            m.test_ms = report["timings"]["test_ms"].as_f64().unwrap_or(0.0);
            m.own_ms = report["timings"]["overhead_ms"].as_f64().unwrap_or(0.0);
            m.mutation_ms = report["adversarial"]["mutation"]["duration_ms"]
                .as_f64()
                .unwrap_or(0.0);
            spans.extend(test_spans(&session, wall_clock));
        }
    }
    let timeline = Timeline::new(spans);
    m.overhead_ms = (wall_s - timeline.covered()) * 1000.0;
    m.gaps_ms = timeline
        .gaps(wall_s)
        .into_iter()
        .map(|(what, s)| (what, (s * 1e4).round() / 10.0))
        .collect();
    m.waits = timeline.alone();
    m.on_path = timeline.calls_alone(|s| !s.starts_with("tests") && s != "chaos-tests");
    m.chaos_own_s = timeline.total(|s| matches!(s, "chaos" | "judge" | "chaos-tests"));
    if let Some(p) = &m.problem {
        eprintln!("fix_time: {} {}: {p}", cell.name(), config.name);
    }
    m
}

/// The session's test runs as spans, from its events (when each ended) and its results (how
/// long each took), in seconds since `started`.
fn test_spans(session: &Path, started: SystemTime) -> Vec<Span> {
    let Ok(events) = std::fs::read_to_string(session.join("events.jsonl")) else {
        return Vec::new();
    };
    let since = |time: &str| -> Option<f64> {
        let at = chrono::DateTime::parse_from_rfc3339(time).ok()?;
        let at = SystemTime::UNIX_EPOCH
            + Duration::from_nanos(at.timestamp_nanos_opt()?.try_into().ok()?);
        Some(match at.duration_since(started) {
            Ok(d) => d.as_secs_f64(),
            Err(e) => -e.duration().as_secs_f64(),
        })
    };
    let duration = |name: String| -> Option<f64> {
        let text = std::fs::read_to_string(session.join(name)).ok()?;
        let run: Value = serde_json::from_str(&text).ok()?;
        Some(run["duration_ms"].as_f64()? / 1000.0)
    };
    let mut spans = Vec::new();
    for line in events.lines() {
        let Ok(e) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let (what, file) = match e["type"].as_str() {
            Some("tests_finished") => (
                "tests",
                format!("test-results-iteration-{}.json", e["iteration"]),
            ),
            Some("chaos_suite") => (
                "chaos-tests",
                format!(
                    "test-results-chaos-iteration-{}-round-{}.json",
                    e["iteration"], e["round"]
                ),
            ),
            // The mutation tool's run ends with its event, which says how long it took.
            Some("chaos_mutation") => {
                if let (Some(end), Some(took)) = (
                    e["time"].as_str().and_then(since),
                    e["duration_ms"].as_f64(),
                ) {
                    spans.push(Span::new("mutation", end - took / 1000.0, end));
                }
                continue;
            }
            _ => continue,
        };
        if let (Some(end), Some(took)) = (e["time"].as_str().and_then(since), duration(file)) {
            spans.push(Span::new(what, end - took, end));
        }
    }
    spans
}

/// One row of the table: a cell's configuration, its runs' medians.
fn aggregate(
    cells: &[Cell],
    configs: &[Config],
    results: &[(usize, usize, Measured)],
) -> Vec<Value> {
    let mut rows = Vec::new();
    for (c, cell) in cells.iter().enumerate() {
        let of = |k: usize| -> Vec<&Measured> {
            results
                .iter()
                .filter(|(rc, rk, m)| *rc == c && *rk == k && m.ok)
                .map(|(_, _, m)| m)
                .collect()
        };
        let single = median(&of(0).iter().map(|m| m.wall_s).collect::<Vec<_>>());
        for (k, config) in configs.iter().enumerate() {
            let ms = of(k);
            let failed = results
                .iter()
                .filter(|(rc, rk, m)| *rc == c && *rk == k && !m.ok)
                .count();
            let med =
                |f: &dyn Fn(&Measured) -> f64| median(&ms.iter().map(|m| f(m)).collect::<Vec<_>>());
            let wall = med(&|m| m.wall_s);
            let mut waits = BTreeMap::<String, f64>::new();
            for m in &ms {
                for (role, s) in &m.waits {
                    *waits.entry(role.clone()).or_default() += s / ms.len() as f64;
                }
            }
            // Chaos on: what it added beyond the same pacing's Chaos-off run.
            let beyond = match config.kind {
                Kind::Default { pacing, chaos: true } => configs
                    .iter()
                    .position(|o| matches!(o.kind, Kind::Default { pacing: p, chaos: false } if p == pacing))
                    .map(|off| {
                        let off = median(&of(off).iter().map(|m| m.wall_s).collect::<Vec<_>>());
                        wall - off
                    }),
                // The default promise: what it added beyond `--quick` on the same cell.
                Kind::Gates => configs
                    .iter()
                    .position(|o| matches!(o.kind, Kind::Quick))
                    .map(|quick| {
                        wall - median(&of(quick).iter().map(|m| m.wall_s).collect::<Vec<_>>())
                    }),
                _ => None,
            };
            rows.push(json!({
                "cell": cell.name(), "lang": cell.shape.lang.name(), "failing": cell.shape.failing,
                "iterations": cell.shape.iterations, "profile": cell.profile.name,
                "config": config.name, "runs": ms.len(), "failed_runs": failed,
                "wall_s": wall, "ratio": wall / single,
                "calls": med(&|m| m.calls as f64), "on_path": med(&|m| m.on_path as f64),
                "waits_s": waits,
                "cost_usd": ms.iter().map(|m| m.cost_usd).collect::<Option<Vec<_>>>().map(|c| median(&c)),
                "overhead_ms": med(&|m| m.overhead_ms),
                "chaos_own_s": med(&|m| m.chaos_own_s),
                "beyond_chaos_off_s": beyond,
                "test_ms": med(&|m| m.test_ms), "mutation_ms": med(&|m| m.mutation_ms),
                "own_ms": med(&|m| m.own_ms),
            }));
        }
    }
    rows
}

/// Per configuration (and per profile): the median and the worst cell of the ratio, the
/// overhead, and for Chaos on what it added beyond its own time.
fn summarise(rows: &[Value], configs: &[Config]) -> Value {
    let mut out = serde_json::Map::new();
    for config in configs.iter().skip(1) {
        let mine: Vec<&Value> = rows
            .iter()
            .filter(|r| r["config"] == config.name && r["runs"].as_u64() > Some(0))
            .collect();
        let stats = |rows: &[&Value]| -> Value {
            let worst = |key: &str| {
                rows.iter()
                    .max_by(|a, b| {
                        a[key]
                            .as_f64()
                            .unwrap_or(0.0)
                            .total_cmp(&b[key].as_f64().unwrap_or(0.0))
                    })
                    .map(|r| json!({"value": r[key], "cell": r["cell"], "waits_s": r["waits_s"]}))
            };
            let values = |key: &str| {
                rows.iter()
                    .filter_map(|r| r[key].as_f64())
                    .collect::<Vec<_>>()
            };
            let extra: Vec<f64> = rows
                .iter()
                .filter_map(|r| {
                    Some(r["beyond_chaos_off_s"].as_f64()? - r["chaos_own_s"].as_f64()?)
                })
                .collect();
            json!({
                "cells": rows.len(),
                "ratio_median": median(&values("ratio")), "ratio_worst": worst("ratio"),
                "overhead_ms_median": median(&values("overhead_ms")), "overhead_ms_worst": worst("overhead_ms"),
                "cost_usd_median": median(&values("cost_usd")),
                "on_path_median": median(&values("on_path")),
                "beyond_chaos_own_s_median": if extra.is_empty() { Value::Null } else { json!(median(&extra)) },
                "beyond_chaos_own_s_worst": extra.iter().copied().reduce(f64::max),
                "beyond_s_median": median(&values("beyond_chaos_off_s")),
                "beyond_s_worst": worst("beyond_chaos_off_s"),
                "test_ms_median": median(&values("test_ms")), "test_ms_worst": worst("test_ms"),
                "mutation_ms_median": median(&values("mutation_ms")), "mutation_ms_worst": worst("mutation_ms"),
                "own_ms_median": median(&values("own_ms")), "own_ms_worst": worst("own_ms"),
            })
        };
        let mut per = serde_json::Map::new();
        per.insert("all".into(), stats(&mine));
        for p in PROFILES {
            let of: Vec<&Value> = mine
                .iter()
                .copied()
                .filter(|r| r["profile"] == p.name)
                .collect();
            if !of.is_empty() {
                per.insert(p.name.into(), stats(&of));
            }
        }
        out.insert(config.name.into(), Value::Object(per));
    }
    let single: Vec<f64> = rows
        .iter()
        .filter(|r| r["config"] == "single")
        .filter_map(|r| r["overhead_ms"].as_f64())
        .collect();
    out.insert(
        "single".into(),
        json!({"overhead_ms_median": median(&single), "overhead_ms_worst": single.iter().copied().reduce(f64::max)}),
    );
    Value::Object(out)
}

fn print_table(rows: &[Value], configs: &[Config]) {
    print!("{:<18} {:>8}", "cell", "single");
    for c in configs.iter().skip(1) {
        print!(" {:>24}", c.name);
    }
    println!("   (ratio, calls on path / in all, overhead ms)");
    for cell in rows.chunks(configs.len()) {
        print!(
            "{:<18} {:>7.2}s",
            cell[0]["cell"].as_str().unwrap_or(""),
            cell[0]["wall_s"].as_f64().unwrap_or(f64::NAN)
        );
        for r in &cell[1..] {
            let text = format!(
                "{:.2}× {}/{} {:.0}",
                r["ratio"].as_f64().unwrap_or(f64::NAN),
                r["on_path"].as_f64().unwrap_or(f64::NAN),
                r["calls"].as_f64().unwrap_or(f64::NAN),
                r["overhead_ms"].as_f64().unwrap_or(f64::NAN),
            );
            print!(" {text:>24}");
        }
        println!(
            " {:.0}",
            cell[0]["overhead_ms"].as_f64().unwrap_or(f64::NAN)
        );
    }
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

/// A comma-separated list from the environment, or `default`.
fn list(name: &str, default: &str) -> Vec<String> {
    std::env::var(name)
        .unwrap_or_else(|_| default.into())
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

fn numbers(name: &str, default: &str) -> Vec<usize> {
    list(name, default)
        .iter()
        .filter_map(|s| s.parse().ok())
        .collect()
}
