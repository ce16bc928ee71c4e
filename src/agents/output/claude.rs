//! Claude Code's `-p --output-format stream-json --verbose`: one JSON object per line.
//!
//! - `{"type":"system","subtype":"init","session_id":…}`;
//! - `{"type":"assistant","message":{"id":…,"content":[{"type":"text","text":…},
//!   {"type":"tool_use","name":"Edit","input":{…}}],"usage":{…}}}`: one event per content block,
//!   each repeating its message's usage (counted once per message id);
//! - `{"type":"user",…}`: tool results, not the agent's words;
//! - `{"type":"result","subtype":"success","is_error":false,"result":…,"total_cost_usd":…,
//!   "usage":{…}}`: the last event, with the cost of the whole session.
//!
//! `--output-format json` prints the same events as one JSON array (or only the result object):
//! a line that is an array is read element by element. A line that is not JSON is the agent's
//! text (a wrapper script's message, an older version's plain output).

use ralph_actors::schema::agent::{AgentEvent, AgentTokens};
use serde_json::Value;

use super::reader::{first_text, summary, Reader};

#[derive(Debug, Default)]
pub struct ClaudeReader {
    /// The message ids whose usage is counted.
    counted: std::collections::HashSet<String>,
}

impl Reader for ClaudeReader {
    fn line(&mut self, line: &str, out: &mut Vec<AgentEvent>) {
        let trimmed = line.trim();
        if trimmed.is_empty() {
            return;
        }
        match serde_json::from_str::<Value>(trimmed) {
            Ok(Value::Array(events)) => events.iter().for_each(|e| self.event(e, out)),
            Ok(event @ Value::Object(_)) => self.event(&event, out),
            _ => out.push(AgentEvent::Text {
                text: line.to_string(),
            }),
        }
    }
}

impl ClaudeReader {
    fn event(&mut self, event: &Value, out: &mut Vec<AgentEvent>) {
        let text = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_string);
        match event.get("type").and_then(Value::as_str) {
            Some("system") => {
                if let Some(id) = text(event, "session_id") {
                    out.push(AgentEvent::Session { id });
                }
            }
            Some("assistant") => {
                let Some(message) = event.get("message") else {
                    return;
                };
                for block in message
                    .get("content")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    match block.get("type").and_then(Value::as_str) {
                        Some("text") => {
                            if let Some(text) = text(block, "text") {
                                out.push(AgentEvent::Text { text });
                            }
                        }
                        Some("tool_use") => out.push(AgentEvent::Tool {
                            name: text(block, "name").unwrap_or_default(),
                            detail: tool_detail(block.get("input")),
                        }),
                        _ => {}
                    }
                }
                let id = text(message, "id").unwrap_or_default();
                if let Some(tokens) = message.get("usage").map(tokens) {
                    if id.is_empty() || self.counted.insert(id) {
                        out.push(AgentEvent::Usage {
                            tokens,
                            cumulative: false,
                        });
                    }
                }
            }
            Some("result") => {
                let is_error = event.get("is_error").and_then(Value::as_bool) == Some(true)
                    || text(event, "subtype").is_some_and(|s| s != "success");
                out.push(AgentEvent::Result {
                    text: text(event, "result").unwrap_or_default(),
                    is_error,
                    // `cost_usd` before 1.0, `total_cost_usd` since.
                    cost_usd: ["total_cost_usd", "cost_usd"]
                        .iter()
                        .find_map(|k| event.get(*k).and_then(Value::as_f64)),
                    tokens: event.get("usage").map(tokens),
                });
            }
            _ => {}
        }
    }
}

/// Anthropic's usage: input, cache reads and writes (both input), output.
fn tokens(usage: &Value) -> AgentTokens {
    let n = |k: &str| usage.get(k).and_then(Value::as_u64).unwrap_or(0);
    AgentTokens {
        input: n("input_tokens")
            .saturating_add(n("cache_creation_input_tokens"))
            .saturating_add(n("cache_read_input_tokens")),
        output: n("output_tokens"),
        cached_input: n("cache_read_input_tokens"),
    }
}

/// What a tool call is about: its command, file, pattern or URL.
fn tool_detail(input: Option<&Value>) -> String {
    let Some(input) = input else {
        return String::new();
    };
    let keys = [
        "command",
        "file_path",
        "path",
        "pattern",
        "url",
        "description",
    ];
    first_text(input, &keys)
        .map(|s| summary(s, 160))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn read(lines: &[&str]) -> Vec<AgentEvent> {
        super::super::reader::read_all::<ClaudeReader>(lines)
    }

    const STREAM: &[&str] = &[
        r#"{"type":"system","subtype":"init","session_id":"s-1","model":"claude-sonnet-4-5","tools":["Bash","Edit"]}"#,
        r#"{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"Fixing the median."}],"usage":{"input_tokens":10,"cache_read_input_tokens":90,"output_tokens":5}},"session_id":"s-1"}"#,
        r#"{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"t1","name":"Edit","input":{"file_path":"/p/median.py","old_string":"a","new_string":"b"}}],"usage":{"input_tokens":10,"cache_read_input_tokens":90,"output_tokens":5}},"session_id":"s-1"}"#,
        r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}}"#,
        r#"{"type":"result","subtype":"success","is_error":false,"result":"Done.\n---RALPH_STATUS---\nSTATUS: COMPLETE\n---END_RALPH_STATUS---","total_cost_usd":0.0123,"usage":{"input_tokens":20,"cache_read_input_tokens":180,"output_tokens":40}}"#,
    ];

    #[test]
    fn a_stream_gives_session_text_tools_usage_once_per_message_and_the_cost() {
        assert_eq!(
            read(STREAM),
            [
                AgentEvent::Session { id: "s-1".into() },
                AgentEvent::Text {
                    text: "Fixing the median.".into()
                },
                AgentEvent::Usage {
                    tokens: AgentTokens {
                        input: 100,
                        output: 5,
                        cached_input: 90
                    },
                    cumulative: false
                },
                AgentEvent::Tool {
                    name: "Edit".into(),
                    detail: "/p/median.py".into()
                },
                AgentEvent::Result {
                    text: "Done.\n---RALPH_STATUS---\nSTATUS: COMPLETE\n---END_RALPH_STATUS---"
                        .into(),
                    is_error: false,
                    cost_usd: Some(0.0123),
                    tokens: Some(AgentTokens {
                        input: 200,
                        output: 40,
                        cached_input: 180
                    }),
                },
            ]
        );
    }

    /// `--output-format json`'s array on one line reads as the stream does; an error result
    /// is an error; a line that is not JSON is text.
    #[test]
    fn an_array_an_error_result_and_plain_lines() {
        let array = format!("[{}]", STREAM.join(","));
        assert_eq!(read(&[&array]), read(STREAM));
        let failed = read(&[
            r#"{"type":"result","subtype":"error_max_turns","is_error":false,"cost_usd":0.5}"#,
        ]);
        assert!(matches!(
            failed.as_slice(),
            [AgentEvent::Result { is_error: true, cost_usd: Some(c), .. }] if *c == 0.5
        ));
        assert_eq!(
            read(&["Error: not logged in"]),
            [AgentEvent::Text {
                text: "Error: not logged in".into()
            }]
        );
    }
}
