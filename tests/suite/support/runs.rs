//! Shorthands the suite's modules share for setting up a scripted server and reading what a run
//! of the binary said: each stands where the same few lines stood in many tests.

use std::path::Path;

use assert_cmd::assert::Assert;
use serde_json::Value;

use super::{code, fixture, text, write, Answer, MockLlm};

/// A server with the usual Librarian and Critic ([`MockLlm::helpful`]) whose Artisan always
/// answers with `body` as a whole `lang` file.
pub async fn artisan_always(lang: &str, body: &str) -> MockLlm {
    let llm = MockLlm::start().await;
    llm.helpful().always("artisan", text(code(lang, body)));
    llm
}

/// What a finished run wrote to stderr, as text.
pub fn stderr_of(out: &Assert) -> String {
    String::from_utf8_lossy(&out.get_output().stderr).into_owned()
}

/// What a finished run wrote to stdout, as text.
pub fn stdout_of(out: &Assert) -> String {
    String::from_utf8_lossy(&out.get_output().stdout).into_owned()
}

/// Runs `cmd`, asserts it exits with `code`, and returns its stderr: a refusal and its words.
pub fn stderr_at(cmd: &mut assert_cmd::Command, code: i32) -> String {
    stderr_of(&cmd.assert().code(code))
}

/// A report's warnings, as text (none when it has no list).
pub fn warnings(report: &Value) -> Vec<String> {
    report["warnings"]
        .as_array()
        .map(|w| {
            w.iter()
                .map(|m| m.as_str().unwrap_or("").to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// A server with the usual Librarian and Critic whose Artisan answers with each of `bodies` in
/// turn, each a whole `lang` file.
pub async fn artisan_writes<const N: usize>(lang: &str, bodies: [&str; N]) -> MockLlm {
    let llm = MockLlm::start().await;
    llm.helpful()
        .script("artisan", bodies.map(|b| text(code(lang, b))));
    llm
}

/// Asserts the file `name` in `dir` holds `want`, to the byte.
#[track_caller]
pub fn assert_file(dir: &Path, name: &str, want: impl AsRef<str>) {
    let path = dir.join(name);
    let got = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(got, want.as_ref(), "{name}");
}

/// A server with the usual Librarian and Critic whose Artisan always gives `answer`.
pub async fn artisan_answers(answer: Answer) -> MockLlm {
    let llm = MockLlm::start().await;
    llm.helpful().always("artisan", answer);
    llm
}

/// A server with the usual Librarian and Critic whose Artisan gives `answers` in turn.
pub async fn artisan_script(answers: impl IntoIterator<Item = Answer>) -> MockLlm {
    let llm = MockLlm::start().await;
    llm.helpful().script("artisan", answers);
    llm
}

/// Asserts `text` holds each of `wants`; the failure names the one missing and shows `text`.
#[track_caller]
pub fn assert_has(text: &str, wants: &[&str]) {
    for want in wants {
        assert!(text.contains(want), "no {want:?} in:\n{text}");
    }
}

/// The user prompt of the `n`th request (from 0) that `role` got.
pub async fn prompt_to(llm: &MockLlm, role: &str, n: usize) -> String {
    let asked = llm.requests_of(role).await;
    let request = asked
        .get(n)
        .unwrap_or_else(|| panic!("{role} was asked {} times, not {}", asked.len(), n + 1));
    super::user_prompt(request)
}

/// A copy of the fixture `name` (as [`fixture`] makes it) with `yaml` as its `ralph.config.yaml`.
pub fn fixture_with_config(name: &str, yaml: &str) -> tempfile::TempDir {
    let dir = fixture(name);
    write_config(dir.path(), yaml);
    dir
}

/// Writes `yaml` as the `ralph.config.yaml` of the project in `dir`.
pub fn write_config(dir: &Path, yaml: &str) {
    write(dir, "ralph.config.yaml", yaml);
}

/// The user prompts `role` got, in order, asserting it was asked `times` times.
pub async fn prompts_of(llm: &MockLlm, role: &str, times: usize) -> Vec<String> {
    let asked = llm.requests_of(role).await;
    assert_eq!(asked.len(), times, "{role} was asked {} times", asked.len());
    asked.iter().map(super::user_prompt).collect()
}

/// The user prompt of the last request `role` got, asserting it was asked `times` times.
pub async fn last_prompt_of(llm: &MockLlm, role: &str, times: usize) -> String {
    prompts_of(llm, role, times).await.pop().unwrap()
}

/// Asserts `want` is in the second of `prompts` and not the first: what the first iteration
/// told the next one's call.
#[track_caller]
pub fn assert_told_next(prompts: &[String], want: &str) {
    assert!(
        !prompts[0].contains(want),
        "{want:?} already in:\n{}",
        prompts[0]
    );
    assert!(prompts[1].contains(want), "no {want:?} in:\n{}", prompts[1]);
}

/// Runs [`super::ralph`] in `dir` with `args`, asserts it exits with `code`, and returns the
/// session's report.
pub fn ralph_report(dir: &Path, llm: &MockLlm, args: &[&str], code: i32) -> Value {
    super::ralph(dir, llm).args(args).assert().code(code);
    super::report(dir)
}

/// What `ralph-loop vault stats --json` prints in `dir` (its `HOME` there too).
pub fn vault_stats(dir: &Path) -> Value {
    let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("ralph-loop"))
        .current_dir(dir)
        .env("HOME", dir)
        .args(["vault", "stats", "--json"])
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Asserts the finished process `out` exited with `code`, showing its stdout and stderr when not.
#[track_caller]
pub fn assert_exit(out: &std::process::Output, code: i32) {
    assert_eq!(
        out.status.code(),
        Some(code),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Runs `cmd`, asserts it exits with `code` and that its stderr holds each of `wants`.
#[track_caller]
pub fn assert_exits_saying(cmd: &mut assert_cmd::Command, code: i32, wants: &[&str]) {
    assert_has(&stderr_at(cmd, code), wants);
}

/// `ralph-loop args` started in `dir` against `llm`, `HOME` there and no `RUST_LOG`: its stdin
/// and stdout null, its stderr to `stderr`.
pub fn start_ralph(
    dir: &Path,
    llm: &MockLlm,
    args: &[&str],
    stderr: std::process::Stdio,
) -> std::process::Child {
    std::process::Command::new(assert_cmd::cargo::cargo_bin("ralph-loop"))
        .args(args)
        .current_dir(dir)
        .env("HOME", dir)
        .env("OPENAI_BASE_URL", llm.base_url())
        .env("OPENAI_API_KEY", "sk-test-key")
        .env_remove("RUST_LOG")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(stderr)
        .spawn()
        .unwrap()
}

/// Asserts the file `name` in `dir` is as the fixture `fixture` has it (`why` says why it must
/// be).
#[track_caller]
pub fn assert_untouched(dir: &Path, fixture: &str, name: &str, why: &str) {
    let original = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(fixture)
        .join(name);
    let original = std::fs::read_to_string(original).unwrap();
    let now = std::fs::read_to_string(dir.join(name)).unwrap();
    assert_eq!(now, original, "{name}: {why}");
}

/// `ralph-loop` in `dir`, isolated as [`super::ralph`] is, with only `env` set: for runs
/// against servers of other protocols (see [`MockLlm::env`]).
pub fn ralph_with_env(dir: &Path, env: &[(&str, String)]) -> assert_cmd::Command {
    let mut cmd = assert_cmd::Command::cargo_bin("ralph-loop").unwrap();
    super::isolate(&mut cmd, dir);
    cmd.envs(env.iter().cloned());
    cmd
}

/// Runs `cmd` with `input` on its stdin, to its end: its output (stdout and stderr piped).
pub fn output_with_stdin(cmd: &mut std::process::Command, input: &str) -> std::process::Output {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

/// Kills `child`'s whole process group and reaps it, as a `Drop` of a server or browser does.
pub fn kill_group(child: &mut std::process::Child) {
    let _ = nix::sys::signal::killpg(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGKILL,
    );
    let _ = child.wait();
}
