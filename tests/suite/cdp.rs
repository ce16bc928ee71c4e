//! Headless Chromium (Debian's package) driven over the DevTools protocol, a WebSocket: load a
//! page, read it as it is drawn, click with the mouse, take a screenshot. Used by the dashboard's
//! tests and its benchmark (`benches/dashboard.rs`).

use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::{json, Value};

/// Headless Chromium and one page in it.
pub struct Browser {
    child: Child,
    ws: tungstenite::WebSocket<TcpStream>,
    session: String,
    next_id: u64,
    _profile: tempfile::TempDir,
}

impl Browser {
    pub fn launch() -> Self {
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
        let id = self.send(method, params);
        loop {
            let reply = self.next_message();
            if reply["id"] == id {
                assert!(reply["error"].is_null(), "{method}: {reply}");
                return reply["result"].clone();
            }
        }
    }

    /// Sends a DevTools command without waiting for its reply; its id.
    fn send(&mut self, method: &str, params: Value) -> u64 {
        self.next_id += 1;
        let mut message = json!({"id": self.next_id, "method": method, "params": params});
        if !self.session.is_empty() {
            message["sessionId"] = json!(self.session);
        }
        self.ws
            .send(tungstenite::Message::text(message.to_string()))
            .unwrap();
        self.next_id
    }

    /// The next message from Chromium: a reply or an event.
    fn next_message(&mut self) -> Value {
        loop {
            // A signal to the test process (another test's child ending) interrupts the read:
            // it is read again.
            let message = match self.ws.read() {
                Err(tungstenite::Error::Io(e)) if e.kind() == std::io::ErrorKind::Interrupted => {
                    continue
                }
                read => read.unwrap(),
            };
            if let tungstenite::Message::Text(text) = message {
                return serde_json::from_str(text.as_str()).unwrap();
            }
        }
    }

    pub fn navigate(&mut self, url: &str) {
        self.call("Page.navigate", json!({"url": url}));
    }

    /// A JavaScript expression's value in the page.
    pub fn eval(&mut self, expression: &str) -> Value {
        let out = self.call(
            "Runtime.evaluate",
            json!({"expression": expression, "returnByValue": true}),
        );
        out["result"]["value"].clone()
    }

    /// Waits until `expression` is true in the page.
    pub fn wait_for(&mut self, expression: &str, within: Duration) {
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
    pub fn click(&mut self, selector: &str) {
        let at = self.middle_of(selector);
        for kind in ["mousePressed", "mouseReleased"] {
            self.call("Input.dispatchMouseEvent", mouse(kind, at));
        }
    }

    /// A left click on `selector` that opens a JavaScript dialog (`confirm`, `alert`),
    /// answered as the person at the browser does: OK when `accept`, else Cancel. The dialog's
    /// kind and text. (The release's reply comes only once the dialog is answered.)
    pub fn click_answering(&mut self, selector: &str, accept: bool) -> (String, String) {
        self.call("Page.enable", json!({}));
        let at = self.middle_of(selector);
        self.call("Input.dispatchMouseEvent", mouse("mousePressed", at));
        let mut waiting = vec![self.send("Input.dispatchMouseEvent", mouse("mouseReleased", at))];
        let opened = loop {
            let message = self.next_message();
            if message["method"] == "Page.javascriptDialogOpening" {
                break message["params"].clone();
            }
            waiting.retain(|id| message["id"] != *id);
        };
        waiting.push(self.send("Page.handleJavaScriptDialog", json!({"accept": accept})));
        while !waiting.is_empty() {
            let message = self.next_message();
            waiting.retain(|id| message["id"] != *id);
        }
        (
            opened["type"].as_str().unwrap_or("").to_string(),
            opened["message"].as_str().unwrap_or("").to_string(),
        )
    }

    /// The middle of the element, in the page's coordinates.
    fn middle_of(&mut self, selector: &str) -> (f64, f64) {
        let rect = self.eval(&format!(
            "(() => {{ const r = document.querySelector('{selector}').getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; }})()"
        ));
        (rect[0].as_f64().unwrap(), rect[1].as_f64().unwrap())
    }

    /// The page as a PNG, kept at `path`.
    pub fn screenshot(&mut self, path: &Path) {
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

/// A left button's mouse event of `kind` at `(x, y)`.
fn mouse(kind: &str, (x, y): (f64, f64)) -> Value {
    json!({"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1})
}

/// Where screenshots are kept: `$RALPH_ARTIFACTS` (CI sets it), else under the target folder.
pub fn artifacts() -> PathBuf {
    std::env::var_os("RALPH_ARTIFACTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_TARGET_TMPDIR")).join("artifacts"))
}
