//! `pre_task` and `post_task` hooks around the entries of a batch: each fires once per entry
//! with the task in its request and environment, a block or `skip_task` skips the entry, and
//! `abort_loop` keeps the others from starting.

use serde_json::Value;

use super::batch::{batch_report, medians};
use super::support::*;

/// `pre_task` and `post_task` hooks in the config (memory off, as `medians` has it).
fn with_hooks(dir: &std::path::Path, hooks: &str) {
    write_config(dir, &format!("memory:\n  enabled: false\nhooks:\n{hooks}"));
    std::fs::create_dir_all(dir.join(".hook-out")).unwrap();
}

/// `medians(n)` with `hooks` (see [`with_hooks`]), and a server whose Artisan fixes each file.
async fn hooked_medians(n: usize, hooks: &str) -> (tempfile::TempDir, MockLlm) {
    let dir = medians(n);
    with_hooks(dir.path(), hooks);
    (dir, artisan_always("python", FIXED_PY).await)
}

/// Trusts the hooks, runs the batch of the three medians' specs, asserts it exits with `code`;
/// the batch's report.
fn batch(dir: &std::path::Path, llm: &MockLlm, code: i32) -> Value {
    trust_hooks(dir);
    ralph_with_chaos(dir, llm)
        .args([
            "batch",
            "specs/median-0.md",
            "specs/median-1.md",
            "specs/median-2.md",
            "--no-adversarial",
        ])
        .assert()
        .code(code);
    batch_report(dir)
}

/// A `pre_task` hook `gate` that records each request and blocks the tasks whose name holds
/// `blocked`, saying `why`; a `post_task` hook `after` that records each request.
fn gate_and_after(blocked: &str, why: &str) -> String {
    format!(
        r#"  pre_task:
    - type: shell
      name: gate
      command: 'cat > ".hook-out/pre-$TASK_ID.json"; case "$TASK_NAME" in *{blocked}*) echo "{why}" >&2; exit 2;; esac'
      on_failure: abort_loop
  post_task:
    - type: shell
      name: after
      command: 'cat > ".hook-out/post-$TASK_ID.json"'
      on_failure: warn_continue
"#
    )
}

fn read(dir: &std::path::Path, name: &str) -> Option<Value> {
    std::fs::read_to_string(dir.join(".hook-out").join(name))
        .ok()
        .map(|s| serde_json::from_str(&s).unwrap())
}

#[tokio::test(flavor = "multi_thread")]
async fn task_hooks_fire_around_each_entry_and_a_block_skips_one() {
    let (dir, llm) = hooked_medians(3, &gate_and_after("median-1", "not today")).await;
    let p = dir.path();
    let report = batch(p, &llm, 0);
    let entries = report["entries"].as_array().unwrap();
    let statuses: Vec<&str> = entries
        .iter()
        .map(|e| e["status"].as_str().unwrap())
        .collect();
    assert_eq!(
        statuses,
        ["success", "skipped_by_hook", "success"],
        "{report:#}"
    );
    let reason = entries[1]["reason"].as_str().unwrap();
    assert!(
        reason.contains("gate") && reason.contains("not today"),
        "{reason}"
    );
    assert_eq!(report["status"], "success");
    assert_eq!(report["totals"]["skipped"], 1);

    for id in ["1", "2", "3"] {
        let pre = read(p, &format!("pre-{id}.json")).unwrap();
        assert_eq!(pre["stage"], "pre_task");
        assert_eq!(pre["task"]["id"], id);
        assert_eq!(pre["task"]["status"], Value::Null);
    }
    let pre = read(p, "pre-1.json").unwrap();
    assert_eq!(pre["task"]["name"], "specs/median-0.md");
    assert_eq!(pre["task"]["kind"], "spec");
    assert_eq!(pre["task"]["targets"][0], "median_0.py");
    assert_eq!(pre["target"], "median_0.py");

    let post = read(p, "post-1.json").unwrap();
    assert_eq!(post["stage"], "post_task");
    assert_eq!(post["task"]["status"], "success");
    assert_eq!(post["task"]["iterations"], 1);
    assert!(
        read(p, "post-2.json").is_none(),
        "a skipped task has no post_task"
    );
    assert!(read(p, "post-3.json").is_some());
    // The skipped entry never reached the Artisan: two fixes, for the other two.
    assert_eq!(llm.requests_of("artisan").await.len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn skip_task_skips_a_failing_entry_and_abort_loop_stops_the_batch() {
    let (dir, llm) = hooked_medians(
        3,
        r#"  pre_task:
    - type: shell
      name: flaky
      command: 'test "$TASK_ID" != 1 || { echo "cannot reach the tracker" >&2; exit 1; }'
      on_failure: skip_task
    - type: shell
      name: quota
      command: 'test "$TASK_ID" != 2 || { echo "quota spent" >&2; exit 1; }'
      on_failure: abort_loop
"#,
    )
    .await;
    let p = dir.path();
    // The aborting hook failed: the batch fails with it.
    let report = batch(p, &llm, 1);
    assert_eq!(report["status"], "error");
    assert_has(report["stopped_by_hook"].as_str().unwrap(), &["quota"]);
    let entries = report["entries"].as_array().unwrap();
    let reasons: Vec<&str> = entries
        .iter()
        .map(|e| e["reason"].as_str().unwrap_or(""))
        .collect();
    for e in entries {
        assert_eq!(e["status"], "skipped_by_hook", "{report:#}");
    }
    assert!(
        reasons[0].contains("flaky") && reasons[0].contains("cannot reach the tracker"),
        "{reasons:?}"
    );
    assert!(
        reasons[1].contains("the batch stopped") && reasons[1].contains("quota spent"),
        "{reasons:?}"
    );
    assert!(reasons[2].contains("not started"), "{reasons:?}");
    assert!(llm.requests_of("artisan").await.is_empty());
    let log = std::fs::read_to_string(p.join(".ralph/plugin-errors.log")).unwrap();
    assert!(
        log.contains("flaky at pre_task") && log.contains("quota at pre_task"),
        "{log}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_batch_with_an_untrusted_task_hook_starts_nothing() {
    let (dir, llm) = hooked_medians(1,
        "  pre_task:\n    - type: shell\n      name: gate\n      command: touch .hook-out/ran\n      on_failure: abort_loop\n",
    )
    .await;
    let p = dir.path();
    let out = ralph_with_chaos(p, &llm)
        .args(["batch", "specs/median-0.md", "--no-adversarial"])
        .assert()
        .code(2);
    let stderr = stderr_of(&out);
    assert!(
        stderr.contains("gate") && stderr.contains("hooks trust"),
        "{stderr}"
    );
    assert!(!p.join(".hook-out/ran").exists());
    assert!(llm.requests().await.is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn in_agent_mode_task_hooks_fire_around_each_spec_and_a_block_sets_one_aside() {
    use super::agent::{git, inbox_add, project_and_fixer, records, spec, statuses, FIX_THREE};
    let (dir, llm) = project_and_fixer().await;
    let p = dir.path();
    spec(p, "fix-median", "median.py", "");
    spec(p, "fix-mean", "mean.py", "");
    spec(p, "fix-mode", "mode.py", "");
    with_hooks(p, &gate_and_after("fix-mean", "not now"));
    write(
        p,
        ".gitignore",
        "__pycache__/\n.pytest_cache/\n.hook-out/\n.config/\n",
    );
    git(p, &["add", "-A"]);
    git(p, &["commit", "-q", "-m", "hooks"]);
    let ids = inbox_add(p, &llm, &FIX_THREE);
    trust_hooks(p);
    // The spec set aside counts as failed: exit 1, as for any failed spec.
    ralph_with_chaos(p, &llm).arg("agent").assert().code(1);
    assert_eq!(statuses(p), ["done", "failed", "done"]);
    let error = records(p)[1]["error"].as_str().unwrap().to_string();
    assert!(
        error.contains("gate") && error.contains("not now"),
        "{error}"
    );
    for id in &ids {
        let pre = read(p, &format!("pre-{id}.json")).unwrap();
        assert_eq!(pre["stage"], "pre_task");
        assert_eq!(pre["task"]["id"], id.as_str());
    }
    let post = read(p, &format!("post-{}.json", ids[0])).unwrap();
    assert_eq!(post["task"]["name"], "specs/fix-median.md");
    assert_eq!(post["task"]["status"], "success");
    assert_eq!(post["task"]["targets"][0], "median.py");
    assert!(read(p, &format!("post-{}.json", ids[1])).is_none());
    assert!(read(p, &format!("post-{}.json", ids[2])).is_some());
}
