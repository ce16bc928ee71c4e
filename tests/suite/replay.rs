//! `ralph-loop replay` through the binary: lines at the recorded pace, a 100-iteration session
//! at full speed in the TUI (tmux) and in the dashboard (headless Chromium), and the exports
//! (a page that stands alone, opened in Chromium; an asciicast recording).

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use ralph_actors::events::event::Event;
use ralph_actors::schema::promise::{Check, CheckStatus};
use serde_json::Value;

use super::cdp::Browser;
use super::long_session::long_session;
use super::support::{assert_has, json_lines};
use super::tui::{bin, quit, Pane};
use super::web::Served;

/// A project whose `.ralph/` holds one recorded session, `events`; its folder name.
fn project_with(events: &[ralph_actors::events::event::Envelope]) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let id = format!("session-{}", events[0].session);
    let session = dir.path().join(".ralph").join(&id);
    std::fs::create_dir_all(&session).unwrap();
    let lines: String = events
        .iter()
        .map(|e| serde_json::to_string(e).unwrap() + "\n")
        .collect();
    std::fs::write(session.join("events.jsonl"), lines).unwrap();
    (dir, id)
}

fn recorded() -> Vec<ralph_actors::events::event::Envelope> {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("src/views/tui/testdata/median-js.events.jsonl"),
    )
    .unwrap();
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn replay(dir: &Path) -> Command {
    let mut cmd = Command::new(bin());
    cmd.current_dir(dir)
        .env("HOME", dir)
        .env_remove("RUST_LOG")
        .arg("replay");
    cmd
}

#[test]
fn lines_play_at_the_recorded_pace_divided_by_the_speed() {
    // The bundled example took about three seconds.
    let (dir, id) = project_with(&recorded());
    let timed = |speed: &str| {
        let start = Instant::now();
        let out = replay(dir.path())
            .args([&id[8..16], "--ui", "lines", "--speed", speed])
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        (start.elapsed(), err)
    };
    let (slow, shown) = timed("1");
    assert_has(&shown, &["success", "median.js"]);
    let (fast, again) = timed("0");
    assert_eq!(shown, again, "the same lines at any speed");
    assert!(slow >= Duration::from_millis(1500), "{slow:?}");
    assert!(fast < slow / 2, "{fast:?} against {slow:?}");
    // A speed that is no speed, a run that is not there: said, exit 2 and 1.
    let out = replay(dir.path()).arg("--speed=-1").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--speed is 0"));
    let out = replay(dir.path()).arg("nope").output().unwrap();
    assert_ne!(out.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no session matching `nope`"),
        "{out:?}"
    );
}

#[test]
fn a_100_iteration_session_replays_at_full_speed_in_the_tui() {
    let (dir, id) = project_with(&long_session(100));
    let command = format!("'{}' replay {id} --speed 0", bin().display());
    let pane = Pane::start(dir.path(), &[], &command, 110, 32);
    let start = Instant::now();
    pane.wait_for("finished: success", Duration::from_secs(60));
    println!("a 100-iteration session in the TUI: {:?}", start.elapsed());
    // The last iteration is shown too: a capture of the pane may come while tmux is still
    // drawing the frame whose header says it finished, so it is waited for rather than read
    // from that capture.
    let screen = pane.wait_for("#200", Duration::from_secs(10));
    assert!(screen.contains("RALPH LOOP │ median.js"), "{screen}");
    quit(&pane, 0);
    // The run's own files are as they were: a replay writes none of them.
    let session = dir.path().join(".ralph").join(&id);
    assert!(!session.join("stderr.log").exists());
}

#[test]
fn a_100_iteration_session_replays_at_full_speed_in_the_dashboard() {
    let events = long_session(100);
    let (dir, id) = project_with(&events);
    let mut browser = Browser::launch();
    let served = Served::start(
        dir.path(),
        &["replay", &id, "--ui", "web", "--speed", "0"],
        &[],
    );
    assert!(served.url.contains("&speed=0"), "{}", served.url);
    let start = Instant::now();
    browser.navigate(&served.url);
    browser.wait_for(
        "document.querySelector('#status').textContent.startsWith('finished: success')",
        Duration::from_secs(60),
    );
    println!(
        "a 100-iteration session in the dashboard: {:?}",
        start.elapsed()
    );
    assert_eq!(
        browser.eval("document.querySelectorAll('#timeline .iteration').length"),
        201,
        "the tests before, and 200 iterations"
    );
    assert_eq!(
        browser.eval("document.querySelector('#title').textContent"),
        "src/median.js"
    );
    assert_eq!(
        browser.eval("document.querySelector('#conn').textContent"),
        "replay ×0"
    );
}

#[test]
fn a_session_exports_as_a_page_that_stands_alone_and_as_an_asciicast() {
    let mut events = recorded();
    // The recording predates the report's promise: the one its run would keep now.
    if let Some(Event::SessionFinished { report }) = events.last_mut().map(|e| &mut e.event) {
        report.promise.checks = vec![
            Check::new("tests", CheckStatus::Met, "4 passed"),
            Check::new("coverage", CheckStatus::Unavailable, "c8 is not installed"),
        ];
    }
    let (dir, id) = project_with(&events);
    let page = dir.path().join("median.html");
    let out = replay(dir.path())
        .args([&id, "--export", page.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("id=\"ralph-export\""));
    assert!(!html.contains("src=\"app.js\""), "the script is inlined");
    // Opened from disk, with no server: the session is drawn.
    let mut browser = Browser::launch();
    browser.navigate(&format!("file://{}", page.display()));
    browser.wait_for(
        "document.querySelector('#status').textContent.startsWith('finished: success')",
        Duration::from_secs(20),
    );
    assert_eq!(
        browser.eval("document.querySelector('#title').textContent"),
        "src/median.js"
    );
    assert_eq!(browser.eval("document.querySelector('nav').hidden"), true);
    assert_eq!(
        browser.eval("document.querySelector('#promise').textContent"),
        "promise (full): tests met (4 passed) · coverage unavailable (c8 is not installed)"
    );
    browser.screenshot(&super::cdp::artifacts().join("dashboard-median-js.png"));
    assert!(browser
        .eval("document.querySelector('#cost').textContent")
        .as_str()
        .unwrap()
        .starts_with("$0.0"));

    let cast = dir.path().join("median.cast");
    let out = replay(dir.path())
        .args([&id, "--export", cast.to_str().unwrap(), "--speed", "2"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = std::fs::read_to_string(&cast).unwrap();
    let lines: Vec<Value> = json_lines(&text);
    assert_eq!(lines[0]["version"], 3);
    let mut screen = vt100::Parser::new(30, 100, 0);
    for frame in &lines[1..] {
        screen.process(frame[2].as_str().unwrap().as_bytes());
    }
    assert!(screen.screen().contents().contains("finished: success"));

    let out = replay(dir.path())
        .args([&id, "--export", "median.txt"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("a .html page or a .cast recording"));
}
