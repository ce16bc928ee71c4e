//! The web dashboard's numbers (issue 21):
//!
//! - **event to browser**: an event appended to a run's `events.jsonl` until a page in headless
//!   Chromium has it (its `EventSource`), and until the dashboard's page has drawn it (a
//!   `MutationObserver` on the drawn list); beside it, the baseline, a plain socket client of the
//!   same stream (the server's part alone);
//! - **CPU** of `ralph-loop dashboard` with ten clients, idle and with 20 events a second;
//! - **memory**: the dashboard's RSS alone and with ten clients, and what `--ui web` adds to the
//!   peak of a run of the bundled example (offline, from its recorded session) over `--ui lines`.
//!
//! Run it as the other benchmarks (docs/performance.md): `RALPH_BENCH_BIN` measures another build
//! of `ralph-loop`; `RALPH_BENCH_EVENTS` the events timed (default 100).

// A benchmark that cannot set up has nothing to measure: panicking with a message is right here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

// The benchmark drives pages; it clicks nothing and keeps no screenshot.
#[allow(dead_code)]
#[path = "../tests/suite/cdp.rs"]
mod cdp;
#[path = "common/env.rs"]
mod env;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const SESSION: &str = "session-bench";

fn bin() -> PathBuf {
    std::env::var_os("RALPH_BENCH_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_ralph-loop")))
}

fn now_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
        * 1000.0
}

fn line(seq: u64, event: serde_json::Value) -> String {
    let mut value = serde_json::json!({
        "session": "bench",
        "seq": seq,
        "time": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Nanos, true),
    });
    value
        .as_object_mut()
        .unwrap()
        .extend(event.as_object().unwrap().clone());
    format!("{value}\n")
}

/// `ralph-loop dashboard` in `dir`: the process and its URL.
fn dashboard(dir: &Path) -> (Child, String) {
    let mut child = Command::new(bin())
        .current_dir(dir)
        .env("HOME", dir)
        .env_remove("RUST_LOG")
        .arg("dashboard")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let url = first[first.find("http://").unwrap()..].trim().to_string();
    std::thread::spawn(move || for _ in lines.map_while(Result::ok) {});
    (child, url)
}

/// A plain server-sent events client: the arrival time of each event, by seq.
fn raw_client(port: u16, token: &str, arrivals: Option<Arc<Mutex<HashMap<u64, f64>>>>) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        stream,
        "GET /api/sessions/{SESSION}/events HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\nCookie: ralph_token={token}\r\n\r\n"
    )
    .unwrap();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stream);
        let mut text = String::new();
        while reader.read_line(&mut text).is_ok_and(|n| n > 0) {
            if let (Some(id), Some(arrivals)) = (text.strip_prefix("id: "), &arrivals) {
                if let Ok(seq) = id.trim().parse() {
                    arrivals.lock().unwrap().insert(seq, now_ms());
                }
            }
            text.clear();
        }
    });
}

/// utime + stime of `pid`, in seconds.
fn cpu_secs(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = after.split(' ').collect();
    let ticks: f64 = fields[11].parse::<f64>().unwrap() + fields[12].parse::<f64>().unwrap();
    // SAFETY: sysconf reads a constant.
    ticks / unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64
}

fn status_kib(pid: u32, key: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap()
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

fn pct(mut xs: Vec<f64>, p: f64) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[((xs.len() as f64 - 1.0) * p).round() as usize]
}

/// The peak RSS (KiB) of a run of the bundled example under `ui`, offline.
fn example_peak(ui: &str) -> u64 {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("median-js");
    let copied = Command::new("cp")
        .arg("-r")
        .arg(root.join("examples/median-js"))
        .arg(&work)
        .status()
        .unwrap();
    assert!(copied.success());
    Command::new("git")
        .args(["init", "-q"])
        .current_dir(&work)
        .status()
        .unwrap();
    let out = Command::new(bin())
        .current_dir(&work)
        .env("HOME", dir.path())
        .env("RUST_LOG", "ralph_loop::exit=debug")
        .env_remove("OPENAI_API_KEY")
        .arg("src/median.js")
        .arg("--replay")
        .arg(root.join("examples/median-js.session.jsonl"))
        .args(["--ui", ui])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    let (_, rest) = err.rsplit_once("peak_rss_kib=").expect("the exit log");
    rest.split(|c: char| !c.is_ascii_digit())
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let events: u64 = env::setting("RALPH_BENCH_EVENTS", 100);
    let dir = tempfile::tempdir().unwrap();
    let session = dir.path().join(".ralph").join(SESSION);
    std::fs::create_dir_all(&session).unwrap();
    let log_path = session.join("events.jsonl");
    let mut log = std::fs::File::create(&log_path).unwrap();
    log.write_all(
        line(
            1,
            serde_json::json!({"type": "session_started", "session_id": "bench",
                "target": "bench.js", "test_command": "true", "models": [],
                "max_cost_usd": 1.0, "max_iterations": 10, "resumed_from_iteration": 0}),
        )
        .as_bytes(),
    )
    .unwrap();
    let (mut server, url) = dashboard(dir.path());
    let port: u16 = url
        .trim_start_matches("http://127.0.0.1:")
        .split('/')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let token = url.split("token=").nth(1).unwrap().to_string();
    std::thread::sleep(Duration::from_millis(300));
    let rss_alone = status_kib(server.id(), "VmRSS:");

    // Event to browser, and to the drawn page; the raw client beside them.
    let mut browser = cdp::Browser::launch();
    browser.navigate(&format!("{url}&session={SESSION}"));
    browser.wait_for(
        "document.querySelector('#title').textContent === 'bench.js'",
        Duration::from_secs(20),
    );
    browser.eval(&format!(
        "window.arrived = {{}}; window.drawn = {{}};
         const es = new EventSource('api/sessions/{SESSION}/events');
         es.addEventListener('ralph', (m) => {{
           window.arrived[JSON.parse(m.data).seq] = performance.timeOrigin + performance.now();
         }});
         new MutationObserver(() => {{
           for (const li of document.querySelectorAll('#warnings li')) {{
             if (!(li.textContent in window.drawn))
               window.drawn[li.textContent] = performance.timeOrigin + performance.now();
           }}
         }}).observe(document.querySelector('#warnings'), {{ childList: true, subtree: true }});
         true"
    ));
    let raw = Arc::new(Mutex::new(HashMap::new()));
    raw_client(port, &token, Some(raw.clone()));
    std::thread::sleep(Duration::from_millis(500));
    let mut written = HashMap::new();
    for seq in 2..events + 2 {
        let text = line(
            seq,
            serde_json::json!({"type": "warning", "message": format!("bench-{seq}")}),
        );
        log.write_all(text.as_bytes()).unwrap();
        written.insert(seq, now_ms());
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_secs(1));
    let arrived: HashMap<String, f64> =
        serde_json::from_value(browser.eval("window.arrived")).unwrap();
    let drawn: HashMap<String, f64> = serde_json::from_value(browser.eval("window.drawn")).unwrap();
    let raw = raw.lock().unwrap().clone();
    let lat = |at: &dyn Fn(u64) -> Option<f64>| -> Vec<f64> {
        written
            .iter()
            .filter_map(|(seq, w)| Some(at(*seq)? - w))
            .collect()
    };
    let to_page = lat(&|seq| arrived.get(&seq.to_string()).copied());
    let to_screen = lat(&|seq| drawn.get(&format!("bench-{seq}")).copied());
    let to_socket = lat(&|seq| raw.get(&seq).copied());
    drop(browser);

    // Ten clients: idle, then 20 events a second.
    for _ in 0..9 {
        raw_client(port, &token, None);
    }
    std::thread::sleep(Duration::from_millis(500));
    let (cpu0, t0) = (cpu_secs(server.id()), Instant::now());
    std::thread::sleep(Duration::from_secs(5));
    let idle = (cpu_secs(server.id()) - cpu0) / t0.elapsed().as_secs_f64() * 100.0;
    let (cpu0, t0) = (cpu_secs(server.id()), Instant::now());
    let mut seq = events + 2;
    while t0.elapsed() < Duration::from_secs(10) {
        let text = line(
            seq,
            serde_json::json!({"type": "note", "message": format!("busy {seq}")}),
        );
        log.write_all(text.as_bytes()).unwrap();
        seq += 1;
        std::thread::sleep(Duration::from_millis(50));
    }
    let busy = (cpu_secs(server.id()) - cpu0) / t0.elapsed().as_secs_f64() * 100.0;
    let rss_ten = status_kib(server.id(), "VmRSS:");
    let hwm = status_kib(server.id(), "VmHWM:");
    let _ = server.kill();
    let _ = server.wait();

    // What `--ui web` adds to a run, over lines: three runs each, alternating.
    let mut lines_peak = Vec::new();
    let mut web_peak = Vec::new();
    for _ in 0..3 {
        lines_peak.push(example_peak("lines") as f64);
        web_peak.push(example_peak("web") as f64);
    }
    let mib = |kib: f64| kib / 1024.0;

    println!("dashboard: {events} events, one every 50 ms, appended to a run's events.jsonl");
    for (what, xs) in [
        ("baseline: a plain socket client of the stream", to_socket),
        ("to the browser (Chromium's EventSource)", to_page),
        ("to the drawn page (the dashboard's list)", to_screen),
    ] {
        println!(
            "  {what}: median {:.2} ms, p95 {:.2} ms ({} events)",
            median(xs.clone()),
            pct(xs.clone(), 0.95),
            xs.len()
        );
    }
    println!("  CPU with ten clients: idle {idle:.2} % of a core, 20 events/s {busy:.2} %");
    println!(
        "  memory: {:.1} MiB alone, {:.1} MiB with ten clients (peak {:.1} MiB)",
        mib(rss_alone as f64),
        mib(rss_ten as f64),
        mib(hwm as f64)
    );
    let (l, w) = (median(lines_peak), median(web_peak));
    println!(
        "  the bundled example's peak RSS: --ui lines {:.1} MiB, --ui web {:.1} MiB (+{:.1} MiB)",
        mib(l),
        mib(w),
        mib(w - l)
    );
    let _ = std::io::stdout().flush();
}
