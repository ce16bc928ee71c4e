//! Codex's `exec --json`, whose events changed between versions; each line is read by its own
//! shape.
//!
//! Since 0.44 (thread events): `{"type":"thread.started","thread_id":…}`, `turn.started`,
//! `item.started` / `item.updated` / `item.completed` with an `item` of type `agent_message`
//! (`text`), `reasoning`, `command_execution` (`command`), `file_change` (`changes`),
//! `mcp_tool_call`, `web_search`, `todo_list` or `error`; `{"type":"turn.completed","usage":
//! {"input_tokens","cached_input_tokens","output_tokens"}}`, `turn.failed`, `error`.
//!
//! Before (protocol events): `{"id":"0","msg":{"type":…}}` with `session_configured`,
//! `agent_message` (`message`), `exec_command_begin` (`command`: argv), `patch_apply_begin`
//! (`changes`: path → change), `token_count` (flat counts, or `info.total_token_usage`, a
//! running total), `task_complete` (`last_agent_message`), `error`.
//!
//! Codex reports tokens, not money: the cost comes from the price table.

use ralph_actors::schema::agent::{AgentEvent, AgentTokens};
use serde_json::Value;

use super::reader::{summary, Reader};

#[derive(Debug, Default)]
pub struct CodexReader {
    /// The last `agent_message`, which is the turn's result.
    last_message: String,
}

impl Reader for CodexReader {
    fn line(&mut self, line: &str, out: &mut Vec<AgentEvent>) {
        let trimmed = line.trim();
        if trimmed.is_empty() {
            return;
        }
        match serde_json::from_str::<Value>(trimmed) {
            Ok(event) if event.get("msg").is_some_and(Value::is_object) => {
                self.protocol_event(&event["msg"], out)
            }
            Ok(event) if event.get("type").is_some() => self.thread_event(&event, out),
            // The config summary an older `exec --json` printed first, and anything else that
            // is JSON but no event: not the agent's words.
            Ok(_) => {}
            Err(_) => out.push(AgentEvent::Text {
                text: line.to_string(),
            }),
        }
    }
}

fn text(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_string)
}

fn count(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or(0)
}

fn tokens(usage: &Value) -> AgentTokens {
    AgentTokens {
        input: count(usage, "input_tokens"),
        output: count(usage, "output_tokens"),
        cached_input: count(usage, "cached_input_tokens"),
    }
}

impl CodexReader {
    fn message(&mut self, text: String, out: &mut Vec<AgentEvent>) {
        self.last_message.clone_from(&text);
        out.push(AgentEvent::Text { text });
    }

    fn thread_event(&mut self, event: &Value, out: &mut Vec<AgentEvent>) {
        match event.get("type").and_then(Value::as_str).unwrap_or("") {
            "thread.started" => {
                if let Some(id) = text(event, "thread_id") {
                    out.push(AgentEvent::Session { id });
                }
            }
            "item.completed" => {
                let Some(item) = event.get("item") else {
                    return;
                };
                let kind = item
                    .get("type")
                    .or_else(|| item.get("item_type"))
                    .and_then(Value::as_str)
                    .unwrap_or("");
                match kind {
                    "agent_message" | "assistant_message" => {
                        if let Some(t) = text(item, "text") {
                            self.message(t, out);
                        }
                    }
                    "command_execution" => out.push(AgentEvent::Tool {
                        name: "shell".into(),
                        detail: summary(&text(item, "command").unwrap_or_default(), 160),
                    }),
                    "file_change" => out.push(AgentEvent::Tool {
                        name: "edit".into(),
                        detail: item
                            .get("changes")
                            .and_then(Value::as_array)
                            .into_iter()
                            .flatten()
                            .filter_map(|c| text(c, "path"))
                            .collect::<Vec<_>>()
                            .join(", "),
                    }),
                    "mcp_tool_call" => out.push(AgentEvent::Tool {
                        name: format!(
                            "{}.{}",
                            text(item, "server").unwrap_or_default(),
                            text(item, "tool").unwrap_or_default()
                        ),
                        detail: String::new(),
                    }),
                    "web_search" => out.push(AgentEvent::Tool {
                        name: "web_search".into(),
                        detail: text(item, "query").unwrap_or_default(),
                    }),
                    "error" => out.push(AgentEvent::Error {
                        message: text(item, "message").unwrap_or_default(),
                    }),
                    _ => {}
                }
            }
            "turn.completed" => {
                let usage = event.get("usage").map(tokens);
                if let Some(tokens) = usage {
                    out.push(AgentEvent::Usage {
                        tokens,
                        cumulative: false,
                    });
                }
                out.push(AgentEvent::Result {
                    text: std::mem::take(&mut self.last_message),
                    is_error: false,
                    cost_usd: None,
                    tokens: usage,
                });
            }
            "turn.failed" => {
                let message = event
                    .get("error")
                    .and_then(|e| text(e, "message"))
                    .unwrap_or_default();
                out.push(AgentEvent::Error {
                    message: message.clone(),
                });
                out.push(AgentEvent::Result {
                    text: message,
                    is_error: true,
                    cost_usd: None,
                    tokens: None,
                });
            }
            "error" => out.push(AgentEvent::Error {
                message: text(event, "message").unwrap_or_default(),
            }),
            _ => {}
        }
    }

    fn protocol_event(&mut self, msg: &Value, out: &mut Vec<AgentEvent>) {
        match msg.get("type").and_then(Value::as_str).unwrap_or("") {
            "session_configured" => {
                if let Some(id) = text(msg, "session_id") {
                    out.push(AgentEvent::Session { id });
                }
            }
            "agent_message" => {
                if let Some(t) = text(msg, "message") {
                    self.message(t, out);
                }
            }
            "exec_command_begin" => {
                let argv: Vec<&str> = msg
                    .get("command")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .collect();
                out.push(AgentEvent::Tool {
                    name: "shell".into(),
                    detail: summary(&argv.join(" "), 160),
                });
            }
            "patch_apply_begin" => {
                let paths: Vec<&String> = msg
                    .get("changes")
                    .and_then(Value::as_object)
                    .map(|c| c.keys().collect())
                    .unwrap_or_default();
                out.push(AgentEvent::Tool {
                    name: "apply_patch".into(),
                    detail: paths
                        .iter()
                        .map(|p| p.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                });
            }
            "token_count" => {
                // A running total under `info` (later versions), flat counts per turn before.
                if let Some(total) = msg.get("info").and_then(|i| i.get("total_token_usage")) {
                    out.push(AgentEvent::Usage {
                        tokens: tokens(total),
                        cumulative: true,
                    });
                } else if msg.get("input_tokens").is_some() {
                    out.push(AgentEvent::Usage {
                        tokens: tokens(msg),
                        cumulative: false,
                    });
                }
            }
            "task_complete" => {
                let last = text(msg, "last_agent_message")
                    .unwrap_or_else(|| std::mem::take(&mut self.last_message));
                out.push(AgentEvent::Result {
                    text: last,
                    is_error: false,
                    cost_usd: None,
                    tokens: None,
                });
            }
            "error" | "stream_error" => out.push(AgentEvent::Error {
                message: text(msg, "message").unwrap_or_default(),
            }),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn read(lines: &[&str]) -> Vec<AgentEvent> {
        super::super::reader::read_all::<CodexReader>(lines)
    }

    fn usage(input: u64, cached: u64, output: u64) -> AgentTokens {
        AgentTokens {
            input,
            output,
            cached_input: cached,
        }
    }

    #[test]
    fn thread_events_give_session_text_tools_and_the_turns_usage() {
        let events = read(&[
            r#"{"type":"thread.started","thread_id":"th-1"}"#,
            r#"{"type":"turn.started"}"#,
            r#"{"type":"item.started","item":{"id":"item_0","type":"command_execution","command":"bash -lc pytest","status":"in_progress"}}"#,
            r#"{"type":"item.completed","item":{"id":"item_0","type":"command_execution","command":"bash -lc pytest","aggregated_output":"1 failed","exit_code":1,"status":"completed"}}"#,
            r#"{"type":"item.completed","item":{"id":"item_1","type":"file_change","changes":[{"path":"median.py","kind":"update"}],"status":"completed"}}"#,
            r#"{"type":"item.completed","item":{"id":"item_2","type":"agent_message","text":"Fixed it."}}"#,
            r#"{"type":"turn.completed","usage":{"input_tokens":1200,"cached_input_tokens":1000,"output_tokens":80}}"#,
        ]);
        assert_eq!(
            events,
            [
                AgentEvent::Session { id: "th-1".into() },
                AgentEvent::Tool {
                    name: "shell".into(),
                    detail: "bash -lc pytest".into()
                },
                AgentEvent::Tool {
                    name: "edit".into(),
                    detail: "median.py".into()
                },
                AgentEvent::Text {
                    text: "Fixed it.".into()
                },
                AgentEvent::Usage {
                    tokens: usage(1200, 1000, 80),
                    cumulative: false
                },
                AgentEvent::Result {
                    text: "Fixed it.".into(),
                    is_error: false,
                    cost_usd: None,
                    tokens: Some(usage(1200, 1000, 80))
                },
            ]
        );
        let failed = read(&[r#"{"type":"turn.failed","error":{"message":"stream disconnected"}}"#]);
        assert!(matches!(
            failed.as_slice(),
            [
                AgentEvent::Error { .. },
                AgentEvent::Result { is_error: true, .. }
            ]
        ));
    }

    #[test]
    fn protocol_events_of_older_versions_read_the_same() {
        let events = read(&[
            r#"{"model":"gpt-5","sandbox":"workspace-write","workdir":"/p"}"#,
            r#"{"id":"0","msg":{"type":"session_configured","session_id":"se-1","model":"gpt-5"}}"#,
            r#"{"id":"0","msg":{"type":"task_started"}}"#,
            r#"{"id":"0","msg":{"type":"exec_command_begin","call_id":"c1","command":["bash","-lc","pytest -q"],"cwd":"/p"}}"#,
            r#"{"id":"0","msg":{"type":"patch_apply_begin","call_id":"c2","auto_approved":true,"changes":{"/p/median.py":{"update":{"unified_diff":"@@"}}}}}"#,
            r#"{"id":"0","msg":{"type":"agent_message","message":"Fixed it."}}"#,
            r#"{"id":"0","msg":{"type":"token_count","info":{"total_token_usage":{"input_tokens":900,"cached_input_tokens":100,"output_tokens":70,"total_tokens":970}}}}"#,
            r#"{"id":"0","msg":{"type":"token_count","input_tokens":5,"output_tokens":6}}"#,
            r#"{"id":"0","msg":{"type":"task_complete","last_agent_message":"Fixed it."}}"#,
        ]);
        assert_eq!(
            events,
            [
                AgentEvent::Session { id: "se-1".into() },
                AgentEvent::Tool {
                    name: "shell".into(),
                    detail: "bash -lc pytest -q".into()
                },
                AgentEvent::Tool {
                    name: "apply_patch".into(),
                    detail: "/p/median.py".into()
                },
                AgentEvent::Text {
                    text: "Fixed it.".into()
                },
                AgentEvent::Usage {
                    tokens: usage(900, 100, 70),
                    cumulative: true
                },
                AgentEvent::Usage {
                    tokens: usage(5, 0, 6),
                    cumulative: false
                },
                AgentEvent::Result {
                    text: "Fixed it.".into(),
                    is_error: false,
                    cost_usd: None,
                    tokens: None
                },
            ]
        );
    }
}
