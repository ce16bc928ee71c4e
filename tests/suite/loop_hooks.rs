//! `pre_task` and `post_task` hooks around the tasks of `ralph-loop loop --tasks`: each task's
//! `pre_task` once, before the first iteration it is next, and its `post_task` once it is
//! checked off (or the loop stops on it), with the task in the environment; a skip tells the
//! agent, `abort_loop` stops the loop. The hooks of the loop's stages too: `on_before_gen` before
//! each turn, `on_test_fail`, `on_success`, and a veto at the exit gate (`on_before_success`).

use super::agent::git;
use super::regent::{loop_report, messages_of, of_type, project, two_tasks, Project};
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
    p.run_to(0);
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
    let events = p.run_to(4);
    let notes = messages_of(&events, "note");
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
    let events = p.run_to(1);
    let report = loop_report(&events);
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

/// Each stage hook appends `stage|ITERATION|TASK_STATUS` to `.ralph/hooks.log`.
const STAGE_LOG: &str =
    r#"printf '%s|%s|%s\n' "$RALPH_STAGE" "$ITERATION" "$TASK_STATUS" >> .ralph/hooks.log"#;

#[test]
fn the_loop_s_stages_reach_the_hooks_as_a_fix_run_s_do() {
    // Iteration 1 writes work.txt (the tests, `test -f done.txt`, fail); iteration 2 writes
    // done.txt and signals completion.
    let p = with_hooks(
        &(hook("on_before_gen", "before", STAGE_LOG, "warn_continue")
            + &hook("on_test_fail", "failed", STAGE_LOG, "warn_continue")
            + &hook("on_success", "done", STAGE_LOG, "warn_continue")),
    );
    p.run_to(0);
    assert_eq!(
        logged(&p),
        [
            "on_before_gen|1|running",
            "on_test_fail|1|running",
            "on_before_gen|2|running",
            "on_success|2|running"
        ]
    );
}

#[test]
fn a_veto_at_the_exit_gate_keeps_the_loop_going_and_tells_the_agent_why() {
    // The first time the loop would end complete, the hook blocks it (exit 2) with a reason.
    let veto = r#"if [ ! -e .ralph/vetoed ]; then touch .ralph/vetoed; echo "the changelog is missing" >&2; exit 2; fi"#;
    let p = with_hooks(&hook("on_before_success", "release", veto, "warn_continue"));
    let events = p.run_to(0);
    let report = loop_report(&events);
    assert_eq!(report["status"], "complete");
    assert_eq!(report["iterations"], 3, "one more iteration after the veto");
    let vetoed = of_type(&events, "success_vetoed");
    assert_eq!(vetoed.len(), 1, "{events:#?}");
    assert_eq!(vetoed[0]["iteration"], 2);
    assert_eq!(vetoed[0]["hook"], "release");
    let third = p.prompt(3);
    assert!(
        third.contains("Not done yet, says the hook release")
            && third.contains("the changelog is missing"),
        "{third}"
    );
}

#[test]
fn a_stage_hook_that_aborts_the_loop_stops_it_once_its_iteration_is_closed() {
    // The tests fail after iteration 1; the hook's failure (exit 1) under abort_loop stops the
    // loop, after that iteration is judged and committed.
    let p = with_hooks(&hook("on_test_fail", "pager", "exit 1", "abort_loop"));
    let events = p.run_to(1);
    let report = loop_report(&events);
    assert_eq!(report["status"], "error");
    assert_eq!(report["iterations"], 1);
    assert!(
        report["reason"]
            .as_str()
            .unwrap()
            .starts_with("stopped by a hook: hook pager"),
        "{report:#}"
    );
    assert_eq!(report["history"].as_array().unwrap().len(), 1);
    assert_eq!(of_type(&events, "agent_started").len(), 1);
}

#[test]
fn a_hook_in_the_loop_is_told_no_target_and_an_agent_hook_fails_as_its_on_failure_says() {
    // The loop's agent works on the whole project: no target. An `agent` hook has no model to
    // ask there, so it fails, and `warn_continue` lets the loop go on with a warning.
    let target = r#"printf 'target=[%s]\n' "$RALPH_TARGET" >> .ralph/hooks.log"#;
    let agent = "  on_test_fail:\n    - type: agent\n      name: explain\n      prompt: \"Why?\"\n      on_failure: warn_continue\n";
    let p = with_hooks(&(hook("on_before_gen", "where", target, "warn_continue") + agent));
    let events = p.run_to(0);
    assert_eq!(logged(&p), ["target=[]", "target=[]"], "one a turn");
    let warnings = messages_of(&events, "warning");
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("explain") && w.contains("no model to ask")),
        "{warnings:?}"
    );
    let errors = std::fs::read_to_string(p.root.join(".ralph/plugin-errors.log")).unwrap();
    assert!(errors.contains("explain"), "{errors}");
}
