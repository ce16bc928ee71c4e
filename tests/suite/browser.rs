//! The dashboard in a real browser: Debian's Chromium, headless, driven over the DevTools
//! protocol (a WebSocket), loads the page an agent loop under `--ui web` prints while the loop
//! runs, and the test reads the rendered page as a person would see it: the breaker badge's
//! colour going green, yellow, red, the money going up, and the reset button (clicked with the
//! mouse) closing the breaker. Screenshots are kept in `$RALPH_ARTIFACTS` (`.ci/run` sets it
//! to `artifacts/` in the clone), else under the target folder.

use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::{json, Value};

use super::regent::{project, result, say, status};

/// Headless Chromium and one page in it.
pub(super) struct Browser {
    child: Child,
    ws: tungstenite::WebSocket<TcpStream>,
    session: String,
    next_id: u64,
    _profile: tempfile::TempDir,
}

impl Browser {
    pub(super) fn launch() -> Self {
        let profile = tempfile::tempdir().unwrap();
        let mut child = Command::new("chromium")
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--no-first-run",
                "--remote-debugging-port=0",
                "--window-size=1280,900",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .expect("chromium runs (scripts/setup-deps installs it)");
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let url = loop {
            let line = lines
                .next()
                .expect("chromium says where its DevTools listen")
                .unwrap();
            if let Some(url) = line.strip_prefix("DevTools listening on ") {
                break url.trim().to_string();
            }
        };
        // Chromium blocks on a full pipe: what it says later is read and dropped.
        std::thread::spawn(move || for _ in lines.map_while(Result::ok) {});
        let address = url
            .trim_start_matches("ws://")
            .split('/')
            .next()
            .unwrap()
            .to_string();
        let stream = TcpStream::connect(address).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        let (ws, _) = tungstenite::client(url.as_str(), stream).unwrap();
        let mut browser = Self {
            child,
            ws,
            session: String::new(),
            next_id: 0,
            _profile: profile,
        };
        let target = browser.call("Target.createTarget", json!({"url": "about:blank"}));
        let attached = browser.call(
            "Target.attachToTarget",
            json!({"targetId": target["targetId"], "flatten": true}),
        );
        browser.session = attached["sessionId"].as_str().unwrap().to_string();
        browser
    }

    /// A DevTools command (to the page once attached); its result.
    fn call(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut message = json!({"id": id, "method": method, "params": params});
        if !self.session.is_empty() {
            message["sessionId"] = json!(self.session);
        }
        self.ws
            .send(tungstenite::Message::text(message.to_string()))
            .unwrap();
        loop {
            let tungstenite::Message::Text(text) = self.ws.read().unwrap() else {
                continue;
            };
            let reply: Value = serde_json::from_str(text.as_str()).unwrap();
            if reply["id"] == id {
                assert!(reply["error"].is_null(), "{method}: {reply}");
                return reply["result"].clone();
            }
        }
    }

    pub(super) fn navigate(&mut self, url: &str) {
        self.call("Page.navigate", json!({"url": url}));
    }

    /// A JavaScript expression's value in the page.
    pub(super) fn eval(&mut self, expression: &str) -> Value {
        let out = self.call(
            "Runtime.evaluate",
            json!({"expression": expression, "returnByValue": true}),
        );
        out["result"]["value"].clone()
    }

    /// Waits until `expression` is true in the page.
    pub(super) fn wait_for(&mut self, expression: &str, within: Duration) {
        let start = Instant::now();
        while self.eval(expression) != json!(true) {
            assert!(
                start.elapsed() < within,
                "the page never had {expression}: {}",
                self.eval("document.body.innerText")
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// A left click in the middle of the element, with the mouse.
    pub(super) fn click(&mut self, selector: &str) {
        let rect = self.eval(&format!(
            "(() => {{ const r = document.querySelector('{selector}').getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; }})()"
        ));
        let (x, y) = (rect[0].as_f64().unwrap(), rect[1].as_f64().unwrap());
        for kind in ["mousePressed", "mouseReleased"] {
            self.call(
                "Input.dispatchMouseEvent",
                json!({"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1}),
            );
        }
    }

    /// The page as a PNG, kept at `path`.
    pub(super) fn screenshot(&mut self, path: &Path) {
        let shot = self.call("Page.captureScreenshot", json!({"format": "png"}));
        let png = base64::engine::general_purpose::STANDARD
            .decode(shot["data"].as_str().unwrap())
            .unwrap();
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, png).unwrap();
        println!("screenshot: {}", path.display());
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(self.child.id() as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
        let _ = self.child.wait();
    }
}

/// Where screenshots are kept: `$RALPH_ARTIFACTS` (CI sets it), else under the target folder.
pub(super) fn artifacts() -> PathBuf {
    std::env::var_os("RALPH_ARTIFACTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_TARGET_TMPDIR")).join("artifacts"))
}

const GREEN: &str = "rgb(63, 185, 80)";
const YELLOW: &str = "rgb(210, 153, 34)";
const RED: &str = "rgb(248, 81, 73)";

#[test]
fn the_dashboard_in_chromium_shows_the_breaker_open_and_its_button_closes_it() {
    let mut browser = Browser::launch();
    // Each iteration: two seconds of an agent that does nothing and costs a cent. Two without
    // progress: HALF_OPEN; the probe fails too: OPEN, cooling down for ten minutes.
    let body = format!(
        "sleep 2\n{}\n{}\n{}",
        say("Nothing to do. <b>not bold</b>"),
        status("IN_PROGRESS", false),
        result(0.01)
    );
    let p = project(
        &body,
        "  breaker:\n    cooldown_seconds: 600\n",
        "budgets:\n  max_iterations: 4\n",
    );
    std::fs::write(p.root.join("done.txt"), "ok\n").unwrap();
    super::agent::git(&p.root, &["add", "done.txt"]);
    super::agent::git(&p.root, &["commit", "-q", "-m", "tests pass"]);
    let env = [
        ("PATH", p.path.clone()),
        ("FAKE_STATE", p.state.display().to_string()),
    ];
    let served = super::web::Served::start(
        &p.root,
        &["loop", "PROMPT.md", "--tasks", "TASKS.md", "--ui", "web"],
        &env,
    );
    browser.navigate(&served.url);
    browser.wait_for(
        "document.querySelector('#title').textContent === 'PROMPT.md'",
        Duration::from_secs(20),
    );
    assert_eq!(
        browser.eval("document.querySelector('#breaker').textContent"),
        "CLOSED"
    );
    // The token has done its work: it is no longer in the address bar (a cookie carries it).
    assert_eq!(browser.eval("location.href.includes('token=')"), false);
    // Watched as it goes: the badge's colour as drawn, and the money spent.
    let badge = "getComputedStyle(document.querySelector('#breaker')).backgroundColor";
    let mut colours: Vec<String> = Vec::new();
    let mut costs: Vec<String> = Vec::new();
    let start = Instant::now();
    while colours.last().map(String::as_str) != Some(RED) {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the breaker never showed OPEN: {colours:?}"
        );
        let colour = browser.eval(badge).as_str().unwrap().to_string();
        if colours.last() != Some(&colour) {
            colours.push(colour);
        }
        let cost = browser
            .eval("document.querySelector('#cost').textContent")
            .as_str()
            .unwrap()
            .to_string();
        if costs.last() != Some(&cost) {
            costs.push(cost);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(colours, [GREEN, YELLOW, RED]);
    assert_eq!(
        browser.eval("document.querySelector('#breaker').textContent"),
        "OPEN"
    );
    assert!(
        costs.len() >= 3 && costs.iter().any(|c| c.starts_with("$0.0300")),
        "the cost went up as the loop spent: {costs:?}"
    );
    // The tests before the first iteration, then three iterations, each with its tests.
    assert_eq!(
        browser.eval(
            "[...document.querySelectorAll('#timeline .iteration .n')].map(e => e.textContent).join(' ')"
        ),
        "base #1 #2 #3"
    );
    assert_eq!(
        browser.eval("document.querySelectorAll('#timeline .iteration .ok').length"),
        4,
        "each row shows its tests passed"
    );
    // What a model or agent writes is shown as text, never run as markup.
    assert!(browser
        .eval("document.querySelector('#thoughts').innerText")
        .as_str()
        .unwrap()
        .contains("<b>not bold</b>"));
    assert_eq!(
        browser.eval("document.querySelectorAll('#thoughts b').length"),
        0
    );
    browser.screenshot(&artifacts().join("dashboard-breaker-open.png"));

    // The reset button, clicked: the loop, cooling down, takes it at once.
    browser.click("#reset");
    browser.wait_for(
        "document.querySelector('#said').textContent.includes('resets its breaker')",
        Duration::from_secs(10),
    );
    let clicked = Instant::now();
    browser.wait_for(&format!("{badge} === '{GREEN}'"), Duration::from_secs(10));
    assert!(clicked.elapsed() < Duration::from_secs(5));
    // The fourth iteration runs, and the loop ends at its limit.
    browser.wait_for(
        "document.querySelector('#status').textContent.startsWith('finished')",
        Duration::from_secs(30),
    );
    browser.screenshot(&artifacts().join("dashboard-finished.png"));
    let text = browser.eval("document.body.innerText");
    assert!(
        text.as_str().unwrap().contains("#4"),
        "the fourth iteration is shown: {text}"
    );
    let mut served = served;
    assert!(
        served.wait(Duration::from_secs(20)).is_some(),
        "the loop exits"
    );
}
