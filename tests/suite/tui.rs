//! The TUI in a real terminal: tmux runs `ralph-loop` against the mock LLM in a pane of its
//! own; the tests send keys and read the pane as a person would see it, and check that the
//! terminal is itself again after the view (main screen, cooked mode, cursor shown).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use super::support::*;

/// A tmux server of the test's own (its own socket), with one pane running a script.
pub(super) struct Pane {
    socket: String,
}

impl Pane {
    /// Runs `command` (a shell line) in `dir` in a `w`x`h` pane, with `env` (the mock's).
    pub(super) fn start(dir: &Path, env: &[(&str, String)], command: &str, w: u16, h: u16) -> Self {
        let socket = format!("ralph-test-{}", uuid_like());
        let mut script = String::from("#!/bin/sh\n");
        for var in [
            "OPENAI_API_KEY",
            "ANTHROPIC_API_KEY",
            "GEMINI_API_KEY",
            "GOOGLE_API_KEY",
            "RUST_LOG",
            "CARGO_TARGET_DIR",
        ] {
            script.push_str(&format!("unset {var}\n"));
        }
        for (k, v) in env {
            script.push_str(&format!("export {k}='{v}'\n"));
        }
        script.push_str(&format!(
            "export HOME='{}'\nexport TERM=xterm-256color\nexport EDITOR=true\ncd '{}'\n",
            dir.display(),
            dir.display()
        ));
        script.push_str(command);
        // After the run: its exit code, then whether the terminal is cooked again, then wait
        // to be read.
        script.push_str(
            "\necho \"EXIT=$?\"\nstty -a | tr ' ' '\\n' | grep -x -e icanon -e -icanon -e echo -e -echo | tr '\\n' ' '\necho\nsleep 600\n",
        );
        let path = dir.join("in-tmux.sh");
        std::fs::write(&path, script).unwrap();
        let status = Command::new("tmux")
            .args(["-L", &socket, "-f", "/dev/null", "new-session", "-d"])
            .args(["-x", &w.to_string(), "-y", &h.to_string()])
            .arg(format!("sh '{}'", path.display()))
            .status()
            .expect("tmux runs (scripts/setup-deps installs it)");
        assert!(status.success());
        Self { socket }
    }

    fn tmux(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.socket])
            .args(args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).to_string()
    }

    /// What the pane shows now.
    pub(super) fn screen(&self) -> String {
        self.tmux(&["capture-pane", "-p"])
    }

    pub(super) fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys"];
        args.extend_from_slice(keys);
        self.tmux(&args);
        // Keys sent apart are read apart (an Esc followed at once by a letter is Alt+letter).
        std::thread::sleep(Duration::from_millis(150));
    }

    /// Waits until the pane shows `text`; the screen then.
    pub(super) fn wait_for(&self, text: &str, within: Duration) -> String {
        let start = Instant::now();
        loop {
            let screen = self.screen();
            if screen.contains(text) {
                return screen;
            }
            if start.elapsed() > within {
                panic!("the pane did not show {text:?} within {within:?}:\n{screen}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Whether the pane is on the alternate screen.
    pub(super) fn alternate(&self) -> bool {
        self.tmux(&["display-message", "-p", "#{alternate_on}"])
            .trim()
            == "1"
    }

    pub(super) fn cursor_shown(&self) -> bool {
        self.tmux(&["display-message", "-p", "#{cursor_flag}"])
            .trim()
            == "1"
    }
}

impl Drop for Pane {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .status();
    }
}

fn uuid_like() -> String {
    format!(
        "{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    )
}

pub(super) fn bin() -> PathBuf {
    assert_cmd::cargo::cargo_bin("ralph-loop")
}

/// The terminal after the view: the main screen, the shell's cooked mode with echo, a cursor.
/// Quits the view with `q`, waits for its command to exit with `code` and asserts the terminal
/// was restored: the screen at the exit.
pub(super) fn quit(pane: &Pane, code: i32) -> String {
    pane.keys(&["q"]);
    let screen = pane.wait_for(&format!("EXIT={code}"), Duration::from_secs(10));
    assert_restored(pane);
    screen
}

pub(super) fn assert_restored(pane: &Pane) {
    let screen = pane.wait_for("icanon", Duration::from_secs(10));
    assert!(
        !pane.alternate(),
        "still on the alternate screen:\n{screen}"
    );
    assert!(pane.cursor_shown(), "the cursor is hidden:\n{screen}");
    assert!(
        screen.contains("icanon echo") && !screen.contains("-icanon"),
        "raw mode was left on:\n{screen}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_fix_in_a_real_terminal_pauses_shows_its_log_and_diff_and_quits_cleanly() {
    let dir = fixture("py-median");
    let llm = artisan_script([
        Answer::Slow {
            text: format!(
                "Sorting first, then the middle.\n{}",
                code("python", FIXED_PY)
            ),
            delay: Duration::from_millis(1500),
        },
        text(code("python", FIXED_PY)),
    ])
    .await;
    let command = format!("'{}' median.py --no-adversarial", bin().display());
    let pane = Pane::start(dir.path(), &llm.openai_env(), &command, 110, 32);

    pane.wait_for("RALPH LOOP │ median.py", Duration::from_secs(30));
    assert!(pane.alternate(), "the view is on the alternate screen");
    // Paused while the Artisan's call is out: the run holds before its next step.
    pane.wait_for("· generate", Duration::from_secs(30));
    pane.keys(&["p"]);
    let screen = pane.wait_for("PAUSED", Duration::from_secs(10));
    assert!(
        screen.contains("⏸ #1"),
        "the iteration is marked paused:\n{screen}"
    );
    assert!(screen.contains("[p] resume"), "{screen}");
    std::thread::sleep(Duration::from_millis(800));
    assert_eq!(
        llm.requests_of("critic").await.len(),
        0,
        "nothing runs while paused"
    );
    assert!(pane.screen().contains("PAUSED"));
    pane.keys(&["p"]);
    let screen = pane.wait_for("finished: success", Duration::from_secs(60));
    // The thought stream shows what the models said, as they said it.
    assert!(
        screen.contains("The change is correct.") || screen.contains("Sorting first"),
        "{screen}"
    );
    assert!(screen.contains("✓ #1"), "{screen}");
    // The promise the run kept, each check's status on one line (Chaos off: its gates too).
    assert!(
        screen.contains(
            "promise (full): tests met · critic met · adversarial off · coverage off · mutation off"
        ),
        "{screen}"
    );
    // The end is drawn as its event comes; the view says how to leave once the run's feed has
    // closed, a moment later on a loaded machine.
    pane.wait_for("q to quit", Duration::from_secs(5));

    pane.keys(&["l"]);
    let screen = pane.wait_for("Log ·", Duration::from_secs(5));
    assert!(screen.contains("tests passed"), "{screen}");
    pane.keys(&["Escape"]);
    pane.keys(&["r"]);
    let screen = pane.wait_for("The change so far", Duration::from_secs(5));
    assert!(screen.contains("+    if not values:"), "{screen}");
    pane.keys(&["Escape"]);
    pane.keys(&["h"]);
    pane.wait_for("Help", Duration::from_secs(5));
    pane.keys(&["Escape"]);
    pane.keys(&["x"]);
    pane.wait_for("exported to", Duration::from_secs(5));

    let screen = quit(&pane, 0);
    // The summary stays in the terminal once the view has gone.
    assert!(screen.contains("success"), "{screen}");
    let session = session_dir(dir.path());
    let exported: Vec<_> = std::fs::read_dir(&session)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("view-export-"))
        .collect();
    assert_eq!(exported.len(), 1);
    let text = std::fs::read_to_string(exported[0].path()).unwrap();
    assert!(
        text.contains("# Thought stream") && text.contains("Sorting first"),
        "{text}"
    );
    // Every event is in the session's log, the thought stream included.
    let log = std::fs::read_to_string(session.join("events.jsonl")).unwrap();
    assert!(log.contains("\"type\":\"thought\""), "{log}");
    assert!(log.contains("\"type\":\"paused\"") && log.contains("\"type\":\"resumed\""));
}

#[tokio::test(flavor = "multi_thread")]
async fn ctrl_c_in_the_view_ends_the_run_saved_and_restores_the_terminal() {
    let dir = fixture("py-median");
    let llm = artisan_script([slow(code("python", FIXED_PY), Duration::from_secs(30))]).await;
    // Logs at debug: under the view they go to the session's stderr.log, never the screen.
    let command = format!(
        "RUST_LOG=debug '{}' median.py --no-adversarial",
        bin().display()
    );
    let pane = Pane::start(dir.path(), &llm.openai_env(), &command, 100, 30);
    let screen = pane.wait_for("· generate", Duration::from_secs(30));
    assert!(
        !screen.contains("DEBUG"),
        "a log line reached the view:\n{screen}"
    );
    let asked = Instant::now();
    pane.keys(&["C-c"]);
    let screen = pane.wait_for("EXIT=130", Duration::from_secs(15));
    assert!(
        asked.elapsed() < Duration::from_secs(10),
        "the call was not waited for"
    );
    assert!(screen.contains("interrupted"), "{screen}");
    assert_restored(&pane);
    let session = session_dir(dir.path());
    assert_eq!(
        read_json(&session.join("state.json"))["status"],
        "interrupted"
    );
    let stderr = std::fs::read_to_string(session.join("stderr.log")).unwrap();
    assert!(stderr.contains("DEBUG"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_breaker_asks_in_the_view_and_the_typed_guidance_reaches_the_artisan() {
    let (dir, llm) = super::lifecycle::breaker_project().await;
    let command = format!("'{}' median.py --no-adversarial", bin().display());
    let pane = Pane::start(dir.path(), &llm.openai_env(), &command, 110, 32);
    let screen = pane.wait_for("raise the threshold to 4", Duration::from_secs(60));
    assert!(
        screen.contains("The same failure ended 2 iterations"),
        "{screen}"
    );
    pane.keys(&["g"]);
    pane.wait_for("Guidance for the Artisan", Duration::from_secs(5));
    pane.keys(&["-l", "raise ValueError on an empty list"]);
    pane.keys(&["Enter"]);
    pane.wait_for("finished: success", Duration::from_secs(60));
    quit(&pane, 0);
    let last = llm.requests_of("artisan").await.last().unwrap().to_string();
    assert!(last.contains("raise ValueError on an empty list"), "{last}");
}

#[tokio::test(flavor = "multi_thread")]
async fn with_stdout_not_a_terminal_the_run_shows_lines_and_says_why_when_the_tui_was_asked() {
    let dir = fixture("py-median");
    let llm = artisan_always("python", FIXED_PY).await;
    // stdin is the pane's terminal, stdout a pipe: no TUI (ralph-orchestrator #160).
    let command = format!(
        "'{}' median.py --no-adversarial --ui tui | cat",
        bin().display()
    );
    let pane = Pane::start(dir.path(), &llm.openai_env(), &command, 120, 40);
    let screen = pane.wait_for("EXIT=0", Duration::from_secs(60));
    assert!(
        screen
            .contains("--ui tui: stdin and stdout are not both a terminal; showing lines instead"),
        "{screen}"
    );
    assert!(!screen.contains("RALPH LOOP"), "{screen}");
    assert!(screen.contains("iter 1/"), "{screen}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_model_picker_puts_the_artisan_on_another_model_from_its_next_call() {
    let dir = fixture("py-median");
    let llm = artisan_script([
        slow(code("python", HALF_FIXED_PY), Duration::from_secs(6)),
        text(code("python", FIXED_PY)),
    ])
    .await;
    let command = format!("'{}' median.py --no-adversarial", bin().display());
    let pane = Pane::start(dir.path(), &llm.openai_env(), &command, 110, 32);
    // Chosen while the Artisan's first call is out: the next one goes to the new model.
    pane.wait_for("· generate", Duration::from_secs(30));
    pane.keys(&["m"]);
    let screen = pane.wait_for("Models ·", Duration::from_secs(5));
    // With only an OpenAI key, the run's models are the OpenAI fallbacks.
    assert!(
        screen.contains("artisan    openai/gpt-4.1 "),
        "the roles and their models:\n{screen}"
    );
    pane.keys(&["Down"]);
    pane.keys(&["Enter"]);
    let screen = pane.wait_for("Change model", Duration::from_secs(5));
    assert!(screen.contains("openai/gpt-4.1  (now)"), "{screen}");
    pane.keys(&["Up"]);
    pane.keys(&["Enter"]);
    pane.wait_for(
        "the artisan runs on openai/gpt-4.1-mini from its next call",
        Duration::from_secs(5),
    );
    let screen = pane.wait_for("finished: success", Duration::from_secs(60));
    assert!(
        screen.contains("artisan openai/gpt-4.1-mini"),
        "the header shows the model that answered:\n{screen}"
    );
    quit(&pane, 0);
    let asked: Vec<String> = llm
        .requests_of("artisan")
        .await
        .iter()
        .map(|r| r["model"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(asked, ["gpt-4.1", "gpt-4.1-mini"]);
    let log = std::fs::read_to_string(session_dir(dir.path()).join("events.jsonl")).unwrap();
    assert!(
        log.contains("the artisan now runs on openai/gpt-4.1-mini, as chosen in the view"),
        "the switch is in the session's record"
    );
}
