//! Provider clients: the time each adds to a call beyond the server's own (target under 1 ms),
//! and how fast each parses a long streamed reply. Every figure is measured against a baseline
//! in the same run: a bare `reqwest` POST to the same local server reading the same body.
//! Run with `cargo bench --bench providers`; see `docs/performance.md`.

// A benchmark that cannot set up has nothing to measure: panicking with a message is right here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ralph_actors::ports::llm::{ChatMessage, ChatRequest, GuardedRequest, LlmClient};
use ralph_actors::role::Role;
use ralph_loop::providers::{
    AnthropicClient, ClientOptions, GeminiClient, OllamaClient, OpenAiClient,
};
use serde_json::{json, Value};
use tokio::runtime::Runtime;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

#[derive(Clone, Copy)]
enum Wire {
    OpenAi,
    Anthropic,
    Gemini,
    Ollama,
}

impl Wire {
    const ALL: [Wire; 4] = [Wire::OpenAi, Wire::Anthropic, Wire::Gemini, Wire::Ollama];

    fn name(self) -> &'static str {
        match self {
            Wire::OpenAi => "openai",
            Wire::Anthropic => "anthropic",
            Wire::Gemini => "gemini",
            Wire::Ollama => "ollama",
        }
    }

    fn model(self) -> &'static str {
        match self {
            Wire::OpenAi => "openai/gpt-4.1-mini",
            Wire::Anthropic => "anthropic/claude-haiku-4-5",
            Wire::Gemini => "gemini/gemini-2.5-flash",
            Wire::Ollama => "ollama/qwen2.5-coder:7b",
        }
    }

    /// The path the client posts to, for the baseline request.
    fn path(self) -> &'static str {
        match self {
            Wire::OpenAi => "/v1/chat/completions",
            Wire::Anthropic => "/v1/messages",
            Wire::Gemini => "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
            Wire::Ollama => "/api/chat",
        }
    }

    fn client(self, server: &MockServer) -> Box<dyn LlmClient> {
        let base = match self {
            Wire::OpenAi => format!("{}/v1", server.uri()),
            _ => server.uri(),
        };
        let opts = ClientOptions {
            base_url: Some(base),
            api_key: Some("bench-key".into()),
            max_retries: 0,
            ..ClientOptions::default()
        };
        match self {
            Wire::OpenAi => Box::new(OpenAiClient::new(opts).unwrap()),
            Wire::Anthropic => Box::new(AnthropicClient::new(opts).unwrap()),
            Wire::Gemini => Box::new(GeminiClient::new(opts).unwrap()),
            Wire::Ollama => Box::new(OllamaClient::new(opts).unwrap()),
        }
    }

    /// A streamed reply of `deltas` pieces of text, in this protocol.
    fn stream(self, deltas: usize) -> ResponseTemplate {
        let piece = "fn median(v: &[f64]) -> f64 { v[v.len() / 2] }\n";
        let mut body = String::new();
        let mut sse = |event: Option<&str>, data: Value| {
            if let Some(e) = event {
                body.push_str(&format!("event: {e}\n"));
            }
            body.push_str(&format!("data: {data}\n\n"));
        };
        match self {
            Wire::OpenAi => {
                let chunk = |delta: Value, usage: Value| {
                    json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4.1-mini",
                           "choices": if usage.is_null() { json!([{"index": 0, "delta": delta, "finish_reason": null}]) } else { json!([]) },
                           "usage": usage})
                };
                for _ in 0..deltas {
                    sse(None, chunk(json!({"content": piece}), Value::Null));
                }
                sse(
                    None,
                    chunk(
                        Value::Null,
                        json!({"prompt_tokens": 10, "completion_tokens": deltas, "total_tokens": 10 + deltas}),
                    ),
                );
                body.push_str("data: [DONE]\n\n");
            }
            Wire::Anthropic => {
                sse(
                    Some("message_start"),
                    json!({"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant", "model": "claude-haiku-4-5", "content": [], "usage": {"input_tokens": 10, "output_tokens": 1}}}),
                );
                for _ in 0..deltas {
                    sse(
                        Some("content_block_delta"),
                        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": piece}}),
                    );
                }
                sse(
                    Some("message_delta"),
                    json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": deltas}}),
                );
                sse(Some("message_stop"), json!({"type": "message_stop"}));
            }
            Wire::Gemini => {
                for i in 0..deltas {
                    let mut c = json!({"candidates": [{"content": {"role": "model", "parts": [{"text": piece}]}, "index": 0}]});
                    if i + 1 == deltas {
                        c["candidates"][0]["finishReason"] = json!("STOP");
                        c["usageMetadata"] = json!({"promptTokenCount": 10, "candidatesTokenCount": deltas, "totalTokenCount": 10 + deltas});
                    }
                    sse(None, c);
                }
            }
            Wire::Ollama => {
                for _ in 0..deltas {
                    body.push_str(&format!("{}\n", json!({"model": "qwen2.5-coder:7b", "message": {"role": "assistant", "content": piece}, "done": false})));
                }
                body.push_str(&format!("{}\n", json!({"model": "qwen2.5-coder:7b", "message": {"role": "assistant", "content": ""}, "done": true, "prompt_eval_count": 10, "eval_count": deltas})));
            }
        }
        let content_type = if matches!(self, Wire::Ollama) {
            "application/x-ndjson"
        } else {
            "text/event-stream"
        };
        ResponseTemplate::new(200).set_body_raw(body, content_type)
    }
}

/// The request a run sends, sealed by a guard that is off: the client's cost is measured here,
/// the guard's in `benches/guard.rs`.
fn request(model: &str) -> GuardedRequest {
    let request = ChatRequest {
        role: Role::Artisan,
        model: model.into(),
        messages: vec![
            ChatMessage::system("You are the Artisan."),
            ChatMessage::user("Fix median.".repeat(200)),
        ],
        temperature: Some(0.2),
        max_tokens: 4096,
    };
    GuardedRequest::seal(&ralph_guard::Guard::off(), request, "")
        .unwrap()
        .0
}

/// The baseline: the same POST with a plain client, reading the whole body, parsing nothing.
async fn raw(http: &reqwest::Client, url: &str) -> usize {
    let body = json!({"messages": [{"role": "user", "content": "Fix median.".repeat(200)}]});
    let response = http.post(url).json(&body).send().await.unwrap();
    response.bytes().await.unwrap().len()
}

fn bench(c: &mut Criterion) {
    let rt = Runtime::new().unwrap();
    for (group, deltas) in [("call", 20), ("stream", 20_000)] {
        let mut g = c.benchmark_group(group);
        if group == "stream" {
            g.sample_size(20).measurement_time(Duration::from_secs(8));
        }
        for wire in Wire::ALL {
            let server = rt.block_on(MockServer::start());
            rt.block_on(
                Mock::given(method("POST"))
                    .respond_with(wire.stream(deltas))
                    .mount(&server),
            );
            let client = wire.client(&server);
            let http = reqwest::Client::new();
            let url = format!("{}{}", server.uri(), wire.path());
            let bytes = rt.block_on(raw(&http, &url));
            if group == "stream" {
                g.throughput(Throughput::Bytes(bytes as u64));
            }
            g.bench_function(format!("{}/baseline", wire.name()), |b| {
                b.iter(|| rt.block_on(raw(&http, &url)))
            });
            g.bench_function(format!("{}/client", wire.name()), |b| {
                b.iter(|| rt.block_on(client.complete(request(wire.model()))).unwrap())
            });
        }
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
