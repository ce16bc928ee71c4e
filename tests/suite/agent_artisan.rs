//! `--models artisan=agent:NAME`: a coding-agent CLI as the fix loop's Artisan, here a scripted
//! agent defined in `agents:` (Claude Code itself plays it in `real_agents.rs`).

use std::path::Path;

use super::support::*;

/// A plain-text agent that crashes on its first run, then writes the fix into the target and
/// also touches files it was not asked to: a new `scratch.txt` and `pyproject.toml`. Each run's
/// prompt is kept in `state/prompt-N`.
const FIXER: &str = r##"#!/bin/sh
n=$(cat "$FIXER_STATE/count" 2>/dev/null || echo 0)
n=$((n + 1))
echo "$n" > "$FIXER_STATE/count"
cat > "$FIXER_STATE/prompt-$n"
if [ "$n" = 1 ]; then
  echo "fixer: lost its connection" >&2
  exit 3
fi
cp "$FIXER_STATE/fixed.py" median.py
echo scratch > scratch.txt
echo "# touched" >> pyproject.toml
echo "I fixed median: the even case averages the middle pair."
"##;

const CONFIG: &str = "agents:
  - name: fixer
    binaries: [fixer]
    args: []
    prompt: stdin
    format: plain
regent:
  retry_backoff_seconds: 0.1
  max_backoff_seconds: 0.2
";

/// The fixer on PATH (in `bin`), its state in `state`, and `ralph-loop` for `dir`.
fn fixer_run(dir: &Path, llm: &MockLlm, bin: &Path, state: &Path) -> assert_cmd::Command {
    use std::os::unix::fs::PermissionsExt;
    let script = bin.join("fixer");
    std::fs::write(&script, FIXER).unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(state.join("fixed.py"), FIXED_PY).unwrap();
    write_config(dir, CONFIG);
    let mut cmd = ralph(dir, llm);
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    cmd.env("PATH", path).env("FIXER_STATE", state);
    cmd
}

#[tokio::test(flavor = "multi_thread")]
async fn an_agent_artisan_is_run_again_after_a_crash_and_only_the_target_changes() {
    let dir = fixture("py-median");
    let pyproject = std::fs::read_to_string(dir.path().join("pyproject.toml")).unwrap();
    let llm = MockLlm::start().await;
    llm.helpful();
    let (bin, state) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let out = fixer_run(dir.path(), &llm, bin.path(), state.path())
        .args([
            "median.py",
            "--models",
            "librarian=openai/gpt-4.1,critic=openai/gpt-4.1,artisan=agent:fixer",
            "--output",
            "json",
        ])
        .output()
        .unwrap();
    assert_exit(&out, 0);
    // The crash was run again after the backoff; the second run's edit was the proposal.
    let runs = std::fs::read_to_string(state.path().join("count")).unwrap();
    assert_eq!(runs.trim(), "2");
    let prompt = std::fs::read_to_string(state.path().join("prompt-2")).unwrap();
    assert_has(&prompt, &["test_median", "editing `median.py` in place"]);
    assert_file(dir.path(), "median.py", FIXED_PY);
    // What it changed beyond the target was undone.
    assert!(!dir.path().join("scratch.txt").exists());
    assert_file(dir.path(), "pyproject.toml", pyproject);
    let report = report(dir.path());
    assert_eq!(report["status"], "success", "{report:#}");
    // A plain agent reports no cost: both runs are estimated from their text, at the
    // fallback model's price, and a note says so.
    let artisan = report["cost_by_role"]["artisan"].as_f64().unwrap();
    assert!(artisan > 0.0, "{report:#}");
    let notes = report["notes"].to_string();
    assert!(notes.contains("costs are estimated"), "{notes}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_agent_is_refused_for_any_role_but_the_artisan_and_when_unknown() {
    let dir = fixture("py-median");
    let llm = MockLlm::start().await;
    let (bin, state) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    assert_exits_saying(
        fixer_run(dir.path(), &llm, bin.path(), state.path()).args([
            "median.py",
            "--models",
            "critic=agent:fixer",
        ]),
        2,
        &["the critic cannot be an agent CLI (agent/fixer)"],
    );
    assert_exits_saying(
        fixer_run(dir.path(), &llm, bin.path(), state.path()).args([
            "median.py",
            "--models",
            "artisan=agent:nosuch",
        ]),
        2,
        &["no agent named \"nosuch\""],
    );
    assert_exits_saying(
        fixer_run(dir.path(), &llm, bin.path(), state.path()).args([
            "median.py",
            "--models",
            "artisan=agent:fixer",
            "--record",
            "tape.jsonl",
        ]),
        2,
        &["cannot be recorded or replayed"],
    );
    // Nothing ran and nothing was asked.
    assert!(!state.path().join("count").exists());
    assert!(llm.requests().await.is_empty());
}
