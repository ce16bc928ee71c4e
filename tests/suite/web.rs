//! The web dashboard through the binary, over real sockets: its guard (token and Host), its
//! server-sent events (order, ids, resume after a reconnect, many clients, a live tail), the
//! view the server folds from them (one per batch, and no more than fifty a second live), a fix
//! run under `--ui web` paused and resumed from it, and the page itself in a real headless
//! Chromium driven over the DevTools protocol, watching an agent loop's breaker open and
//! closing it with the page's button. The server under attack: [`attack`].

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::support::*;

mod attack;

const RECORDED: &str = "src/views/tui/testdata/median-js.events.jsonl";
const RECORDED_ID: &str = "session-c58ff7ef-ee72-4def-868a-9605a85c812d";

/// A `ralph-loop` process that serves a dashboard: its URL, read from what it printed, and the
/// lines it prints after. Killed with its group when dropped.
pub(super) struct Served {
    child: Child,
    pub(super) url: String,
    port: u16,
    token: String,
    /// What it prints after the URL, read on so that it never blocks on a full pipe.
    _output: mpsc::Receiver<String>,
}

impl Served {
    /// Starts `ralph-loop ARGS` in `dir` with `env`, and waits for the URL it prints on
    /// stdout or stderr.
    pub(super) fn start(dir: &Path, args: &[&str], env: &[(&str, String)]) -> Self {
        let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("ralph-loop"));
        cmd.current_dir(dir)
            .env("HOME", dir)
            .env_remove("RUST_LOG")
            .env_remove("CARGO_TARGET_DIR")
            .env_remove("OPENAI_API_KEY")
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().unwrap();
        let (tx, lines) = mpsc::channel();
        for stream in [
            Box::new(child.stdout.take().unwrap()) as Box<dyn Read + Send>,
            Box::new(child.stderr.take().unwrap()),
        ] {
            let tx = tx.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stream).lines().map_while(Result::ok) {
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            });
        }
        let start = Instant::now();
        let url = loop {
            let line = lines
                .recv_timeout(Duration::from_secs(60).saturating_sub(start.elapsed()))
                .expect("the dashboard's URL is printed");
            if let Some(at) = line.find("http://") {
                break line[at..].trim().to_string();
            }
        };
        let port = url
            .trim_start_matches("http://127.0.0.1:")
            .split('/')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        let token = url
            .split("token=")
            .nth(1)
            .unwrap()
            .split('&')
            .next()
            .unwrap()
            .to_string();
        Self {
            child,
            url,
            port,
            token,
            _output: lines,
        }
    }

    fn cookie(&self) -> String {
        format!("ralph_token={}", self.token)
    }

    /// `METHOD path` with the right Host and the token's cookie.
    fn get(&self, path: &str) -> Reply {
        request(self.port, "GET", path, &self.host(), Some(&self.cookie()))
    }

    fn post(&self, path: &str) -> Reply {
        request(self.port, "POST", path, &self.host(), Some(&self.cookie()))
    }

    fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Follows a run's events, from after `last_id`.
    fn follow(&self, id: &str, last_id: Option<u64>) -> Events {
        Events::open(self.port, &format!("{id}/events"), &self.cookie(), last_id)
    }

    /// Follows a run's view, from after `last_id`.
    fn view(&self, id: &str, last_id: Option<u64>) -> Events {
        Events::open(self.port, &format!("{id}/view"), &self.cookie(), last_id)
    }

    /// Waits for the process to exit; its code.
    pub(super) fn wait(&mut self, within: Duration) -> Option<i32> {
        let start = Instant::now();
        while start.elapsed() < within {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code();
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        kill_group(&mut self.child);
    }
}

/// An HTTP reply: status, head, body.
struct Reply {
    status: u16,
    head: String,
    body: String,
}

/// One HTTP/1.0 request (the body then ends with the connection).
fn request(port: u16, method: &str, path: &str, host: &str, cookie: Option<&str>) -> Reply {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let cookie = cookie.map_or(String::new(), |c| format!("Cookie: {c}\r\n"));
    write!(
        stream,
        "{method} {path} HTTP/1.0\r\nHost: {host}\r\n{cookie}Content-Length: 0\r\n\r\n"
    )
    .unwrap();
    let mut raw = String::new();
    stream.read_to_string(&mut raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    Reply {
        status,
        head: head.to_string(),
        body: body.to_string(),
    }
}

/// A server-sent events stream, read as a browser's EventSource reads it.
struct Events {
    reader: BufReader<TcpStream>,
}

/// One event: its id, its type (`ralph` for an event, `view` for a view) and its JSON.
#[derive(Debug)]
struct Sse {
    id: u64,
    kind: String,
    data: Value,
}

impl Events {
    /// `GET /api/sessions/{what}` (`ID/events` or `ID/view`).
    fn open(port: u16, what: &str, cookie: &str, last_id: Option<u64>) -> Self {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        let last = last_id.map_or(String::new(), |n| format!("Last-Event-ID: {n}\r\n"));
        write!(
            stream,
            "GET /api/sessions/{what} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\nCookie: {cookie}\r\nAccept: text/event-stream\r\n{last}\r\n"
        )
        .unwrap();
        let mut reader = BufReader::new(stream);
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        assert!(line.contains(" 200 "), "{line}");
        loop {
            line.clear();
            reader.read_line(&mut line).unwrap();
            if line == "\r\n" {
                break;
            }
        }
        Self { reader }
    }

    /// The next event (keep-alive comments skipped).
    fn next(&mut self) -> Sse {
        let (mut id, mut data, mut kind) = (None, None, None);
        loop {
            let mut line = String::new();
            let n = self.reader.read_line(&mut line).expect("an event in time");
            assert!(n > 0, "the stream ended");
            let line = line.trim_end_matches(['\r', '\n']);
            if line.is_empty() {
                if let (Some(id), Some(data)) = (id, data.take()) {
                    let kind = kind.take().unwrap_or_default();
                    return Sse { id, kind, data };
                }
                continue;
            }
            if let Some(v) = line.strip_prefix("id: ").or(line.strip_prefix("id:")) {
                id = Some(v.trim().parse().unwrap());
            } else if let Some(v) = line.strip_prefix("data: ").or(line.strip_prefix("data:")) {
                data = Some(serde_json::from_str(v).unwrap());
            } else if let Some(v) = line.strip_prefix("event: ").or(line.strip_prefix("event:")) {
                kind = Some(v.trim().to_string());
            }
        }
    }

    /// Events up to and including the first of type `kind`.
    fn until(&mut self, kind: &str) -> Vec<Sse> {
        let mut seen = Vec::new();
        loop {
            let event = self.next();
            assert_eq!(event.kind, "ralph");
            let done = event.data["type"] == kind;
            seen.push(event);
            if done {
                return seen;
            }
        }
    }
}

/// A project whose `.ralph/` holds the bundled example's recorded session.
fn recorded_project() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let session = dir.path().join(".ralph").join(RECORDED_ID);
    std::fs::create_dir_all(&session).unwrap();
    let log = session.join("events.jsonl");
    std::fs::copy(Path::new(env!("CARGO_MANIFEST_DIR")).join(RECORDED), &log).unwrap();
    (dir, log)
}

#[test]
fn the_dashboard_lets_in_only_its_token_and_local_host_names() {
    let (dir, _) = recorded_project();
    let served = Served::start(dir.path(), &["dashboard"], &[]);
    let host = served.host();
    // No token, a wrong one: refused.
    assert_eq!(request(served.port, "GET", "/", &host, None).status, 401);
    assert_eq!(
        request(
            served.port,
            "GET",
            "/api/sessions",
            &host,
            Some("ralph_token=0000")
        )
        .status,
        401
    );
    assert_eq!(
        request(served.port, "GET", "/?token=0123", &host, None).status,
        401
    );
    // The token under a name a rebound DNS could give: refused.
    let path = format!("/?token={}", served.token);
    let foreign = format!("rebind.example:{}", served.port);
    let reply = request(served.port, "GET", &path, &foreign, None);
    assert_eq!(reply.status, 403, "{}", reply.body);
    let reply = request(served.port, "GET", &path, "127.0.0.1:1", None);
    assert_eq!(reply.status, 403);
    // The printed URL: the page, and a cookie for what follows.
    let reply = request(
        served.port,
        "GET",
        &path,
        &format!("localhost:{}", served.port),
        None,
    );
    assert_eq!(reply.status, 200);
    assert!(reply.body.contains("<title>ralph-loop"), "{}", reply.body);
    let cookie = reply
        .head
        .lines()
        .find(|l| l.to_ascii_lowercase().starts_with("set-cookie:"))
        .expect("a cookie is set");
    assert!(
        cookie.contains(&served.token)
            && cookie.contains("HttpOnly")
            && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    assert!(reply
        .head
        .contains("content-security-policy: default-src 'self'"));
    // The cookie alone lets in: the runs of the project.
    let reply = served.get("/api/sessions");
    assert_eq!(reply.status, 200);
    let listed: Value = serde_json::from_str(&reply.body).unwrap();
    assert_eq!(
        listed,
        json!([{
            "id": RECORDED_ID, "kind": "fix", "title": "src/median.js", "status": "success",
            "started_at": "2026-11-27T23:15:10.755411575Z", "cost_usd": listed[0]["cost_usd"],
            "controls": false
        }])
    );
    assert!(listed[0]["cost_usd"].as_f64().unwrap() > 0.0);
    // Nothing outside `.ralph/` is reachable, and a run not running takes no requests.
    assert_eq!(served.get("/api/sessions/..%2F..%2Fetc/events").status, 404);
    assert_eq!(served.get("/api/sessions/session-nope/events").status, 404);
    let reply = served.post(&format!("/api/sessions/{RECORDED_ID}/pause"));
    assert_eq!(reply.status, 409, "{}", reply.body);
    assert!(reply.body.contains("takes no requests"), "{}", reply.body);
    for asset in ["/app.js", "/style.css"] {
        assert_eq!(served.get(asset).status, 200, "{asset}");
    }
}

#[test]
fn events_stream_in_order_resume_after_the_last_id_and_reach_ten_clients_live() {
    let (dir, log) = recorded_project();
    let served = Served::start(dir.path(), &["dashboard", "--ui-bind", "127.0.0.1:0"], &[]);
    let recorded: Vec<Value> = read_json_lines(&log);
    let last = recorded.len() as u64;
    // Ten clients at once: every event, in order, its seq as its id.
    let mut clients: Vec<Events> = (0..10).map(|_| served.follow(RECORDED_ID, None)).collect();
    for client in &mut clients {
        let seen = client.until("session_finished");
        let ids: Vec<u64> = seen.iter().map(|e| e.id).collect();
        assert_eq!(ids, (1..=last).collect::<Vec<_>>());
        assert!(seen.iter().all(|e| e.data["seq"] == e.id));
        assert_eq!(seen[0].data, recorded[0]);
    }
    // A reconnect after id 17 starts at 18: no gap, no repeat.
    let mut again = served.follow(RECORDED_ID, Some(17));
    assert_eq!(again.next().id, 18);
    // The log grows (a resumed session appends): every open stream gets the new events.
    let mut file = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    let appended = Instant::now();
    for seq in last + 1..=last + 3 {
        let line = json!({"session": "c58ff7ef", "seq": seq, "time": "2026-11-27T23:20:00Z",
            "type": "note", "message": format!("appended {seq}")});
        writeln!(file, "{line}").unwrap();
    }
    // A line cut short (a run killed mid-write) is not sent.
    write!(file, "{{\"seq\": {}, \"ty", last + 4).unwrap();
    for client in &mut clients {
        for seq in last + 1..=last + 3 {
            let event = client.next();
            assert_eq!(event.id, seq);
            assert_eq!(event.data["message"], format!("appended {seq}"));
        }
    }
    assert!(
        appended.elapsed() < Duration::from_secs(5),
        "the tail is live: {:?}",
        appended.elapsed()
    );
    let mut after = served.follow(RECORDED_ID, Some(last + 2));
    assert_eq!(after.next().id, last + 3);
}

/// The page's stream: the server folds the log (`views::state::ViewState`) and sends the view,
/// the whole of it, once per batch of events read, its id the last event folded in.
#[test]
fn the_view_is_folded_by_the_server_once_per_batch_and_at_most_fifty_times_a_second_live() {
    let (dir, log) = recorded_project();
    let served = Served::start(dir.path(), &["dashboard", "--ui-bind", "127.0.0.1:0"], &[]);
    let last = std::fs::read_to_string(&log).unwrap().lines().count() as u64;
    // The recorded run, caught up in one view: 44 events, one view.
    let mut views = served.view(RECORDED_ID, None);
    let first = views.next();
    assert_eq!((first.kind.as_str(), first.id), ("view", last));
    let v = &first.data;
    assert_eq!(v["seq"], last);
    assert_eq!(v["title"], "src/median.js");
    assert_eq!(v["models"][1], json!(["artisan", "openai/gpt-4.1"]));
    let rows: Vec<u64> = v["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["n"].as_u64().unwrap())
        .collect();
    assert_eq!(rows, [0, 1, 2], "the baseline and two iterations");
    assert_eq!(v["timeline"][0]["phases"][0][0], "baseline");
    assert_eq!(v["finished"]["status"], "success");
    assert!(v["cost_by_model"]["openai/gpt-4.1"].as_f64().unwrap() > 0.0);
    assert_eq!(v["chaos"].as_array().unwrap().len(), 1);
    assert_eq!(v["chaos"][0]["open"], false, "kept, then fixed");
    assert!(v["paragraphs"].as_array().unwrap().len() >= 2);
    assert!(v.get("log").is_none(), "the terminal's lines are not sent");
    // A reconnect that has seen the last event gets nothing until the log grows.
    let mut again = served.view(RECORDED_ID, Some(last));
    let mut file = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    let warn = |file: &mut std::fs::File, seq: u64| {
        let line = json!({"session": "c58ff7ef", "seq": seq, "time": "2026-11-27T23:20:00Z",
            "type": "warning", "message": format!("w{seq}")});
        writeln!(file, "{line}").unwrap();
    };
    warn(&mut file, last + 1);
    let next = again.next();
    assert_eq!(next.id, last + 1);
    assert_eq!(next.data["warnings"], json!([format!("w{}", last + 1)]));
    // Forty events over about half a second, live: a view at most every 20 ms, the last one
    // holding them all.
    let started = Instant::now();
    for seq in last + 2..=last + 41 {
        warn(&mut file, seq);
        std::thread::sleep(Duration::from_millis(12));
    }
    let mut seen = 0;
    let end = loop {
        let view = again.next();
        seen += 1;
        if view.id == last + 41 {
            break view;
        }
    };
    let took = started.elapsed();
    assert_eq!(end.data["warnings"].as_array().unwrap().len(), 41);
    let most = took.as_millis() as usize / 20 + 2;
    assert!(
        seen <= most && seen < 40,
        "{seen} views in {took:?}: at most one per 20 ms"
    );
    // The events stream beside it is unchanged: every event, one by one.
    let mut events = served.follow(RECORDED_ID, Some(last));
    assert_eq!(events.next().id, last + 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_fix_under_ui_web_is_paused_and_resumed_from_the_dashboard_and_streamed_to_its_end() {
    let dir = fixture("py-median");
    let llm = artisan_script([slow(code("python", FIXED_PY), Duration::from_millis(1500))]).await;
    let env = llm.openai_env();
    let root = dir.path().to_path_buf();
    let mut served = tokio::task::spawn_blocking(move || {
        Served::start(
            &root,
            &[
                "median.py",
                "--no-adversarial",
                "--ui",
                "web",
                "--output",
                "jsonl",
            ],
            &env,
        )
    })
    .await
    .unwrap();
    let id = served.url.split("session=").nth(1).unwrap().to_string();
    assert!(id.starts_with("session-"), "{}", served.url);
    let session = dir.path().join(".ralph").join(&id);
    assert!(
        session.join("control.json").exists(),
        "the run takes requests"
    );
    let port = served.port;
    let cookie = served.cookie();
    let follow_id = id.clone();
    let mut events = tokio::task::spawn_blocking(move || {
        let mut events = Events::open(port, &format!("{follow_id}/events"), &cookie, None);
        events.until("phase_changed");
        events
    })
    .await
    .unwrap();
    let reply = served.post(&format!("/api/sessions/{id}/pause"));
    assert_eq!(reply.status, 200, "{}", reply.body);
    let (paused, mut events) = tokio::task::spawn_blocking(move || {
        let seen = events.until("paused");
        (seen, events)
    })
    .await
    .unwrap();
    assert!(paused.last().unwrap().data["type"] == "paused");
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(
        llm.requests_of("critic").await.len(),
        0,
        "nothing runs while paused"
    );
    let listed: Value = serde_json::from_str(&served.get("/api/sessions").body).unwrap();
    assert_eq!(listed[0]["status"], "running");
    assert_eq!(listed[0]["controls"], true);
    assert_eq!(
        served.post(&format!("/api/sessions/{id}/resume")).status,
        200
    );
    let rest = tokio::task::spawn_blocking(move || events.until("session_finished"))
        .await
        .unwrap();
    let finished = &rest.last().unwrap().data;
    assert_eq!(finished["report"]["status"], "success");
    assert!(rest.iter().any(|e| e.data["type"] == "resumed"));
    // The dashboard closes with the run, which exits as it would without it.
    assert_eq!(served.wait(Duration::from_secs(20)), Some(0));
    assert!(
        !session.join("control.json").exists(),
        "no stale announcement"
    );
    assert!(
        TcpStream::connect(("127.0.0.1", port)).is_err(),
        "the dashboard closed with the run"
    );
}
