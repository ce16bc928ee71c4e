//! The dashboard in a real browser: Debian's Chromium, headless, driven over the DevTools
//! protocol (a WebSocket), loads the page an agent loop under `--ui web` prints while the loop
//! runs, and the test reads the rendered page as a person would see it: the breaker badge's
//! colour going green, yellow, red, the money going up, and the reset button (clicked with the
//! mouse) closing the breaker. Screenshots are kept in `$RALPH_ARTIFACTS` (`.ci/run` sets it
//! to `artifacts/` in the clone), else under the target folder.

use std::time::{Duration, Instant};

use super::cdp::{artifacts, Browser};
use super::regent::{ends, project, say};

const GREEN: &str = "rgb(63, 185, 80)";
const YELLOW: &str = "rgb(210, 153, 34)";
const RED: &str = "rgb(248, 81, 73)";

#[test]
fn the_dashboard_in_chromium_shows_the_breaker_open_and_its_button_closes_it() {
    let mut browser = Browser::launch();
    // Each iteration: two seconds of an agent that does nothing and costs a cent. Two without
    // progress: HALF_OPEN; the probe fails too: OPEN, cooling down for ten minutes.
    let body = format!(
        "sleep 2\n{}\n{}",
        say("Nothing to do. <b>not bold</b>"),
        ends("IN_PROGRESS", false, 0.01)
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
