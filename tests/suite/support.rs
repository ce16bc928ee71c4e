#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Test support: fixture projects in temp dirs, and a local server that speaks OpenAI's chat
//! completions protocol, answers each role from a script, and records every request.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;
use tempfile::TempDir;

// A path, not a bare `mod`: the benches load this file by `#[path]` from another folder.
#[path = "support/runs.rs"]
mod runs;
// The benches that load this file use none of these shorthands.
#[allow(unused_imports)]
pub use runs::*;

#[path = "support/mock_llm.rs"]
mod mock_llm;
pub use mock_llm::*;

pub const FIXED_PY: &str = "def median(values):\n    if not values:\n        raise ValueError(\"median of an empty list\")\n    ordered = sorted(values)\n    mid = len(ordered) // 2\n    if len(ordered) % 2:\n        return ordered[mid]\n    return (ordered[mid - 1] + ordered[mid]) / 2\n";
/// Fixes the even case but not the empty list.
pub const HALF_FIXED_PY: &str = "def median(values):\n    ordered = sorted(values)\n    mid = len(ordered) // 2\n    if len(ordered) % 2:\n        return ordered[mid]\n    return (ordered[mid - 1] + ordered[mid]) / 2\n";
pub const FIXED_JS: &str = "function median(values) {\n  const ordered = [...values].sort((a, b) => a - b);\n  const mid = Math.floor(ordered.length / 2);\n  return ordered.length % 2 ? ordered[mid] : (ordered[mid - 1] + ordered[mid]) / 2;\n}\n\nmodule.exports = { median };\n";
/// Sorts numerically and averages the middle pair, but still sorts its argument in place: one
/// test (`does not change its argument`) keeps failing, so the fix takes two iterations.
pub const HALF_FIXED_JS: &str = "function median(values) {\n  const ordered = values.sort((a, b) => a - b);\n  const mid = Math.floor(ordered.length / 2);\n  return ordered.length % 2 ? ordered[mid] : (ordered[mid - 1] + ordered[mid]) / 2;\n}\n\nmodule.exports = { median };\n";

/// `rs-median`'s fix: the mean of the middle pair, which overflows for huge values.
pub const FIXED_RS: &str = "/// The median of a list of numbers; `None` for an empty list.\npub fn median(values: &[f64]) -> Option<f64> {\n    if values.is_empty() {\n        return None;\n    }\n    let mut ordered = values.to_vec();\n    ordered.sort_by(f64::total_cmp);\n    let mid = ordered.len() / 2;\n    if ordered.len() % 2 == 1 {\n        Some(ordered[mid])\n    } else {\n        Some((ordered[mid - 1] + ordered[mid]) / 2.0)\n    }\n}\n";

/// A copy of `tests/fixtures/<name>` in a temp dir, made a git repository as real projects are.
/// Links `dir/node_modules` to the suite's JavaScript tools (`tests/node-tools`).
pub fn link_node_modules(dir: &Path) {
    let tools = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/node-tools/node_modules");
    assert!(
        tools.join(".bin").is_dir(),
        "{} is missing: run scripts/setup-deps",
        tools.display()
    );
    std::os::unix::fs::symlink(tools, dir.join("node_modules")).unwrap();
}

/// `node --test PATH` in `dir` passes.
pub fn node_tests_pass(dir: &Path, path: &str) {
    run_ok(
        std::process::Command::new("node")
            .args(["--test", path])
            .current_dir(dir),
    );
}

/// Runs `cmd` to its end and asserts it succeeded (showing it, its stdout and its stderr when
/// not): its output.
pub fn run_ok(cmd: &mut std::process::Command) -> std::process::Output {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

pub fn fixture(name: &str) -> TempDir {
    copy_to_git("tests/fixtures", name)
}

/// A copy of the bundled example `examples/<name>`, as a fresh git repository.
pub fn example(name: &str) -> TempDir {
    copy_to_git("examples", name)
}

fn copy_to_git(folder: &str, name: &str) -> TempDir {
    let dir = tempfile::Builder::new()
        .prefix("ralph-test-")
        .tempdir()
        .unwrap();
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join(folder)
            .join(name),
        dir.path(),
    );
    let git = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(dir.path())
        .status()
        .unwrap();
    assert!(git.success());
    dir
}

/// Every file under `dir`, in its subfolders too, sorted; none when `dir` cannot be read.
pub fn files_below(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files_below(&path));
        } else {
            out.push(path);
        }
    }
    out.sort();
    out
}

/// Copies the folder `from` and all it holds to `to`.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let dest = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &dest);
        } else {
            std::fs::copy(entry.path(), dest).unwrap();
        }
    }
}

/// `ralph-loop` in `dir`, talking to `llm`, isolated from the user's environment.
/// A run of `ralph-loop` in `dir` against `llm`, Chaos off: the suite's other tests are about
/// the loop up to green tests, and the mock answers no Chaos role unless a test scripts one
/// (see `chaos.rs`, which runs with [`ralph_with_chaos`]).
pub fn ralph(dir: &Path, llm: &MockLlm) -> assert_cmd::Command {
    let mut cmd = ralph_with_chaos(dir, llm);
    cmd.arg("--no-adversarial");
    cmd
}

/// `ralph-loop` in `dir` against `llm`, with no flag added: Chaos as the config says (on by
/// default), and subcommands (`resume`, `status`).
pub fn ralph_with_chaos(dir: &Path, llm: &MockLlm) -> assert_cmd::Command {
    let mut cmd = assert_cmd::Command::cargo_bin("ralph-loop").unwrap();
    isolate(&mut cmd, dir);
    cmd.env("OPENAI_BASE_URL", llm.base_url())
        .env("OPENAI_API_KEY", "sk-test-key");
    cmd
}

/// Sets the default coverage and mutation gates to `null` in `dir`'s `ralph.config.yaml` (made
/// when missing, its other keys kept): for tests of Chaos's attacks, whose scripts hold no
/// round for a gate (`gates.rs` and `mutation.rs` test the gates).
pub fn without_gates(dir: &Path) {
    let path = dir.join("ralph.config.yaml");
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let mut doc: serde_yaml::Mapping = serde_yaml::from_str(&text).unwrap_or_default();
    let key = serde_yaml::Value::from("success_criteria");
    let mut criteria = match doc.remove(&key) {
        Some(serde_yaml::Value::Mapping(m)) => m,
        _ => serde_yaml::Mapping::new(),
    };
    for gate in ["coverage_threshold", "mutation_score_min"] {
        criteria.insert(gate.into(), serde_yaml::Value::Null);
    }
    doc.insert(key, criteria.into());
    std::fs::write(&path, serde_yaml::to_string(&doc).unwrap()).unwrap();
}

pub fn isolate(cmd: &mut assert_cmd::Command, dir: &Path) {
    cmd.current_dir(dir)
        .env("HOME", dir)
        .timeout(Duration::from_secs(120));
    for var in [
        "OPENAI_API_KEY",
        "OPENAI_KEY",
        "OPENAI_BASE_URL",
        "OPENAI_API_ENDPOINT",
        "MODEL",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_KEY",
        "ANTHROPIC_MODEL",
        "ANTHROPIC_BASE_URL",
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "GEMINI_BASE_URL",
        "AZURE_OPENAI_API_KEY",
        "AZURE_OPENAI_ENDPOINT",
        "OLLAMA_HOST",
        "RUST_LOG",
        // A fixture crate builds in its own `target/`, never in the suite's shared one.
        "CARGO_TARGET_DIR",
        // The trust store of hooks and Codex's settings are found from HOME, in `dir`.
        "XDG_CONFIG_HOME",
        "CODEX_HOME",
    ] {
        cmd.env_remove(var);
    }
}

/// `ralph-loop hooks ...` in `dir`, isolated like [`ralph`] (its trust store in `dir`).
pub fn hooks_cmd(dir: &Path) -> assert_cmd::Command {
    let mut cmd = assert_cmd::Command::cargo_bin("ralph-loop").unwrap();
    isolate(&mut cmd, dir);
    cmd.arg("hooks");
    cmd
}

/// Trusts every hook of the project in `dir` as it is now, as a user who read them would.
pub fn trust_hooks(dir: &Path) {
    hooks_cmd(dir).arg("trust").assert().success();
}

/// Polls `done` until it holds, failing the test after `timeout` with what it waited for.
pub fn wait_for(what: &str, timeout: Duration, mut done: impl FnMut() -> bool) {
    let start = std::time::Instant::now();
    while !done() {
        assert!(start.elapsed() < timeout, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// The folders under `dir/.ralph` whose names start with `prefix`.
pub fn ralph_dirs(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    std::fs::read_dir(dir.join(".ralph"))
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(prefix))
        .collect()
}

/// The only session folder under `dir/.ralph`.
pub fn session_dir(dir: &Path) -> PathBuf {
    let mut sessions = ralph_dirs(dir, "session-");
    assert_eq!(sessions.len(), 1, "expected one session: {sessions:?}");
    sessions.pop().unwrap()
}

pub fn report(dir: &Path) -> Value {
    read_json(&session_dir(dir).join("report.json"))
}

pub fn read_json(path: &Path) -> Value {
    serde_json::from_str(
        &std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
    )
    .unwrap()
}

/// Each line of `text` as JSON.
pub fn json_lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// Each line of the file at `path` as JSON.
pub fn read_json_lines(path: &Path) -> Vec<Value> {
    json_lines(&std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
}

pub fn write(dir: &Path, name: &str, content: &str) {
    std::fs::write(dir.join(name), content).unwrap();
}

/// The last (user) message of a chat request.
pub fn user_prompt(request: &Value) -> String {
    let messages = request["messages"].as_array().unwrap();
    messages.last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Drives one of the binaries in a pseudo-terminal (Python's `pty`), in `dir` with `HOME` there
/// and `env`: answers each `(prompt, reply)` in turn when the prompt shows, then reads to the
/// end. Returns the exit code and what the terminal showed.
pub fn in_terminal(
    binary: &str,
    dir: &Path,
    env: &[(&str, String)],
    args: &[&str],
    dialogue: &[(&str, &str)],
) -> (i32, String) {
    const DRIVER: &str = r#"
import json, os, pty, select, sys, time
args, dialogue = json.loads(sys.argv[1]), json.loads(sys.argv[2])
pid, fd = pty.fork()
if pid == 0:
    os.execv(args[0], args)
seen = b""
def read(deadline):
    global seen
    r, _, _ = select.select([fd], [], [], max(0.0, deadline - time.time()))
    if not r:
        return False
    try:
        chunk = os.read(fd, 65536)
    except OSError:
        return None
    if not chunk:
        return None
    seen += chunk
    return True
for prompt, reply in dialogue:
    deadline = time.time() + 90
    while prompt.encode() not in seen:
        if time.time() > deadline or read(deadline) is None:
            sys.stdout.write(seen.decode(errors="replace"))
            sys.exit(97)
    seen = seen.replace(prompt.encode(), b"<answered>", 1)
    os.write(fd, (reply + "\n").encode())
deadline = time.time() + 90
while read(deadline):
    pass
_, status = os.waitpid(pid, 0)
sys.stdout.write(seen.decode(errors="replace"))
sys.exit(os.waitstatus_to_exitcode(status))
"#;
    let binary = assert_cmd::cargo::cargo_bin(binary);
    let mut argv = vec![binary.display().to_string()];
    argv.extend(args.iter().map(|a| a.to_string()));
    let mut cmd = std::process::Command::new("python3");
    cmd.arg("-c")
        .arg(DRIVER)
        .arg(serde_json::to_string(&argv).unwrap())
        .arg(serde_json::to_string(dialogue).unwrap())
        .current_dir(dir)
        .env("HOME", dir)
        .env_remove("RUST_LOG");
    for var in [
        "OPENAI_API_KEY",
        "OPENAI_KEY",
        "OPENAI_BASE_URL",
        "MODEL",
        "ANTHROPIC_API_KEY",
        "GEMINI_API_KEY",
    ] {
        cmd.env_remove(var);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).to_string(),
    )
}

/// Waits for `child` to exit, at most `timeout` (then kills it and fails); its exit code.
pub fn wait_exit(child: &mut std::process::Child, timeout: Duration) -> i32 {
    let start = std::time::Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code().unwrap_or(-1);
        }
        if start.elapsed() > timeout {
            let _ = child.kill();
            panic!("the process did not exit within {timeout:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Fills the MemoryVault of `project` with `n` attempts at other bugs of a JavaScript project,
/// embedded by the default (hashed) embedder, and searches it once, as the project's earlier
/// runs would have: its recall snapshot is current.
pub async fn seed_vault(project: &Path, n: usize) {
    use ralph_actors::ports::memory::{Embedder, GuardedTexts};
    let uri = ralph_loop::vault::vault_path(project);
    std::fs::create_dir_all(&uri).unwrap();
    let (store, embedder) = hashed_store(&uri.to_string_lossy()).await;
    let attempts: Vec<_> = (0..n)
        .map(|i| ralph_actors::schema::attempt::FixAttempt {
            id: format!("seed-{i}"),
            project_id: "seeded".into(),
            signature: format!(
                "LOGIC test_{i}: AssertionError: expected {i} to equal {}",
                i + 1
            ),
            category: None,
            test_ids: vec![format!("test::case {i}")],
            hypothesis: "An off-by-one in the loop bound.".into(),
            diff: format!("--- a/src/m{i}.js\n+++ b/src/m{i}.js\n@@ -1 +1 @@\n-a\n+b\n"),
            success: i % 3 == 0,
            timestamp_ms: 1_790_000_000_000 + i as i64,
            tokens: 3000,
            cost_usd: 0.006,
            model: "openai/gpt-4.1".into(),
            language: "javascript".into(),
        })
        .collect();
    let texts = GuardedTexts::seal(
        &ralph_guard::Guard::off(),
        attempts.iter().map(|a| a.signature.clone()).collect(),
    )
    .unwrap();
    let vectors = embedder.embed(texts).await.unwrap();
    store
        .add(attempts.into_iter().zip(vectors).collect())
        .await
        .unwrap();
    // A vault in steady use: its attempts in the table, and the table's snapshot written.
    store.flush().await.unwrap();
    store
        .search(&vec![1.0; embedder.dims()], 5, 0.9)
        .await
        .unwrap();
}

/// The project table of the vault at `uri`, with the default (hashed) embedder.
pub async fn hashed_store(
    uri: &str,
) -> (
    ralph_loop::vault::LanceStore,
    ralph_loop::vault::embed::HashedNgrams,
) {
    use ralph_actors::ports::memory::Embedder;
    let embedder = ralph_loop::vault::embed::HashedNgrams::default();
    let store = ralph_loop::vault::LanceStore::open(
        uri,
        ralph_loop::vault::PROJECT_TABLE,
        &embedder.id(),
        embedder.dims(),
    )
    .await
    .unwrap();
    (store, embedder)
}

/// Reaps the exited child `pid`: its wait status and usage (`ru_maxrss` counts the children it
/// reaped too).
pub fn reap(pid: libc::pid_t) -> (i32, libc::rusage) {
    let mut status = 0;
    // SAFETY: a zeroed rusage is a valid out-parameter; `pid` is the caller's own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(r, pid, "wait4: {}", std::io::Error::last_os_error());
    (status, usage)
}

/// Drops the pages of the file at `path` from the page cache, so that its next run reads it
/// from disk, as the first run of an installed binary after a boot does, and maps the pages
/// readahead brings in. A file just written (a fresh build, a copy) stays in the cache in the
/// large blocks it was written in, and a run maps whole blocks: one run of one binary measured
/// 85 MiB at exit so, and 65 MiB once its pages had been read back (issue 18). Returns false
/// when the pages cannot be dropped: the file lives in memory (tmpfs), or is not there.
pub fn evict_page_cache(path: &Path) -> bool {
    use std::os::fd::AsRawFd;
    let Ok(file) = std::fs::File::open(path) else {
        return false;
    };
    // SAFETY: a zeroed statfs is a valid out-parameter, and the descriptor is open.
    let mut fs: libc::statfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstatfs(file.as_raw_fd(), &mut fs) } != 0 || fs.f_type == libc::TMPFS_MAGIC {
        return false;
    }
    // SAFETY: advice on an open descriptor; it changes no memory of ours.
    unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) == 0 }
}

/// The peak resident set (KiB) ralph-loop logged as it exited (`RUST_LOG=ralph_loop::exit=debug`).
pub fn exit_peak_kib(stderr: &str) -> Option<u64> {
    let (_, rest) = stderr.rsplit_once("peak_rss_kib=")?;
    rest.split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}
