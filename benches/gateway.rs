//! The model gateway's cost per call (issue 49), in a release build: the time to a streamed
//! reply's first byte through the gateway beside the same call made straight to the server,
//! paired call by call, against a local server that streams Anthropic's events or OpenAI's
//! Chat Completions chunks (each protocol through a gateway of its own).
//!
//! Requests vary as a coding agent's do: its conversation grows from a few KiB to a megabyte of
//! code and tool results, some of it holds secrets to mask, and it is sent again with each call
//! (`resent`: what was masked before is reused) while its newest message is new (`new`: a text
//! never seen, masked whole). Each shape runs
//! `RALPH_BENCH_CALLS` pairs (default 200) in alternating order; the table gives the median and
//! p90 of both and of the difference, and the worst difference. Run with
//! `cargo bench --bench gateway`; it writes `target/bench-gateway.json`. See
//! `docs/performance.md`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "common/env.rs"]
mod env;

use std::sync::Arc;
use std::time::{Duration, Instant};

use ralph_actors::events::bus::EventBus;
use ralph_guard::tokens::O200k;
use ralph_guard::{Guard, GuardConfig};
use ralph_loop::gateway::{Gateway, Provider, Purse, Upstream};
use serde_json::{json, Value};

/// The two wire protocols measured: Anthropic's Messages (Claude Code) and OpenAI's Chat
/// Completions (Qwen Code, Aider).
#[derive(Clone, Copy, PartialEq)]
enum Wire {
    Messages,
    Chat,
}

impl Wire {
    fn name(self) -> &'static str {
        match self {
            Wire::Messages => "messages",
            Wire::Chat => "chat",
        }
    }

    fn path(self) -> &'static str {
        match self {
            Wire::Messages => "/v1/messages",
            Wire::Chat => "/v1/chat/completions",
        }
    }

    fn provider(self) -> Provider {
        match self {
            Wire::Messages => Provider::Anthropic,
            Wire::Chat => Provider::Openai,
        }
    }

    /// The request with `text` as its last message's content.
    fn body(self, text: &str) -> Value {
        match self {
            Wire::Messages => {
                json!({"model": "claude-sonnet-4-5", "max_tokens": 8192, "stream": true,
                "messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": text}]}]})
            }
            Wire::Chat => json!({"model": "gpt-4.1", "max_tokens": 8192, "stream": true,
                "stream_options": {"include_usage": true},
                "messages": [{"role": "system", "content": "You are a coding agent."},
                             {"role": "tool", "tool_call_id": "call_1", "content": text}]}),
        }
    }

    fn text(self, body: &Value) -> &str {
        match self {
            Wire::Messages => body["messages"][0]["content"][0]["content"]
                .as_str()
                .unwrap(),
            Wire::Chat => body["messages"][1]["content"].as_str().unwrap(),
        }
    }
}

/// OpenAI's chunks for a short streamed reply, the usage last.
fn chat_stream_body() -> String {
    let chunk = |choices: Value| json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4.1", "choices": choices});
    let mut last = chunk(json!([]));
    last["usage"] = json!({"prompt_tokens": 1000, "completion_tokens": 50, "total_tokens": 1050});
    let chunks = [
        chunk(json!([{"index": 0, "delta": {"role": "assistant", "content": "Done."}}])),
        chunk(json!([{"index": 0, "delta": {}, "finish_reason": "stop"}])),
        last,
    ];
    let mut out: String = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
    out.push_str("data: [DONE]\n\n");
    out
}

/// Anthropic's events for a short streamed reply.
fn stream_body() -> String {
    let events = [
        json!({"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant",
            "model": "claude-sonnet-4-5", "content": [], "usage": {"input_tokens": 1000, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Done."}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 50}}),
        json!({"type": "message_stop"}),
    ];
    events
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
        .collect()
}

/// The provider: answers every request with its protocol's short stream, at once.
async fn upstream(wire: Wire) -> String {
    let body = Arc::new(match wire {
        Wire::Messages => stream_body(),
        Wire::Chat => chat_stream_body(),
    });
    // The request is read whole before the answer, as a provider does: answering first
    // would close the connection under a client still sending a large request.
    let app = axum::Router::new().fallback(move |_request: axum::body::Bytes| {
        let body = body.clone();
        async move {
            (
                [(axum::http::header::CONTENT_TYPE, "text/event-stream")],
                (*body).clone(),
            )
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

/// A request of about `bytes` of this repository's code, with `secrets` of them planted.
fn request(wire: Wire, bytes: usize, secrets: usize) -> Value {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut code = String::new();
    for entry in ignore::WalkBuilder::new(root.join("src")).build().flatten() {
        if code.len() >= bytes {
            break;
        }
        if entry.path().extension().is_some_and(|e| e == "rs") {
            code.push_str(&std::fs::read_to_string(entry.path()).unwrap_or_default());
        }
    }
    let mut cut = bytes.min(code.len());
    while !code.is_char_boundary(cut) {
        cut -= 1;
    }
    code.truncate(cut);
    for i in 0..secrets {
        code.push_str(&format!(
            "\nAWS_ACCESS_KEY_ID = \"AKIAZ2QXLW6HKJH7TR{:02}\"\n",
            i % 100
        ));
    }
    wire.body(&code)
}

/// The time to the first byte of the reply to `body` at `url` with `key`.
async fn first_byte(
    client: &reqwest::Client,
    (wire, url, key): (Wire, &str, &str),
    body: &Value,
) -> Duration {
    let started = Instant::now();
    let mut reply = client
        .post(format!("{url}{}", wire.path()))
        .header("x-api-key", key)
        .bearer_auth(key)
        .json(body)
        .send()
        .await
        .unwrap();
    assert!(reply.status().is_success(), "{}", reply.status());
    reply.chunk().await.unwrap();
    let took = started.elapsed();
    while reply.chunk().await.unwrap().is_some() {}
    took
}

fn ms(d: f64) -> f64 {
    d * 1000.0
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

/// The shapes of one protocol, each `calls` pairs: its table rows, printed as they come.
async fn measure(wire: Wire, calls: usize) -> Vec<Value> {
    let base = upstream(wire).await;
    let guard = Arc::new(
        Guard::new(&GuardConfig {
            lens: Some(Arc::new(O200k)),
            ..GuardConfig::all()
        })
        .unwrap(),
    );
    let key = "sk-bench-user-key";
    let gateway = Gateway::start(
        Upstream {
            provider: wire.provider(),
            base_url: base.clone(),
            key: Some(key.into()),
        },
        guard,
        Purse {
            max_cost_usd: 1e9,
            prices: ralph_loop::providers::bundled_prices(),
            events: EventBus::new("bench"),
        },
    )
    .await
    .unwrap();
    let client = reqwest::Client::new();
    let direct_at = (wire, base.as_str(), key);
    let gateway_at = (wire, gateway.url(), gateway.token());
    // `new`: every call's text differs from the last (nothing masked before can be reused),
    // as a conversation's newest message does; the others resend one text, as an agent
    // resends its conversation.
    let shapes = [
        ("2 KiB", 2 << 10, 0, true),
        ("64 KiB, resent", 64 << 10, 0, false),
        ("64 KiB, new", 64 << 10, 0, true),
        ("64 KiB, 20 secrets, new", 64 << 10, 20, true),
        ("1 MiB, resent", 1 << 20, 0, false),
        ("1 MiB, 200 secrets, new", 1 << 20, 200, true),
    ];
    let mut rows = Vec::new();
    for (name, bytes, secrets, new) in shapes {
        let template = request(wire, bytes, secrets);
        let mut n = 0u64;
        let mut body_for = |fresh: bool| {
            if !fresh {
                return template.clone();
            }
            n += 1;
            wire.body(&format!("// call {n}\n{}", wire.text(&template)))
        };
        let body = body_for(false);
        // Warm both paths (connections, the guard's lazily compiled rules).
        for _ in 0..5 {
            first_byte(&client, direct_at, &body).await;
            first_byte(&client, gateway_at, &body).await;
        }
        let (mut direct, mut through, mut diff) = (Vec::new(), Vec::new(), Vec::new());
        for i in 0..calls {
            let body = body_for(new);
            let (d, t) = if i % 2 == 0 {
                let d = first_byte(&client, direct_at, &body).await;
                (d, first_byte(&client, gateway_at, &body).await)
            } else {
                let t = first_byte(&client, gateway_at, &body).await;
                (first_byte(&client, direct_at, &body).await, t)
            };
            direct.push(ms(d.as_secs_f64()));
            through.push(ms(t.as_secs_f64()));
            diff.push(ms(t.as_secs_f64() - d.as_secs_f64()));
        }
        for v in [&mut direct, &mut through, &mut diff] {
            v.sort_by(f64::total_cmp);
        }
        let q = |v: &[f64]| (quantile(v, 0.5), quantile(v, 0.9));
        let ((d50, d90), (t50, t90), (o50, o90)) = (q(&direct), q(&through), q(&diff));
        let worst = diff.last().copied().unwrap_or_default();
        println!(
            "{:<9} {name:<24} {d50:>10.3} / {d90:<9.3} {t50:>10.3} / {t90:<9.3} {o50:>9.3} / {o90:.3} / {worst:.3}",
            wire.name()
        );
        rows.push(
            json!({"protocol": wire.name(), "request": name, "bytes": bytes,
            "secrets": secrets, "calls": calls,
            "direct_ms": {"p50": d50, "p90": d90}, "gateway_ms": {"p50": t50, "p90": t90},
            "overhead_ms": {"p50": o50, "p90": o90, "max": worst}}),
        );
    }
    rows
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    if !env::benchmarking("gateway") {
        return;
    }
    let calls: usize = env::setting("RALPH_BENCH_CALLS", 200);
    println!(
        "{:<9} {:<24} {:>22} {:>22} {:>28}",
        "protocol",
        "request",
        "direct p50 / p90 ms",
        "gateway p50 / p90 ms",
        "overhead p50 / p90 / max ms"
    );
    let mut rows = Vec::new();
    for wire in [Wire::Messages, Wire::Chat] {
        rows.extend(measure(wire, calls).await);
    }
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-gateway.json");
    let _ = std::fs::create_dir_all(path.parent().unwrap());
    std::fs::write(
        &path,
        serde_json::to_string_pretty(&json!({"shapes": rows})).unwrap(),
    )
    .unwrap();
    println!("gateway: wrote {}", path.display());
}
