//! The dashboard under attack, through the binary over real sockets: clients that send a
//! request's head a byte at a time or never finish it, more connections than it keeps, heads and
//! bodies too large, a bad token at a high rate, hundreds of event streams at once, and every
//! trick of path and encoding that might reach a file outside `.ralph/`. Its memory and open
//! files stay bounded, and no answer ever holds the canary file put beside the project.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use super::{recorded_project, request, Events, Served, RECORDED_ID};

/// As `views::web::serve`: connections kept at once, and the time a head may take.
const MAX_CONNECTIONS: usize = 512;
const HEAD_WITHIN: Duration = Duration::from_secs(10);

/// `ralph-loop dashboard` on a project holding a recorded session: the project, the server, its
/// process id.
fn dashboard() -> (tempfile::TempDir, Served, u32) {
    let (dir, _) = recorded_project();
    let served = Served::start(dir.path(), &["dashboard"], &[]);
    let pid = served.child.id();
    (dir, served, pid)
}

/// What a process holds: resident memory in KiB and open file descriptors.
fn footprint(pid: u32) -> (u64, usize) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let rss = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count();
    (rss, fds)
}

/// Whether the server has closed `stream` (a read gives the end, or an error), waiting at most
/// `within`; whatever it sent first is read and dropped.
fn closed_within(stream: &mut TcpStream, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    let mut buf = [0u8; 4096];
    while Instant::now() < deadline {
        let left = deadline.saturating_duration_since(Instant::now());
        stream
            .set_read_timeout(Some(left.max(Duration::from_millis(1))))
            .unwrap();
        match stream.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return false,
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => return false,
            Err(_) => return true,
        }
    }
    false
}

#[test]
fn slow_and_surplus_clients_are_dropped_and_the_page_still_loads() {
    let (_dir, served, pid) = dashboard();
    let (rss_before, fds_before) = footprint(pid);
    // Heads begun and never finished, more of them than the server keeps.
    let host = served.host();
    let mut slow: Vec<TcpStream> = (0..MAX_CONNECTIONS + 200)
        .map(|_| {
            let mut s = TcpStream::connect(("127.0.0.1", served.port)).unwrap();
            // A connection beyond the limit is closed at once: its write may fail.
            let _ = write!(s, "GET / HTTP/1.1\r\nHost: {host}\r\nX-Slow: ");
            s
        })
        .collect();
    let started = Instant::now();
    // One more that sends its head a byte a second: it too must be dropped in time.
    let trickle = std::thread::spawn({
        let port = served.port;
        move || {
            let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
            let head = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Trickle: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n\r\n";
            let begun = Instant::now();
            for byte in head {
                if s.write_all(&[*byte]).is_err() {
                    return Some(begun.elapsed());
                }
                std::thread::sleep(Duration::from_millis(500));
            }
            None
        }
    });
    std::thread::sleep(Duration::from_millis(500));
    let (rss_full, fds_full) = footprint(pid);
    assert!(
        fds_full <= fds_before + MAX_CONNECTIONS + 8,
        "{fds_full} open files with {} connections asked for ({fds_before} before)",
        slow.len()
    );
    // Each slow head is dropped within the time a head may take, the surplus at once.
    let mut dropped = 0;
    for stream in &mut slow {
        dropped += usize::from(closed_within(stream, HEAD_WITHIN + Duration::from_secs(3)));
    }
    assert_eq!(dropped, slow.len(), "every slow head is dropped");
    assert!(
        started.elapsed() < HEAD_WITHIN + Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    let trickled = trickle.join().unwrap();
    assert!(
        trickled.is_some_and(|t| t < HEAD_WITHIN + Duration::from_secs(3)),
        "a head sent a byte at a time is dropped: {trickled:?}"
    );
    // The page loads once they are gone.
    let page = served.get("/");
    assert_eq!(page.status, 200, "{}", page.head);
    let (rss_after, fds_after) = footprint(pid);
    eprintln!(
        "slow clients: {} heads held; rss {rss_before} -> {rss_full} -> {rss_after} KiB, fds {fds_before} -> {fds_full} -> {fds_after}",
        slow.len()
    );
    assert!(fds_after <= fds_before + 4, "{fds_after} open files after");
    assert!(
        rss_full < rss_before + 64 * 1024,
        "{rss_full} KiB with the slow heads, {rss_before} before"
    );
}

/// Sends `head` (and as much of `body` as the server takes), and reads the reply's status line;
/// `None` when the server closed the connection without one.
fn status_of(port: u16, head: &[u8], body: &[u8]) -> Option<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_write_timeout(Some(Duration::from_secs(5))).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    if s.write_all(head).is_ok() {
        for piece in body.chunks(1 << 20) {
            if s.write_all(piece).is_err() {
                break;
            }
        }
    }
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw);
    text.lines()
        .next()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
}

#[test]
fn a_head_too_large_is_refused_and_a_large_body_is_not_kept() {
    let (_dir, served, pid) = dashboard();
    let (rss_before, _) = footprint(pid);
    let host = served.host();
    // A megabyte of headers.
    let big = format!(
        "GET / HTTP/1.1\r\nHost: {host}\r\nCookie: {}\r\nX-Big: {}\r\n\r\n",
        served.cookie(),
        "a".repeat(1 << 20)
    );
    let status = status_of(served.port, big.as_bytes(), b"");
    assert!(
        status.as_deref().is_some_and(|s| s.contains(" 431 ")) || status.is_none(),
        "{status:?}"
    );
    // 64 MiB sent of a body said to be a gigabyte, to a route that reads none of it.
    let post = format!(
        "POST /api/sessions/{RECORDED_ID}/pause HTTP/1.1\r\nHost: {host}\r\nCookie: {}\r\nContent-Length: {}\r\n\r\n",
        served.cookie(),
        1u64 << 30
    );
    let body = vec![b'x'; 64 << 20];
    let status = status_of(served.port, post.as_bytes(), &body);
    assert!(status.is_some(), "an answer before the body");
    let (rss_after, _) = footprint(pid);
    eprintln!("large requests: rss {rss_before} -> {rss_after} KiB");
    assert!(
        rss_after < rss_before + 32 * 1024,
        "{rss_after} KiB after, {rss_before} before"
    );
    assert_eq!(served.get("/api/sessions").status, 200);
}

#[test]
fn a_bad_token_at_a_high_rate_is_refused_every_time_and_costs_no_memory() {
    let (_dir, served, pid) = dashboard();
    let (rss_before, _) = footprint(pid);
    let host = served.host();
    let started = Instant::now();
    let workers: Vec<_> = (0..4)
        .map(|w| {
            let (port, host) = (served.port, host.clone());
            std::thread::spawn(move || {
                (0..500)
                    .map(|i| {
                        let cookie = format!("ralph_token=wrong-{w}-{i}");
                        request(port, "GET", "/api/sessions", &host, Some(&cookie)).status
                    })
                    .collect::<Vec<u16>>()
            })
        })
        .collect();
    let statuses: Vec<u16> = workers
        .into_iter()
        .flat_map(|w| w.join().unwrap())
        .collect();
    let took = started.elapsed();
    assert_eq!(statuses.len(), 2000);
    assert!(
        statuses.iter().all(|s| *s == 401 || *s == 403),
        "{statuses:?}"
    );
    let (rss_after, _) = footprint(pid);
    eprintln!(
        "bad tokens: 2000 refused in {took:?} ({:.0}/s); rss {rss_before} -> {rss_after} KiB",
        2000.0 / took.as_secs_f64()
    );
    assert!(
        rss_after < rss_before + 16 * 1024,
        "{rss_after} KiB after, {rss_before} before"
    );
    assert_eq!(served.get("/api/sessions").status, 200);
}

#[test]
fn four_hundred_event_streams_at_once_each_get_the_whole_run_in_bounded_memory() {
    let (_dir, served, pid) = dashboard();
    let (rss_before, _) = footprint(pid);
    let mut streams: Vec<Events> = (0..400)
        .map(|i| match i % 2 {
            0 => served.follow(RECORDED_ID, None),
            _ => served.view(RECORDED_ID, None),
        })
        .collect();
    let (rss_open, _) = footprint(pid);
    for (i, stream) in streams.iter_mut().enumerate() {
        if i % 2 == 0 {
            let events = stream.until("session_finished");
            assert_eq!(events.first().map(|e| e.id), Some(1));
        } else {
            let view = stream.next();
            assert_eq!(view.kind, "view");
        }
    }
    let (rss_read, _) = footprint(pid);
    eprintln!("400 event streams: rss {rss_before} -> {rss_open} -> {rss_read} KiB");
    assert!(
        rss_read < rss_before + 128 * 1024,
        "{rss_read} KiB with 400 streams, {rss_before} before"
    );
}

#[test]
fn no_trick_of_path_or_encoding_serves_a_file_outside_ralph() {
    const CANARY: &str = "canary-4d1f0c2e-never-served";
    let (dir, _) = recorded_project();
    std::fs::write(dir.path().join("canary.txt"), CANARY).unwrap();
    std::fs::write(dir.path().join(".ralph").join("canary.txt"), CANARY).unwrap();
    let served = Served::start(dir.path(), &["dashboard"], &[]);
    let port = served.port;
    let targets = [
        "/../canary.txt",
        "/..%2fcanary.txt",
        "/%2e%2e/canary.txt",
        "/%252e%252e/canary.txt",
        "/api/sessions/..%2f..%2fcanary.txt/events",
        "/api/sessions/../../canary.txt/events",
        "/api/sessions/%2e%2e/diff/1",
        "/api/sessions/..%5c..%5ccanary.txt/view",
        "/api/sessions/canary.txt/events",
        "/api/sessions/canary.txt%00/events",
        "/api/sessions/%2e%2e%2fcanary.txt/diff/1",
        "/api/sessions/..;/canary.txt/events",
        "//canary.txt",
        "/./canary.txt",
        "/app.js/../../canary.txt",
        &format!("http://127.0.0.1:{port}/../canary.txt"),
        "/api/sessions/%C0%AE%C0%AE/canary.txt/events",
        "/api/sessions/%u002e%u002e/canary.txt/events",
    ];
    let cookie = served.cookie();
    for target in targets {
        for method in ["GET", "POST", "HEAD"] {
            let head = format!(
                "{method} {target} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\nCookie: {cookie}\r\nContent-Length: 0\r\n\r\n"
            );
            let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            s.write_all(head.as_bytes()).unwrap();
            let mut raw = Vec::new();
            // An event stream stays open: what came in the time is enough.
            let _ = s.read_to_end(&mut raw);
            let text = String::from_utf8_lossy(&raw);
            assert!(!text.contains(CANARY), "{method} {target}: {text}");
        }
    }
}

/// A run under `--ui web` exits when its work is done, though clients hold connections to its
/// dashboard: heads begun and never finished, event streams never read. (Before the dashboard
/// had its own server, such a client kept the run's process from ever exiting.)
#[tokio::test(flavor = "multi_thread")]
async fn a_run_under_ui_web_exits_on_time_though_clients_hold_its_dashboard() {
    use super::super::support::{artisan_script, code, fixture, slow, FIXED_PY};
    let dir = fixture("py-median");
    let reply = slow(code("python", FIXED_PY), Duration::from_millis(1000));
    let llm = artisan_script([reply]).await;
    let env = llm.openai_env();
    let root = dir.path().to_path_buf();
    let (code, held) = tokio::task::spawn_blocking(move || {
        let args = ["median.py", "--no-adversarial", "--ui", "web"];
        let mut served = Served::start(&root, &args, &env);
        let session = served.url.split("session=").nth(1).unwrap().to_string();
        let (port, cookie) = (served.port, served.cookie());
        let held: Vec<TcpStream> = (0..40)
            .filter_map(|i| {
                let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
                let head = match i % 2 {
                    0 => format!("GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Slow: "),
                    _ => format!(
                        "GET /api/sessions/{session}/events HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nCookie: {cookie}\r\n\r\n"
                    ),
                };
                s.write_all(head.as_bytes()).ok()?;
                Some(s)
            })
            .collect();
        (served.wait(Duration::from_secs(30)), held)
    })
    .await
    .unwrap();
    assert_eq!(held.len(), 40, "every client connected");
    assert_eq!(code, Some(0), "the run exits, its clients still holding on");
}
