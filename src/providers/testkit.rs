//! Test helpers: OpenAI-protocol replies for `wiremock`, and clients pointed at it.

use std::time::Duration;

use ralph_actors::llm::{ChatMessage, ChatRequest};
use ralph_actors::roles::Role;
use serde_json::{json, Value};
use wiremock::{MockServer, ResponseTemplate};

use super::openai::OpenAiClient;
use super::options::ClientOptions;
use super::retry::RetryPolicy;

pub const SERVED_MODEL: &str = "gpt-4.1-mini-2025-04-14";

/// Short backoffs so retry tests take milliseconds; server delays are still honoured.
pub fn fast_retries(max_retries: u32) -> RetryPolicy {
    RetryPolicy {
        max_retries,
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_millis(40),
        ..RetryPolicy::default()
    }
}

/// A client for `server` with key `test-key`; `tweak` adjusts the options first.
pub fn client(server: &MockServer, tweak: impl FnOnce(&mut ClientOptions)) -> OpenAiClient {
    let mut opts = ClientOptions {
        base_url: Some(format!("{}/v1", server.uri())),
        api_key: Some("test-key".into()),
        timeout: Duration::from_secs(10),
        ..ClientOptions::default()
    };
    tweak(&mut opts);
    let retries = opts.max_retries;
    OpenAiClient::new(opts)
        .expect("client")
        .with_retry_policy(fast_retries(retries))
}

pub fn request(model: &str) -> ChatRequest {
    request_for(Role::Artisan, model, "fix it")
}

pub fn request_for(role: Role, model: &str, user: &str) -> ChatRequest {
    ChatRequest {
        role,
        model: model.into(),
        messages: vec![
            ChatMessage::system("You fix code."),
            ChatMessage::user(user),
        ],
        temperature: Some(0.2),
        max_tokens: 321,
    }
}

pub fn usage_json(prompt: u32, completion: u32, cached: u32) -> Value {
    json!({
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": { "cached_tokens": cached, "audio_tokens": 0 },
        "completion_tokens_details": { "reasoning_tokens": 0 }
    })
}

fn chunk(delta: Value, finish: Option<&str>, usage: Option<Value>) -> Value {
    let choices = if delta.is_null() {
        json!([])
    } else {
        json!([{ "index": 0, "delta": delta, "finish_reason": finish }])
    };
    json!({
        "id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1_700_000_000,
        "model": SERVED_MODEL, "choices": choices, "usage": usage
    })
}

/// An SSE stream: a role chunk, one chunk per delta, a finish chunk, then (if given) the usage
/// chunk with no choices, then `[DONE]`.
pub fn sse_reply(deltas: &[&str], usage: Option<Value>) -> ResponseTemplate {
    let mut events = vec![chunk(
        json!({ "role": "assistant", "content": "" }),
        None,
        None,
    )];
    events.extend(
        deltas
            .iter()
            .map(|d| chunk(json!({ "content": d }), None, None)),
    );
    events.push(chunk(json!({}), Some("stop"), None));
    if let Some(u) = usage {
        events.push(chunk(Value::Null, None, Some(u)));
    }
    let mut body: String = events.iter().map(|e| format!("data: {e}\n\n")).collect();
    body.push_str("data: [DONE]\n\n");
    ResponseTemplate::new(200).set_body_raw(body, "text/event-stream")
}

pub fn json_reply(text: &str, usage: Option<Value>) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1_700_000_000, "model": SERVED_MODEL,
        "choices": [{ "index": 0, "message": { "role": "assistant", "content": text }, "finish_reason": "stop" }],
        "usage": usage
    }))
}

pub fn error_reply(status: u16, message: &str, code: &str) -> ResponseTemplate {
    ResponseTemplate::new(status).set_body_json(json!({
        "error": { "message": message, "type": "error", "param": null, "code": code }
    }))
}

/// The JSON body of the last request the server received.
pub async fn last_body(server: &MockServer) -> Value {
    let received = server.received_requests().await.expect("recording on");
    let last = received.last().expect("a request");
    serde_json::from_slice(&last.body).expect("a JSON body")
}
