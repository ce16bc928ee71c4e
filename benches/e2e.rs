//! Whole-process benchmarks of the release `ralph-loop` binary: orchestration overhead of a
//! two-iteration fix, start-up, and peak memory (of that fix, and of the same fix near its budget,
//! where exact token counting builds the tokenizer's table). Run with `cargo bench --bench e2e`; it prints a
//! table and writes `target/bench-e2e.json`. See `docs/performance.md`.
//!
//! Speed is measured here, never asserted: the numbers go into the docs, not into a pass/fail.
//! Every figure that depends on the machine is measured next to a baseline in the same run.
//!
//! Knobs (environment): `RALPH_BENCH_RUNS` (fix runs, default 15), `RALPH_BENCH_STARTS`
//! (start-up runs, default 200), `RALPH_BENCH_MEM_RUNS` (sampled memory runs, default 5),
//! `RALPH_BENCH_LATENCY_MS` (the mock model's fixed latency, default 50),
//! `RALPH_BENCH_VAULT` (attempts in the project's MemoryVault when each run starts, default
//! 1,000: `memory.max_patterns`, the steady state of a project in use, where every run also
//! prunes; 0 starts each run with no vault). To diagnose:
//! `RALPH_BENCH_VARIANT_ENV="K=V ..."` runs every fix a second time, interleaved, with those
//! variables set, and reports that variant's overhead beside the plain one (an A/B in one run);
//! `RALPH_BENCH_VARIANT_CONFIG="YAML"` does the same with that text as the project's
//! `ralph.config.yaml` (for example `memory: { enabled: false }`; `chaos: { enabled: true }`
//! adds one round of Chaos that finds nothing, whose own overhead is then the variant's less
//! the plain run's);
//! `RALPH_BENCH_BIN` measures another build of `ralph-loop` (a previous commit's) with this
//! harness; `RALPH_BENCH_WRAPPER` (a command, such as `strace -f -tt -o FILE`) runs every fix under it,
//! which makes the timings meaningless.

// A benchmark that cannot set up has nothing to measure: panicking with a message is right here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "common/env.rs"]
mod env;
#[path = "common/process.rs"]
mod process;
#[allow(dead_code)]
#[path = "../tests/suite/support.rs"]
mod support;

use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use process::{knob, ralph_command, runtime, target_dir, NO_CHAOS, RALPH};
use serde_json::{json, Value};
use support::{code, Answer, MockLlm, FIXED_JS, HALF_FIXED_JS};

const TEST_COMMAND: &str = "node --test test/";

/// The MemoryVault every fix run starts with (`RALPH_BENCH_VAULT` attempts), made once.
static VAULT: OnceLock<Option<tempfile::TempDir>> = OnceLock::new();

/// A project folder whose `.ralph/` holds a vault of `n` attempts, made once and copied into
/// each fix run's project.
fn seeded_vault(rt: &tokio::runtime::Runtime, n: usize) -> Option<tempfile::TempDir> {
    if n == 0 {
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    rt.block_on(support::seed_vault(dir.path(), n));
    // The recall snapshot beside the table is in the format of this harness's build. A binary
    // of another format reads the table through LanceDB once and writes its own, as the first
    // run after an upgrade does: one read of the vault by the binary measured leaves what any
    // later run of it finds.
    let stats = std::process::Command::new(&*RALPH)
        .args(["vault", "stats"])
        .current_dir(dir.path())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(stats.status.success(), "vault stats: {stats:?}");
    Some(dir)
}

/// Chaos's file for a variant with Chaos on, from `.ralph/session-<id>/chaos/`: it passes.
const CHAOS_JS: &str = "const test = require('node:test');\nconst assert = require('node:assert');\nconst { median } = require('../../../src/median');\n\ntest('a single value', () => assert.strictEqual(median([7]), 7));\ntest('repeated values', () => assert.strictEqual(median([2, 2, 2, 2]), 2));\n";

fn main() {
    if !env::benchmarking("e2e") {
        return;
    }
    let runs = knob("RALPH_BENCH_RUNS", 15);
    let starts = knob("RALPH_BENCH_STARTS", 200);
    let mem_runs = knob("RALPH_BENCH_MEM_RUNS", 5);
    let latency = Duration::from_millis(knob("RALPH_BENCH_LATENCY_MS", 50) as u64);
    let rt = runtime();
    let attempts = env::setting("RALPH_BENCH_VAULT", 1000);
    VAULT.get_or_init(|| seeded_vault(&rt, attempts));
    eprintln!("e2e: each run starts with {attempts} attempts in its MemoryVault");

    eprintln!("e2e: {}", *RALPH);
    eprintln!(
        "e2e: two-iteration fix of js-median, {runs} runs, model latency {latency:?} per call"
    );
    let variant_env: Vec<(String, String)> = std::env::var("RALPH_BENCH_VARIANT_ENV")
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let variant_config = std::env::var("RALPH_BENCH_VARIANT_CONFIG").ok();
    let variant = !variant_env.is_empty() || variant_config.is_some();
    // The binary as an installed one is after a boot: read from disk, not in the blocks it was
    // written in (see `support::evict_page_cache`). Then one untimed run: page cache, node's
    // own start-up caches.
    if !support::evict_page_cache(std::path::Path::new(&*RALPH)) {
        eprintln!(
            "e2e: warning: {} is in memory (tmpfs): its pages stay as they were written, and \
             its memory figures compare only with a binary in the same state",
            *RALPH
        );
    }
    let _ = fix_run(&rt, latency, false, &[], None, None);
    let (mut fixes, mut variants) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        fixes.push(fix_run(&rt, latency, false, &[], None, None));
        if variant {
            variants.push(fix_run(
                &rt,
                latency,
                false,
                &variant_env,
                variant_config.as_deref(),
                None,
            ));
        }
    }

    eprintln!(
        "e2e: the mock's own round trip, {} requests from an in-process client",
        runs * 6
    );
    let round_trips = mock_round_trips(&rt, latency, runs * 6);

    eprintln!("e2e: start-up, {starts} runs of `ralph-loop --version` against `/bin/true`");
    let (version, truth) = startup(starts);

    eprintln!("e2e: peak memory, {mem_runs} runs sampling /proc/<pid>/status");
    let mems: Vec<FixRun> = (0..mem_runs)
        .map(|_| fix_run(&rt, latency, true, &[], None, None))
        .collect();

    // A run near its budget counts prompts exactly, so it builds the tokenizer's table: the
    // budget is set just above what the plain run spends, at $10 per million input tokens.
    let spent_tokens = fixes[0].report["tokens"]["input_tokens"]
        .as_u64()
        .unwrap_or(6000);
    let tight_budget = (spent_tokens + 1500) as f64 * 10.0 / 1e6;
    eprintln!("e2e: peak memory near the budget (${tight_budget:.4}), {mem_runs} runs");
    let tight: Vec<FixRun> = (0..mem_runs)
        .map(|_| fix_run(&rt, latency, true, &[], None, Some(tight_budget)))
        .collect();

    let mut results = summarise(&fixes, &round_trips, &version, &truth, &mems, latency);
    let own = |runs: &[FixRun]| {
        stats(
            &runs
                .iter()
                .filter_map(|r| r.hwm_kib)
                .map(|k| k as f64 / 1024.0)
                .collect::<Vec<_>>(),
        )
    };
    results["memory"]["near_budget"] = json!({
        "budget_usd": tight_budget,
        "statuses": tight.iter().map(|r| r.report["status"].clone()).collect::<Vec<_>>(),
        "own_peak_mib": own(&tight),
        "external_overhead_ms": stats(&tight.iter().map(|r| r.overhead_ms(latency)).collect::<Vec<_>>()),
    });
    if !variants.is_empty() {
        let env: Vec<String> = variant_env
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        results["variant"] = overhead_of(&variants, latency);
        results["variant"]["env"] = json!(env.join(" "));
        results["variant"]["config"] = json!(variant_config);
    }
    print_table(&results);
    let out = target_dir().join("bench-e2e.json");
    match std::fs::write(&out, serde_json::to_string_pretty(&results).expect("json")) {
        Ok(()) => eprintln!("e2e: wrote {}", out.display()),
        Err(e) => eprintln!("e2e: cannot write {}: {e}", out.display()),
    }
}

/// What one whole run measured.
struct FixRun {
    /// Spawn to exit, measured here.
    wall_ms: f64,
    /// Requests the mock server received.
    calls: usize,
    /// When each request reached the mock server, in ms after the spawn.
    arrivals_ms: Vec<f64>,
    /// `duration_ms` of each test run, by iteration (0 is the baseline run).
    tests_ms: Vec<f64>,
    /// Baseline: the same test command run alone in the same directory just before (`sh -c`,
    /// as the runner does), spawn to exit.
    standalone_test_ms: f64,
    /// Sum of `duration_ms` over the session's `test-results-iteration-*.json`.
    test_ms: f64,
    /// The run's own `report.json`.
    report: Value,
    /// `ru_maxrss` from `wait4`: the process and the children it reaped (the test commands).
    rusage_maxrss_kib: u64,
    /// The process's own high-water mark: `getrusage` at its exit when the build logs it, else
    /// `VmHWM` sampled while it ran.
    hwm_kib: Option<u64>,
}

impl FixRun {
    fn overhead_ms(&self, latency: Duration) -> f64 {
        self.wall_ms - self.calls as f64 * ms(latency) - self.test_ms
    }

    /// The external overhead split in three: before the first model call (less the baseline
    /// test run), between the first and the last call (less latencies and the tests between),
    /// after the last call (less its latency and the last test run). The three add up to
    /// [`FixRun::overhead_ms`].
    fn phases_ms(&self, latency: Duration) -> Option<[f64; 3]> {
        let (first, last) = (*self.arrivals_ms.first()?, *self.arrivals_ms.last()?);
        let lat = ms(latency);
        let (baseline, last_test) = (*self.tests_ms.first()?, *self.tests_ms.last()?);
        let middle_tests: f64 = self.test_ms - baseline - last_test;
        let before = first - baseline;
        let between = last - first - (self.arrivals_ms.len() - 1) as f64 * lat - middle_tests;
        let after = self.wall_ms - last - lat - last_test;
        Some([before, between, after])
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// A matcher that never matches and notes when each request arrived; mounted with the highest
/// priority, it sees every request before the scripted responder answers it.
struct Arrivals(Arc<Mutex<Vec<Instant>>>);

impl wiremock::Match for Arrivals {
    fn matches(&self, _: &wiremock::Request) -> bool {
        self.0.lock().expect("arrivals").push(Instant::now());
        false
    }
}

fn slow(text: impl Into<String>, delay: Duration) -> Answer {
    Answer::Slow {
        text: text.into(),
        delay,
    }
}

fn fix_run(
    rt: &tokio::runtime::Runtime,
    latency: Duration,
    sample_memory: bool,
    extra_env: &[(String, String)],
    config: Option<&str>,
    budget: Option<f64>,
) -> FixRun {
    let dir = support::fixture("js-median");
    // A variant config that names Chaos turns it on; every other run keeps it off.
    let chaos = config.is_some_and(|c| c.contains("chaos:"));
    let llm = rt.block_on(MockLlm::start());
    llm.always("librarian", slow("`median` sorts as strings and mutates its argument; copy, sort numerically, average the middle pair.", latency))
        .always("critic", slow("The change is correct.\nVERDICT: APPROVE", latency))
        .script("artisan", [slow(code("javascript", HALF_FIXED_JS), latency), slow(code("javascript", FIXED_JS), latency)])
        // Heard only when Chaos is on (a variant whose config turns it on): one round that finds
        // nothing.
        .always("chaos", slow(code("javascript", CHAOS_JS), latency));
    let arrivals = Arc::new(Mutex::new(Vec::new()));
    rt.block_on(
        wiremock::Mock::given(Arrivals(arrivals.clone()))
            .respond_with(wiremock::ResponseTemplate::new(500))
            .with_priority(1)
            .mount(&llm.server),
    );

    if let Some(Some(seeded)) = VAULT.get() {
        support::copy_dir(&seeded.path().join(".ralph"), &dir.path().join(".ralph"));
    }
    if let Some(yaml) = config {
        support::write(dir.path(), "ralph.config.yaml", yaml);
    }
    if budget.is_some() {
        let price = "{ input: 10, output: 0 }";
        support::write(
            dir.path(),
            "ralph.config.yaml",
            &format!("prices:\n  openai/gpt-4.1: {price}\n  openai/gpt-4.1-mini: {price}\n"),
        );
    }

    let t = Instant::now();
    let _ = Command::new("sh")
        .args(["-c", TEST_COMMAND])
        .env_remove("LD_LIBRARY_PATH")
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("the test command");
    let standalone_test_ms = ms(t.elapsed());

    let mut cmd = ralph_command();
    cmd.current_dir(dir.path())
        .env("HOME", dir.path())
        .env("OPENAI_BASE_URL", llm.base_url())
        .env("OPENAI_API_KEY", "sk-bench")
        .args(["src/median.js", "-t", TEST_COMMAND, "--output", "json"])
        .args(if chaos { &[][..] } else { &NO_CHAOS[..] })
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    cmd.envs(extra_env.iter().map(|(k, v)| (k, v)));
    if let Some(usd) = budget {
        cmd.args(["--budget", &format!("{usd:.6}")]);
    }
    for var in [
        "OPENAI_KEY",
        "OPENAI_API_ENDPOINT",
        "MODEL",
        "ANTHROPIC_KEY",
        "ANTHROPIC_MODEL",
        "RUST_LOG",
        // Cargo points this at target/ for benches; a user's shell does not have it, and the
        // loader would search those directories for every shared library.
        "LD_LIBRARY_PATH",
    ] {
        cmd.env_remove(var);
    }

    // The process's own peak, as the kernel kept it to the very end (`getrusage` at exit, logged
    // by builds since issue 18): sampling `/proc` misses what the last milliseconds of a run
    // map in (the vault's write, the report).
    let exit_log = sample_memory.then(|| tempfile::NamedTempFile::new().expect("exit log"));
    if sample_memory {
        support::evict_page_cache(std::path::Path::new(&*RALPH));
    }
    if let Some(log) = &exit_log {
        cmd.env("RUST_LOG", "ralph_loop::exit=debug")
            .stderr(log.reopen().expect("exit log"));
    }
    let started = Instant::now();
    let child = cmd.spawn().expect("spawn ralph-loop");
    let pid = child.id() as libc::pid_t;
    let sampler = sample_memory.then(|| Sampler::start(pid));
    // Wait for the exit without reaping, so the sampler never reads a recycled pid.
    wait_exit(pid);
    let wall_ms = started.elapsed().as_secs_f64() * 1000.0;
    let at_exit =
        exit_log.and_then(|log| support::exit_peak_kib(&std::fs::read_to_string(log.path()).ok()?));
    let hwm_kib = sampler
        .map(Sampler::stop)
        .map(|sampled| sampled.max(at_exit.unwrap_or(0)));
    let (status, usage) = support::reap(pid);
    let rusage_maxrss_kib = usage.ru_maxrss as u64;
    drop(child); // already reaped; dropping a `Child` does not wait.

    let session = support::session_dir(dir.path());
    let report = support::read_json(&session.join("report.json"));
    assert!(
        budget.is_some()
            || (libc::WIFEXITED(status)
                && libc::WEXITSTATUS(status) == 0
                && report["iterations"] == 2),
        "the benchmark run must be a two-iteration success: {report}"
    );
    let duration =
        |p: &std::path::Path| support::read_json(p)["duration_ms"].as_f64().unwrap_or(0.0);
    let tests_ms: Vec<f64> = (0..)
        .map(|n| session.join(format!("test-results-iteration-{n}.json")))
        .take_while(|p| p.is_file())
        .map(|p| duration(&p))
        .collect();
    // Chaos's runs are test time too.
    let chaos_ms: f64 = std::fs::read_dir(&session)
        .expect("session folder")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("test-results-chaos-"))
        })
        .map(|p| duration(&p))
        .sum();
    let test_ms = tests_ms.iter().sum::<f64>() + chaos_ms;
    let calls = rt.block_on(llm.requests()).len();
    let arrivals_ms = arrivals
        .lock()
        .expect("arrivals")
        .iter()
        .map(|t| ms(t.duration_since(started)))
        .collect();
    FixRun {
        wall_ms,
        calls,
        arrivals_ms,
        tests_ms,
        standalone_test_ms,
        test_ms,
        report,
        rusage_maxrss_kib,
        hwm_kib,
    }
}

/// Baseline: what a streamed chat request costs over the mock's fixed latency when sent by a
/// plain HTTP client (one connection, reused), in ms per request.
fn mock_round_trips(rt: &tokio::runtime::Runtime, latency: Duration, n: usize) -> Vec<f64> {
    rt.block_on(async {
        let llm = MockLlm::start().await;
        llm.always("librarian", slow(code("javascript", FIXED_JS), latency));
        let client = reqwest::Client::new();
        let url = format!("{}/chat/completions", llm.base_url());
        let body = json!({
            "model": "gpt-4.1", "stream": true, "stream_options": {"include_usage": true},
            "messages": [
                {"role": "system", "content": "You are the Librarian of ralph-loop."},
                {"role": "user", "content": "x".repeat(2000)},
            ],
        });
        let mut out = Vec::with_capacity(n);
        for i in 0..=n {
            let t = Instant::now();
            let response = client
                .post(&url)
                .bearer_auth("sk-bench")
                .json(&body)
                .send()
                .await
                .expect("mock request");
            assert!(response.status().is_success());
            let bytes = response.bytes().await.expect("mock body");
            assert!(!bytes.is_empty());
            if i > 0 {
                out.push(ms(t.elapsed()) - ms(latency));
            }
        }
        out
    })
}

fn wait_exit(pid: libc::pid_t) {
    loop {
        // SAFETY: a zeroed siginfo_t is a valid out-parameter; `pid` is our own child.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let r = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        if r == 0 {
            return;
        }
        let err = std::io::Error::last_os_error();
        assert_eq!(err.kind(), std::io::ErrorKind::Interrupted, "waitid: {err}");
    }
}

/// Polls `/proc/<pid>/status` for `VmHWM`, the process's own peak resident set. It is a
/// high-water mark, so any read after the peak sees it; only growth in the last poll interval
/// before exit could be missed.
struct Sampler {
    stop: Arc<AtomicBool>,
    handle: std::thread::JoinHandle<Option<u64>>,
}

impl Sampler {
    fn start(pid: libc::pid_t) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::spawn(move || {
            let path = format!("/proc/{pid}/status");
            let mut peak = None;
            while !flag.load(Ordering::Relaxed) {
                if let Some(kib) = std::fs::read_to_string(&path)
                    .ok()
                    .as_deref()
                    .and_then(vm_hwm)
                {
                    peak = peak.max(Some(kib));
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            peak
        });
        Self { stop, handle }
    }

    fn stop(self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.join().expect("sampler thread").unwrap_or(0)
    }
}

fn vm_hwm(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Wall times in ms of `ralph-loop --version` and of `/bin/true`, interleaved in one loop so
/// both see the same machine.
fn startup(n: usize) -> (Vec<f64>, Vec<f64>) {
    let time = |program: &str, args: &[&str]| {
        let t = Instant::now();
        let status = Command::new(program)
            .args(args)
            .env_remove("LD_LIBRARY_PATH")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let ms = t.elapsed().as_secs_f64() * 1000.0;
        assert!(status.expect("spawn").success(), "{program} failed");
        ms
    };
    for _ in 0..10 {
        time(&RALPH, &["--version"]);
        time("/bin/true", &[]);
    }
    let (mut version, mut truth) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for i in 0..n {
        // Alternate which goes first, so neither always runs right after the other.
        if i % 2 == 0 {
            version.push(time(&RALPH, &["--version"]));
            truth.push(time("/bin/true", &[]));
        } else {
            truth.push(time("/bin/true", &[]));
            version.push(time(&RALPH, &["--version"]));
        }
    }
    (version, truth)
}

/// Median, p90 (nearest rank) and min.
fn stats(values: &[f64]) -> Value {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        return Value::Null;
    }
    let median = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    let p90 = v[((n as f64 * 0.9).ceil() as usize).clamp(1, n) - 1];
    json!({"median": round(median), "p90": round(p90), "min": round(v[0]), "max": round(v[n - 1]), "n": n})
}

fn round(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// The overhead figures of a set of fix runs.
fn overhead_of(fixes: &[FixRun], latency: Duration) -> Value {
    let of = |f: &dyn Fn(&FixRun) -> Option<f64>| -> Value {
        stats(&fixes.iter().filter_map(f).collect::<Vec<_>>())
    };
    let timing = |key: &'static str| move |r: &FixRun| r.report["timings"][key].as_f64();
    json!({
        "target_ms": 50,
        "scenario": format!("js-median, `{TEST_COMMAND}`, 2 iterations, mock model latency {} ms per call", latency.as_millis()),
        "model_calls": fixes.first().map_or(0, |r| r.calls),
        "external_ms": of(&|r| Some(r.overhead_ms(latency))),
        "in_process_ms": of(&timing("overhead_ms")),
        "wall_ms": of(&|r| Some(r.wall_ms)),
        "test_ms": of(&|r| Some(r.test_ms)),
        "report_llm_ms": of(&timing("llm_ms")),
        "report_duration_ms": of(&|r| r.report["duration_ms"].as_f64()),
        "phases_ms": {
            "before_first_call": of(&|r| r.phases_ms(latency).map(|p| p[0])),
            "between_calls": of(&|r| r.phases_ms(latency).map(|p| p[1])),
            "after_last_call": of(&|r| r.phases_ms(latency).map(|p| p[2])),
        },
        "test_ms_by_iteration": (0..3).map(|n| of(&|r| r.tests_ms.get(n).copied())).collect::<Vec<_>>(),
        "standalone_test_ms": of(&|r| Some(r.standalone_test_ms)),
    })
}

fn summarise(
    fixes: &[FixRun],
    round_trips: &[f64],
    version: &[f64],
    truth: &[f64],
    mems: &[FixRun],
    latency: Duration,
) -> Value {
    let diff: Vec<f64> = version.iter().zip(truth).map(|(v, t)| v - t).collect();
    let own: Vec<f64> = mems
        .iter()
        .filter_map(|r| r.hwm_kib)
        .map(|k| k as f64 / 1024.0)
        .collect();
    let with_children: Vec<f64> = fixes
        .iter()
        .chain(mems)
        .map(|r| r.rusage_maxrss_kib as f64 / 1024.0)
        .collect();
    let mut overhead = overhead_of(fixes, latency);
    overhead["mock_round_trip_excess_ms_per_call"] = stats(round_trips);
    json!({
        "date": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        "machine": machine(),
        "binary": *RALPH,
        "overhead": overhead,
        "startup": {
            "target_ms": 10,
            "version_ms": stats(version),
            "bin_true_ms": stats(truth),
            "difference_ms": stats(&diff),
        },
        "memory": {
            "target_mib": 80,
            "own_peak_mib": if own.is_empty() { Value::Null } else { stats(&own) },
            "with_test_children_mib": stats(&with_children),
        },
    })
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, m)| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown cpu".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!(
        "{cpu}, {cores} cores, {} {}",
        std::env::consts::OS,
        std::env::consts::ARCH
    )
}

fn print_table(r: &Value) {
    let row = |name: &str, s: &Value, unit: &str, target: &str| {
        println!(
            "{name:<44} {:>9.2} {:>9.2} {:>9.2} {unit:<4} {target}",
            s["median"].as_f64().unwrap_or(f64::NAN),
            s["p90"].as_f64().unwrap_or(f64::NAN),
            s["min"].as_f64().unwrap_or(f64::NAN)
        );
    };
    // The overhead's three phases, as the runs and the variant both print them.
    let phase_rows = |phases: &Value, first_target: &str| {
        for (name, key, target) in [
            (
                "  overhead before the first model call",
                "before_first_call",
                first_target,
            ),
            (
                "  overhead from first to last model call",
                "between_calls",
                "",
            ),
            (
                "  overhead after the last model call",
                "after_last_call",
                "",
            ),
        ] {
            row(name, &phases[key], "ms", target);
        }
    };
    let o = &r["overhead"];
    let s = &r["startup"];
    let m = &r["memory"];
    println!();
    println!(
        "{} | {}",
        r["date"].as_str().unwrap_or(""),
        r["machine"].as_str().unwrap_or("")
    );
    println!(
        "{:<44} {:>9} {:>9} {:>9} unit target",
        "measure", "median", "p90", "min"
    );
    row(
        "overhead, external (wall - calls*lat - tests)",
        &o["external_ms"],
        "ms",
        "< 40",
    );
    row(
        "overhead, in-process (timings.overhead_ms)",
        &o["in_process_ms"],
        "ms",
        "",
    );
    row("  wall time of the run", &o["wall_ms"], "ms", "");
    row(
        "  test time (test-results duration_ms)",
        &o["test_ms"],
        "ms",
        "",
    );
    row(
        "  model time in-process (timings.llm_ms)",
        &o["report_llm_ms"],
        "ms",
        "",
    );
    phase_rows(&o["phases_ms"], "< 15");
    row(
        "  baseline: mock HTTP cost per call",
        &o["mock_round_trip_excess_ms_per_call"],
        "ms",
        "",
    );
    for (n, s) in o["test_ms_by_iteration"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        row(&format!("  test run {n} inside ralph-loop"), s, "ms", "");
    }
    row(
        "  baseline: the test command alone",
        &o["standalone_test_ms"],
        "ms",
        "",
    );
    row("start-up, ralph-loop --version", &s["version_ms"], "ms", "");
    row(
        "start-up, /bin/true (baseline)",
        &s["bin_true_ms"],
        "ms",
        "",
    );
    row(
        "start-up, difference (paired)",
        &s["difference_ms"],
        "ms",
        "< 5",
    );
    if !m["own_peak_mib"].is_null() {
        row(
            "peak RSS, ralph-loop itself (at exit)",
            &m["own_peak_mib"],
            "MiB",
            "< 50",
        );
    }
    let near = &m["near_budget"];
    if !near["own_peak_mib"].is_null() {
        row(
            "peak RSS near the budget (exact counts)",
            &near["own_peak_mib"],
            "MiB",
            "< 80",
        );
    }
    row(
        "peak RSS incl. reaped tests (wait4 maxrss)",
        &m["with_test_children_mib"],
        "MiB",
        "",
    );
    if !near["own_peak_mib"].is_null() {
        println!(
            "near-budget runs: budget ${:.4}, statuses {}, overhead median {} ms (memory sampled)",
            near["budget_usd"].as_f64().unwrap_or(f64::NAN),
            near["statuses"],
            near["external_overhead_ms"]["median"]
        );
    }
    let v = &r["variant"];
    if !v.is_null() {
        println!(
            "variant, interleaved with the runs above: {} {}",
            v["env"].as_str().unwrap_or(""),
            v["config"]
                .as_str()
                .map(|c| format!("(ralph.config.yaml: {c})"))
                .unwrap_or_default()
        );
        row("overhead, external", &v["external_ms"], "ms", "");
        row("overhead, in-process", &v["in_process_ms"], "ms", "");
        phase_rows(&v["phases_ms"], "");
    }
    println!(
        "model calls per run: {}; {}",
        o["model_calls"],
        o["scenario"].as_str().unwrap_or("")
    );
}
