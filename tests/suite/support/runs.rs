//! Shorthands the suite's modules share for setting up a scripted server and reading what a run
//! of the binary said: each stands where the same few lines stood in many tests.

use std::path::Path;

use assert_cmd::assert::Assert;
use serde_json::Value;

use super::{code, text, Answer, MockLlm};

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
