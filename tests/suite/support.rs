#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Test support: fixture projects in temp dirs, and a local server that speaks OpenAI's chat
//! completions protocol, answers each role from a script, and records every request.

use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tempfile::TempDir;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

pub const FIXED_PY: &str = "def median(values):\n    if not values:\n        raise ValueError(\"median of an empty list\")\n    ordered = sorted(values)\n    mid = len(ordered) // 2\n    if len(ordered) % 2:\n        return ordered[mid]\n    return (ordered[mid - 1] + ordered[mid]) / 2\n";
/// Fixes the even case but not the empty list.
pub const HALF_FIXED_PY: &str = "def median(values):\n    ordered = sorted(values)\n    mid = len(ordered) // 2\n    if len(ordered) % 2:\n        return ordered[mid]\n    return (ordered[mid - 1] + ordered[mid]) / 2\n";
pub const FIXED_JS: &str = "function median(values) {\n  const ordered = [...values].sort((a, b) => a - b);\n  const mid = Math.floor(ordered.length / 2);\n  return ordered.length % 2 ? ordered[mid] : (ordered[mid - 1] + ordered[mid]) / 2;\n}\n\nmodule.exports = { median };\n";

/// A code block reply the Artisan could give.
pub fn code(lang: &str, body: &str) -> String {
    format!("Here is the whole file.\n\n```{lang}\n{body}```\n\nI fixed the median.")
}

/// One scripted answer.
#[derive(Clone, Debug)]
pub enum Answer {
    /// A reply; usage as a real server would report it: the prompt's size in tokens (about 4
    /// characters each) and `completion_tokens` capped by the request's `max_completion_tokens`.
    Text {
        text: String,
        completion_tokens: u64,
    },
    Status {
        status: u16,
        body: String,
        headers: Vec<(String, String)>,
    },
    Slow {
        text: String,
        delay: Duration,
    },
}

pub fn text(t: impl Into<String>) -> Answer {
    Answer::Text {
        text: t.into(),
        completion_tokens: 200,
    }
}

#[derive(Default)]
struct Script {
    queues: BTreeMap<String, VecDeque<Answer>>,
    /// Answers given when a role's queue is empty.
    fallback: BTreeMap<String, Answer>,
}

/// A local OpenAI-compatible server.
pub struct MockLlm {
    pub server: MockServer,
    script: Arc<Mutex<Script>>,
}

/// Which role a request is from, by the system prompt of the bundled templates.
pub fn role_of(body: &Value) -> String {
    let system = body["messages"][0]["content"].as_str().unwrap_or_default();
    for role in ["Librarian", "Artisan", "Critic"] {
        if system.contains(&format!("You are the {role}")) {
            return role.to_lowercase();
        }
    }
    "unknown".into()
}

struct Responder(Arc<Mutex<Script>>);

impl Respond for Responder {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        let role = role_of(&body);
        let answer = {
            let mut script = self.0.lock().unwrap();
            let next = script.queues.get_mut(&role).and_then(|q| q.pop_front());
            next.or_else(|| script.fallback.get(&role).cloned())
        };
        let model = body["model"].as_str().unwrap_or("mock").to_string();
        let stream = body["stream"].as_bool().unwrap_or(false);
        match answer {
            None => {
                ResponseTemplate::new(500).set_body_string(format!("no scripted answer for {role}"))
            }
            Some(Answer::Status {
                status,
                body,
                headers,
            }) => {
                let mut r = ResponseTemplate::new(status).set_body_raw(body, "application/json");
                for (k, v) in headers {
                    r = r.insert_header(k.as_str(), v.as_str());
                }
                r
            }
            Some(Answer::Text {
                text,
                completion_tokens,
            }) => {
                let cap = body["max_completion_tokens"].as_u64().unwrap_or(u64::MAX);
                completion(
                    &model,
                    &text,
                    prompt_tokens(&body),
                    completion_tokens.min(cap),
                    stream,
                )
            }
            Some(Answer::Slow { text, delay }) => {
                completion(&model, &text, prompt_tokens(&body), 200, stream).set_delay(delay)
            }
        }
    }
}

fn prompt_tokens(body: &Value) -> u64 {
    let chars: usize = body["messages"]
        .as_array()
        .map(|m| {
            m.iter()
                .map(|m| m["content"].as_str().map_or(0, |c| c.chars().count()))
                .sum()
        })
        .unwrap_or(0);
    (chars / 4) as u64
}

fn completion(
    model: &str,
    text: &str,
    prompt: u64,
    completion: u64,
    stream: bool,
) -> ResponseTemplate {
    let usage = json!({"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion});
    if !stream {
        let body = json!({
            "id": "chatcmpl-mock", "object": "chat.completion", "created": 1_700_000_000, "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": usage,
        });
        return ResponseTemplate::new(200).set_body_json(body);
    }
    let chunk = |delta: Value, finish: Value, usage: Value| {
        json!({"id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 1_700_000_000, "model": model,
               "choices": if usage.is_null() { json!([{"index": 0, "delta": delta, "finish_reason": finish}]) } else { json!([]) },
               "usage": usage})
    };
    let mut sse = String::new();
    let mut push = |v: Value| sse.push_str(&format!("data: {v}\n\n"));
    push(chunk(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
        Value::Null,
    ));
    // Split the text into a few deltas, on char boundaries.
    let chars: Vec<char> = text.chars().collect();
    for piece in chars.chunks(40) {
        push(chunk(
            json!({"content": piece.iter().collect::<String>()}),
            Value::Null,
            Value::Null,
        ));
    }
    push(chunk(json!({}), json!("stop"), Value::Null));
    push(chunk(Value::Null, Value::Null, usage));
    sse.push_str("data: [DONE]\n\n");
    ResponseTemplate::new(200).set_body_raw(sse, "text/event-stream")
}

impl MockLlm {
    pub async fn start() -> Self {
        let server = MockServer::start().await;
        let script = Arc::new(Mutex::new(Script::default()));
        Mock::given(method("POST"))
            .and(path("/v1/chat/completions"))
            .respond_with(Responder(script.clone()))
            .mount(&server)
            .await;
        Self { server, script }
    }

    /// Queues answers for a role (`librarian`, `artisan`, `critic`), given in order.
    pub fn script(&self, role: &str, answers: impl IntoIterator<Item = Answer>) -> &Self {
        self.script
            .lock()
            .unwrap()
            .queues
            .entry(role.into())
            .or_default()
            .extend(answers);
        self
    }

    /// The answer a role gets whenever its queue is empty.
    pub fn always(&self, role: &str, answer: Answer) -> &Self {
        self.script
            .lock()
            .unwrap()
            .fallback
            .insert(role.into(), answer);
        self
    }

    /// The usual supporting cast: a Librarian that analyses and a Critic that approves.
    pub fn helpful(&self) -> &Self {
        self.always(
            "librarian",
            text("The median of an even-length list must average the two middle values."),
        );
        self.always("critic", text("The change is correct.\nVERDICT: APPROVE"))
    }

    pub fn base_url(&self) -> String {
        format!("{}/v1", self.server.uri())
    }

    /// Every chat request so far, as JSON, with its role.
    pub async fn requests(&self) -> Vec<(String, Value)> {
        self.server
            .received_requests()
            .await
            .unwrap_or_default()
            .iter()
            .filter_map(|r| serde_json::from_slice::<Value>(&r.body).ok())
            .map(|b| (role_of(&b), b))
            .collect()
    }

    /// The `Authorization` header of every request.
    pub async fn authorizations(&self) -> Vec<String> {
        self.server
            .received_requests()
            .await
            .unwrap_or_default()
            .iter()
            .map(|r| {
                r.headers
                    .get("authorization")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("")
                    .to_string()
            })
            .collect()
    }

    pub async fn requests_of(&self, role: &str) -> Vec<Value> {
        self.requests()
            .await
            .into_iter()
            .filter(|(r, _)| r == role)
            .map(|(_, b)| b)
            .collect()
    }
}

/// A copy of `tests/fixtures/<name>` in a temp dir, made a git repository as real projects are.
pub fn fixture(name: &str) -> TempDir {
    let dir = tempfile::Builder::new()
        .prefix("ralph-test-")
        .tempdir()
        .unwrap();
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
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

fn copy_dir(from: &Path, to: &Path) {
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
pub fn ralph(dir: &Path, llm: &MockLlm) -> assert_cmd::Command {
    let mut cmd = assert_cmd::Command::cargo_bin("ralph-loop").unwrap();
    isolate(&mut cmd, dir);
    cmd.env("OPENAI_BASE_URL", llm.base_url())
        .env("OPENAI_API_KEY", "sk-test-key");
    cmd
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
    ] {
        cmd.env_remove(var);
    }
}

/// The only session folder under `dir/.ralph`.
pub fn session_dir(dir: &Path) -> PathBuf {
    let mut sessions: Vec<PathBuf> = std::fs::read_dir(dir.join(".ralph"))
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("session-")
        })
        .collect();
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

pub fn write(dir: &Path, name: &str, content: &str) {
    std::fs::write(dir.join(name), content).unwrap();
}
