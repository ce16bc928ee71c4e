//! `ralph-loop agents`: the coding-agent CLIs found on PATH, their sign-in, their models (listed
//! by the agent, cached, refreshed on request), and agents defined in config.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use serde_json::Value;

use super::support::{isolate, stderr_at, stderr_of, stdout_of};

/// A fresh folder and its empty `bin/`, the only agents' folder on PATH (see [`agents`]).
fn with_bin() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    (dir, bin)
}

/// An executable script `name` in `bin`.
fn script(bin: &Path, name: &str, body: &str) {
    let path = bin.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// `ralph-loop agents ...` in `dir` with only `bin` (and the system's) on PATH.
fn agents(dir: &Path, bin: &Path) -> assert_cmd::Command {
    let mut cmd = assert_cmd::Command::cargo_bin("ralph-loop").unwrap();
    isolate(&mut cmd, dir);
    cmd.env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .env("XDG_CACHE_HOME", dir.join("cache"))
        .env_remove("CODEX_API_KEY")
        .env_remove("CLAUDE_CODE_OAUTH_TOKEN")
        .env_remove("ANTHROPIC_AUTH_TOKEN")
        .arg("agents");
    cmd
}

/// `agents list --json` run by `cmd` (see [`agents`]): every agent's entry.
fn list_json(cmd: &mut assert_cmd::Command) -> Vec<Value> {
    let out = cmd.args(["list", "--json"]).assert().success();
    match json(&out.get_output().stdout) {
        Value::Array(list) => list,
        other => panic!("not a list: {other}"),
    }
}

/// The entry of the agent `name` in `list`.
fn named<'a>(list: &'a [Value], name: &str) -> &'a Value {
    list.iter()
        .find(|e| e["name"] == name)
        .unwrap_or_else(|| panic!("no agent {name}"))
}

fn json(out: &[u8]) -> Value {
    serde_json::from_slice(out).unwrap()
}

#[test]
fn list_says_which_agents_are_installed_and_signed_in() {
    let (dir, bin) = with_bin();
    script(&bin, "claude", "exit 0");
    script(&bin, "codex", "exit 0");
    std::fs::create_dir_all(dir.path().join(".codex")).unwrap();
    std::fs::write(dir.path().join(".codex/auth.json"), "{}").unwrap();

    let list = list_json(&mut agents(dir.path(), &bin));
    let entry = |name: &str| named(&list, name).clone();
    let claude = entry("claude");
    assert_eq!(
        claude["binary"],
        bin.join("claude").to_string_lossy().as_ref()
    );
    assert_eq!(claude["auth"]["state"], "missing");
    assert_eq!(claude["format"], "claude-stream-json");
    assert_eq!(entry("codex")["auth"]["state"], "ready");
    assert_eq!(entry("codex")["auth"]["how"], "~/.codex/auth.json");
    assert!(entry("aider")["binary"].is_null());

    // The text view: one line per agent and how many can be used.
    let out = agents(dir.path(), &bin)
        .env("ANTHROPIC_API_KEY", "sk-ant-test")
        .arg("list")
        .assert()
        .success();
    let text = stdout_of(&out);
    assert!(
        text.lines()
            .any(|l| l.starts_with("claude") && l.contains("signed in ($ANTHROPIC_API_KEY)")),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("aider") && l.contains("not installed")),
        "{text}"
    );
    assert!(
        text.contains("2 of 11 agents installed and usable here"),
        "{text}"
    );
}

/// A listed model set is asked of the agent once, then served from the cache until
/// `--refresh`; a fixed one is printed as it is; a failing listing names the command.
#[test]
fn models_are_listed_by_the_agent_cached_and_refreshed_on_request() {
    let (dir, bin) = with_bin();
    let calls = dir.path().join("calls");
    script(
        &bin,
        "aider",
        &format!(
            "echo listed >> {}\ntouch left-by-the-listing\necho 'Models which match \"/\":'\necho '- openai/gpt-4.1'\necho '- anthropic/claude-sonnet-4-5'",
            calls.display()
        ),
    );
    let listed = |refresh: bool| {
        let mut cmd = agents(dir.path(), &bin);
        cmd.args(["models", "aider", "--json"]);
        if refresh {
            cmd.arg("--refresh");
        }
        json(&cmd.assert().success().get_output().stdout)
    };
    let first = listed(false);
    assert_eq!(
        first["names"],
        serde_json::json!(["openai/gpt-4.1", "anthropic/claude-sonnet-4-5"])
    );
    assert_eq!(first["cached"], false);
    let second = listed(false);
    assert_eq!(second["cached"], true);
    assert_eq!(second["names"], first["names"]);
    assert_eq!(std::fs::read_to_string(&calls).unwrap().lines().count(), 1);
    assert_eq!(listed(true)["cached"], false);
    assert_eq!(std::fs::read_to_string(&calls).unwrap().lines().count(), 2);
    assert!(dir
        .path()
        .join("cache/ralph-loop/agents/aider.models.json")
        .is_file());

    let out = agents(dir.path(), &bin)
        .args(["models", "claude"])
        .assert()
        .success();
    assert_eq!(stdout_of(&out), "sonnet\nopus\nhaiku\n");

    // Not installed, and an agent that lists none: both refused with what is wrong.
    let err = stderr_at(agents(dir.path(), &bin).args(["models", "opencode"]), 2);
    assert!(err.contains("OpenCode is not installed"), "{err}");
    let err = stderr_at(agents(dir.path(), &bin).args(["models", "goose"]), 2);
    assert!(err.contains("lists no models"), "{err}");

    script(&bin, "cursor-agent", "echo 'not logged in' >&2; exit 3");
    let err = stderr_at(agents(dir.path(), &bin).args(["models", "cursor"]), 1);
    assert!(
        err.contains("cursor-agent --list-models") && err.contains("not logged in"),
        "{err}"
    );

    let err = stderr_at(agents(dir.path(), &bin).args(["models", "nope"]), 2);
    assert!(err.contains("no agent named \"nope\""), "{err}");
}

/// Codex's models come from its own catalog (`codex debug models`, JSON), less the ones it
/// hides; Claude Code has no command that lists models, and says its list is built in.
#[test]
fn codex_is_asked_for_its_catalog_and_claude_s_list_says_it_is_built_in() {
    let (dir, bin) = with_bin();
    script(
        &bin,
        "codex",
        r#"[ "$1 $2" = "debug models" ] || exit 9
echo '{"models":[{"slug":"gpt-6.2-sol","visibility":"list"},{"slug":"codex-auto-review","visibility":"hide"},{"slug":"gpt-5.5","visibility":"list"}]}'"#,
    );
    let out = agents(dir.path(), &bin)
        .args(["models", "codex"])
        .assert()
        .success();
    assert_eq!(stdout_of(&out), "gpt-6.2-sol\ngpt-5.5\n");
    let err = stderr_of(&out);
    assert!(
        err.contains("2 models of OpenAI Codex CLI (listed now"),
        "{err}"
    );

    let out = agents(dir.path(), &bin)
        .args(["models", "claude"])
        .assert()
        .success();
    let err = stderr_of(&out);
    assert!(
        err.contains("3 models of Claude Code (built-in list: Claude Code has no command that lists its models)"),
        "{err}"
    );
}

/// The built-ins no test here runs are called unverified wherever an agent is chosen: in
/// `agents list` (text and JSON) and in `loop --help`; the ones CI runs are not.
#[test]
fn agents_never_run_here_are_marked_unverified() {
    let (dir, bin) = with_bin();
    let unverified = ["agy", "cursor", "auggie", "goose"];
    let out = agents(dir.path(), &bin).arg("list").assert().success();
    let text = stdout_of(&out);
    for line in text.lines().filter(|l| !l.contains("agents installed")) {
        let name = line.split_whitespace().next().unwrap();
        assert_eq!(
            line.contains("unverified"),
            unverified.contains(&name),
            "{line}"
        );
    }
    let list = list_json(&mut agents(dir.path(), &bin));
    for entry in &list {
        let name = entry["name"].as_str().unwrap();
        assert_eq!(entry["unverified"], unverified.contains(&name), "{name}");
    }

    let mut help = assert_cmd::Command::cargo_bin("ralph-loop").unwrap();
    let out = help.args(["loop", "--help"]).assert().success();
    // Clap wraps the text to the terminal's width: compare it as words.
    let help = stdout_of(&out)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let said = help.split("--agent").nth(1).unwrap_or_default();
    assert!(
        said.contains("agy, cursor, auggie and goose are unverified"),
        "{help}"
    );
}

/// `agents list` says which agents run behind the model gateway, and for which provider, and
/// which call their provider themselves (text and JSON).
#[test]
fn agents_list_says_which_agents_are_behind_the_model_gateway() {
    let (dir, bin) = with_bin();
    let behind = [
        ("claude", "anthropic"),
        ("codex", "openai"),
        ("aider", "openai"),
        ("qwen", "openai"),
        ("opencode", "openai"),
        ("gemini", "gemini"),
    ];
    let out = agents(dir.path(), &bin).arg("list").assert().success();
    let text = stdout_of(&out);
    for line in text.lines().filter(|l| !l.contains("agents installed")) {
        let name = line.split_whitespace().next().unwrap();
        match behind.iter().find(|(n, _)| *n == name) {
            Some((_, provider)) => assert!(
                line.contains(&format!("behind the model gateway ({provider})")),
                "{line}"
            ),
            None if ["agy", "cursor", "auggie"].contains(&name) => assert!(
                line.contains("calls its vendor's service only (nothing can stand between)"),
                "{line}"
            ),
            None => assert!(line.contains("calls its provider itself"), "{line}"),
        }
    }
    for entry in list_json(&mut agents(dir.path(), &bin)) {
        let name = entry["name"].as_str().unwrap();
        let expected = behind.iter().find(|(n, _)| *n == name).map(|(_, p)| *p);
        assert_eq!(entry["gateway"].as_str(), expected, "{name}");
        let vendor_only = ["agy", "cursor", "auggie"].contains(&name);
        assert_eq!(entry["vendor_only"], vendor_only, "{name}");
    }
}

/// An agent defined in config is listed beside the built-ins; a bad definition is refused
/// with the file, line and key.
#[test]
fn agents_from_config_are_listed_and_a_bad_one_names_its_line() {
    let (dir, bin) = with_bin();
    script(&bin, "my-agent", "exit 0");
    std::fs::write(
        dir.path().join("ralph.config.yaml"),
        "agents:\n  - name: mine\n    title: My agent\n    binaries: [my-agent]\n    args: [run, \"{prompt}\"]\n    prompt: argument\n    format: plain\n",
    )
    .unwrap();
    let list = list_json(&mut agents(dir.path(), &bin));
    let mine = named(&list, "mine");
    assert_eq!(mine["configured"], true);
    assert_eq!(mine["auth"]["state"], "unknown");
    assert_eq!(
        mine["binary"],
        bin.join("my-agent").to_string_lossy().as_ref()
    );

    std::fs::write(
        dir.path().join("ralph.config.yaml"),
        "budgets:\n  max_iterations: 3\nagents:\n  - name: mine\n    binaries: [my-agent]\n    args: [run]\n    prompt: argument\n    format: plain\n",
    )
    .unwrap();
    let err = stderr_at(agents(dir.path(), &bin).arg("list"), 2);
    assert!(
        err.contains("ralph.config.yaml") && err.contains("agents") && err.contains("{prompt}"),
        "{err}"
    );
    assert!(err.contains(":3"), "the line of `agents:`: {err}");

    std::fs::write(
        dir.path().join("ralph.config.yaml"),
        "agents:\n  - name: mine\n    binaries: [my-agent]\n    args: [run]\n    format: yaml\n",
    )
    .unwrap();
    let err = stderr_at(agents(dir.path(), &bin).arg("list"), 2);
    assert!(
        err.contains("agents[0].format") || err.contains("format"),
        "{err}"
    );
}

/// Whether process `pid` is still running (not gone, not a zombie).
fn running(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X")
    })
}

/// Waits up to `limit` for `pid` to stop running.
fn gone_within(pid: i32, limit: std::time::Duration) -> bool {
    let deadline = std::time::Instant::now() + limit;
    while std::time::Instant::now() < deadline {
        if !running(pid) {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    !running(pid)
}

/// Spawns `cmd` with its stdout piped; the child, and the pid it printed first.
fn spawn_printing_pid(cmd: &mut std::process::Command) -> (std::process::Child, i32) {
    use std::io::BufRead;
    let mut child = cmd.stdout(std::process::Stdio::piped()).spawn().unwrap();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    (child, line.trim().parse().unwrap())
}

/// `ralph-loop __reap <this process> -- sh -c <script>`: the reaper over a shell script.
fn reaper(script: &str) -> std::process::Command {
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("ralph-loop"));
    cmd.args(["__reap", &std::process::id().to_string(), "--", "sh", "-c"])
        .arg(script);
    cmd
}

/// Sends `signal` to process `pid`.
fn signal(pid: u32, signal: nix::sys::signal::Signal) {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), signal).unwrap();
}

/// Asserts `pid` stops running within `secs` seconds.
#[track_caller]
fn assert_gone_within(pid: i32, secs: u64) {
    assert!(
        gone_within(pid, std::time::Duration::from_secs(secs)),
        "pid {pid} survived"
    );
}

/// A command that starts a process in a session of its own (as Claude Code's shell tool does)
/// and exits: the reaper stops the escaped process and exits with the command's status. No
/// descendant survives (ralph-orchestrator #204).
#[test]
fn the_reaper_stops_what_escaped_the_group_and_keeps_the_exit_code() {
    let (mut child, escaped) =
        spawn_printing_pid(&mut reaper("setsid sleep 300 & echo $!; exit 3"));
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(3));
    assert_gone_within(escaped, 2);
}

/// SIGTERM to the reaper stops the command and everything it started, in any session; the
/// exit status says the command was terminated.
#[test]
fn sigterm_to_the_reaper_stops_the_whole_tree() {
    let (mut child, escaped) = spawn_printing_pid(&mut reaper(
        "setsid sh -c 'trap \"\" TERM; sleep 300' & echo $!; sleep 300",
    ));
    assert!(running(escaped));
    signal(child.id(), nix::sys::signal::Signal::SIGTERM);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(143));
    // It ignores SIGTERM: SIGKILL after the grace period.
    assert_gone_within(escaped, 2);
}

/// When ralph-loop itself dies (here a shell standing in for it, killed with SIGKILL), the
/// reaper hears of it and stops the tree.
#[test]
fn the_tree_dies_with_the_process_that_started_the_reaper() {
    let bin = assert_cmd::cargo::cargo_bin("ralph-loop");
    let script = format!(
        "{} __reap $$ -- sh -c 'setsid sleep 300 & echo $!; sleep 300' & wait",
        bin.display()
    );
    let (mut parent, escaped) =
        spawn_printing_pid(std::process::Command::new("sh").args(["-c", &script]));
    signal(parent.id(), nix::sys::signal::Signal::SIGKILL);
    parent.wait().unwrap();
    assert_gone_within(escaped, 3);
}

mod invoke;

#[test]
fn agents_add_writes_a_definition_that_loads_and_keeps_the_files_comments() {
    let (dir, bin) = with_bin();
    script(&bin, "my-agent", "exit 0");
    let config = dir.path().join("ralph.config.yaml");
    std::fs::write(
        &config,
        "# my settings\nbudgets:\n  max_iterations: 3   # three\nagents: []   # coding agents\n",
    )
    .unwrap();
    let out = agents(dir.path(), &bin)
        .args([
            "add",
            "mine",
            "--title",
            "My agent",
            "--binary",
            "my-agent",
            "--arg",
            "run",
            "--arg",
            "--model",
            "--arg",
            "{model}",
            "--format",
            "claude-stream-json",
            "--auth-env",
            "MY_AGENT_KEY",
            "--reports-cost",
        ])
        .assert()
        .success();
    let said = stdout_of(&out);
    assert!(
        said.contains("agent \"mine\" added to ralph.config.yaml"),
        "{said}"
    );
    let text = std::fs::read_to_string(&config).unwrap();
    for kept in [
        "# my settings",
        "max_iterations: 3   # three",
        "# coding agents",
    ] {
        assert!(text.contains(kept), "{kept} lost:\n{text}");
    }
    let list = list_json(agents(dir.path(), &bin).env("MY_AGENT_KEY", "k"));
    let mine = named(&list, "mine");
    assert_eq!(mine["configured"], true);
    assert_eq!(mine["format"], "claude-stream-json");
    assert_eq!(mine["auth"]["state"], "ready");

    // Twice: refused, the file untouched.
    agents(dir.path(), &bin)
        .args([
            "add", "mine", "--binary", "x", "--arg", "y", "--format", "plain",
        ])
        .assert()
        .code(2);
    assert_eq!(std::fs::read_to_string(&config).unwrap(), text);
    // A prompt as an argument without `{prompt}`: refused before anything is written.
    let out = agents(dir.path(), &bin)
        .args([
            "add", "other", "--binary", "x", "--arg", "y", "--prompt", "argument", "--format",
            "plain",
        ])
        .assert()
        .code(2);
    assert!(stderr_of(&out).contains("{prompt}"));
    // No terminal and fields missing: said which.
    let err = stderr_at(agents(dir.path(), &bin).args(["add", "third"]), 2);
    assert!(err.contains("--binary, --arg, --format"), "{err}");
    assert_eq!(std::fs::read_to_string(&config).unwrap(), text);
}

#[test]
fn agents_add_asks_at_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let (code, screen) = super::support::in_terminal(
        "ralph-loop",
        dir.path(),
        &[],
        &["agents", "add"],
        &[
            ("name (letters", "mine"),
            ("title", "My agent"),
            ("executables", "my-agent"),
            ("arguments of a headless run", "-p --model {model}"),
            ("prompt on stdin", ""),
            ("output format", "claude-stream-json"),
            ("environment variables", ""),
            ("list its models", "models"),
        ],
    );
    assert_eq!(code, 0, "{screen}");
    let text = std::fs::read_to_string(dir.path().join("ralph.config.yaml")).unwrap();
    let config = ralph_loop::config::parse(&text, &dir.path().join("ralph.config.yaml")).unwrap();
    let mine = &config.agents[0];
    assert_eq!(mine.args, ["-p", "--model", "{model}"]);
    assert_eq!(mine.binaries, ["my-agent"]);
    assert_eq!(
        mine.models,
        ralph_loop::agents::definition::ModelSource::Command {
            args: vec!["models".into()]
        }
    );
}
