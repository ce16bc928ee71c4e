//! A local model server for the real coding-agent CLIs that use tools: it speaks Anthropic's
//! Messages API (Claude Code), OpenAI's Responses API (Codex, OpenCode), Chat Completions
//! (Qwen Code) and Gemini's `streamGenerateContent` (the Gemini CLI),
//! all streamed, and plays a scripted session of tool calls ending in a text.
//!
//! Which step a request gets is read from the conversation it carries: the number of tool
//! results in it. A CLI resends the whole conversation each turn, so this holds however many
//! side requests (titles, summaries) it makes; those carry no tools and get a short text.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};
use wiremock::matchers::{method, path, path_regex};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// One step of the scripted session.
#[derive(Clone, Debug)]
pub enum Step {
    /// A call of the CLI's own tool: Anthropic's `tool_use` (input is JSON), or a Responses API
    /// function call (input is its JSON arguments) or custom tool call (input is a string, as
    /// Codex's freeform `apply_patch` takes).
    Tool { name: String, input: Value },
    /// The closing answer.
    Text(String),
}

pub fn tool(name: &str, input: Value) -> Step {
    Step::Tool {
        name: name.into(),
        input,
    }
}

/// Tokens each reply reports: in, out.
pub const USAGE: (u64, u64) = (1000, 50);

struct Session {
    steps: Vec<Step>,
    ids: AtomicU64,
}

impl Session {
    fn step(&self, done: usize) -> Step {
        let last = self.steps.len().saturating_sub(1);
        self.steps[done.min(last)].clone()
    }

    fn id(&self, prefix: &str) -> String {
        format!("{prefix}_{}", self.ids.fetch_add(1, Ordering::Relaxed))
    }
}

fn sse(events: Vec<(&str, Value)>) -> ResponseTemplate {
    let body: String = events
        .into_iter()
        .map(|(name, data)| format!("event: {name}\ndata: {data}\n\n"))
        .collect();
    ResponseTemplate::new(200).set_body_raw(body, "text/event-stream")
}

/// Tool results in an Anthropic conversation.
fn tool_results(messages: &Value) -> usize {
    let blocks = messages
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["content"].as_array())
        .flatten();
    blocks.filter(|b| b["type"] == "tool_result").count()
}

struct Anthropic(Arc<Session>);

impl Respond for Anthropic {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        let model = body["model"].clone();
        let has_tools = body["tools"].as_array().is_some_and(|t| !t.is_empty());
        let step = match has_tools {
            true => self.0.step(tool_results(&body["messages"])),
            false => Step::Text("Fix the task".into()),
        };
        let (block, stop) = match &step {
            Step::Tool { name, input } => (
                json!({"type": "tool_use", "id": self.0.id("toolu"), "name": name, "input": input}),
                "tool_use",
            ),
            Step::Text(text) => (json!({"type": "text", "text": text}), "end_turn"),
        };
        let usage = json!({"input_tokens": USAGE.0, "output_tokens": USAGE.1});
        let id = self.0.id("msg");
        if !body["stream"].as_bool().unwrap_or(false) {
            return ResponseTemplate::new(200).set_body_json(json!({
                "id": id, "type": "message", "role": "assistant", "model": model,
                "content": [block], "stop_reason": stop, "stop_sequence": null, "usage": usage,
            }));
        }
        let (start, delta) = match &step {
            Step::Tool { input, .. } => {
                let mut start = block.clone();
                start["input"] = json!({});
                let delta = json!({"type": "input_json_delta", "partial_json": input.to_string()});
                (start, delta)
            }
            Step::Text(text) => (
                json!({"type": "text", "text": ""}),
                json!({"type": "text_delta", "text": text}),
            ),
        };
        sse(vec![
            (
                "message_start",
                json!({"type": "message_start", "message": {
                "id": id, "type": "message", "role": "assistant", "model": model, "content": [],
                "stop_reason": null, "usage": {"input_tokens": USAGE.0, "output_tokens": 1}}}),
            ),
            (
                "content_block_start",
                json!({"type": "content_block_start", "index": 0, "content_block": start}),
            ),
            (
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0, "delta": delta}),
            ),
            (
                "content_block_stop",
                json!({"type": "content_block_stop", "index": 0}),
            ),
            (
                "message_delta",
                json!({"type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": USAGE.1}}),
            ),
            ("message_stop", json!({"type": "message_stop"})),
        ])
    }
}

struct Responses(Arc<Session>);

impl Respond for Responses {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        let done = body["input"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|i| {
                matches!(
                    i["type"].as_str(),
                    Some("function_call_output" | "custom_tool_call_output")
                )
            })
            .count();
        let has_tools = body["tools"].as_array().is_some_and(|t| !t.is_empty());
        let step = match has_tools {
            true => self.0.step(done),
            false => Step::Text("Fix the task".into()),
        };
        let text = match &step {
            Step::Text(text) => Some(text.clone()),
            Step::Tool { .. } => None,
        };
        let item = match step {
            Step::Tool {
                name,
                input: Value::String(input),
            } => json!({"type": "custom_tool_call", "id": self.0.id("ctc"),
                "call_id": self.0.id("call"), "name": name, "input": input, "status": "completed"}),
            Step::Tool { name, input } => json!({"type": "function_call", "id": self.0.id("fc"),
                "call_id": self.0.id("call"), "name": name, "arguments": input.to_string(),
                "status": "completed"}),
            Step::Text(text) => json!({"type": "message", "id": self.0.id("msg"),
                "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}]}),
        };
        let id = self.0.id("resp");
        let response = json!({"id": id, "object": "response", "status": "in_progress",
            "model": body["model"], "output": []});
        let mut completed = response.clone();
        completed["status"] = json!("completed");
        completed["output"] = json!([item.clone()]);
        completed["usage"] = json!({"input_tokens": USAGE.0, "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": USAGE.1, "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": USAGE.0 + USAGE.1});
        let mut events = vec![
            (
                "response.created",
                json!({"type": "response.created", "response": response}),
            ),
            (
                "response.output_item.added",
                json!({"type": "response.output_item.added", "output_index": 0, "item": item}),
            ),
        ];
        // A message's text streams as deltas before its item is done (OpenCode reads these).
        if let Some(text) = text {
            events.push((
                "response.output_text.delta",
                json!({"type": "response.output_text.delta", "item_id": item["id"],
                    "output_index": 0, "content_index": 0, "delta": text}),
            ));
        }
        events.extend([
            (
                "response.output_item.done",
                json!({"type": "response.output_item.done", "output_index": 0, "item": item}),
            ),
            (
                "response.completed",
                json!({"type": "response.completed", "response": completed}),
            ),
        ]);
        sse(events)
    }
}

/// `data:` lines, then the end of an OpenAI stream.
fn data_stream(chunks: Vec<Value>) -> ResponseTemplate {
    let mut body: String = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
    body.push_str("data: [DONE]\n\n");
    ResponseTemplate::new(200).set_body_raw(body, "text/event-stream")
}

/// OpenAI's Chat Completions, streamed with the usage last (Qwen Code): a step is a
/// `tool_calls` delta whose arguments come in two pieces, or content.
struct ChatCompletions(Arc<Session>);

impl Respond for ChatCompletions {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        let messages = body["messages"].as_array().cloned().unwrap_or_default();
        let has_tools = body["tools"].as_array().is_some_and(|t| !t.is_empty());
        let step = match has_tools {
            true => self
                .0
                .step(messages.iter().filter(|m| m["role"] == "tool").count()),
            false => Step::Text("Fix the task".into()),
        };
        let chunk = |choices: Value| {
            json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1,
                "model": body["model"], "choices": choices})
        };
        let mut chunks = match step {
            Step::Tool { name, input } => {
                let args = input.to_string();
                let (head, tail) = args.split_at(args.len() / 2);
                vec![
                    chunk(
                        json!([{"index": 0, "delta": {"role": "assistant", "tool_calls": [
                        {"index": 0, "id": self.0.id("call"), "type": "function",
                         "function": {"name": name, "arguments": head}}]}}]),
                    ),
                    chunk(json!([{"index": 0, "delta": {"tool_calls": [
                        {"index": 0, "function": {"arguments": tail}}]}}])),
                    chunk(json!([{"index": 0, "delta": {}, "finish_reason": "tool_calls"}])),
                ]
            }
            Step::Text(text) => vec![
                chunk(json!([{"index": 0, "delta": {"role": "assistant", "content": text}}])),
                chunk(json!([{"index": 0, "delta": {}, "finish_reason": "stop"}])),
            ],
        };
        let mut last = chunk(json!([]));
        last["usage"] = json!({"prompt_tokens": USAGE.0, "completion_tokens": USAGE.1,
            "total_tokens": USAGE.0 + USAGE.1});
        chunks.push(last);
        data_stream(chunks)
    }
}

/// Gemini's `streamGenerateContent?alt=sse` (the Gemini CLI): each step one chunk, a
/// `functionCall` part or text, with the usage.
struct Gemini(Arc<Session>);

impl Respond for Gemini {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        let parts = body["contents"].as_array().into_iter().flatten();
        let done = parts
            .filter_map(|c| c["parts"].as_array())
            .flatten()
            .filter(|p| p.get("functionResponse").is_some())
            .count();
        let has_tools = body["tools"].as_array().is_some_and(|t| !t.is_empty());
        let step = match has_tools {
            true => self.0.step(done),
            false => Step::Text("Fix the task".into()),
        };
        let part = match step {
            Step::Tool { name, input } => json!({"functionCall": {"name": name, "args": input}}),
            Step::Text(text) => json!({"text": text}),
        };
        let chunk = json!({"candidates": [{"content": {"role": "model", "parts": [part]},
            "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": USAGE.0, "candidatesTokenCount": USAGE.1,
                "totalTokenCount": USAGE.0 + USAGE.1}});
        ResponseTemplate::new(200)
            .set_body_raw(format!("data: {chunk}\r\n\r\n"), "text/event-stream")
    }
}

/// The server, playing `steps` to whichever CLI calls it.
pub struct AgentWire {
    pub server: MockServer,
}

impl AgentWire {
    pub async fn start(steps: Vec<Step>) -> Self {
        assert!(!steps.is_empty());
        let session = Arc::new(Session {
            steps,
            ids: AtomicU64::new(0),
        });
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path("/v1/messages/count_tokens"))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({"input_tokens": 100})))
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .and(path("/v1/messages"))
            .respond_with(Anthropic(session.clone()))
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .and(path("/v1/responses"))
            .respond_with(Responses(session.clone()))
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .and(path("/v1/chat/completions"))
            .respond_with(ChatCompletions(session.clone()))
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .and(path_regex("^/v1beta/models/[^/]+:streamGenerateContent$"))
            .respond_with(Gemini(session))
            .mount(&server)
            .await;
        Self { server }
    }

    /// The bodies of the requests made to `route` (`/v1/messages`, `/v1/responses`,
    /// `/v1/chat/completions`).
    pub async fn bodies(&self, route: &str) -> Vec<Value> {
        let requests = self.server.received_requests().await.unwrap_or_default();
        requests
            .iter()
            .filter(|r| r.url.path() == route)
            .filter_map(|r| serde_json::from_slice(&r.body).ok())
            .collect()
    }
}
