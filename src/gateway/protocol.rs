//! What the gateway needs to know of each provider's wire protocol: where its key goes, how it
//! words an error, which request field caps the reply, where usage is reported, and which
//! fields of a streamed event carry text in pieces.
//!
//! Two layers: the [`Provider`] the gateway forwards to (Anthropic, OpenAI or Gemini: its base
//! URL, key and key header), and the [`Call`] a request makes, read from its path (Anthropic
//! Messages, OpenAI Chat Completions and Responses, Gemini generateContent, or anything else,
//! which is passed through masked but costs nothing).

use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use ralph_actors::schema::usage::Usage;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::providers::{anthropic, gemini, openai};

/// The provider an agent's calls go to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Provider {
    Anthropic,
    Openai,
    Gemini,
}

impl Provider {
    pub fn name(self) -> &'static str {
        match self {
            Provider::Anthropic => anthropic::PROVIDER,
            Provider::Openai => openai::PROVIDER,
            Provider::Gemini => gemini::PROVIDER,
        }
    }

    /// The variables the user's key is read from, by preference.
    pub fn key_envs(self) -> &'static [&'static str] {
        match self {
            Provider::Anthropic => &[anthropic::DEFAULT_API_KEY_ENV],
            Provider::Openai => &[openai::DEFAULT_API_KEY_ENV],
            Provider::Gemini => &[gemini::DEFAULT_API_KEY_ENV, gemini::ALT_API_KEY_ENV],
        }
    }

    /// The variables the real base URL is read from, by preference, and its default. OpenAI's
    /// second is LiteLLM's (Aider's `--openai-api-base`); Gemini's second, the Gemini CLI's.
    pub fn base_url(self) -> (&'static [&'static str], &'static str) {
        match self {
            Provider::Anthropic => (&[anthropic::BASE_URL_ENV], anthropic::DEFAULT_BASE_URL),
            Provider::Openai => (
                &[openai::BASE_URL_ENV, "OPENAI_API_BASE"],
                openai::DEFAULT_BASE_URL,
            ),
            Provider::Gemini => (
                &[gemini::BASE_URL_ENV, "GOOGLE_GEMINI_BASE_URL"],
                gemini::DEFAULT_BASE_URL,
            ),
        }
    }

    /// The path to forward `path` to, under the real base URL: OpenAI's base URL ends in
    /// `/v1` (as the agent's, the gateway's `…/v1`, does), the others' do not.
    pub fn upstream_path(self, path: &str) -> &str {
        match self {
            Provider::Openai => path.strip_prefix("/v1").unwrap_or(path),
            _ => path,
        }
    }

    /// The key the agent sent, where this provider's clients put it.
    pub fn key_sent<'a>(self, headers: &'a HeaderMap, query: Option<&'a str>) -> Option<&'a str> {
        let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
        let bearer = header("authorization").and_then(|v| v.strip_prefix("Bearer "));
        match self {
            Provider::Anthropic => header("x-api-key").or(bearer),
            Provider::Openai => bearer.or_else(|| header("api-key")),
            Provider::Gemini => header("x-goog-api-key")
                .or_else(|| query?.split('&').find_map(|pair| pair.strip_prefix("key="))),
        }
    }

    /// The headers to forward: the agent's, without its token (and without what the hop
    /// sets itself), with the real key where the provider reads it.
    pub fn upstream_headers(self, from: &HeaderMap, key: Option<&str>) -> HeaderMap {
        const DROPPED: [&str; 8] = [
            "authorization",
            "x-api-key",
            "api-key",
            "x-goog-api-key",
            "host",
            "content-length",
            "connection",
            "accept-encoding",
        ];
        let mut headers = HeaderMap::new();
        for (name, value) in from {
            if !DROPPED.contains(&name.as_str()) {
                headers.append(name.clone(), value.clone());
            }
        }
        if let Some(key) = key {
            let (name, value) = match self {
                Provider::Anthropic => ("x-api-key", key.to_string()),
                Provider::Openai => ("authorization", format!("Bearer {key}")),
                Provider::Gemini => ("x-goog-api-key", key.to_string()),
            };
            if let Ok(value) = HeaderValue::from_str(&value) {
                headers.insert(HeaderName::from_static(name), value);
            }
        }
        headers
    }

    /// An error in this provider's own shape, so the agent reads it as it reads the
    /// provider's: `kind` is the error's type (`authentication_error`,
    /// `invalid_request_error`).
    pub fn error(self, status: StatusCode, kind: &str, message: &str) -> Value {
        match self {
            Provider::Anthropic => json!({
                "type": "error",
                "error": {"type": kind, "message": message},
            }),
            Provider::Openai => json!({
                "error": {"message": message, "type": kind, "param": null, "code": kind},
            }),
            Provider::Gemini => json!({
                "error": {
                    "code": status.as_u16(),
                    "message": message,
                    "status": if status == StatusCode::UNAUTHORIZED { "UNAUTHENTICATED" } else { "INVALID_ARGUMENT" },
                },
            }),
        }
    }
}

/// What a request asks for, read from its path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Call {
    /// Anthropic's `POST /v1/messages`.
    Messages,
    /// OpenAI's `POST /v1/chat/completions`.
    ChatCompletions,
    /// OpenAI's `POST /v1/responses`.
    Responses,
    /// Gemini's `…/models/{model}:generateContent` or `:streamGenerateContent`.
    GenerateContent { model: String, stream: bool },
    /// Anything else (model lists, token counts): passed through, masked, costing nothing.
    Other,
}

/// Output tokens reserved for a call that names no cap, and the cap it is then sent with.
pub const DEFAULT_MAX_OUTPUT: u32 = 32_000;

impl Call {
    pub fn of(path: &str) -> Call {
        if path.ends_with("/messages") && !path.ends_with("/count_tokens") {
            return Call::Messages;
        }
        if path.ends_with("/chat/completions") {
            return Call::ChatCompletions;
        }
        if path.ends_with("/responses") {
            return Call::Responses;
        }
        if let Some((head, verb)) = path.rsplit_once(':') {
            let model = head.rsplit('/').next().unwrap_or_default().to_string();
            match verb {
                "generateContent" => {
                    return Call::GenerateContent {
                        model,
                        stream: false,
                    }
                }
                "streamGenerateContent" => {
                    return Call::GenerateContent {
                        model,
                        stream: true,
                    }
                }
                _ => {}
            }
        }
        Call::Other
    }

    /// Whether the call makes the model generate (and so is paid for).
    pub fn generates(&self) -> bool {
        *self != Call::Other
    }

    /// The model the call names.
    pub fn model(&self, body: &Value) -> Option<String> {
        match self {
            Call::GenerateContent { model, .. } => Some(model.clone()),
            _ => body["model"].as_str().map(str::to_string),
        }
    }

    /// Whether the reply comes as server-sent events.
    pub fn streams(&self, body: &Value) -> bool {
        match self {
            Call::GenerateContent { stream, .. } => *stream,
            _ => body["stream"].as_bool().unwrap_or(false),
        }
    }

    /// The pointer of the field that caps the reply, and its value when the request set one.
    fn cap_field(&self, body: &Value) -> (&'static str, Option<u64>) {
        let at = |p: &'static str| (p, body.pointer(p).and_then(Value::as_u64));
        match self {
            Call::Messages => at("/max_tokens"),
            Call::ChatCompletions => match at("/max_tokens") {
                (p, Some(n)) => (p, Some(n)),
                _ => at("/max_completion_tokens"),
            },
            Call::Responses => at("/max_output_tokens"),
            Call::GenerateContent { .. } => at("/generationConfig/maxOutputTokens"),
            Call::Other => ("", None),
        }
    }

    /// The reply cap the request asks for ([`DEFAULT_MAX_OUTPUT`] when it names none).
    pub fn max_output(&self, body: &Value) -> u32 {
        let asked = self
            .cap_field(body)
            .1
            .unwrap_or(u64::from(DEFAULT_MAX_OUTPUT));
        u32::try_from(asked).unwrap_or(u32::MAX)
    }

    /// Sets the reply cap to `granted` (what the budget pays for), and asks a streamed Chat
    /// Completions reply to report its usage, which it does not by default.
    pub fn limit(&self, body: &mut Value, granted: u32) {
        let (pointer, _) = self.cap_field(body);
        if pointer.is_empty() {
            return;
        }
        set(body, pointer, Value::from(granted));
        if *self == Call::ChatCompletions && self.streams(body) {
            set(body, "/stream_options/include_usage", Value::Bool(true));
        }
    }

    /// Adds what `value` (a whole reply, or one streamed event) reports of the call's usage to
    /// `usage`: each protocol reports it in its own place, some in running totals.
    pub fn read_usage(&self, value: &Value, usage: &mut Usage) {
        let n = |v: &Value, p: &str| v.pointer(p).and_then(Value::as_u64);
        match self {
            Call::Messages => {
                let u = match value["type"].as_str() {
                    Some("message_start") => &value["message"]["usage"],
                    _ => &value["usage"],
                };
                let (read, write) = (
                    n(u, "/cache_read_input_tokens"),
                    n(u, "/cache_creation_input_tokens"),
                );
                if let Some(input) = n(u, "/input_tokens") {
                    usage.input_tokens = input
                        .saturating_add(read.unwrap_or(0))
                        .saturating_add(write.unwrap_or(0));
                    usage.cache_read_tokens = read.unwrap_or(usage.cache_read_tokens);
                    usage.cache_write_tokens = write.unwrap_or(usage.cache_write_tokens);
                }
                if let Some(output) = n(u, "/output_tokens") {
                    usage.output_tokens = output;
                }
            }
            Call::ChatCompletions => {
                let u = &value["usage"];
                if let Some(input) = n(u, "/prompt_tokens") {
                    usage.input_tokens = input;
                    usage.output_tokens = n(u, "/completion_tokens").unwrap_or(0);
                    usage.cache_read_tokens =
                        n(u, "/prompt_tokens_details/cached_tokens").unwrap_or(0);
                }
            }
            Call::Responses => {
                let u = if value["type"] == "response.completed" {
                    &value["response"]["usage"]
                } else {
                    &value["usage"]
                };
                if let Some(input) = n(u, "/input_tokens") {
                    usage.input_tokens = input;
                    usage.output_tokens = n(u, "/output_tokens").unwrap_or(0);
                    usage.cache_read_tokens =
                        n(u, "/input_tokens_details/cached_tokens").unwrap_or(0);
                }
            }
            Call::GenerateContent { .. } => {
                let u = &value["usageMetadata"];
                if let Some(input) = n(u, "/promptTokenCount") {
                    usage.input_tokens = input;
                    // Thinking is billed as output.
                    usage.output_tokens = n(u, "/candidatesTokenCount")
                        .unwrap_or(0)
                        .saturating_add(n(u, "/thoughtsTokenCount").unwrap_or(0));
                    usage.cache_read_tokens = n(u, "/cachedContentTokenCount").unwrap_or(0);
                }
            }
            Call::Other => {}
        }
    }

    /// The fields of a streamed event that carry a piece of a longer text, each with the key of
    /// the text it belongs to and whether it is JSON (a tool call's arguments, streamed as
    /// JSON text) rather than plain text.
    pub fn pieces(&self, event: &Value) -> Vec<Piece> {
        let mut out = Vec::new();
        match self {
            Call::Messages => {
                if event["type"] == "content_block_delta" {
                    let index = event["index"].as_u64().unwrap_or(0);
                    for (field, json) in
                        [("text", false), ("partial_json", true), ("thinking", false)]
                    {
                        if event["delta"][field].is_string() {
                            out.push(Piece::new(
                                format!("{index}"),
                                format!("/delta/{field}"),
                                json,
                            ));
                        }
                    }
                }
            }
            Call::ChatCompletions => {
                for (c, i, choice) in indexed(event, "choices") {
                    for field in ["content", "reasoning_content"] {
                        if choice["delta"][field].is_string() {
                            out.push(Piece::new(
                                format!("{i}/{field}"),
                                format!("/choices/{c}/delta/{field}"),
                                false,
                            ));
                        }
                    }
                    let calls = choice["delta"]["tool_calls"]
                        .as_array()
                        .into_iter()
                        .flatten();
                    for (t, call) in calls.enumerate() {
                        if call["function"]["arguments"].is_string() {
                            let j = call["index"].as_u64().unwrap_or(t as u64);
                            out.push(Piece::new(
                                format!("{i}/tool/{j}"),
                                format!("/choices/{c}/delta/tool_calls/{t}/function/arguments"),
                                true,
                            ));
                        }
                    }
                }
            }
            Call::Responses => {
                let kind = event["type"].as_str().unwrap_or_default();
                let json = kind == "response.function_call_arguments.delta";
                if kind.ends_with(".delta") && event["delta"].is_string() {
                    let item = event["item_id"].as_str().unwrap_or_default();
                    let part = event["content_index"].as_u64().unwrap_or(0);
                    out.push(Piece::new(format!("{item}/{part}"), "/delta".into(), json));
                }
            }
            Call::GenerateContent { .. } => {
                for (c, i, cand) in indexed(event, "candidates") {
                    for (p, part) in cand["content"]["parts"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .enumerate()
                    {
                        if part["text"].is_string() {
                            out.push(Piece::new(
                                format!("{i}/{p}"),
                                format!("/candidates/{c}/content/parts/{p}/text"),
                                false,
                            ));
                        }
                    }
                }
            }
            Call::Other => {}
        }
        out
    }

    /// The keys of the texts that `event` ends: what is still held of them must go out
    /// before it.
    pub fn ends(&self, event: &Value) -> Vec<String> {
        match self {
            Call::Messages if event["type"] == "content_block_stop" => {
                vec![format!("{}", event["index"].as_u64().unwrap_or(0))]
            }
            Call::ChatCompletions => indexed(event, "choices")
                .filter(|(_, _, c)| !c["finish_reason"].is_null())
                .map(|(_, i, _)| format!("{i}/"))
                .collect(),
            Call::Responses => {
                let kind = event["type"].as_str().unwrap_or_default();
                if kind.ends_with(".done") {
                    let item = event["item_id"]
                        .as_str()
                        .or_else(|| event["item"]["id"].as_str())
                        .unwrap_or_default();
                    vec![format!("{item}/")]
                } else {
                    Vec::new()
                }
            }
            Call::GenerateContent { .. } => indexed(event, "candidates")
                .filter(|(_, _, c)| c["finishReason"].is_string())
                .map(|(_, i, _)| format!("{i}/"))
                .collect(),
            _ => Vec::new(),
        }
    }
}

/// The items of the array `key` of `event`: each with its position, its `index` field (its
/// position when it has none), and itself.
fn indexed<'a>(event: &'a Value, key: &str) -> impl Iterator<Item = (usize, u64, &'a Value)> {
    event[key]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
        .map(|(n, item)| (n, item["index"].as_u64().unwrap_or(n as u64), item))
}

/// A field of a streamed event that holds one piece of a longer text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Piece {
    /// The text it belongs to (a content block, a choice's tool call), unique in the stream.
    pub key: String,
    /// Where it is in the event, as a JSON pointer.
    pub pointer: String,
    /// The text is JSON (a tool call's arguments): values restored into it are escaped.
    pub json: bool,
}

impl Piece {
    fn new(key: String, pointer: String, json: bool) -> Self {
        Self { key, pointer, json }
    }
}

/// Sets `pointer` in `value` to `new`, making the objects on the way.
pub fn set(value: &mut Value, pointer: &str, new: Value) {
    let mut at = value;
    for segment in pointer.split('/').skip(1) {
        if let Value::Array(items) = at {
            match segment.parse::<usize>().ok().and_then(|i| items.get_mut(i)) {
                Some(item) => at = item,
                None => return,
            }
            continue;
        }
        if !at.is_object() {
            *at = json!({});
        }
        let Some(map) = at.as_object_mut() else {
            return;
        };
        at = map.entry(segment.to_string()).or_insert(Value::Null);
    }
    *at = new;
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn calls_are_read_from_their_paths() {
        assert_eq!(Call::of("/v1/messages"), Call::Messages);
        assert_eq!(Call::of("/v1/messages/count_tokens"), Call::Other);
        assert_eq!(Call::of("/v1/chat/completions"), Call::ChatCompletions);
        assert_eq!(Call::of("/v1/responses"), Call::Responses);
        assert_eq!(
            Call::of("/v1beta/models/gemini-2.5-pro:streamGenerateContent"),
            Call::GenerateContent {
                model: "gemini-2.5-pro".into(),
                stream: true
            }
        );
        assert_eq!(Call::of("/v1/models"), Call::Other);
    }

    #[test]
    fn the_cap_is_set_where_each_protocol_reads_it() {
        let mut chat = json!({"model": "gpt-4.1", "stream": true});
        assert_eq!(Call::ChatCompletions.max_output(&chat), DEFAULT_MAX_OUTPUT);
        Call::ChatCompletions.limit(&mut chat, 900);
        assert_eq!(chat["max_completion_tokens"], 900);
        assert_eq!(chat["stream_options"]["include_usage"], true);
        let mut gemini = json!({"contents": []});
        let call = Call::of("/v1beta/models/gemini-2.5-flash:generateContent");
        call.limit(&mut gemini, 10);
        assert_eq!(gemini["generationConfig"]["maxOutputTokens"], 10);
        let mut messages = json!({"max_tokens": 8192});
        assert_eq!(Call::Messages.max_output(&messages), 8192);
        Call::Messages.limit(&mut messages, 4000);
        assert_eq!(messages["max_tokens"], 4000);
    }

    #[test]
    fn usage_is_read_from_each_protocol_s_place() {
        let mut u = Usage::default();
        let start = json!({"type": "message_start", "message": {"usage": {"input_tokens": 10, "cache_read_input_tokens": 90, "output_tokens": 1}}});
        Call::Messages.read_usage(&start, &mut u);
        Call::Messages.read_usage(
            &json!({"type": "message_delta", "usage": {"output_tokens": 40}}),
            &mut u,
        );
        assert_eq!(
            (u.input_tokens, u.cache_read_tokens, u.output_tokens),
            (100, 90, 40)
        );
        let mut u = Usage::default();
        Call::Responses.read_usage(
            &json!({"type": "response.completed", "response": {"usage": {"input_tokens": 7, "output_tokens": 3}}}),
            &mut u,
        );
        assert_eq!((u.input_tokens, u.output_tokens), (7, 3));
    }

    #[test]
    fn the_agent_s_token_is_read_and_the_real_key_put_in_its_place() {
        let mut h = HeaderMap::new();
        h.insert("x-api-key", HeaderValue::from_static("tok"));
        h.insert("anthropic-version", HeaderValue::from_static("2023-06-01"));
        assert_eq!(Provider::Anthropic.key_sent(&h, None), Some("tok"));
        let up = Provider::Anthropic.upstream_headers(&h, Some("sk-real"));
        assert_eq!(up["x-api-key"], "sk-real");
        assert_eq!(up["anthropic-version"], "2023-06-01");
        assert_eq!(
            Provider::Gemini.key_sent(&HeaderMap::new(), Some("alt=sse&key=t2")),
            Some("t2")
        );
    }
}
