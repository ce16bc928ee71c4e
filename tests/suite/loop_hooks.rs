//! `pre_task` and `post_task` hooks around the tasks of `ralph-loop loop --tasks`: each task's
//! `pre_task` once, before the first iteration it is next, and its `post_task` once it is
//! checked off (or the loop stops on it), with the task in the environment; a skip tells the
//! agent, `abort_loop` stops the loop.

use super::agent::git;
use super::regent::{of_type, project, two_tasks, Project};
use super::support::*;

/// A shell hook `name` at `stage` running `command` (a YAML block, so any quotes go).
fn hook(stage: &str, name: &str, command: &str, on_failure: &str) -> String {
    format!("  {stage}:\n    - type: shell\n      name: {name}\n      command: |\n        {command}\n      on_failure: {on_failure}\n")
}

/// The loop's config with `hooks` added, its hooks trusted.
fn with_hooks(hooks: &str) -> Project {
    let p = project(&two_tasks(), "", &format!("hooks:\n{hooks}"));
    let mut trust = assert_cmd::Command::cargo_bin("ralph-loop").unwrap();
    isolate(&mut trust, &p.root);
    trust.args(["hooks", "trust"]).assert().success();
    p
}

/// Each hook run appends `stage|TASK_ID|TASK_NAME|TASK_STATUS|TASK_DESCRIPTION` to
/// `.ralph/hooks.log` (ignored by git, so the loop's commits do not take it).
const LOG: &str = r#"printf '%s|%s|%s|%s|%s\n' "$RALPH_STAGE" "$TASK_ID" "$TASK_NAME" "$TASK_STATUS" "$TASK_DESCRIPTION" >> .ralph/hooks.log"#;

fn logged(p: &Project) -> Vec<String> {
    std::fs::read_to_string(p.root.join(".ralph/hooks.log"))
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn each_task_of_the_list_gets_its_pre_task_and_its_post_task_once() {
    let p = with_hooks(
        &(hook("pre_task", "before", LOG, "warn_continue")
            + &hook("post_task", "after", LOG, "warn_continue")),
    );
    let (code, events) = p.run();
    assert_eq!(code, 0, "{events:#?}");
    assert_eq!(
        logged(&p),
        [
            "pre_task|T-1|Write work.txt|pending|T-1: Write work.txt",
            "post_task|T-1|Write work.txt|completed|T-1: Write work.txt",
            "pre_task|T-2|Write done.txt|pending|T-2: Write done.txt",
            "post_task|T-2|Write done.txt|completed|T-2: Write done.txt",
        ]
    );
    // The hooks' files are not the iteration's work: nothing of `.ralph/` is committed.
    let committed = git(&p.root, &["log", "--name-only", "--format="]);
    assert!(!committed.contains(".ralph"), "{committed}");
}

#[test]
fn a_skipped_task_is_left_to_the_agent_and_a_stopped_loop_ends_its_task() {
    // T-1 is skipped (exit 2 blocks), so T-2 is next; one iteration is all the loop may run,
    // so it stops on T-2, and T-2's post_task says how.
    let gate = r#"case "$TASK_ID" in T-1) echo "not now" >&2; exit 2;; esac"#;
    let p = with_hooks(
        &(hook("pre_task", "gate", gate, "warn_continue")
            + &hook("post_task", "after", LOG, "warn_continue")),
    );
    std::fs::write(
        p.root.join("ralph.config.yaml"),
        std::fs::read_to_string(p.root.join("ralph.config.yaml"))
            .unwrap()
            .replacen("regent:\n", "budgets:\n  max_iterations: 1\nregent:\n", 1),
    )
    .unwrap();
    let (code, events) = p.run();
    assert_eq!(code, 4, "{events:#?}");
    let notes: Vec<String> = of_type(&events, "note")
        .iter()
        .map(|e| e["message"].as_str().unwrap().to_string())
        .collect();
    assert!(
        notes
            .iter()
            .any(|n| n.contains("T-1: Write work.txt") && n.contains("not now")),
        "{notes:?}"
    );
    assert!(
        p.prompt(1)
            .contains("A hook skipped the task T-1: Write work.txt"),
        "{}",
        p.prompt(1)
    );
    // The agent checked T-1 off anyway (its post_task says so); the loop stopped on T-2.
    assert_eq!(
        logged(&p),
        [
            "post_task|T-1|Write work.txt|completed|T-1: Write work.txt",
            "post_task|T-2|Write done.txt|max_iterations|T-2: Write done.txt",
        ]
    );
}

#[test]
fn abort_loop_at_a_task_stops_the_loop_with_an_error() {
    let gate = r#"case "$TASK_ID" in T-2) echo "quota spent" >&2; exit 1;; esac"#;
    let p = with_hooks(
        &(hook("pre_task", "gate", gate, "abort_loop")
            + &hook("post_task", "after", LOG, "warn_continue")),
    );
    let (code, events) = p.run();
    assert_eq!(code, 1, "{events:#?}");
    let report = &of_type(&events, "loop_finished")[0]["report"];
    assert_eq!(report["status"], "error");
    assert_eq!(report["iterations"], 1);
    let reason = report["reason"].as_str().unwrap();
    assert!(
        reason.contains("the loop stopped")
            && reason.contains("gate")
            && reason.contains("quota spent"),
        "{reason}"
    );
    assert_eq!(
        logged(&p),
        ["post_task|T-1|Write work.txt|completed|T-1: Write work.txt"]
    );
}
