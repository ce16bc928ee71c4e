//! The TUI (issue 21), in a pseudo-terminal of its own: the time from an event on the feed to
//! its text on the screen (target under 50 ms), the CPU of a view left idle (target under 1% of
//! a core), a 100-iteration session fed at full speed, and the memory the view adds.
//!
//! The screen is what a terminal would show: the bytes the view writes are read from the pty's
//! other end and parsed by a terminal emulator (vt100); an event counts as on screen when its
//! text is. The baseline is the same text written straight to the terminal, parsed the same
//! way. Run with `cargo bench --bench views` (`RALPH_BENCH_VIEW_SAMPLES`, default 200;
//! `RALPH_BENCH_VIEW_IDLE_SECS`, default 10). See `docs/performance.md`.

// A benchmark that cannot set up has nothing to measure: panicking with a message is right here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::Utc;
use ralph_actors::events::event::{Envelope, Event};
use ralph_actors::role::Role;
use ralph_loop::printers::Printer;
use ralph_loop::process::groups::ProcessGroups;
use ralph_loop::views::tui;
use tokio_util::sync::CancellationToken;

const ROWS: u16 = 30;
const SECOND: Duration = Duration::from_secs(1);
const COLS: u16 = 100;

/// What the reader thread looks for on the emulated screen, and when it saw it.
#[derive(Default)]
struct Watch {
    wanted: Mutex<Option<String>>,
    /// Nanoseconds since `epoch` when the wanted text appeared (0: not yet).
    seen_at: AtomicI64,
    /// The reader's own CPU time, microseconds.
    reader_cpu_us: AtomicU64,
    done: AtomicBool,
}

fn thread_cpu_us() -> u64 {
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) };
    (usage.ru_utime.tv_sec as u64 * 1_000_000 + usage.ru_utime.tv_usec as u64)
        + (usage.ru_stime.tv_sec as u64 * 1_000_000 + usage.ru_stime.tv_usec as u64)
}

fn process_cpu_us() -> u64 {
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    (usage.ru_utime.tv_sec as u64 * 1_000_000 + usage.ru_utime.tv_usec as u64)
        + (usage.ru_stime.tv_sec as u64 * 1_000_000 + usage.ru_stime.tv_usec as u64)
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// Reads the terminal's output and keeps an emulated screen; notes when the wanted text shows.
fn read_screen(master: RawFd, watch: Arc<Watch>, epoch: Instant) {
    let mut parser = vt100::Parser::new(ROWS, COLS, 0);
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = unsafe { libc::read(master, buf.as_mut_ptr().cast(), buf.len()) };
        if n <= 0 || watch.done.load(Ordering::SeqCst) {
            break;
        }
        let bytes = &buf[..n as usize];
        // A terminal answers a query of the cursor's position (crossterm asks once at start).
        if bytes.windows(4).any(|w| w == b"\x1b[6n") {
            let (row, col) = parser.screen().cursor_position();
            let answer = format!("\x1b[{};{}R", row + 1, col + 1);
            unsafe { libc::write(master, answer.as_ptr().cast(), answer.len()) };
        }
        parser.process(bytes);
        let wanted = watch.wanted.lock().unwrap().clone();
        if let Some(wanted) = wanted {
            if watch.seen_at.load(Ordering::SeqCst) == 0
                && parser.screen().contents().contains(&wanted)
            {
                watch
                    .seen_at
                    .store(epoch.elapsed().as_nanos() as i64, Ordering::SeqCst);
            }
        }
        watch.reader_cpu_us.store(thread_cpu_us(), Ordering::SeqCst);
    }
}

/// Sets `text` as wanted, runs `show` (which should put it on screen), and returns the ms until
/// the screen shows it (`None` after `within`).
async fn time_to_screen(
    watch: &Watch,
    epoch: Instant,
    text: &str,
    within: Duration,
    show: impl FnOnce(),
) -> Option<f64> {
    *watch.wanted.lock().unwrap() = Some(text.to_string());
    watch.seen_at.store(0, Ordering::SeqCst);
    let sent = epoch.elapsed().as_nanos() as i64;
    show();
    let start = Instant::now();
    while start.elapsed() < within {
        let seen = watch.seen_at.load(Ordering::SeqCst);
        if seen > 0 {
            return Some((seen - sent) as f64 / 1e6);
        }
        tokio::time::sleep(Duration::from_micros(200)).await;
    }
    None
}

fn envelope(seq: u64, event: Event) -> Envelope {
    Envelope {
        session: "bench".into(),
        seq,
        time: Utc::now(),
        event,
    }
}

#[path = "common/env.rs"]
mod env;
#[path = "../tests/suite/long_session.rs"]
mod long_session;
use long_session::long_session;

fn median(xs: Vec<f64>) -> f64 {
    pct(&xs, 0.5)
}

fn pct(xs: &[f64], p: f64) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    let mut xs = xs.to_vec();
    xs.sort_by(f64::total_cmp);
    xs[((xs.len() as f64 - 1.0) * p).round() as usize]
}

fn main() {
    let samples: usize = env::setting("RALPH_BENCH_VIEW_SAMPLES", 200);
    let idle_secs: u64 = env::setting("RALPH_BENCH_VIEW_IDLE_SECS", 10);
    let dir = tempfile::tempdir().unwrap();

    // The pseudo-terminal: the view's stdin and stdout are its slave side.
    let (mut master, mut slave): (RawFd, RawFd) = (0, 0);
    let size = libc::winsize {
        ws_row: ROWS,
        ws_col: COLS,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    let opened = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            &size,
        )
    };
    assert_eq!(opened, 0, "openpty");
    let saved_in = unsafe { libc::dup(0) };
    let saved_out = unsafe { libc::dup(1) };
    unsafe {
        libc::dup2(slave, 0);
        libc::dup2(slave, 1);
    }
    let epoch = Instant::now();
    let watch = Arc::new(Watch::default());
    let reader = {
        let watch = watch.clone();
        std::thread::spawn(move || read_screen(master, watch, epoch))
    };

    let rss_before = rss_kib();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let local = tokio::task::LocalSet::new();
    let results = local.block_on(&runtime, async {
        let (mut feed, _asker, inbox) = tui::channels();
        let handles = tui::Handles {
            pause: None,
            cancel: CancellationToken::new(),
            stop_signal: Arc::new(std::sync::atomic::AtomicI32::new(0)),
            groups: ProcessGroups::new(),
            stop_means: ralph_loop::views::tui::ui::STOP_STEP,
            picker: None,
            skip: None,
        };
        let place = tui::Place {
            dir: dir.path().to_path_buf(),
            target: None,
            original: None,
            replayed: false,
        };
        let view = tokio::task::spawn_local(tui::run(inbox, handles, place));
        // The session's start, then one iteration under way.
        let session = long_session(1);
        for e in &session[..8] {
            feed.print(e).unwrap();
        }
        tokio::time::sleep(Duration::from_millis(300)).await;

        // Event to screen: a new line of the thought stream, one at a time.
        let mut latencies = Vec::new();
        let mut baseline = Vec::new();
        let mut missed = 0;
        for n in 0..samples {
            let text = format!("mark{n:05}x");
            let e = envelope(
                9 + n as u64,
                Event::Thought {
                    iteration: 1,
                    role: Role::Artisan,
                    text: format!("{text}\n"),
                },
            );
            match time_to_screen(&watch, epoch, &text, SECOND, || feed.print(&e).unwrap()).await {
                Some(ms) => latencies.push(ms),
                None => missed += 1,
            }
            // The same text written straight to the terminal, on its last row.
            let raw = format!("rawm{n:05}x");
            let shown = time_to_screen(&watch, epoch, &raw, SECOND, || {
                let mut out = std::io::stdout().lock();
                write!(out, "\x1b[{ROWS};1H{raw}").unwrap();
                out.flush().unwrap();
            })
            .await;
            baseline.extend(shown);
            tokio::time::sleep(Duration::from_millis(10)).await;
        }

        // Idle: nothing happens for a while; the view redraws its clock once a second.
        tokio::time::sleep(Duration::from_millis(500)).await;
        let (cpu0, reader0, t0) = (
            process_cpu_us(),
            watch.reader_cpu_us.load(Ordering::SeqCst),
            Instant::now(),
        );
        tokio::time::sleep(Duration::from_secs(idle_secs)).await;
        let wall = t0.elapsed().as_secs_f64() * 1e6;
        let reader_cpu = watch.reader_cpu_us.load(Ordering::SeqCst) - reader0;
        let view_cpu = (process_cpu_us() - cpu0).saturating_sub(reader_cpu) as f64;
        let idle_pct = view_cpu / wall * 100.0;

        // A 100-iteration session at full speed, after a fresh start of the screen's fold.
        let long = long_session(50);
        let started = Instant::now();
        let within = Duration::from_secs(30);
        let full = time_to_screen(&watch, epoch, "finished: success", within, || {
            for e in &long {
                feed.print(e).unwrap();
            }
        })
        .await;
        let full_ms = full.map(|_| started.elapsed().as_secs_f64() * 1e3);
        let rss_after = rss_kib();
        drop(feed);
        tokio::time::sleep(Duration::from_millis(200)).await;
        // `q` quits the finished view.
        let q = b"q";
        unsafe { libc::write(master, q.as_ptr().cast(), 1) };
        let quit = tokio::time::timeout(Duration::from_secs(5), view).await;
        (
            latencies,
            baseline,
            missed,
            idle_pct,
            reader_cpu,
            full_ms,
            long.len(),
            rss_after,
            format!("{quit:?}"),
        )
    });
    watch.done.store(true, Ordering::SeqCst);
    unsafe {
        libc::dup2(saved_in, 0);
        libc::dup2(saved_out, 1);
        libc::close(slave);
    }
    let _ = reader.join();
    let (lat, base, missed, idle_pct, reader_cpu, full_ms, events, rss_after, quit) = results;
    println!("views: the TUI in a {COLS}x{ROWS} pseudo-terminal, screen read by a vt100 emulator");
    println!(
        "event to screen: median {:.2} ms, p95 {:.2} ms, max {:.2} ms over {} events ({missed} not seen within 1 s)",
        median(lat.clone()),
        pct(&lat, 0.95),
        pct(&lat, 1.0),
        lat.len()
    );
    println!(
        "baseline (the text written straight to the terminal): median {:.2} ms, p95 {:.2} ms",
        median(base.clone()),
        pct(&base, 0.95)
    );
    println!(
        "idle view: {idle_pct:.3}% of a core over {idle_secs} s (the emulator's reading, {:.1} ms, left out)",
        reader_cpu as f64 / 1e3
    );
    match full_ms {
        Some(ms) => println!(
            "a 100-iteration session ({events} events) at full speed: on screen to its end in {ms:.0} ms ({:.0} events/s)",
            events as f64 / ms * 1e3
        ),
        None => println!("a 100-iteration session: its end did not show within 30 s"),
    }
    println!(
        "memory: RSS {:.1} MiB before the view, {:.1} MiB after the long session (+{:.1} MiB)",
        rss_before as f64 / 1024.0,
        rss_after as f64 / 1024.0,
        (rss_after as f64 - rss_before as f64) / 1024.0
    );
    println!("the view quit on q: {quit}");
}
