//! Test helpers: servers and clients every provider's tests use, OpenAI-protocol replies for
//! `wiremock`, and OpenAI clients pointed at it.

use std::collections::BTreeMap;
use std::time::Duration;

use ralph_actors::ports::llm::{
    ChatMessage, ChatReply, ChatRequest, GuardedRequest, LlmClient, LlmError,
};
use ralph_actors::role::Role;
use ralph_actors::schema::usage::Usage;
use ralph_actors::settings::ModelSpec;
use ralph_guard::Guard;
use serde_json::{json, Value};
use wiremock::matchers::method;
use wiremock::{Mock, MockBuilder, MockServer, ResponseTemplate, Times};

use crate::http::retry::RetryPolicy;
use crate::providers::openai::OpenAiClient;
use crate::providers::options::{ClientOptions, ProviderSetup, Providers};

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

/// Options for a client of `base`: key `test-key`, read from `key_env`, and a 10 s timeout;
/// `tweak` adjusts them.
pub fn options_at(
    base: &str,
    key_env: &str,
    tweak: impl FnOnce(&mut ClientOptions),
) -> ClientOptions {
    let mut opts = ClientOptions {
        base_url: Some(base.to_string()),
        api_key: Some("test-key".into()),
        api_key_env: key_env.into(),
        timeout: Duration::from_secs(10),
        ..ClientOptions::default()
    };
    tweak(&mut opts);
    opts
}

/// The client `new` makes of `opts`, with [`fast_retries`] (as many as the options allow).
pub fn with_fast_retries<C>(
    opts: ClientOptions,
    new: impl FnOnce(ClientOptions) -> Result<C, LlmError>,
    with_retry_policy: impl FnOnce(C, RetryPolicy) -> C,
) -> C {
    let retries = opts.max_retries;
    with_retry_policy(new(opts).expect("client"), fast_retries(retries))
}

/// An OpenAI client for `server` with key `test-key`; `tweak` adjusts the options first.
pub fn client(server: &MockServer, tweak: impl FnOnce(&mut ClientOptions)) -> OpenAiClient {
    client_at(&format!("{}/v1", server.uri()), tweak)
}

/// An OpenAI client for the base URL `base`, as [`client`].
pub fn client_at(base: &str, tweak: impl FnOnce(&mut ClientOptions)) -> OpenAiClient {
    let opts = options_at(base, crate::providers::openai::DEFAULT_API_KEY_ENV, tweak);
    with_fast_retries(opts, OpenAiClient::new, OpenAiClient::with_retry_policy)
}

/// A server that answers every POST with `reply`, and checks when it is dropped that it was
/// asked `times` times (`..`: any number).
pub async fn serving(reply: ResponseTemplate, times: impl Into<Times>) -> MockServer {
    mounted(Mock::given(method("POST")), reply, times).await
}

/// A server that answers every request `mock` matches with `reply`, and checks when it is
/// dropped that it was asked `times` times (`..`: any number).
pub async fn mounted(
    mock: MockBuilder,
    reply: ResponseTemplate,
    times: impl Into<Times>,
) -> MockServer {
    let server = MockServer::start().await;
    mock.respond_with(reply).expect(times).mount(&server).await;
    server
}

/// A 200 whose body is no provider's JSON.
pub fn garbage() -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_raw("<html>not json</html>", "text/html")
}

/// A local port nothing listens on: bound, then released.
pub fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port()
}

/// What `client` replies to [`request`] of `model`; a test that expected a reply fails on an
/// error.
pub async fn reply_to(client: &(impl LlmClient + ?Sized), model: &str) -> ChatReply {
    match client.complete(request(model)).await {
        Ok(reply) => reply,
        Err(e) => panic!("{model}: no reply: {e:?}"),
    }
}

/// How `client` fails [`request`] of `model`; a test that expected an error fails on a reply.
pub async fn failure(client: &(impl LlmClient + ?Sized), model: &str) -> LlmError {
    match client.complete(request(model)).await {
        Ok(reply) => panic!("{model}: a reply, not an error: {reply:?}"),
        Err(e) => e,
    }
}

pub fn request(model: &str) -> GuardedRequest {
    request_for(Role::Artisan, model, "fix it")
}

pub fn request_for(role: Role, model: &str, user: &str) -> GuardedRequest {
    sealed(ChatRequest {
        role,
        model: model.into(),
        messages: vec![
            ChatMessage::system("You fix code."),
            ChatMessage::user(user),
        ],
        temperature: Some(0.2),
        max_tokens: 321,
    })
}

/// `request` as a run's LocalGuard would send it, with nothing to mask in it: the providers'
/// tests are about the wire, not the guard.
pub fn sealed(request: ChatRequest) -> GuardedRequest {
    GuardedRequest::seal(&Guard::off(), request, "")
        .map(|(sealed, _)| sealed)
        .expect("a guard that is off seals anything")
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

/// The usage a client should read from [`usage_json`] of the same numbers.
pub fn usage_of(prompt: u64, completion: u64, cached: u64) -> Usage {
    Usage {
        input_tokens: prompt,
        output_tokens: completion,
        cache_read_tokens: cached,
        cache_write_tokens: 0,
    }
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

/// OpenAI's answers (and every OpenAI-compatible server's), for the providers' conformance
/// table.
pub fn openai_wire() -> crate::providers::conformance::Wire {
    crate::providers::conformance::Wire {
        name: "openai",
        model: "openai/gpt-4o",
        client: |base, tweak| Box::new(client_at(&format!("{base}/v1"), tweak)),
        stream: |deltas| sse_reply(deltas, Some(usage_json(10, 1, 0))),
        first: || (FIRST_CHUNK.to_string(), "text/event-stream"),
        error: |status, message| {
            let code = crate::providers::conformance::kind_of(
                status,
                "rate_limit_exceeded",
                "server_error",
            );
            error_reply(status, message, code)
        },
    }
}

/// A stream's first chunk, `Hel`, for a server that then stalls.
pub const FIRST_CHUNK: &str = "data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n";

/// The whole stream [`FIRST_CHUNK`] begins: `Hel`, `lo`, the finish, then `[DONE]`.
pub fn whole_stream() -> String {
    let rest = FIRST_CHUNK.replace("Hel", "lo");
    let finish = FIRST_CHUNK.replace("{\"content\":\"Hel\"}}", "{},\"finish_reason\":\"stop\"}");
    format!("{FIRST_CHUNK}{rest}{finish}data: [DONE]\n\n")
}

/// The JSON body of the last request the server received.
pub async fn last_body(server: &MockServer) -> Value {
    let received = server.received_requests().await.expect("recording on");
    let last = received.last().expect("a request");
    serde_json::from_slice(&last.body).expect("a JSON body")
}

/// One provider, `openai`, set up with `no_key`.
pub fn setups(no_key: &ClientOptions) -> Providers {
    Providers::from([(
        "openai".to_string(),
        ProviderSetup {
            options: no_key.clone(),
            ..ProviderSetup::default()
        },
    )])
}

/// The artisan on `model`, then `fallbacks`.
pub fn spec(model: &str, fallbacks: &[&str]) -> BTreeMap<Role, ModelSpec> {
    BTreeMap::from([(
        Role::Artisan,
        ModelSpec {
            model: model.into(),
            temperature: None,
            max_tokens: 100,
            fallbacks: fallbacks.iter().map(|f| f.to_string()).collect(),
        },
    )])
}
