//! The mock model's replies, as each protocol words them (streamed or whole).

use serde_json::{json, Value};
use wiremock::ResponseTemplate;

use super::{Asked, Protocol};

/// The text in a few pieces, on char boundaries, as a stream would deliver it.
pub(super) fn pieces(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(40).map(|c| c.iter().collect()).collect()
}

pub(super) fn sse(events: Vec<(Option<&str>, Value)>) -> ResponseTemplate {
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
pub(super) struct Cache {
    pub(super) written: u64,
    pub(super) read: u64,
}

pub(super) fn reply(
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
        Protocol::Gemini => gemini_reply(asked, text, prompt, out),
        Protocol::Ollama => ollama_reply(asked, text, prompt, out),
    }
}

pub(super) fn anthropic_reply(
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

pub(super) fn gemini_reply(asked: &Asked, text: &str, prompt: u64, out: u64) -> ResponseTemplate {
    let (model, stream) = (asked.model.as_str(), asked.stream);
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

pub(super) fn ollama_reply(asked: &Asked, text: &str, prompt: u64, out: u64) -> ResponseTemplate {
    let (model, stream) = (asked.model.as_str(), asked.stream);
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

pub(super) fn completion(
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
