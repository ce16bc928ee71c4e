//! OpenCode's `run --format json`: one JSON event a line, each with a `part`. `step_start`
//! opens a model call (its `sessionID` is the session's), `text` is a finished text part
//! (`part.text`), `tool_use` a finished tool call (`part.tool`, `part.state.input`),
//! `step_finish` closes the call with its `tokens` (`input`, `output`, `cache.read`) and the
//! `cost` OpenCode priced it at, and `error` is a failure (`error.data.message`). There is no
//! closing event: the run's result is its last text, said when the output ends.
//!
//! OpenCode prices calls from its own catalog, which may not know a model (then it says 0):
//! its tokens are counted at the price table's rates instead.

use ralph_actors::schema::agent::{AgentEvent, AgentTokens};
use serde_json::Value;

use super::reader::{first_text, summary, Reader};

#[derive(Debug, Default)]
pub struct OpenCodeReader {
    session: Option<String>,
    last_text: String,
    tokens: AgentTokens,
    failed: bool,
}

fn count(v: &Value, pointer: &str) -> u64 {
    v.pointer(pointer).and_then(Value::as_u64).unwrap_or(0)
}

/// What a tool call was about: its file, command or pattern, else its input in short.
fn detail(input: &Value) -> String {
    let keys = ["filePath", "command", "pattern", "path", "url"];
    first_text(input, &keys).map_or_else(|| summary(&input.to_string(), 120), |s| summary(s, 120))
}

impl Reader for OpenCodeReader {
    fn line(&mut self, line: &str, out: &mut Vec<AgentEvent>) {
        let trimmed = line.trim();
        if trimmed.is_empty() {
            return;
        }
        let Ok(event) = serde_json::from_str::<Value>(trimmed) else {
            out.push(AgentEvent::Text {
                text: line.to_string(),
            });
            return;
        };
        let part = &event["part"];
        match event["type"].as_str().unwrap_or("") {
            "step_start" if self.session.is_none() => {
                if let Some(id) = event["sessionID"].as_str() {
                    self.session = Some(id.to_string());
                    out.push(AgentEvent::Session { id: id.to_string() });
                }
            }
            "text" => {
                let text = part["text"].as_str().unwrap_or("");
                if !text.trim().is_empty() {
                    self.last_text = text.to_string();
                    out.push(AgentEvent::Text { text: text.into() });
                }
            }
            "tool_use" => out.push(AgentEvent::Tool {
                name: part["tool"].as_str().unwrap_or("tool").to_string(),
                detail: detail(&part["state"]["input"]),
            }),
            "step_finish" => {
                let tokens = AgentTokens {
                    input: count(part, "/tokens/input"),
                    output: count(part, "/tokens/output"),
                    cached_input: count(part, "/tokens/cache/read"),
                };
                self.tokens.add(tokens);
                out.push(AgentEvent::Usage {
                    tokens,
                    cumulative: false,
                });
            }
            "error" => {
                self.failed = true;
                let error = &event["error"];
                let message = error
                    .pointer("/data/message")
                    .or_else(|| error.get("message"))
                    .and_then(Value::as_str)
                    .map_or_else(|| error.to_string(), str::to_string);
                out.push(AgentEvent::Error { message });
            }
            _ => {}
        }
    }

    fn finish(&mut self, out: &mut Vec<AgentEvent>) {
        if self.session.is_none() && self.last_text.is_empty() && !self.failed {
            return;
        }
        out.push(AgentEvent::Result {
            text: std::mem::take(&mut self.last_text),
            is_error: self.failed,
            cost_usd: None,
            tokens: Some(self.tokens),
        });
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::super::reader::read_all;
    use super::*;

    #[test]
    fn an_error_is_said_and_ends_the_run_failed() {
        let events = read_all::<OpenCodeReader>(&[
            r#"{"type":"step_start","sessionID":"ses_1","part":{}}"#,
            r#"{"type":"error","sessionID":"ses_1","error":{"name":"APIError","data":{"message":"budget spent"}}}"#,
        ]);
        assert!(matches!(&events[1], AgentEvent::Error { message } if message == "budget spent"));
        assert!(matches!(
            events.last().unwrap(),
            AgentEvent::Result { is_error: true, .. }
        ));
    }

    #[test]
    fn text_that_is_no_event_is_the_agent_s_words() {
        let events = read_all::<OpenCodeReader>(&["not json"]);
        assert!(matches!(&events[0], AgentEvent::Text { text } if text == "not json"));
    }
}
