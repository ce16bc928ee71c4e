//! The gateway on the wire: a real server on a loopback port, called over HTTP as an agent calls
//! it, in front of a local server that speaks the provider's protocol.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use ralph_actors::events::bus::EventBus;
use ralph_guard::{Guard, GuardConfig};
use serde_json::{json, Value};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use super::*;

const KEY: &str = "AKIAZ2QXLW6HKJH7TRBQ";

async fn gateway(provider: Provider, upstream: &MockServer, budget: f64) -> (Gateway, Arc<Guard>) {
    let guard = Arc::new(Guard::new(&GuardConfig::all()).unwrap());
    let up = Upstream {
        provider,
        base_url: match provider {
            Provider::Openai => format!("{}/v1", upstream.uri()),
            _ => upstream.uri(),
        },
        key: Some("sk-the-users-real-key".into()),
    };
    let purse = Purse {
        max_cost_usd: budget,
        prices: crate::providers::bundled_prices(),
        events: EventBus::new("gateway-test"),
    };
    let g = Gateway::start(up, guard.clone(), purse).await.unwrap();
    (g, guard)
}

fn sse(events: &[Value]) -> ResponseTemplate {
    let body: String = events.iter().map(|e| format!("data: {e}\n\n")).collect();
    ResponseTemplate::new(200).set_body_raw(body + "data: [DONE]\n\n", "text/event-stream")
}

#[tokio::test]
async fn a_call_without_the_run_s_token_is_refused_in_the_provider_s_shape() {
    let upstream = MockServer::start().await;
    let (g, _) = gateway(Provider::Anthropic, &upstream, 1.0).await;
    let reply = reqwest::Client::new()
        .post(format!("{}/v1/messages", g.url()))
        .header("x-api-key", "sk-the-users-real-key")
        .json(&json!({"model": "claude-sonnet-4-5", "max_tokens": 100, "messages": []}))
        .send()
        .await
        .unwrap();
    assert_eq!(reply.status().as_u16(), 401);
    let body: Value = reply.json().await.unwrap();
    assert_eq!(body["type"], "error");
    assert_eq!(body["error"]["type"], "authentication_error");
    assert!(upstream.received_requests().await.unwrap().is_empty());
}

#[tokio::test]
async fn a_streamed_chat_is_masked_on_the_way_out_and_restored_on_the_way_back() {
    let upstream = MockServer::start().await;
    let (g, guard) = gateway(Provider::Openai, &upstream, 1.0).await;
    let placeholder = guard.mask(&format!("AWS_ACCESS_KEY_ID={KEY}"), None).text;
    let placeholder = placeholder
        .trim_start_matches("AWS_ACCESS_KEY_ID=")
        .to_string();
    let (a, b) = placeholder.split_at(7);
    let chunk = |content: &str| {
        json!({"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4.1",
               "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": null}]})
    };
    let done = json!({"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4.1",
        "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]});
    let usage = json!({"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4.1",
        "choices": [], "usage": {"prompt_tokens": 1000, "completion_tokens": 100}});
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(sse(&[
            chunk(&format!("use {a}")),
            chunk(&format!("{b} here")),
            done,
            usage,
        ]))
        .mount(&upstream)
        .await;
    let reply = reqwest::Client::new()
        .post(format!("{}/v1/chat/completions", g.url()))
        .bearer_auth(g.token())
        .json(&json!({"model": "gpt-4.1", "stream": true, "messages": [
            {"role": "user", "content": format!("the config says AWS_ACCESS_KEY_ID={KEY}")}
        ]}))
        .send()
        .await
        .unwrap();
    assert_eq!(reply.status().as_u16(), 200);
    let text = reply.text().await.unwrap();
    let content: String = text
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
        .filter_map(|v| {
            v["choices"][0]["delta"]["content"]
                .as_str()
                .map(str::to_string)
        })
        .collect();
    assert_eq!(content, format!("use {KEY} here"));
    let sent = &upstream.received_requests().await.unwrap()[0];
    let body = String::from_utf8_lossy(&sent.body);
    assert!(!body.contains(KEY), "{body}");
    assert!(body.contains(&placeholder), "{body}");
    assert_eq!(
        sent.headers["authorization"],
        "Bearer sk-the-users-real-key"
    );
    let sent: Value = serde_json::from_slice(&sent.body).unwrap();
    assert_eq!(sent["stream_options"]["include_usage"], true);
    assert!(sent["max_completion_tokens"].as_u64().unwrap() > 0);
    // gpt-4.1 at $2 in and $8 out per million tokens.
    let totals = g.totals();
    assert_eq!(totals.calls, 1);
    assert!(
        (totals.cost - (1000.0 * 2.0 + 100.0 * 8.0) / 1e6).abs() < 1e-12,
        "{totals:?}"
    );
}

#[tokio::test]
async fn a_call_the_budget_cannot_pay_is_refused_before_it_is_sent() {
    let upstream = MockServer::start().await;
    let (g, _) = gateway(Provider::Openai, &upstream, 0.000_01).await;
    let reply = reqwest::Client::new()
        .post(format!("{}/v1/responses", g.url()))
        .bearer_auth(g.token())
        .json(&json!({"model": "gpt-4.1", "input": "fix it"}))
        .send()
        .await
        .unwrap();
    assert_eq!(reply.status().as_u16(), 400);
    let body: Value = reply.json().await.unwrap();
    assert_eq!(body["error"]["type"], "invalid_request_error");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("budget"), "{message}");
    assert!(upstream.received_requests().await.unwrap().is_empty());
    assert_eq!(g.totals().refused, 1);
}

#[tokio::test]
async fn gemini_s_key_in_the_query_is_the_token_and_never_forwarded() {
    let upstream = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1beta/models/gemini-2.5-flash:generateContent"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "candidates": [{"content": {"role": "model", "parts": [{"text": "ok"}]}, "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 2}
        })))
        .mount(&upstream)
        .await;
    let (g, _) = gateway(Provider::Gemini, &upstream, 1.0).await;
    let reply = reqwest::Client::new()
        .post(format!(
            "{}/v1beta/models/gemini-2.5-flash:generateContent?key={}",
            g.url(),
            g.token()
        ))
        .json(&json!({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(reply.status().as_u16(), 200);
    let sent = &upstream.received_requests().await.unwrap()[0];
    assert_eq!(sent.url.query(), None);
    assert_eq!(sent.headers["x-goog-api-key"], "sk-the-users-real-key");
    let sent: Value = serde_json::from_slice(&sent.body).unwrap();
    assert!(
        sent["generationConfig"]["maxOutputTokens"]
            .as_u64()
            .unwrap()
            > 0
    );
    assert_eq!(g.totals().usage.input_tokens, 10);
}

/// A provider that honours the protocol: its prompt is about four bytes a token, and it never
/// writes more than the cap it was sent; how much of the cap it uses is random.
struct Honest;

impl wiremock::Respond for Honest {
    fn respond(&self, request: &wiremock::Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        let cap = body["max_tokens"].as_u64().unwrap();
        let output = rand::random_range(0..=cap);
        ResponseTemplate::new(200).set_body_json(json!({
            "id": "m", "type": "message", "role": "assistant", "model": body["model"],
            "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn",
            "usage": {"input_tokens": request.body.len() / 4, "output_tokens": output}
        }))
    }
}

/// Many calls of random sizes and caps, eight at a time, against a budget they exhaust: the
/// spending never passes the budget, no call costs more than was reserved for it, and every
/// call past what is left is refused before it is sent.
#[tokio::test(flavor = "multi_thread")]
async fn many_random_calls_never_cross_the_budget() {
    let upstream = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(Honest)
        .mount(&upstream)
        .await;
    let budget = 0.75;
    let (g, _) = gateway(Provider::Anthropic, &upstream, budget).await;
    let client = reqwest::Client::new();
    let call = |size: usize, cap: u32| {
        let request = client
            .post(format!("{}/v1/messages", g.url()))
            .header("x-api-key", g.token())
            .json(
                &json!({"model": "claude-sonnet-4-5", "max_tokens": cap, "messages": [
                    {"role": "user", "content": "x".repeat(size)}
                ]}),
            );
        async move { request.send().await.unwrap().status().as_u16() }
    };
    let mut statuses = Vec::new();
    for _ in 0..40 {
        let batch: Vec<_> = (0..8)
            .map(|_| {
                call(
                    rand::random_range(100..40_000),
                    rand::random_range(256..16_000),
                )
            })
            .collect();
        statuses.extend(futures::future::join_all(batch).await);
    }
    let totals = g.totals();
    let refused = statuses.iter().filter(|s| **s == 400).count();
    assert_eq!(
        statuses.len(),
        totals.calls as usize + refused,
        "{statuses:?}"
    );
    assert_eq!(totals.refused as usize, refused);
    assert!(refused > 0 && totals.calls > 8, "{totals:?}");
    assert!(totals.cost <= budget, "{} spent of {budget}", totals.cost);
    let served = upstream.received_requests().await.unwrap().len();
    assert_eq!(
        served, totals.calls as usize,
        "a refused call reached the provider"
    );
    let ledger = g.shared.ledger();
    assert!(
        ledger.snapshot().overruns.is_empty(),
        "{:?}",
        ledger.snapshot().overruns
    );
}
