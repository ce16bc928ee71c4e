//! The Gemini CLI's `--output-format stream-json`: one JSON event a line. `init` carries the
//! session (`session_id`), `message` a piece of text (`role`, `content`; the assistant's come as
//! `delta`s, one reply in several), `tool_use` a tool call (`tool_name`, `parameters`),
//! `tool_result` its outcome, `error` a failure (`message`), and `result` the end (`status`,
//! and `stats` with the run's tokens). Tokens, no money: the cost comes from the price table.

use ralph_actors::schema::agent::{AgentEvent, AgentTokens};
use serde_json::Value;

use super::reader::{first_text, summary, Reader};

#[derive(Debug, Default)]
pub struct GeminiReader {
    /// The assistant's reply so far: its deltas joined, said whole when something else comes,
    /// so a status block is never read in pieces.
    reply: String,
    last_reply: String,
}

fn count(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or(0)
}

impl GeminiReader {
    fn flush(&mut self, out: &mut Vec<AgentEvent>) {
        if !self.reply.trim().is_empty() {
            self.last_reply = std::mem::take(&mut self.reply);
            out.push(AgentEvent::Text {
                text: self.last_reply.clone(),
            });
        }
        self.reply.clear();
    }
}

impl Reader for GeminiReader {
    fn line(&mut self, line: &str, out: &mut Vec<AgentEvent>) {
        let trimmed = line.trim();
        if trimmed.is_empty() {
            return;
        }
        let Ok(event) = serde_json::from_str::<Value>(trimmed) else {
            self.flush(out);
            out.push(AgentEvent::Text {
                text: line.to_string(),
            });
            return;
        };
        let text = |key: &str| event.get(key).and_then(Value::as_str).unwrap_or("");
        match text("type") {
            "message" if text("role") == "assistant" => self.reply.push_str(text("content")),
            "message" => {}
            "init" => {
                if !text("session_id").is_empty() {
                    out.push(AgentEvent::Session {
                        id: text("session_id").to_string(),
                    });
                }
            }
            "tool_use" => {
                self.flush(out);
                let parameters = &event["parameters"];
                let keys = [
                    "file_path",
                    "absolute_path",
                    "command",
                    "pattern",
                    "dir_path",
                ];
                let detail = first_text(parameters, &keys)
                    .map_or_else(|| parameters.to_string(), str::to_string);
                out.push(AgentEvent::Tool {
                    name: text("tool_name").to_string(),
                    detail: summary(&detail, 120),
                });
            }
            "error" => {
                self.flush(out);
                out.push(AgentEvent::Error {
                    message: text("message").to_string(),
                });
            }
            "result" => {
                self.flush(out);
                let stats = &event["stats"];
                out.push(AgentEvent::Result {
                    text: std::mem::take(&mut self.last_reply),
                    is_error: text("status") != "success",
                    cost_usd: None,
                    tokens: Some(AgentTokens {
                        input: count(stats, "input_tokens"),
                        output: count(stats, "output_tokens"),
                        cached_input: count(stats, "cached"),
                    }),
                });
            }
            _ => self.flush(out),
        }
    }

    fn finish(&mut self, out: &mut Vec<AgentEvent>) {
        self.flush(out);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::super::reader::read_all;
    use super::*;

    #[test]
    fn a_reply_in_deltas_is_one_text_and_a_failed_result_is_an_error() {
        let events = read_all::<GeminiReader>(&[
            r#"{"type":"message","role":"assistant","content":"---RALPH_","delta":true}"#,
            r#"{"type":"message","role":"assistant","content":"STATUS---","delta":true}"#,
            r#"{"type":"result","status":"error","stats":{"input_tokens":5,"output_tokens":1}}"#,
        ]);
        assert!(matches!(&events[0], AgentEvent::Text { text } if text == "---RALPH_STATUS---"));
        assert!(matches!(
            &events[1],
            AgentEvent::Result { is_error: true, tokens: Some(t), text, .. }
                if t.input == 5 && text == "---RALPH_STATUS---"
        ));
    }
}
