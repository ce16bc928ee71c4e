#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Test support: fixture projects in temp dirs, and a local server that speaks OpenAI's chat
//! completions protocol, answers each role from a script, and records every request.

use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tempfile::TempDir;
use wiremock::matchers::{method, path, path_regex};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

// A path, not a bare `mod`: the benches load this file by `#[path]` from another folder.
#[path = "support/runs.rs"]
mod runs;
// The benches that load this file use none of these shorthands.
#[allow(unused_imports)]
pub use runs::*;

pub const FIXED_PY: &str = "def median(values):\n    if not values:\n        raise ValueError(\"median of an empty list\")\n    ordered = sorted(values)\n    mid = len(ordered) // 2\n    if len(ordered) % 2:\n        return ordered[mid]\n    return (ordered[mid - 1] + ordered[mid]) / 2\n";
/// Fixes the even case but not the empty list.
pub const HALF_FIXED_PY: &str = "def median(values):\n    ordered = sorted(values)\n    mid = len(ordered) // 2\n    if len(ordered) % 2:\n        return ordered[mid]\n    return (ordered[mid - 1] + ordered[mid]) / 2\n";
pub const FIXED_JS: &str = "function median(values) {\n  const ordered = [...values].sort((a, b) => a - b);\n  const mid = Math.floor(ordered.length / 2);\n  return ordered.length % 2 ? ordered[mid] : (ordered[mid - 1] + ordered[mid]) / 2;\n}\n\nmodule.exports = { median };\n";
/// Sorts numerically and averages the middle pair, but still sorts its argument in place: one
/// test (`does not change its argument`) keeps failing, so the fix takes two iterations.
pub const HALF_FIXED_JS: &str = "function median(values) {\n  const ordered = values.sort((a, b) => a - b);\n  const mid = Math.floor(ordered.length / 2);\n  return ordered.length % 2 ? ordered[mid] : (ordered[mid - 1] + ordered[mid]) / 2;\n}\n\nmodule.exports = { median };\n";

/// `rs-median`'s fix: the mean of the middle pair, which overflows for huge values.
pub const FIXED_RS: &str = "/// The median of a list of numbers; `None` for an empty list.\npub fn median(values: &[f64]) -> Option<f64> {\n    if values.is_empty() {\n        return None;\n    }\n    let mut ordered = values.to_vec();\n    ordered.sort_by(f64::total_cmp);\n    let mid = ordered.len() / 2;\n    if ordered.len() % 2 == 1 {\n        Some(ordered[mid])\n    } else {\n        Some((ordered[mid - 1] + ordered[mid]) / 2.0)\n    }\n}\n";

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
    /// A reply after `delay`, its usage the reply's own size (about 4 characters a token), as a
    /// real model's time and bill both follow the tokens it writes (the benchmarks' model).
    Paced {
        text: String,
        delay: Duration,
    },
    /// A reply made from the request's text (every string in its body, joined): a model that
    /// works on what it is shown.
    From(Reply),
    /// `then` when the request's prompt contains `needle`, else `otherwise`: a model that
    /// answers from what it is shown.
    IfPrompt {
        needle: String,
        then: Box<Answer>,
        otherwise: Box<Answer>,
    },
}

/// How an [`Answer::From`] makes its reply.
#[derive(Clone)]
pub struct Reply(pub Arc<dyn Fn(&str) -> String + Send + Sync>);

impl std::fmt::Debug for Reply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Reply(..)")
    }
}

/// A reply made by `f` from the request's text.
pub fn from_prompt(f: impl Fn(&str) -> String + Send + Sync + 'static) -> Answer {
    Answer::From(Reply(Arc::new(f)))
}

/// Every string of a request's body, in order, joined by new lines: the prompt as the model
/// reads it, whatever the protocol.
pub fn prompt_of(body: &Value) -> String {
    fn walk(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::String(s) => out.push(s.clone()),
            Value::Array(items) => items.iter().for_each(|i| walk(i, out)),
            Value::Object(map) => map.values().for_each(|i| walk(i, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(body, &mut out);
    out.join("\n")
}

pub fn if_prompt(needle: &str, then: Answer, otherwise: Answer) -> Answer {
    Answer::IfPrompt {
        needle: needle.into(),
        then: Box::new(then),
        otherwise: Box::new(otherwise),
    }
}

pub fn text(t: impl Into<String>) -> Answer {
    Answer::Text {
        text: t.into(),
        completion_tokens: 200,
    }
}

/// A reply after `delay`: a model slow enough for a test to act while it waits.
pub fn slow(t: impl Into<String>, delay: Duration) -> Answer {
    Answer::Slow {
        text: t.into(),
        delay,
    }
}

#[derive(Default)]
struct Script {
    queues: BTreeMap<String, VecDeque<Answer>>,
    /// Answers given when a role's queue is empty.
    fallback: BTreeMap<String, Answer>,
    /// How the server counts and bills, when not as usual.
    billing: Billing,
    /// Prompt prefixes marked with `cache_control` (Anthropic) so far: a later request with the
    /// same prefix reads it from the cache. The real API caches only prefixes of at least
    /// 1,024 tokens (most models); this mock caches any.
    cached: std::collections::BTreeSet<String>,
}

/// How the mock server counts a prompt and what it reports of a reply's cost.
#[derive(Clone, Debug, Default)]
pub struct Billing {
    /// Prompt tokens per character; `None`: 0.25 (about 4 characters a token).
    pub tokens_per_char: Option<f64>,
    /// Report 0 tokens in and out, as Gemini's final stream chunk did behind LiteLLM.
    pub zero_usage: bool,
    /// Send this as `x-litellm-response-cost`, as a LiteLLM proxy does.
    pub cost_header: Option<String>,
    /// Bill the scripted reply length whatever the request's `max_tokens`.
    pub ignore_max_tokens: bool,
}

/// The wire protocol a mock server speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    OpenAi,
    Azure,
    Anthropic,
    Gemini,
    Ollama,
}

/// A local server that speaks one provider's protocol, answers each role from a script, and
/// records every request.
pub struct MockLlm {
    pub server: MockServer,
    pub protocol: Protocol,
    script: Arc<Mutex<Script>>,
}

/// What the mock needs to know of a request, whatever its protocol.
struct Asked {
    /// The characters of an Anthropic request's prompt up to its `cache_control` breakpoint,
    /// and the breakpoint's text (system prompt and first block), if it has one.
    cache_prefix: Option<(usize, String)>,
    role: String,
    model: String,
    stream: bool,
    max_tokens: Option<u64>,
    prompt_chars: usize,
}

fn system_text(protocol: Protocol, body: &Value) -> String {
    let text = match protocol {
        Protocol::Anthropic => body["system"].as_str(),
        Protocol::Gemini => body["systemInstruction"]["parts"][0]["text"].as_str(),
        _ => body["messages"][0]["content"].as_str(),
    };
    text.unwrap_or_default().to_string()
}

/// Which role a request is from, by the system prompt of the bundled templates: `judge` for the
/// Critic's judgement of Chaos's tests, `chaos` for Chaos.
pub fn role_of_system(system: &str) -> String {
    if system.contains("You plan a task") {
        return "planner".into();
    }
    if system.contains("Chaos, the team's adversary") {
        return "judge".into();
    }
    if system.contains("regression test for Chaos") {
        return "replay".into();
    }
    if system.contains("You are Chaos") {
        return "chaos".into();
    }
    if system.contains("You are a hook in ralph-loop") {
        return "hook".into();
    }
    for role in ["Librarian", "Artisan", "Critic"] {
        if system.contains(&format!("You are the {role}")) {
            return role.to_lowercase();
        }
    }
    "unknown".into()
}

/// Characters of the text fields in a request's messages, whatever their shape.
fn text_chars(v: &Value) -> usize {
    match v {
        Value::String(s) => s.chars().count(),
        Value::Array(a) => a.iter().map(text_chars).sum(),
        Value::Object(o) => o
            .iter()
            .filter(|(k, _)| matches!(k.as_str(), "content" | "text" | "parts"))
            .map(|(_, v)| text_chars(v))
            .sum(),
        _ => 0,
    }
}

fn asked(protocol: Protocol, request: &Request, body: &Value) -> Asked {
    let path = request.url.path().to_string();
    let str_of = |v: &Value| v.as_str().unwrap_or("").to_string();
    let (model, stream, max_tokens) = match protocol {
        Protocol::OpenAi => (
            str_of(&body["model"]),
            body["stream"].as_bool().unwrap_or(false),
            body["max_completion_tokens"].as_u64(),
        ),
        Protocol::Azure => (
            path.split('/').nth(3).unwrap_or("").to_string(),
            body["stream"].as_bool().unwrap_or(false),
            body["max_completion_tokens"]
                .as_u64()
                .or(body["max_tokens"].as_u64()),
        ),
        Protocol::Anthropic => (
            str_of(&body["model"]),
            body["stream"].as_bool().unwrap_or(false),
            body["max_tokens"].as_u64(),
        ),
        Protocol::Gemini => {
            let last = path.rsplit('/').next().unwrap_or("");
            let (model, method) = last.split_once(':').unwrap_or((last, ""));
            (
                model.to_string(),
                method == "streamGenerateContent",
                body["generationConfig"]["maxOutputTokens"].as_u64(),
            )
        }
        Protocol::Ollama => (
            str_of(&body["model"]),
            body["stream"].as_bool().unwrap_or(true),
            body["options"]["num_predict"].as_u64(),
        ),
    };
    let prompt_chars = match protocol {
        Protocol::Anthropic => text_chars(&body["messages"]) + text_chars(&body["system"]),
        Protocol::Gemini => text_chars(&body["contents"]) + text_chars(&body["systemInstruction"]),
        _ => text_chars(&body["messages"]),
    };
    let cache_prefix = match protocol {
        Protocol::Anthropic => {
            let block = &body["messages"][0]["content"][0];
            block.get("cache_control").map(|_| {
                let text = format!(
                    "{}{}",
                    body["system"].as_str().unwrap_or(""),
                    block["text"].as_str().unwrap_or("")
                );
                (text.chars().count(), text)
            })
        }
        _ => None,
    };
    Asked {
        cache_prefix,
        role: role_of_system(&system_text(protocol, body)),
        model,
        stream,
        max_tokens,
        prompt_chars,
    }
}

struct Responder(Protocol, Arc<Mutex<Script>>);

impl Respond for Responder {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        let asked = asked(self.0, request, &body);
        let answer = {
            let mut script = self.1.lock().unwrap();
            let next = script
                .queues
                .get_mut(&asked.role)
                .and_then(|q| q.pop_front());
            next.or_else(|| script.fallback.get(&asked.role).cloned())
        };
        // A choice may lead to a reply made from the prompt, and that to nothing further.
        let mut answer = answer;
        let answer = loop {
            answer = match answer {
                Some(Answer::From(Reply(f))) => Some(text(f(&prompt_of(&body)))),
                Some(Answer::IfPrompt {
                    needle,
                    then,
                    otherwise,
                }) => {
                    let prompt = String::from_utf8_lossy(&request.body).replace("\\n", "\n");
                    Some(if prompt.contains(&needle) {
                        *then
                    } else {
                        *otherwise
                    })
                }
                other => break other,
            };
        };
        // Usage as a real server reports it: the prompt's size (about 4 characters a token,
        // unless the test says otherwise) and a reply capped by the request's own limit.
        let (billing, cache) = {
            let mut script = self.1.lock().unwrap();
            // Anthropic's usage: a prefix seen before is read from the cache, a new one written.
            let cache = asked.cache_prefix.clone().map(|(chars, text)| {
                let tokens = (chars / 4) as u64;
                match script.cached.insert(text) {
                    true => Cache {
                        written: tokens,
                        read: 0,
                    },
                    false => Cache {
                        written: 0,
                        read: tokens,
                    },
                }
            });
            (script.billing.clone(), cache.unwrap_or_default())
        };
        let prompt = match billing.tokens_per_char {
            Some(ratio) => (asked.prompt_chars as f64 * ratio).ceil() as u64,
            None => (asked.prompt_chars / 4) as u64,
        };
        let billed = |r: ResponseTemplate| match &billing.cost_header {
            Some(cost) => r.insert_header("x-litellm-response-cost", cost.as_str()),
            None => r,
        };
        let zero = billing.zero_usage;
        let usage = |prompt: u64, out: u64| if zero { (0, 0) } else { (prompt, out) };
        match answer {
            None => ResponseTemplate::new(500)
                .set_body_string(format!("no scripted answer for {}", asked.role)),
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
                let cap = match billing.ignore_max_tokens {
                    true => u64::MAX,
                    false => asked.max_tokens.unwrap_or(u64::MAX),
                };
                let (prompt, out) = usage(prompt, completion_tokens.min(cap));
                billed(reply(self.0, &asked, &text, prompt, out, cache))
            }
            Some(Answer::Slow { text, delay }) => {
                let (prompt, out) = usage(prompt, 200);
                billed(reply(self.0, &asked, &text, prompt, out, cache)).set_delay(delay)
            }
            Some(Answer::Paced { text, delay }) => {
                let (prompt, out) = usage(prompt, (text.len() as u64).div_ceil(4));
                billed(reply(self.0, &asked, &text, prompt, out, cache)).set_delay(delay)
            }
            Some(Answer::IfPrompt { .. }) | Some(Answer::From(_)) => {
                unreachable!("resolved above")
            }
        }
    }
}

/// The text in a few pieces, on char boundaries, as a stream would deliver it.
fn pieces(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(40).map(|c| c.iter().collect()).collect()
}

fn sse(events: Vec<(Option<&str>, Value)>) -> ResponseTemplate {
    let mut body = String::new();
    for (name, data) in events {
        if let Some(name) = name {
            body.push_str(&format!("event: {name}\n"));
        }
        body.push_str(&format!("data: {data}\n\n"));
    }
    ResponseTemplate::new(200).set_body_raw(body, "text/event-stream")
}

/// Prompt tokens an Anthropic reply reports as written to or read from its cache.
#[derive(Clone, Copy, Debug, Default)]
struct Cache {
    written: u64,
    read: u64,
}

fn reply(
    protocol: Protocol,
    asked: &Asked,
    text: &str,
    prompt: u64,
    out: u64,
    cache: Cache,
) -> ResponseTemplate {
    let model = asked.model.as_str();
    match protocol {
        Protocol::OpenAi | Protocol::Azure => completion(model, text, prompt, out, asked.stream),
        Protocol::Anthropic => anthropic_reply(model, text, prompt, out, asked.stream, cache),
        Protocol::Gemini => gemini_reply(model, text, prompt, out, asked.stream),
        Protocol::Ollama => ollama_reply(model, text, prompt, out, asked.stream),
    }
}

fn anthropic_reply(
    model: &str,
    text: &str,
    prompt: u64,
    out: u64,
    stream: bool,
    cache: Cache,
) -> ResponseTemplate {
    // Anthropic's `input_tokens` leaves out the tokens written to or read from the cache.
    let uncached = prompt.saturating_sub(cache.written + cache.read);
    let usage = |out: u64| {
        json!({"input_tokens": uncached, "output_tokens": out,
               "cache_creation_input_tokens": cache.written, "cache_read_input_tokens": cache.read})
    };
    if !stream {
        return ResponseTemplate::new(200).set_body_json(json!({
            "id": "msg_mock", "type": "message", "role": "assistant", "model": model,
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn", "stop_sequence": null, "usage": usage(out),
        }));
    }
    let mut events = vec![
        (
            Some("message_start"),
            json!({"type": "message_start", "message": {
            "id": "msg_mock", "type": "message", "role": "assistant", "model": model,
            "content": [], "stop_reason": null, "usage": usage(1)}}),
        ),
        (
            Some("content_block_start"),
            json!({"type": "content_block_start", "index": 0,
            "content_block": {"type": "text", "text": ""}}),
        ),
        (Some("ping"), json!({"type": "ping"})),
    ];
    for p in pieces(text) {
        events.push((
            Some("content_block_delta"),
            json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "text_delta", "text": p}}),
        ));
    }
    events.push((
        Some("content_block_stop"),
        json!({"type": "content_block_stop", "index": 0}),
    ));
    events.push((Some("message_delta"), json!({"type": "message_delta",
        "delta": {"stop_reason": "end_turn", "stop_sequence": null}, "usage": {"output_tokens": out}})));
    events.push((Some("message_stop"), json!({"type": "message_stop"})));
    sse(events)
}

fn gemini_reply(model: &str, text: &str, prompt: u64, out: u64, stream: bool) -> ResponseTemplate {
    let chunk = |t: &str, last: bool| {
        let mut c = json!({"candidates": [{"content": {"role": "model", "parts": [{"text": t}]}, "index": 0}],
                           "modelVersion": model});
        if last {
            c["candidates"][0]["finishReason"] = json!("STOP");
            c["usageMetadata"] = json!({"promptTokenCount": prompt, "candidatesTokenCount": out,
                                        "totalTokenCount": prompt + out});
        }
        c
    };
    if !stream {
        return ResponseTemplate::new(200).set_body_json(chunk(text, true));
    }
    let ps = pieces(text);
    let n = ps.len();
    sse(ps
        .iter()
        .enumerate()
        .map(|(i, p)| (None, chunk(p, i + 1 == n)))
        .collect())
}

fn ollama_reply(model: &str, text: &str, prompt: u64, out: u64, stream: bool) -> ResponseTemplate {
    let line = |content: &str, done: bool| {
        let mut l = json!({"model": model, "created_at": "2026-11-22T07:05:07Z",
                           "message": {"role": "assistant", "content": content}, "done": done});
        if done {
            l["done_reason"] = json!("stop");
            l["prompt_eval_count"] = json!(prompt);
            l["eval_count"] = json!(out);
        }
        l
    };
    if !stream {
        return ResponseTemplate::new(200).set_body_json(line(text, true));
    }
    let mut body = String::new();
    for p in pieces(text) {
        body.push_str(&format!("{}\n", line(&p, false)));
    }
    body.push_str(&format!("{}\n", line("", true)));
    ResponseTemplate::new(200).set_body_raw(body, "application/x-ndjson")
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
    /// A server speaking OpenAI's chat completions.
    pub async fn start() -> Self {
        Self::start_with(Protocol::OpenAi).await
    }

    pub async fn start_with(protocol: Protocol) -> Self {
        let server = MockServer::start().await;
        let script = Arc::new(Mutex::new(Script::default()));
        let route = match protocol {
            Protocol::OpenAi => Mock::given(path("/v1/chat/completions")),
            Protocol::Azure => {
                Mock::given(path_regex(r"^/openai/deployments/[^/]+/chat/completions$"))
            }
            Protocol::Anthropic => Mock::given(path("/v1/messages")),
            Protocol::Gemini => Mock::given(path_regex(
                r"^/v1beta/models/[^/:]+:(generateContent|streamGenerateContent)$",
            )),
            Protocol::Ollama => Mock::given(path("/api/chat")),
        };
        route
            .and(method("POST"))
            .respond_with(Responder(protocol, script.clone()))
            .mount(&server)
            .await;
        Self {
            server,
            protocol,
            script,
        }
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
    /// Counts and bills as `billing` says from now on.
    pub fn bill(&self, billing: Billing) -> &Self {
        self.script.lock().unwrap().billing = billing;
        self
    }

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

    /// The environment that points an OpenAI client at this server.
    pub fn openai_env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("OPENAI_BASE_URL", self.base_url()),
            ("OPENAI_API_KEY", "sk-test-key".into()),
        ]
    }

    /// Every chat request so far, as JSON, with its role.
    pub async fn requests(&self) -> Vec<(String, Value)> {
        self.server
            .received_requests()
            .await
            .unwrap_or_default()
            .iter()
            .filter_map(|r| serde_json::from_slice::<Value>(&r.body).ok())
            .map(|b| (role_of_system(&system_text(self.protocol, &b)), b))
            .collect()
    }

    /// The model each request asked for, wherever its protocol puts it.
    pub async fn models(&self) -> Vec<String> {
        self.server
            .received_requests()
            .await
            .unwrap_or_default()
            .iter()
            .map(|r| {
                let body = serde_json::from_slice::<Value>(&r.body).unwrap_or(Value::Null);
                asked(self.protocol, r, &body).model
            })
            .collect()
    }

    /// One header of every request.
    pub async fn headers(&self, name: &str) -> Vec<String> {
        self.server
            .received_requests()
            .await
            .unwrap_or_default()
            .iter()
            .map(|r| {
                let value = r.headers.get(name).and_then(|v| v.to_str().ok());
                value.unwrap_or("").to_string()
            })
            .collect()
    }

    /// The server's root URL.
    pub fn uri(&self) -> String {
        self.server.uri()
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
    let out = std::process::Command::new("node")
        .args(["--test", path])
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
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
