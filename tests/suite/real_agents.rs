//! The real coding-agent CLIs that install from a registry, run by `ralph-loop loop` with
//! their built-in definitions against a local server that speaks their provider's protocol:
//! Aider 0.86.2 from PyPI (Chat Completions), Claude Code 2.1.332 (Anthropic Messages, with tool
//! use) and Codex 0.171.0 (OpenAI Responses, with tool calls) from npm. `scripts/setup-deps`
//! installs them under the build cache.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

use super::agent_wire::{tool, AgentWire, Step, USAGE};
use super::support::*;

/// `ralph-loop/<rel>` under the build cache, where `scripts/setup-deps` installs the agents.
fn cached(rel: &str) -> PathBuf {
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cache"));
    cache.join("ralph-loop").join(rel)
}

/// Where `scripts/setup-deps` installs Aider (`RALPH_TEST_AIDER` names another).
fn aider() -> PathBuf {
    if let Some(path) = std::env::var_os("RALPH_TEST_AIDER") {
        return PathBuf::from(path);
    }
    cached("aider-venv/bin/aider")
}

/// Claude Code's or Codex's launcher, as `scripts/setup-deps` installs them from npm.
fn npm_agent(name: &str) -> PathBuf {
    let path = cached("agent-clis/node_modules/.bin").join(name);
    assert!(
        path.exists(),
        "{name} is not installed at {}: run scripts/setup-deps",
        path.display()
    );
    path
}

/// The end of every scripted session: the words that the work is done, and the status block the
/// loop asked for.
const DONE: &str = "All tasks are complete.

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

/// The model's one reply to Aider: its SEARCH/REPLACE edit of `calc.py`, then [`DONE`].
fn aider_reply() -> String {
    format!(
        "I will make b return 2.

calc.py
```python
<<<<<<< SEARCH
    raise NotImplementedError
=======
    return 2
>>>>>>> REPLACE
```

{DONE}"
    )
}

/// A Python project whose `test_b` fails until `b()` returns 2, committed, with a prompt that
/// asks for that and `config` as its `ralph.config.yaml`.
fn project(config: &str) -> tempfile::TempDir {
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
    write(
        ".gitignore",
        ".ralph/\n.aider*\n.claude*\n.codex/\n.qwen/\n",
    );
    write("ralph.config.yaml", config);
    git(root, &["init", "-q", "-b", "main"]);
    git(root, &["config", "user.email", "t@example.com"]);
    git(root, &["config", "user.name", "T"]);
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "tests first"]);
    dir
}

fn git(root: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(root)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A folder holding a link named `name` to `target`, and PATH with that folder first: the
/// one agent added to the suite's PATH. Keep the folder while the PATH is used.
fn on_path(name: &str, target: &Path) -> (tempfile::TempDir, String) {
    let bin = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(target, bin.path().join(name)).unwrap();
    let path = format!(
        "{}:{}",
        bin.path().display(),
        std::env::var("PATH").unwrap()
    );
    (bin, path)
}

/// What points Claude Code (or its SDK) at the wire server.
fn claude_env(wire: &AgentWire) -> Vec<(&'static str, String)> {
    vec![
        ("ANTHROPIC_BASE_URL", wire.server.uri()),
        ("ANTHROPIC_API_KEY", "sk-ant-test".into()),
        // Claude Code refuses --dangerously-skip-permissions as root unless told it is
        // sandboxed (CI runs as root), and makes no other calls with this set.
        ("IS_SANDBOX", "1".into()),
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".into()),
    ]
}

/// Runs `ralph-loop loop PROMPT.md` in `root` with `agent` (a link to the real CLI) the only
/// addition to PATH, and `env`; asserts it completed and returns its report.
fn run_loop(root: &Path, agent: (&str, &Path), env: &[(&str, String)]) -> Value {
    // The agent alone added to PATH: Aider's virtual environment's `python3` has no pytest.
    let (_bin, path) = on_path(agent.0, agent.1);
    let mut cmd = assert_cmd::Command::cargo_bin("ralph-loop").unwrap();
    isolate(&mut cmd, root);
    cmd.env("PATH", path);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd
        .timeout(std::time::Duration::from_secs(300))
        .args(["loop", "PROMPT.md", "--output", "jsonl"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let events: Vec<Value> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let finished = events.iter().find(|e| e["type"] == "loop_finished");
    let report = finished.expect("loop_finished")["report"].clone();
    assert_eq!(report["status"], "complete", "{report:#}");
    // The agent's edit made the failing test pass, and the loop committed it.
    let calc = std::fs::read_to_string(root.join("calc.py")).unwrap();
    assert!(calc.contains("return 2"), "{calc}");
    assert_eq!(
        git(root, &["log", "-1", "--format=%s"]).trim(),
        "[ralph] Iteration 1"
    );
    assert_eq!(report["history"][0]["status_block"]["status"], "COMPLETE");
    assert_eq!(report["history"][0]["newly_passing"], 1);
    assert_eq!(
        report["history"][0]["files_changed"],
        1,
        "{}",
        git(root, &["show", "--stat", "HEAD"])
    );
    report
}

/// The prompt the loop wrote reached the model through the CLI, with the status request.
fn asked_for_status(first_request: &Value) {
    let asked = prompt_of(first_request);
    assert_has(&asked, &["Make test_b pass", "---RALPH_STATUS---"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn aider_edits_the_project_in_the_loop_against_the_local_server() {
    let aider = aider();
    assert!(
        aider.exists(),
        "Aider is not installed at {}: run scripts/setup-deps",
        aider.display()
    );
    let llm = MockLlm::start().await;
    llm.always("unknown", text(aider_reply()));
    let dir = project(
        "regent:\n  agent: aider\n  model: openai/gpt-4.1\nbudgets:\n  max_iterations: 2\n",
    );
    let report = run_loop(
        dir.path(),
        ("aider", &aider),
        &[
            ("OPENAI_API_BASE", llm.base_url()),
            ("OPENAI_API_KEY", "sk-test-key".into()),
            // Aider's model table from its own package, not the network.
            ("LITELLM_LOCAL_MODEL_COST_MAP", "True".into()),
        ],
    );
    let requests = llm.requests().await;
    assert!(!requests.is_empty());
    asked_for_status(&requests[0].1);
    // Behind the model gateway (its model is OpenAI's): the cost is the server's usage at the
    // table's price of gpt-4.1, not read from Aider's text.
    assert!(report["total_cost_usd"].as_f64().unwrap() > 0.0);
    assert_eq!(report["cost_estimated"], false, "{report:#}");
    assert_eq!(report["tokens_estimated"], false);
}

/// Claude Code's steps on the project in `dir`: it reads `calc.py` (it edits a file only after
/// reading it), makes `b` return 2, and answers `answer`.
fn edit_calc_then_say(dir: &Path, answer: &str) -> Vec<Step> {
    let calc = dir.join("calc.py").display().to_string();
    vec![
        tool("Read", json!({"file_path": calc})),
        tool(
            "Edit",
            json!({"file_path": calc, "old_string": "    raise NotImplementedError",
                   "new_string": "    return 2"}),
        ),
        Step::Text(answer.into()),
    ]
}

#[tokio::test(flavor = "multi_thread")]
async fn claude_code_edits_the_project_in_the_loop_with_its_tools() {
    let claude = npm_agent("claude");
    let dir = project(
        "regent:\n  agent: claude\n  model: claude-sonnet-4-5\nbudgets:\n  max_iterations: 2\n",
    );
    let wire = AgentWire::start(edit_calc_then_say(dir.path(), DONE)).await;
    let report = run_loop(dir.path(), ("claude", &claude), &claude_env(&wire));
    let requests = wire.bodies("/v1/messages").await;
    assert_eq!(requests.len(), 3, "read, edit, answer");
    asked_for_status(&requests[0]);
    assert_eq!(requests[0]["model"], "claude-sonnet-4-5");
    // The cost is Claude Code's own figure (its price of Sonnet 4.5, $3 in and $15 out per
    // million tokens), not an estimate; the tokens are its usage, counted once per message.
    let calls = requests.len() as f64;
    let cost = report["total_cost_usd"].as_f64().unwrap();
    let expected = calls * (USAGE.0 as f64 * 3.0 + USAGE.1 as f64 * 15.0) / 1e6;
    assert!((cost - expected).abs() < 1e-9, "{cost} != {expected}");
    assert_eq!(report["cost_estimated"], false);
    assert_eq!(report["tokens"]["input"], 3 * USAGE.0);
    assert_eq!(report["tokens"]["output"], 3 * USAGE.1);
    assert_eq!(report["tokens_estimated"], false);
}

#[tokio::test(flavor = "multi_thread")]
async fn codex_edits_the_project_in_the_loop_with_its_tools() {
    let codex = npm_agent("codex");
    // Codex reports tokens, not dollars: the loop prices them from `prices:`.
    let dir = project(
        "regent:\n  agent: codex\n  model: gpt-5.5\nbudgets:\n  max_iterations: 2\n\
         prices:\n  openai/gpt-5.5: { input: 2.00, output: 8.00 }\n",
    );
    // A key in the loop's own prompt: behind the gateway it reaches the model masked.
    std::fs::write(
        dir.path().join("PROMPT.md"),
        format!(
            "Make test_b pass: b() must return 2.\nThe staging key is {}.\n",
            PLANTED[0]
        ),
    )
    .unwrap();
    git(dir.path(), &["commit", "-qam", "prompt"]);
    let wire = AgentWire::start(vec![
        // Codex's freeform apply_patch tool, offered for the models it knows (gpt-5.5 in 0.171).
        tool(
            "apply_patch",
            json!("*** Begin Patch\n*** Update File: calc.py\n@@\n def b():\n-    raise NotImplementedError\n+    return 2\n*** End Patch\n"),
        ),
        Step::Text(DONE.into()),
    ])
    .await;
    // Codex reads its provider from its own config (it ignores OPENAI_BASE_URL), and the
    // Responses API is the wire it speaks.
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        format!(
            "model_provider = \"mock\"\n[model_providers.mock]\nname = \"mock\"\n\
             base_url = \"{}/v1\"\nenv_key = \"OPENAI_API_KEY\"\nwire_api = \"responses\"\n",
            wire.server.uri()
        ),
    )
    .unwrap();
    let report = run_loop(
        dir.path(),
        ("codex", &codex),
        &[
            ("CODEX_HOME", home.path().display().to_string()),
            ("OPENAI_API_KEY", "sk-test-key".into()),
            // Where the gateway forwards Codex's calls (Codex itself is pointed at the gateway).
            ("OPENAI_BASE_URL", format!("{}/v1", wire.server.uri())),
        ],
    );
    let requests = wire.bodies("/v1/responses").await;
    assert_eq!(requests.len(), 2, "patch, answer");
    for request in wire.server.received_requests().await.unwrap() {
        let body = String::from_utf8_lossy(&request.body);
        assert!(!body.contains(PLANTED[0]), "{body}");
        assert_eq!(request.headers["authorization"], "Bearer sk-test-key");
    }
    assert_has(
        &requests[0].to_string(),
        &["<<SECRET_AWS_ACCESS_KEY_ID_1>>"],
    );
    asked_for_status(&requests[0]);
    assert_eq!(requests[0]["model"], "gpt-5.5");
    // Codex's usage, at the configured price.
    assert_eq!(report["tokens"]["input"], 2 * USAGE.0);
    assert_eq!(report["tokens"]["output"], 2 * USAGE.1);
    let cost = report["total_cost_usd"].as_f64().unwrap();
    let expected = 2.0 * (USAGE.0 as f64 * 2.0 + USAGE.1 as f64 * 8.0) / 1e6;
    assert!((cost - expected).abs() < 1e-9, "{cost} != {expected}");
    assert_eq!(report["cost_estimated"], false);
    assert_eq!(report["tokens_estimated"], false);
}

/// `--models artisan=agent:claude`: Claude Code is the fix loop's Artisan. It reads and writes
/// the target with its own tools; its edit is the proposal the Critic reads before anything is
/// written, and the tests then judge it. The Librarian and the Critic stay models.
///
/// Its calls go through the model gateway: it is made to read a file of planted secrets and to
/// print its keys; no planted value reaches the model's server, which is called with the
/// user's key while the agent holds only the run's token, and the Artisan's cost is the
/// server's usage at the table's price.
#[tokio::test(flavor = "multi_thread")]
async fn claude_code_as_the_fix_loop_s_artisan() {
    let claude = npm_agent("claude");
    let dir = fixture("py-median");
    std::fs::write(dir.path().join("settings.py"), settings_py()).unwrap();
    let target = dir.path().join("median.py").display().to_string();
    let settings = dir.path().join("settings.py").display().to_string();
    let wire = AgentWire::start(vec![
        tool("Read", json!({"file_path": settings})),
        tool(
            "Bash",
            json!({"command": PRINT_KEYS, "description": "keys"}),
        ),
        tool("Read", json!({"file_path": target})),
        tool("Write", json!({"file_path": target, "content": FIXED_PY})),
        Step::Text("Rewrote median: the even case averages the middle pair.".into()),
    ])
    .await;
    let llm = MockLlm::start().await;
    llm.helpful();
    let out = artisan_run(dir.path(), &llm, &wire, &claude, &[]);
    assert_exit(&out, 0);
    assert_file(dir.path(), "median.py", FIXED_PY);
    let report = report(dir.path());
    assert_eq!(report["status"], "success", "{report:#}");
    assert_eq!(report["iterations"], 1);
    // Claude Code got the Artisan's prompt (the failing tests) and how to answer as an agent,
    // with the model named after the agent.
    let asked = wire.bodies("/v1/messages").await;
    assert_eq!(asked.len(), 5, "read, bash, read, write, answer");
    assert_eq!(asked[0]["model"], "claude-sonnet-4-5");
    let prompt = prompt_of(&asked[0]);
    assert_has(&prompt, &["test_median", "editing `median.py` in place"]);
    assert_has(
        &asked[4].to_string(),
        &["<<SECRET_AWS_ACCESS_KEY_ID_1>>", "A=ralph-gw-", "O=none"],
    );
    let received = wire.server.received_requests().await.unwrap();
    nothing_planted_left(&received, "x-api-key", "sk-ant-test");
    // The Critic read the agent's edit as a diff before it was written.
    let critic = llm.requests_of("critic").await;
    let review = prompt_of(&critic[0]);
    assert!(
        review.contains("(ordered[mid - 1] + ordered[mid]) / 2"),
        "{review}"
    );
    // The Artisan's cost is its five calls at the table's price.
    let artisan = report["cost_by_role"]["artisan"].as_f64().unwrap();
    let expected = 5.0 * (USAGE.0 as f64 * 3.0 + USAGE.1 as f64 * 15.0) / 1e6;
    assert!((artisan - expected).abs() < 1e-9, "{artisan} != {expected}");
    assert_eq!(
        report["local_guard"]["masked"]["SECRET_AWS_ACCESS_KEY_ID"],
        1
    );
}

/// Runs the fix loop on `dir`'s `median.py` with Claude Code (`claude`, against `wire`) as the
/// Artisan and `llm` for the other roles, with `more` flags.
fn artisan_run(
    dir: &Path,
    llm: &MockLlm,
    wire: &AgentWire,
    claude: &Path,
    more: &[&str],
) -> std::process::Output {
    let (_bin, path) = on_path("claude", claude);
    ralph(dir, llm)
        .env("PATH", path)
        .envs(claude_env(wire))
        .args([
            "median.py",
            "--models",
            "librarian=openai/gpt-4.1,critic=openai/gpt-4.1,artisan=agent:claude/claude-sonnet-4-5",
            "--output",
            "json",
        ])
        .args(more)
        .output()
        .unwrap()
}

/// The agent Artisan behind the gateway within a budget its first call cannot fit in (Claude
/// Code's first request alone, tens of kilobytes of instructions and tool schemas, is reserved
/// at more than $0.02): the gateway refuses it in Anthropic's shape, no call reaches the
/// server, and the run stops with exit 3 instead of asking the agent again.
#[tokio::test(flavor = "multi_thread")]
async fn claude_code_as_the_artisan_is_held_to_the_budget_by_the_gateway() {
    let claude = npm_agent("claude");
    let dir = fixture("py-median");
    let wire = AgentWire::start(vec![Step::Text("unreachable".into())]).await;
    let original = std::fs::read_to_string(dir.path().join("median.py")).unwrap();
    let llm = MockLlm::start().await;
    llm.helpful();
    let out = artisan_run(dir.path(), &llm, &wire, &claude, &["--budget", "0.02"]);
    assert_exit(&out, 3);
    let report = report(dir.path());
    assert_eq!(report["status"], "budget_exceeded", "{report:#}");
    assert!(
        report["reason"]
            .as_str()
            .unwrap()
            .contains("the model gateway refused Claude Code a call"),
        "{report:#}"
    );
    assert!(wire.bodies("/v1/messages").await.is_empty());
    assert!(report["cost_usd"].as_f64().unwrap() <= 0.02);
    assert_file(dir.path(), "median.py", &original);
}

/// The Agent Client Protocol backend, with a real ACP agent: Zed's adapter of Claude Code
/// (`@zed-industries/claude-code-acp` from npm, built in as `claude-acp`). ralph-loop opens a
/// session in the project and sends the prompt; the adapter runs Claude Code's tools against
/// the local server, asks for permission to edit (granted), and streams its text back.
#[tokio::test(flavor = "multi_thread")]
async fn claude_code_over_acp_edits_the_project_in_the_loop() {
    let acp = npm_agent("claude-code-acp");
    let dir = project("regent:\n  agent: claude-acp\nbudgets:\n  max_iterations: 2\n");
    // Its last line ends with no line break, as a model's answer usually does.
    let wire = AgentWire::start(edit_calc_then_say(dir.path(), DONE.trim_end())).await;
    // Its caches and logs (npm's, the SDK's) go to a home of their own, not the project.
    let home = tempfile::tempdir().unwrap();
    let report = run_loop(
        dir.path(),
        ("claude-code-acp", &acp),
        &[
            vec![("HOME", home.path().display().to_string())],
            claude_env(&wire),
        ]
        .concat(),
    );
    let requests: Vec<Value> = wire
        .bodies("/v1/messages")
        .await
        .into_iter()
        .filter(|r| r["tools"].as_array().is_some_and(|t| !t.is_empty()))
        .collect();
    assert_eq!(requests.len(), 3, "read, edit, answer");
    asked_for_status(&requests[0]);
    // Its text came through the session's message chunks: the status block was read.
    assert_eq!(report["history"][0]["status_block"]["exit_signal"], true);
    // With its answer given, its session closed; the adapter, a server, does not exit by
    // itself, and is stopped after a short grace (not the 10 s of `result_grace_seconds`).
    let ending = &report["history"][0]["ending"];
    assert!(
        ending == "exited" || ending == "stopped_after_result",
        "{ending}"
    );
    let ms = report["history"][0]["duration_ms"].as_u64().unwrap();
    assert!(ms < 10_000, "{ms} ms: the result grace was waited out");
}

/// Values planted in the project's settings file, which Claude Code is made to read: each of
/// a kind LocalGuard knows, random-looking, never real.
const PLANTED: [&str; 3] = [
    "AKIAZ2QXLW6HKJH7TRBQ",
    "pW9xQ2mz7LkVb4Rt8NcY",
    "sk_live_4eC39HqLyjWDarjtT1zdp7dcZx8W",
];

/// The settings file that holds [`PLANTED`].
fn settings_py() -> String {
    format!(
        "AWS_ACCESS_KEY_ID = \"{}\"\nDATABASE_URL = \"postgres://app:{}@db.acme-corp.com:5432/app\"\nSTRIPE_SECRET_KEY = \"{}\"\n",
        PLANTED[0], PLANTED[1], PLANTED[2]
    )
}

/// A project for `config` with [`settings_py`] committed beside it: its `calc.py` and
/// `settings.py` paths.
fn secrets_project(config: &str) -> (tempfile::TempDir, String, String) {
    let dir = project(config);
    std::fs::write(dir.path().join("settings.py"), settings_py()).unwrap();
    git(dir.path(), &["add", "settings.py"]);
    git(dir.path(), &["commit", "-q", "-m", "settings"]);
    let path = |name: &str| dir.path().join(name).display().to_string();
    let (calc, settings) = (path("calc.py"), path("settings.py"));
    (dir, calc, settings)
}

/// The shell command that prints which provider keys the agent holds.
const PRINT_KEYS: &str = "echo \"A=${ANTHROPIC_API_KEY:-none} O=${OPENAI_API_KEY:-none}\"";

/// No planted value and no user's key in any byte the server received, and every request
/// carried `header: value` (the user's key, never the agent's token).
fn nothing_planted_left(received: &[wiremock::Request], header: &str, value: &str) {
    for request in received {
        let body = String::from_utf8_lossy(&request.body);
        for planted in PLANTED {
            assert!(
                !body.contains(planted),
                "{planted} reached the server: {body}"
            );
        }
        assert!(!body.contains("userskey"), "a user's key: {body}");
        assert_eq!(request.headers[header], value);
    }
}

/// The agent's edit in `dir` holds the real value of the placeholder it wrote.
fn edit_holds_the_real_value(dir: &Path) {
    let fixed = std::fs::read_to_string(dir.join("calc.py")).unwrap();
    assert!(fixed.contains(&format!("# key {}", PLANTED[0])), "{fixed}");
}

/// The report counts `calls` calls at `price` (dollars per million tokens in and out) from
/// the wire, not estimated, and the one planted key LocalGuard masked.
fn paid_from_the_wire(report: &Value, calls: usize, price: (f64, f64)) {
    let cost = report["total_cost_usd"].as_f64().unwrap();
    let expected = calls as f64 * (USAGE.0 as f64 * price.0 + USAGE.1 as f64 * price.1) / 1e6;
    assert!((cost - expected).abs() < 1e-9, "{cost} != {expected}");
    assert_eq!(report["cost_estimated"], false);
    let masked = &report["local_guard"]["masked"];
    assert_eq!(masked["SECRET_AWS_ACCESS_KEY_ID"], 1, "{masked}");
}

/// Claude Code behind ralph-loop's model gateway (issue 49): it reads a file of secrets, prints
/// its environment's keys, and writes one of the secrets into its fix by the placeholder it was
/// shown. No planted value reaches the model's server, the file it wrote holds the real value,
/// its key is the run's token (the user's keys are kept from it), the server got the user's
/// key, and the cost is the server's usage at the table's price.
#[tokio::test(flavor = "multi_thread")]
async fn claude_code_behind_the_gateway_sends_no_planted_secret_and_holds_no_key() {
    let claude = npm_agent("claude");
    let (dir, calc, settings) = secrets_project(
        "regent:\n  agent: claude\n  model: claude-sonnet-4-5\nbudgets:\n  max_iterations: 2\n",
    );
    let wire = AgentWire::start(vec![
        tool("Read", json!({"file_path": settings})),
        tool(
            "Bash",
            json!({"command": PRINT_KEYS, "description": "keys"}),
        ),
        tool("Read", json!({"file_path": calc})),
        tool(
            "Edit",
            json!({"file_path": calc, "old_string": "    raise NotImplementedError",
                   "new_string": "    # key <<SECRET_AWS_ACCESS_KEY_ID_1>>\n    return 2"}),
        ),
        Step::Text(DONE.into()),
    ])
    .await;
    let mut env = claude_env(&wire);
    env.push(("OPENAI_API_KEY", "sk-proj-userskeyZx9kQ2mW7pL4vB8n".into()));
    let report = run_loop(dir.path(), ("claude", &claude), &env);
    let received = wire.server.received_requests().await.unwrap();
    let messages: Vec<_> = received
        .iter()
        .filter(|r| r.url.path() == "/v1/messages")
        .collect();
    assert_eq!(messages.len(), 5, "read, bash, read, edit, answer");
    // The server was called with the user's key, never the agent's token.
    nothing_planted_left(&received, "x-api-key", "sk-ant-test");
    let bodies = wire.bodies("/v1/messages").await;
    let last = bodies.last().unwrap().to_string();
    assert_has(
        &last,
        &["<<SECRET_AWS_ACCESS_KEY_ID_1>>", "A=ralph-gw-", "O=none"],
    );
    edit_holds_the_real_value(dir.path());
    let cost = report["total_cost_usd"].as_f64().unwrap();
    let expected = 5.0 * (USAGE.0 as f64 * 3.0 + USAGE.1 as f64 * 15.0) / 1e6;
    assert!((cost - expected).abs() < 1e-9, "{cost} != {expected}");
    assert_eq!(report["cost_estimated"], false);
    assert_eq!(report["tokens"]["input"], 5 * USAGE.0);
    // The report counts what was masked on the wire, by kind, and what was put back.
    let guard = &report["local_guard"];
    assert_eq!(guard["mode"], "mask");
    assert_eq!(guard["masked"]["SECRET_AWS_ACCESS_KEY_ID"], 1, "{guard}");
    assert!(guard["restored"].as_u64().unwrap() >= 1, "{guard}");
}

/// Runs `ralph-loop loop` with Claude Code against `wire` within `budget`: its exit code and
/// the report.
fn loop_within(
    dir: &Path,
    wire: &AgentWire,
    claude: &Path,
    budget: f64,
) -> (Option<i32>, Value, String) {
    let (_bin, path) = on_path("claude", claude);
    let mut cmd = assert_cmd::Command::cargo_bin("ralph-loop").unwrap();
    isolate(&mut cmd, dir);
    let out = cmd
        .env("PATH", path)
        .envs(claude_env(wire))
        .timeout(std::time::Duration::from_secs(300))
        .args([
            "loop",
            "PROMPT.md",
            "--output",
            "jsonl",
            "--max-iterations",
            "3",
        ])
        .args(["--budget", &budget.to_string()])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let report = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["type"] == "loop_finished")
        .map(|e| e["report"].clone())
        .unwrap_or(Value::Null);
    (out.status.code(), report, stdout)
}

/// A budget smaller than the run: the gateway pays for the first call, refuses the next in
/// Anthropic's own error shape (Claude Code stops), the loop ends with exit 3, no call reached
/// the server past the one paid for, and the spending stays under the budget.
///
/// The gateway reserves a call's prompt at a third of its bytes in tokens (a bound that holds
/// for any text), so the budget is set from the size of Claude Code's first request, measured
/// in a run with room to spare: enough for that request and its reply, not for the second,
/// which carries the first's tool result besides.
#[tokio::test(flavor = "multi_thread")]
async fn claude_code_behind_the_gateway_stops_at_the_budget_with_no_call_past_it() {
    let claude = npm_agent("claude");
    let per_call = (USAGE.0 as f64 * 3.0 + USAGE.1 as f64 * 15.0) / 1e6;
    let first_size = {
        let dir = project("regent:\n  agent: claude\n  model: claude-sonnet-4-5\n");
        let wire = AgentWire::start(edit_calc_then_say(dir.path(), DONE)).await;
        let (code, _, stdout) = loop_within(dir.path(), &wire, &claude, 5.0);
        assert_eq!(code, Some(0), "{stdout}");
        let received = wire.server.received_requests().await.unwrap();
        received
            .iter()
            .find(|r| r.url.path() == "/v1/messages")
            .unwrap()
            .body
            .len()
    };
    let prompt = first_size as f64 / 3.0 * 1.05 * 3.0 / 1e6;
    // The reply's reservation at the least the ledger grants (256 tokens), the first call's
    // charge, and 30 bytes of slack for the reply cap's digits, which the gateway rewrites.
    let budget = prompt + 256.0 * 15.0 / 1e6 + per_call + 30.0 * 1.05e-6;
    let dir = project("regent:\n  agent: claude\n  model: claude-sonnet-4-5\n");
    let wire = AgentWire::start(edit_calc_then_say(dir.path(), DONE)).await;
    let (code, report, stdout) = loop_within(dir.path(), &wire, &claude, budget);
    assert_eq!(code, Some(3), "{stdout}");
    assert_eq!(report["status"], "budget_exceeded", "{report:#}");
    let served = wire.bodies("/v1/messages").await.len();
    assert_eq!(served, 1, "the first call paid for, the second refused");
    let cost = report["total_cost_usd"].as_f64().unwrap();
    assert!((cost - per_call).abs() < 1e-9, "{cost}");
    assert!(cost <= budget);
    assert!(stdout.contains("the gateway refused claude"), "{stdout}");
}

/// `regent.max_cost_per_iteration` on the wire (three iterations, `loop_within`'s limit): each
/// iteration's cap pays for Claude Code's first
/// call and not its second, which the gateway refuses; the iteration ends there (the agent is
/// not run again within it), the next iteration has a cap of its own, and no iteration spends
/// more than its cap. The cap is set from the first request's size, as in the test above.
#[tokio::test(flavor = "multi_thread")]
async fn claude_code_behind_the_gateway_is_held_to_each_iteration_s_cap() {
    let claude = npm_agent("claude");
    let per_call = (USAGE.0 as f64 * 3.0 + USAGE.1 as f64 * 15.0) / 1e6;
    let config = "regent:\n  agent: claude\n  model: claude-sonnet-4-5\n";
    let first_size = {
        let dir = project(config);
        let wire = AgentWire::start(edit_calc_then_say(dir.path(), DONE)).await;
        let (code, _, stdout) = loop_within(dir.path(), &wire, &claude, 5.0);
        assert_eq!(code, Some(0), "{stdout}");
        let received = wire.server.received_requests().await.unwrap();
        let first = received.iter().find(|r| r.url.path() == "/v1/messages");
        first.unwrap().body.len()
    };
    let prompt = first_size as f64 / 3.0 * 1.05 * 3.0 / 1e6;
    let cap = prompt + 256.0 * 15.0 / 1e6 + per_call + 30.0 * 1.05e-6;
    let dir = project(&format!("{config}  max_cost_per_iteration: {cap}\n"));
    let wire = AgentWire::start(edit_calc_then_say(dir.path(), DONE)).await;
    let (code, report, stdout) = loop_within(dir.path(), &wire, &claude, 5.0);
    assert_eq!(code, Some(4), "{stdout}");
    assert_eq!(report["status"], "max_iterations", "{report:#}");
    // One call paid for in each of the three iterations, the second refused in each.
    assert_eq!(wire.bodies("/v1/messages").await.len(), 3, "{stdout}");
    let history = report["history"].as_array().unwrap();
    assert_eq!(history.len(), 3, "{report:#}");
    for record in history {
        let cost = record["cost_usd"].as_f64().unwrap();
        assert!((cost - per_call).abs() < 1e-9 && cost <= cap, "{record:#}");
        assert_eq!(
            record["runs"], 1,
            "not run again within the iteration: {record:#}"
        );
    }
    assert!(
        stdout.contains("of regent.max_cost_per_iteration"),
        "{stdout}"
    );
}

/// Qwen Code (`@qwen-code/qwen-code` from npm) behind the model gateway, on OpenAI's Chat
/// Completions with streamed tool calls: it reads a file of secrets, prints its environment's
/// keys, and writes one of the secrets into its fix by the placeholder it was shown. As for
/// Claude Code: no planted value reaches the server, its edit holds the real value, it holds
/// only the run's token, and the cost is the server's usage at the table's price.
#[tokio::test(flavor = "multi_thread")]
async fn qwen_code_behind_the_gateway_sends_no_planted_secret_and_holds_no_key() {
    let qwen = npm_agent("qwen");
    let (dir, calc, settings) = secrets_project(
        "regent:\n  agent: qwen\n  model: gpt-4.1\nbudgets:\n  max_iterations: 2\n",
    );
    let wire = AgentWire::start(vec![
        tool("read_file", json!({"file_path": settings})),
        tool(
            "run_shell_command",
            json!({"command": PRINT_KEYS, "description": "keys"}),
        ),
        tool("read_file", json!({"file_path": calc})),
        tool(
            "edit",
            json!({"file_path": calc, "old_string": "    raise NotImplementedError",
                   "new_string": "    # key <<SECRET_AWS_ACCESS_KEY_ID_1>>\n    return 2"}),
        ),
        Step::Text(DONE.into()),
    ])
    .await;
    let env = [
        ("OPENAI_BASE_URL", format!("{}/v1", wire.server.uri())),
        (
            "OPENAI_API_KEY",
            "sk-proj-userskeyZx9kQ2mW7pL4vB8n".to_string(),
        ),
        (
            "ANTHROPIC_API_KEY",
            "sk-ant-userskeyQ4mW7pL4vB8nZx9k".to_string(),
        ),
        ("QWEN_CODE_SUPPRESS_YOLO_WARNING", "1".to_string()),
    ];
    let report = run_loop(dir.path(), ("qwen", &qwen), &env);
    let received = wire.server.received_requests().await.unwrap();
    let calls: Vec<_> = received
        .iter()
        .filter(|r| r.url.path() == "/v1/chat/completions")
        .collect();
    assert_eq!(calls.len(), 5, "read, shell, read, edit, answer");
    nothing_planted_left(
        &received,
        "authorization",
        "Bearer sk-proj-userskeyZx9kQ2mW7pL4vB8n",
    );
    let bodies = wire.bodies("/v1/chat/completions").await;
    assert_has(
        &bodies.last().unwrap().to_string(),
        &["<<SECRET_AWS_ACCESS_KEY_ID_1>>", "A=none", "O=ralph-gw-"],
    );
    asked_for_status(&bodies[0]);
    edit_holds_the_real_value(dir.path());
    // gpt-4.1 at the table's $2 in and $8 out per million tokens.
    paid_from_the_wire(&report, 5, (2.0, 8.0));
}

/// OpenCode (`opencode-ai` from npm) behind the model gateway with an OpenAI model, on the
/// Responses API: the same checks as for Claude Code and Qwen Code. Its state (sessions, its
/// snapshots of the project) goes to a home of its own, not the project.
#[tokio::test(flavor = "multi_thread")]
async fn opencode_behind_the_gateway_sends_no_planted_secret_and_holds_no_key() {
    let opencode = npm_agent("opencode");
    let (dir, calc, settings) = secrets_project(
        "regent:\n  agent: opencode\n  model: openai/gpt-4.1\nbudgets:\n  max_iterations: 2\n",
    );
    let wire = AgentWire::start(vec![
        tool("read", json!({"filePath": settings})),
        tool(
            "bash",
            json!({"command": PRINT_KEYS, "description": "keys"}),
        ),
        tool("read", json!({"filePath": calc})),
        tool(
            "edit",
            json!({"filePath": calc, "oldString": "    raise NotImplementedError",
                   "newString": "    # key <<SECRET_AWS_ACCESS_KEY_ID_1>>\n    return 2"}),
        ),
        Step::Text(DONE.into()),
    ])
    .await;
    let home = tempfile::tempdir().unwrap();
    let env = [
        ("HOME", home.path().display().to_string()),
        ("OPENAI_BASE_URL", format!("{}/v1", wire.server.uri())),
        (
            "OPENAI_API_KEY",
            "sk-proj-userskeyZx9kQ2mW7pL4vB8n".to_string(),
        ),
    ];
    let report = run_loop(dir.path(), ("opencode", &opencode), &env);
    let received = wire.server.received_requests().await.unwrap();
    nothing_planted_left(
        &received,
        "authorization",
        "Bearer sk-proj-userskeyZx9kQ2mW7pL4vB8n",
    );
    let bodies = wire.bodies("/v1/responses").await;
    let with_tools: Vec<&Value> = bodies
        .iter()
        .filter(|b| b["tools"].as_array().is_some_and(|t| !t.is_empty()))
        .collect();
    assert_eq!(with_tools.len(), 5, "read, bash, read, edit, answer");
    assert_has(
        &with_tools[4].to_string(),
        &["<<SECRET_AWS_ACCESS_KEY_ID_1>>", "A=none", "O=ralph-gw-"],
    );
    asked_for_status(with_tools[0]);
    edit_holds_the_real_value(dir.path());
    // Its calls on gpt-4.1 at the table's $2 in and $8 out per million tokens; its title
    // requests go to a small model the table does not price (counted $0, with a warning).
    let priced = bodies.iter().filter(|b| b["model"] == "gpt-4.1").count();
    paid_from_the_wire(&report, priced, (2.0, 8.0));
}

/// The Gemini CLI (`@google/gemini-cli` from npm) behind the model gateway, on Gemini's
/// `streamGenerateContent` with `functionCall` parts: the same checks as for the others. It is
/// signed in with a Gemini key, as its settings choose (`security.auth.selectedType`), and
/// trusts the project's folder, as a user's would.
#[tokio::test(flavor = "multi_thread")]
async fn gemini_cli_behind_the_gateway_sends_no_planted_secret_and_holds_no_key() {
    let gemini = npm_agent("gemini");
    let (dir, calc, settings) = secrets_project(
        "regent:\n  agent: gemini\n  model: gemini-2.5-pro\nbudgets:\n  max_iterations: 2\n",
    );
    let wire = AgentWire::start(vec![
        tool("read_file", json!({"file_path": settings})),
        tool(
            "run_shell_command",
            json!({"command": PRINT_KEYS, "description": "keys"}),
        ),
        tool("read_file", json!({"file_path": calc})),
        tool(
            "replace",
            json!({"file_path": calc, "old_string": "    raise NotImplementedError",
                   "new_string": "    # key <<SECRET_AWS_ACCESS_KEY_ID_1>>\n    return 2",
                   "instruction": "make b return 2"}),
        ),
        Step::Text(DONE.into()),
    ])
    .await;
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join(".gemini")).unwrap();
    std::fs::write(
        home.path().join(".gemini/settings.json"),
        r#"{"security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": false}}}"#,
    )
    .unwrap();
    let env = [
        ("HOME", home.path().display().to_string()),
        ("GOOGLE_GEMINI_BASE_URL", wire.server.uri()),
        (
            "GEMINI_API_KEY",
            "AIzaSyUsersKeyQ4mW7pL4vB8nZx9kQ2mW7pL".to_string(),
        ),
        (
            "OPENAI_API_KEY",
            "sk-proj-userskeyZx9kQ2mW7pL4vB8n".to_string(),
        ),
    ];
    let report = run_loop(dir.path(), ("gemini", &gemini), &env);
    let received = wire.server.received_requests().await.unwrap();
    nothing_planted_left(
        &received,
        "x-goog-api-key",
        "AIzaSyUsersKeyQ4mW7pL4vB8nZx9kQ2mW7pL",
    );
    let bodies: Vec<Value> = received
        .iter()
        .filter(|r| r.url.path().ends_with(":streamGenerateContent"))
        .filter_map(|r| serde_json::from_slice(&r.body).ok())
        .collect();
    assert_eq!(bodies.len(), 5, "read, shell, read, replace, answer");
    assert_has(
        &bodies[4].to_string(),
        &["<<SECRET_AWS_ACCESS_KEY_ID_1>>", "A=none", "O=none"],
    );
    asked_for_status(&bodies[0]);
    edit_holds_the_real_value(dir.path());
    // gemini-2.5-pro at the table's $1.25 in and $10 out per million tokens.
    paid_from_the_wire(&report, 5, (1.25, 10.0));
}

/// OpenCode as the fix loop's Artisan, behind the gateway: its edit is the proposal, and what
/// the gateway's ledger says reaches the run's report (OpenCode names its sessions with a model
/// the price table does not know).
#[tokio::test(flavor = "multi_thread")]
async fn opencode_as_the_artisan_behind_the_gateway_says_what_it_could_not_price() {
    let opencode = npm_agent("opencode");
    let dir = fixture("py-median");
    let target = dir.path().join("median.py").display().to_string();
    let wire = AgentWire::start(vec![
        tool("read", json!({"filePath": target})),
        tool("write", json!({"filePath": target, "content": FIXED_PY})),
        Step::Text("Rewrote median: the even case averages the middle pair.".into()),
    ])
    .await;
    // The other roles on Anthropic's protocol: OpenAI's base URL is the agent's server.
    let llm = MockLlm::start_with(Protocol::Anthropic).await;
    llm.helpful();
    let home = tempfile::tempdir().unwrap();
    let (_bin, path) = on_path("opencode", &opencode);
    let out = ralph(dir.path(), &llm)
        .env("PATH", path)
        .env("HOME", home.path())
        .env("ANTHROPIC_BASE_URL", llm.uri())
        .env("ANTHROPIC_API_KEY", "sk-ant-test")
        .env("OPENAI_BASE_URL", format!("{}/v1", wire.server.uri()))
        .env("OPENAI_API_KEY", "sk-proj-userskeyZx9kQ2mW7pL4vB8n")
        .args([
            "median.py",
            "--models",
            "librarian=anthropic/claude-sonnet-4-5,critic=anthropic/claude-sonnet-4-5,artisan=agent:opencode/openai/gpt-4.1",
            "--output",
            "json",
        ])
        .output()
        .unwrap();
    assert_exit(&out, 0);
    assert_file(dir.path(), "median.py", FIXED_PY);
    let report = report(dir.path());
    let warnings = report["warnings"].to_string();
    assert!(
        warnings.contains("no price known for openai/gpt-5.4-nano"),
        "{report:#}"
    );
}
