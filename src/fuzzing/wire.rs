//! What comes back over the wire: the providers' replies (each protocol's stream and whole
//! body, and its error bodies), and the replies the gateway relays to a coding agent.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use ralph_guard::{Guard, GuardConfig};
use serde_json::Value;

use super::input::{block_on, keep, pick, pieces, text};
use crate::gateway::protocol::Call;
use crate::gateway::relay::Relay;
use crate::gateway::sealed::Sealer;
use crate::providers::http::LenientError;
use crate::providers::{anthropic, gemini, ollama, openai};

/// No stall is waited for: the pieces are all there.
const IDLE: Duration = Duration::from_secs(60);

/// A reply whose body comes in `data`'s pieces, with the headers a provider sends.
fn response(data: &[u8], kind: &str) -> reqwest::Response {
    let chunks: Vec<Result<bytes::Bytes, std::io::Error>> =
        pieces(data).into_iter().map(Ok).collect();
    let body = reqwest::Body::wrap_stream(futures::stream::iter(chunks));
    let reply = http::Response::builder()
        .status(200)
        .header(http::header::CONTENT_TYPE, kind)
        .body(body)
        .unwrap_or_else(|e| panic!("a fuzzed reply: {e}"));
    reqwest::Response::from(reply)
}

/// A provider's reply: the first byte picks the protocol and whether it streams, the rest is
/// the body as it arrives. Every protocol's client reads it as on a real call.
pub fn provider_reply(data: &[u8]) {
    let (choice, body) = pick(data, 10);
    block_on(async {
        match choice {
            0 => keep(anthropic::read_stream(response(body, "text/event-stream"), IDLE).await),
            1 => keep(anthropic::read_whole(response(body, "application/json")).await),
            2 => keep(gemini::read_stream(response(body, "text/event-stream"), IDLE).await),
            3 => keep(gemini::read_whole(response(body, "application/json")).await),
            4 => keep(ollama::read_stream(response(body, "application/x-ndjson"), IDLE).await),
            5 => keep(ollama::read_whole(response(body, "application/json")).await),
            6 => keep(
                openai::streamed(
                    &openai_client(body, "text/event-stream"),
                    request(true),
                    IDLE,
                )
                .await,
            ),
            7 => {
                keep(openai::plain(&openai_client(body, "application/json"), request(false)).await)
            }
            8 => {
                keep(anthropic::parse_error(body));
                keep(gemini::parse_error(body));
                keep(ollama::parse_error(body));
            }
            _ => keep(LenientError::read(&text(body))),
        }
    });
}

/// The OpenAI client the program builds, its HTTP done by a service that answers `body`.
fn openai_client(
    body: &[u8],
    kind: &'static str,
) -> async_openai::Client<async_openai::config::OpenAIConfig> {
    let body = body.to_vec();
    let service = tower::service_fn(
        move |_request: async_openai::middleware::HttpRequestFactory| {
            // As the program's own HTTP layer hands a stream on (`RetryService`).
            let reply = crate::providers::retry::by_lines(response(&body, kind));
            async move { Ok::<_, async_openai::error::OpenAIError>(reply) }
        },
    );
    // One HTTP client for the process: building one loads the system's certificates.
    static HTTP: OnceLock<reqwest::Client> = OnceLock::new();
    async_openai::Client::build(
        HTTP.get_or_init(reqwest::Client::new).clone(),
        async_openai::config::OpenAIConfig::new(),
    )
    .with_http_service(service)
}

fn request(stream: bool) -> async_openai::types::chat::CreateChatCompletionRequest {
    let chat = ralph_actors::ports::llm::ChatRequest {
        role: ralph_actors::role::Role::Artisan,
        model: "gpt-4.1".into(),
        messages: Vec::new(),
        temperature: None,
        max_tokens: 1000,
    };
    openai::chat_body(openai::ChatBody {
        model: "gpt-4.1",
        request: &chat,
        temperature: None,
        max_completion_tokens: false,
        max_tokens: false,
        stream,
        stream_usage: stream,
    })
}

/// A LocalGuard that has masked a key, so replies may name its placeholder (the seeds do).
fn guard() -> Arc<Guard> {
    static GUARD: OnceLock<Arc<Guard>> = OnceLock::new();
    GUARD
        .get_or_init(|| {
            let guard =
                Guard::new(&GuardConfig::all()).unwrap_or_else(|e| panic!("the guard: {e}"));
            guard.mask(
                "key = sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJ",
                None,
            );
            Arc::new(guard)
        })
        .clone()
}

/// What the gateway reads of one call: the first byte picks the protocol; the rest is, cut at
/// the first NUL, a request body (masked as the gateway masks it) and then the upstream reply,
/// read as server-sent events and relayed event by event, or as a whole body.
pub fn gateway_relay(data: &[u8]) {
    let (choice, rest) = pick(data, 8);
    let path = [
        "/v1/messages",
        "/v1/chat/completions",
        "/v1/responses",
        "/v1beta/models/gemini-2.5-pro:streamGenerateContent",
    ][choice % 4];
    let streamed = choice < 4;
    let (request, reply) = match rest.iter().position(|b| *b == 0) {
        Some(at) => (&rest[..at], &rest[at + 1..]),
        None => (rest, &[][..]),
    };
    let guard = guard();
    let call = Call::of(path);
    match serde_json::from_slice::<Value>(request) {
        Ok(mut value) => {
            let _ = Sealer::new(guard.clone()).seal(&mut value);
            keep((
                call.model(&value),
                call.streams(&value),
                call.max_output(&value),
            ));
            call.limit(&mut value, 1000);
        }
        Err(_) => keep(guard.seal(&text(request))),
    }
    let mut relay = Relay::new(call.clone(), guard.clone());
    if !streamed {
        if let Ok(mut value) = serde_json::from_slice::<Value>(reply) {
            let mut usage = Default::default();
            call.read_usage(&value, &mut usage);
            crate::gateway::relay::restore_strings(&guard, &mut value, &[]);
        }
        return;
    }
    block_on(async {
        use futures::StreamExt;
        let chunks = pieces(reply).into_iter().map(Ok::<_, std::io::Error>);
        let mut events = crate::gateway::server::events_of(futures::stream::iter(chunks).boxed());
        while let Some(Ok(event)) = events.next().await {
            keep(relay.event(&event.event, &event.data));
        }
        keep(relay.finish());
        keep(relay.usage());
    });
}
