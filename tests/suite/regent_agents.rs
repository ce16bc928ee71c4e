//! `ralph-loop loop` under the Regent, the agent it runs: crash and hang restarts, the agent's
//! choice and sign-in, and the loop in the TUI.

use std::time::{Duration, Instant};

use serde_json::Value;

use super::agent::git;
use super::regent::*;
use super::support::assert_has;

#[test]
fn a_crash_is_restarted_after_a_backoff_and_a_finished_run_resets_the_count() {
    let body = format!(
        "if [ $n -eq 1 ]; then echo 'boom' >&2; exit 3; fi\necho ok > done.txt\n{}\n{}\n{}\n{}",
        say("All tasks are complete."),
        status("COMPLETE", true),
        say("Everything is done."),
        result(0.01)
    );
    let p = project(&body, "", "");
    let events = p.run_to(0);
    let actions = regent_actions(&events);
    assert_eq!(
        actions[..3],
        ["crashed", "waiting", "restarted"],
        "{actions:?}"
    );
    let crashed = &of_type(&events, "regent")[0];
    assert!(
        crashed["message"]
            .as_str()
            .unwrap()
            .contains("exited with code 3"),
        "{crashed}"
    );
    let ended: Vec<&Value> = of_type(&events, "agent_ended");
    assert_eq!(ended[0]["exit_code"], 3);
    assert_eq!(ended[1]["exit_code"], 0);
    let report = loop_report(&events);
    assert_eq!(report["history"][0]["runs"], 2);
    assert_eq!(p.state_file()["consecutive_errors"], 0);
}

#[test]
fn an_agent_that_keeps_crashing_stops_the_loop_after_max_retries() {
    let p = project("exit 1", "  max_retries: 2\n", "");
    let events = p.run_to(6);
    assert_eq!(of_type(&events, "agent_started").len(), 3);
    let report = loop_report(&events);
    assert_eq!(report["status"], "agent_failed");
    assert_has(
        report["reason"].as_str().unwrap(),
        &["failed 3 times in a row"],
    );
    let state = p.state_file();
    assert_eq!(state["status"], "agent_failed");
    assert_eq!(state["consecutive_errors"], 3);
}

#[test]
fn a_hung_agent_is_killed_and_restarted_and_a_busy_silent_one_is_left_to_work() {
    // Run 1 says a word and hangs; run 2 is silent for three hang timeouts but busy, then
    // finishes.
    let body = format!(
        "if [ $n -eq 1 ]; then {}; sleep 30; fi\nend=$(($(date +%s) + 2)); while [ $(date +%s) -lt $end ]; do :; done\necho ok > done.txt\n{}\n{}\n{}\n{}",
        say("Thinking."),
        say("All tasks are complete."),
        status("COMPLETE", true),
        say("Everything is done."),
        result(0.01)
    );
    let p = project(&body, "  hang_timeout_seconds: 0.6\n", "");
    let started = Instant::now();
    let events = p.run_to(0);
    assert!(started.elapsed() < Duration::from_secs(20));
    let actions = regent_actions(&events);
    assert!(actions.contains(&"hung".to_string()), "{actions:?}");
    assert!(
        actions.contains(&"silent_but_working".to_string()),
        "{actions:?}"
    );
    let ended = of_type(&events, "agent_ended");
    assert_eq!(ended[0]["ending"], "hung");
    assert_eq!(ended[1]["ending"], "exited");
    let hung = of_type(&events, "regent")
        .into_iter()
        .find(|e| e["action"] == "hung")
        .unwrap();
    assert!(
        hung["message"].as_str().unwrap().contains("no CPU"),
        "{hung}"
    );
    // Said as it happens, while run 2 works, not when it ends.
    let position = |pred: &dyn Fn(&Value) -> bool| events.iter().position(pred).unwrap();
    let busy = position(&|e| e["type"] == "regent" && e["action"] == "silent_but_working");
    let run2_ended = position(&|e| e["type"] == "agent_ended" && e["run"] == 2);
    assert!(busy < run2_ended, "{events:#?}");
    assert!(
        events[busy]["message"]
            .as_str()
            .unwrap()
            .contains("left to work"),
        "{}",
        events[busy]
    );
}

#[test]
fn without_an_agent_chosen_a_headless_run_refuses_with_the_list_and_a_terminal_asks() {
    let p = project(&two_tasks(), "", "");
    // No `regent.agent`: nothing is chosen.
    p.edit_config("  agent: fake\n", "");
    let out = p.ralph().output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no agent chosen") && err.contains("fake"),
        "{err}"
    );

    let (code, screen) = super::support::in_terminal(
        "ralph-loop",
        &p.root,
        &[
            ("PATH", format!("{}:/usr/bin:/bin", p.bin.display())),
            ("FAKE_STATE", p.state.display().to_string()),
        ],
        &["loop", "PROMPT.md", "--tasks", "TASKS.md", "--ui", "lines"],
        &[("agent [1-", "fake")],
    );
    assert_eq!(code, 0, "{screen}");
    assert!(
        screen.contains("Which coding agent should run the loop?"),
        "{screen}"
    );
}

#[test]
fn an_agent_not_signed_in_is_refused_naming_its_variable() {
    let p = project(&two_tasks(), "", "");
    p.edit_config(
        "    prompt: stdin\n",
        "    prompt: stdin\n    auth:\n      env: [FAKE_AGENT_KEY]\n",
    );
    let out = p.ralph().env_remove("FAKE_AGENT_KEY").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("Fake agent is not signed in: set $FAKE_AGENT_KEY"),
        "{err}"
    );
}

/// `ralph-loop loop PROMPT.md --tasks TASKS.md` in `p`, in its TUI in a real terminal.
fn loop_in_tui(p: &Project) -> super::tui::Pane {
    let env = [
        ("PATH", format!("{}:/usr/bin:/bin", p.bin.display())),
        ("FAKE_STATE", p.state.display().to_string()),
    ];
    let bin = super::tui::bin();
    let command = format!("'{}' loop PROMPT.md --tasks TASKS.md", bin.display());
    super::tui::Pane::start(&p.root, &env, &command, 110, 30)
}

/// The loop in the TUI, in a real terminal: the agent's text in the thought stream, a pause
/// between iterations, the end, and the terminal restored after `q`.
#[test]
fn the_loop_in_the_tui_pauses_between_iterations_and_shows_the_agents_text() {
    use super::tui::quit;
    // Each iteration takes a second, so that the pause lands between the two.
    let p = project(&format!("sleep 1\n{}", two_tasks()), "", "");
    let pane = loop_in_tui(&p);
    pane.wait_for("RALPH LOOP │ PROMPT.md", Duration::from_secs(30));
    pane.wait_for("→ #1", Duration::from_secs(30));
    pane.keys(&["p"]);
    let screen = pane.wait_for("PAUSED", Duration::from_secs(30));
    assert!(screen.contains("agent fake"), "{screen}");
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(
        std::fs::read_to_string(p.state.join("n")).unwrap().trim(),
        "1",
        "no iteration starts while paused"
    );
    pane.keys(&["p"]);
    let screen = pane.wait_for("finished: complete", Duration::from_secs(60));
    assert_has(&screen, &["All tasks are complete.", "✓ #2"]);
    quit(&pane, 0);
    assert_eq!(p.state_file()["status"], "complete");
}

/// The model picker in the loop's view: the agent's models as it lists them; the one chosen
/// runs the next iteration, and the state file says so.
#[test]
fn the_loops_model_picker_runs_the_next_iteration_on_the_chosen_model() {
    use super::tui::quit;
    let body = format!(
        "echo \"$@\" > \"$FAKE_STATE/args-$n.txt\"\nsleep 3\n{}",
        two_tasks()
    );
    let p = project(&body, "  model: small\n", "");
    p.edit_config(
        "    args: [-p]\n",
        "    args: [-p, --model, \"{model}\"]\n    models:\n      fixed: { names: [small, large] }\n",
    );
    git(&p.root, &["commit", "-qam", "models"]);
    let pane = loop_in_tui(&p);
    pane.wait_for("→ #1", Duration::from_secs(30));
    pane.keys(&["m"]);
    let screen = pane.wait_for("Models ·", Duration::from_secs(5));
    assert!(screen.contains("fake  small"), "{screen}");
    pane.keys(&["Enter"]);
    let screen = pane.wait_for("Change model", Duration::from_secs(5));
    assert!(
        screen.contains("small  (now)") && screen.contains("large"),
        "{screen}"
    );
    pane.keys(&["Down"]);
    pane.keys(&["Enter"]);
    pane.wait_for(
        "the agent runs on large from the next iteration",
        Duration::from_secs(5),
    );
    let screen = pane.wait_for("finished: complete", Duration::from_secs(60));
    assert!(
        screen.contains("model large"),
        "the header shows it:\n{screen}"
    );
    quit(&pane, 0);
    let args = |n: u32| std::fs::read_to_string(p.state.join(format!("args-{n}.txt"))).unwrap();
    assert!(args(1).contains("--model small"), "{}", args(1));
    assert!(args(2).contains("--model large"), "{}", args(2));
    assert_eq!(p.state_file()["model"], "large");
}
