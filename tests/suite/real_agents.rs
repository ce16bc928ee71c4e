//! The real coding-agent CLIs that install from a registry, run by `ralph-loop loop` with
//! their built-in definitions against the local model server: Aider 0.86.2 from PyPI
//! (`scripts/setup-deps` installs it in a virtual environment under the build cache).

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

use super::support::*;

/// Where `scripts/setup-deps` installs Aider (`RALPH_TEST_AIDER` names another).
fn aider() -> PathBuf {
    if let Some(path) = std::env::var_os("RALPH_TEST_AIDER") {
        return PathBuf::from(path);
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cache"));
    cache.join("ralph-loop/aider-venv/bin/aider")
}

/// The model's one reply: Aider's SEARCH/REPLACE edit of `calc.py`, the words that the work is
/// done, and the status block the loop asked for.
const REPLY: &str = "I will make b return 2.

calc.py
```python
<<<<<<< SEARCH
    raise NotImplementedError
=======
    return 2
>>>>>>> REPLACE
```

All tasks are complete.

---RALPH_STATUS---
STATUS: COMPLETE
TASKS_COMPLETED_THIS_LOOP: 1
FILES_MODIFIED: 1
TESTS_STATUS: PASSING
WORK_TYPE: IMPLEMENTATION
EXIT_SIGNAL: true
RECOMMENDATION: nothing left
---END_RALPH_STATUS---
";

#[tokio::test(flavor = "multi_thread")]
async fn aider_edits_the_project_in_the_loop_against_the_local_server() {
    let aider = aider();
    assert!(
        aider.exists(),
        "Aider is not installed at {}: run scripts/setup-deps",
        aider.display()
    );
    let llm = MockLlm::start().await;
    llm.always("unknown", text(REPLY));

    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let write = |name: &str, text: &str| std::fs::write(root.join(name), text).unwrap();
    write("PROMPT.md", "Make test_b pass: b() must return 2.\n");
    write("pytest.ini", "[pytest]\n");
    write(
        "calc.py",
        "def a():\n    return 1\n\n\ndef b():\n    raise NotImplementedError\n",
    );
    write(
        "test_calc.py",
        "from calc import a, b\n\n\ndef test_a():\n    assert a() == 1\n\n\ndef test_b():\n    assert b() == 2\n",
    );
    write(".gitignore", ".ralph/\n.aider*\n");
    write(
        "ralph.config.yaml",
        "regent:\n  agent: aider\n  model: openai/gpt-4.1\nbudgets:\n  max_iterations: 2\n",
    );
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .args(args)
            .current_dir(root)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    git(&["init", "-q", "-b", "main"]);
    git(&["config", "user.email", "t@example.com"]);
    git(&["config", "user.name", "T"]);
    git(&["add", "-A"]);
    git(&["commit", "-q", "-m", "tests first"]);

    // Aider alone on PATH: its virtual environment's `python3` has no pytest.
    let bin = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(&aider, bin.path().join("aider")).unwrap();
    let mut cmd = assert_cmd::Command::cargo_bin("ralph-loop").unwrap();
    isolate(&mut cmd, root);
    let path = format!(
        "{}:{}",
        bin.path().display(),
        std::env::var("PATH").unwrap()
    );
    let out = cmd
        .env("PATH", path)
        .env("OPENAI_API_BASE", llm.base_url())
        .env("OPENAI_API_KEY", "sk-test-key")
        // Aider's model table from its own package, not the network.
        .env("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        .timeout(std::time::Duration::from_secs(300))
        .args(["loop", "PROMPT.md", "--output", "jsonl"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let events: Vec<Value> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // Aider applied the model's edit, and the loop committed it.
    let calc = std::fs::read_to_string(root.join("calc.py")).unwrap();
    assert!(calc.contains("return 2"), "{calc}");
    assert_eq!(
        git(&["log", "-1", "--format=%s"]).trim(),
        "[ralph] Iteration 1"
    );
    // The prompt reached the model through Aider, with the status request.
    let requests = llm.requests().await;
    assert!(!requests.is_empty());
    let asked = prompt_of(&requests[0].1);
    assert!(asked.contains("Make test_b pass"), "{asked}");
    assert!(asked.contains("---RALPH_STATUS---"), "{asked}");
    // Its text was read: the status block, and a cost estimated from the text (Aider reports
    // no dollar figure for a model the mock serves at no price).
    let report = &events
        .iter()
        .find(|e| e["type"] == "loop_finished")
        .unwrap()["report"];
    assert_eq!(report["status"], "complete", "{report:#}");
    assert_eq!(report["history"][0]["status_block"]["status"], "COMPLETE");
    assert_eq!(report["history"][0]["newly_passing"], 1);
    assert!(report["total_cost_usd"].as_f64().unwrap() > 0.0);
}
