//! A reply on its way back to the agent, with the run's placeholders restored: a whole JSON
//! reply string by string ([`restore_strings`]), a streamed one event by event ([`Relay`]).
//!
//! A streamed text comes in pieces, one per event (a text delta, a tool call's arguments), and a
//! placeholder may be cut between two. Each text has its own [`StreamUnmask`], which gives out
//! at once what cannot be part of a placeholder and holds the rest; when the protocol says the
//! text has ended (a content block stops, a choice finishes, an item is done), what is still
//! held goes out first, in an event of the same kind made for it. The usage the events report
//! is gathered on the way, for the charge.

use std::collections::HashMap;
use std::sync::Arc;

use ralph_actors::schema::usage::Usage;
use ralph_guard::{Guard, StreamUnmask};
use serde_json::{Map, Value};

use super::protocol::{set, Call, Piece};

/// `value` with the run's placeholders restored in every string but those at `skip` (JSON
/// pointers).
pub fn restore_strings(guard: &Guard, value: &mut Value, skip: &[&str]) {
    fn walk(guard: &Guard, value: &mut Value, path: &mut String, skip: &[&str]) {
        match value {
            Value::String(s) if !skip.contains(&path.as_str()) && s.contains("<<") => {
                *s = guard.restore(s);
            }
            Value::Array(items) => {
                for (i, item) in items.iter_mut().enumerate() {
                    let len = path.len();
                    path.push_str(&format!("/{i}"));
                    walk(guard, item, path, skip);
                    path.truncate(len);
                }
            }
            Value::Object(map) => {
                for (k, item) in map.iter_mut() {
                    let len = path.len();
                    path.push('/');
                    path.push_str(k);
                    walk(guard, item, path, skip);
                    path.truncate(len);
                }
            }
            _ => {}
        }
    }
    walk(guard, value, &mut String::new(), skip);
}

/// A value written inside a JSON string: escaped as JSON escapes it, without the quotes.
fn json_escape(value: &str) -> String {
    let quoted = serde_json::to_string(value).unwrap_or_default();
    quoted
        .strip_prefix('"')
        .and_then(|q| q.strip_suffix('"'))
        .unwrap_or_default()
        .to_string()
}

/// One text under way in the stream.
struct Open {
    unmask: StreamUnmask,
    /// The last event that carried a piece of it, cut down to that piece: what an event made
    /// to carry its held rest looks like.
    template: Value,
    pointer: String,
    /// The SSE event name it came under (`content_block_delta`), if any.
    name: String,
}

/// One streamed reply's way back.
pub struct Relay {
    call: Call,
    guard: Arc<Guard>,
    open: HashMap<String, Open>,
    usage: Usage,
    saw_usage: bool,
}

/// An event to send: its SSE name (empty for none) and its data.
pub type Outgoing = (String, String);

impl Relay {
    pub fn new(call: Call, guard: Arc<Guard>) -> Self {
        Self {
            call,
            guard,
            open: HashMap::new(),
            usage: Usage::default(),
            saw_usage: false,
        }
    }

    /// The usage the events reported, if any did.
    pub fn usage(&self) -> Option<Usage> {
        self.saw_usage.then_some(self.usage)
    }

    /// One event as it came, as the events to send on: the event with its pieces restored (a
    /// tail that may be a cut placeholder held back), after an event for each text it ends
    /// that still held something.
    pub fn event(&mut self, name: &str, data: &str) -> Vec<Outgoing> {
        let Ok(mut value) = serde_json::from_str::<Value>(data) else {
            // `[DONE]`, a keep-alive: the stream's texts are over.
            let mut out = self.finish();
            out.push((name.to_string(), data.to_string()));
            return out;
        };
        let before = self.usage;
        self.call.read_usage(&value, &mut self.usage);
        self.saw_usage |= self.usage != before;
        let ends = self.call.ends(&value);
        let ended = |key: &str| ends.iter().any(|e| key == e || key.starts_with(e.as_str()));
        let pieces = self.call.pieces(&value);
        for piece in &pieces {
            let Some(text) = value.pointer(&piece.pointer).and_then(Value::as_str) else {
                continue;
            };
            let text = text.to_string();
            let guard = self.guard.clone();
            let open = self.open_for(piece, name, &value);
            let mut out = open.unmask.push(&guard, &text);
            if ended(&piece.key) {
                out.push_str(&open.unmask.finish(&guard));
                self.open.remove(&piece.key);
            }
            set(&mut value, &piece.pointer, Value::String(out));
        }
        let mut out = Vec::new();
        // Most events end nothing: the open texts are searched only when one may be ended.
        let closing: Vec<String> = match ends.is_empty() {
            true => Vec::new(),
            false => self.open.keys().filter(|k| ended(k)).cloned().collect(),
        };
        for key in closing {
            if let Some(open) = self.open.remove(&key) {
                out.extend(self.held_rest(open));
            }
        }
        let skip: Vec<&str> = pieces.iter().map(|p| p.pointer.as_str()).collect();
        restore_strings(&self.guard, &mut value, &skip);
        out.push((name.to_string(), value.to_string()));
        out
    }

    /// Every text's held rest, in events of their kinds: the stream has ended.
    pub fn finish(&mut self) -> Vec<Outgoing> {
        let mut keys: Vec<String> = self.open.keys().cloned().collect();
        keys.sort();
        let opens: Vec<Open> = keys.iter().filter_map(|k| self.open.remove(k)).collect();
        opens
            .into_iter()
            .filter_map(|open| self.held_rest(open))
            .collect()
    }

    fn open_for(&mut self, piece: &Piece, name: &str, event: &Value) -> &mut Open {
        let template = skeleton(event, &piece.pointer);
        let open = self.open.entry(piece.key.clone()).or_insert_with(|| Open {
            unmask: if piece.json {
                StreamUnmask::escaped(json_escape)
            } else {
                StreamUnmask::new()
            },
            template: Value::Null,
            pointer: piece.pointer.clone(),
            name: String::new(),
        });
        open.template = template;
        open.pointer = piece.pointer.clone();
        open.name = name.to_string();
        open
    }

    /// An event carrying what `open` still holds, restored; none when it holds nothing.
    fn held_rest(&self, mut open: Open) -> Option<Outgoing> {
        let rest = open.unmask.finish(&self.guard);
        if rest.is_empty() {
            return None;
        }
        let mut event = open.template;
        set(&mut event, &open.pointer, Value::String(rest));
        Some((open.name, event.to_string()))
    }
}

/// The fields kept of an event when it is cut down to one piece: what says which stream, block,
/// choice or item the piece belongs to.
const TOP_KEYS: [&str; 9] = [
    "type",
    "index",
    "item_id",
    "output_index",
    "content_index",
    "id",
    "object",
    "created",
    "model",
];
const NESTED_KEYS: [&str; 3] = ["type", "index", "role"];

/// `event` cut down to the field at `pointer` and what identifies it: each object on the way
/// keeps only its identifying keys, each array only the element on the way.
fn skeleton(event: &Value, pointer: &str) -> Value {
    fn cut(value: &Value, segments: &[&str], keys: &[&str]) -> Value {
        let Some((first, rest)) = segments.split_first() else {
            return Value::Null;
        };
        match value {
            Value::Array(items) => {
                let item = first
                    .parse::<usize>()
                    .ok()
                    .and_then(|i| items.get(i))
                    .unwrap_or(&Value::Null);
                Value::Array(vec![cut_object(item, rest, &NESTED_KEYS)])
            }
            Value::Object(map) => {
                let mut out = Map::new();
                for k in keys {
                    if let Some(v) = map.get(*k) {
                        out.insert((*k).to_string(), v.clone());
                    }
                }
                let inner = map.get(*first).unwrap_or(&Value::Null);
                out.insert((*first).to_string(), cut_object(inner, rest, &NESTED_KEYS));
                Value::Object(out)
            }
            _ => Value::Null,
        }
    }
    fn cut_object(value: &Value, segments: &[&str], keys: &[&str]) -> Value {
        if segments.is_empty() {
            return Value::Null;
        }
        cut(value, segments, keys)
    }
    let segments: Vec<&str> = pointer.split('/').skip(1).collect();
    cut(event, &segments, &TOP_KEYS)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use ralph_guard::GuardConfig;
    use serde_json::json;

    fn guard() -> Arc<Guard> {
        Arc::new(Guard::new(&GuardConfig::all()).unwrap())
    }

    const KEY: &str = "AKIAZ2QXLW6HKJH7TRBQ";

    /// The placeholder of [`KEY`], the guard having masked it.
    fn placeholder(g: &Guard) -> String {
        let masked = g.mask(&format!("AWS_ACCESS_KEY_ID={KEY}"), None).text;
        masked.trim_start_matches("AWS_ACCESS_KEY_ID=").to_string()
    }

    fn data(out: &[Outgoing]) -> Vec<Value> {
        out.iter()
            .map(|(_, d)| serde_json::from_str(d).unwrap())
            .collect()
    }

    #[test]
    fn a_placeholder_cut_between_two_text_deltas_comes_back_whole() {
        let g = guard();
        let p = placeholder(&g);
        let (a, b) = p.split_at(9);
        let mut relay = Relay::new(Call::Messages, g.clone());
        let delta = |t: &str| {
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}}).to_string()
        };
        let first = data(&relay.event("content_block_delta", &delta(&format!("key is {a}"))));
        assert_eq!(first[0]["delta"]["text"], "key is ");
        let second = data(&relay.event("content_block_delta", &delta(&format!("{b} ok <"))));
        assert_eq!(second[0]["delta"]["text"], format!("{KEY} ok "));
        let stop = relay.event(
            "content_block_stop",
            &json!({"type": "content_block_stop", "index": 0}).to_string(),
        );
        let stop = data(&stop);
        assert_eq!(
            stop.len(),
            2,
            "the held `<` goes out before the block stops"
        );
        assert_eq!(
            stop[0],
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "<"}})
        );
        assert_eq!(stop[1]["type"], "content_block_stop");
    }

    #[test]
    fn a_value_restored_into_streamed_json_arguments_is_escaped() {
        let g = guard();
        let pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7Zx9kQ2mW7pL4vB8nR3tY6uH1q8Vn3Lk2Tz7Rw5Yx\n-----END RSA PRIVATE KEY-----";
        let masked = g.mask(pem, None).text;
        assert!(masked.starts_with("<<SECRET_"), "{masked}");
        let mut relay = Relay::new(Call::ChatCompletions, g.clone());
        let chunk = |args: &str, finish: Value| {
            json!({"id": "c1", "object": "chat.completion.chunk", "model": "gpt-4.1", "choices": [
                {"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": args}}]}, "finish_reason": finish}
            ]}).to_string()
        };
        let mut args = String::new();
        for (i, piece) in [
            format!("{{\"key\": \"{}", &masked[..5]),
            format!("{}\"}}", &masked[5..]),
        ]
        .iter()
        .enumerate()
        {
            let finish = if i == 1 {
                json!("tool_calls")
            } else {
                Value::Null
            };
            for v in data(&relay.event("", &chunk(piece, finish))) {
                args.push_str(
                    v["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"]
                        .as_str()
                        .unwrap_or_default(),
                );
            }
        }
        let parsed: Value = serde_json::from_str(&args).unwrap();
        assert_eq!(parsed["key"], pem);
    }

    #[test]
    fn usage_is_gathered_and_done_events_are_restored_whole() {
        let g = guard();
        let p = placeholder(&g);
        let mut relay = Relay::new(Call::Responses, g.clone());
        let done =
            json!({"type": "response.output_text.done", "item_id": "m1", "text": format!("k={p}")});
        let out = data(&relay.event("response.output_text.done", &done.to_string()));
        assert_eq!(out[0]["text"], format!("k={KEY}"));
        assert!(relay.usage().is_none());
        let completed = json!({"type": "response.completed", "response": {"usage": {"input_tokens": 12, "output_tokens": 5}}});
        relay.event("response.completed", &completed.to_string());
        assert_eq!(
            relay.usage().map(|u| (u.input_tokens, u.output_tokens)),
            Some((12, 5))
        );
    }
}
