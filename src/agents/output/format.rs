//! [`Format`]: the structured output an agent offers, and its reader.

use serde::{Deserialize, Serialize};

use super::reader::Reader;
use super::{aider, claude, codex, gemini, opencode, plain};

/// The structured output an agent offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    /// Claude Code's `--output-format stream-json` (one JSON object per line; also a JSON
    /// array of them, as `--output-format json` prints).
    ClaudeStreamJson,
    /// Codex's `exec --json`: `thread.started`, `item.completed`, `turn.completed`, ... or,
    /// before that schema, `{"id", "msg": {"type": ...}}` events. Told apart line by line.
    CodexJson,
    /// OpenCode's `run --format json`: `step_start`, `text`, `tool_use`, `step_finish`, `error`.
    #[serde(rename = "opencode-json")]
    OpenCodeJson,
    /// The Gemini CLI's `--output-format stream-json`: `init`, `message`, `tool_use`,
    /// `tool_result`, `error`, `result`.
    GeminiStreamJson,
    /// Aider's text, with the tokens and cost of its `Tokens: … Cost: …` lines.
    Aider,
    /// Text: every line is the agent's text.
    Plain,
    /// The Agent Client Protocol: JSON-RPC over the agent's stdio, a session per run
    /// (`agents::acp`). Its lines are not read here.
    Acp,
}

impl Format {
    pub fn as_str(self) -> &'static str {
        match self {
            Format::ClaudeStreamJson => "claude-stream-json",
            Format::CodexJson => "codex-json",
            Format::OpenCodeJson => "opencode-json",
            Format::GeminiStreamJson => "gemini-stream-json",
            Format::Aider => "aider",
            Format::Plain => "plain",
            Format::Acp => "acp",
        }
    }

    /// A reader of this format.
    pub fn reader(self) -> Box<dyn Reader> {
        match self {
            Format::ClaudeStreamJson => Box::new(claude::ClaudeReader::default()),
            Format::CodexJson => Box::new(codex::CodexReader::default()),
            Format::OpenCodeJson => Box::new(opencode::OpenCodeReader::default()),
            Format::GeminiStreamJson => Box::new(gemini::GeminiReader::default()),
            Format::Aider => Box::new(aider::AiderReader::default()),
            // `agents::acp` reads its messages; a line seen here is text.
            Format::Plain | Format::Acp => Box::new(plain::PlainReader),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use ralph_actors::schema::agent::AgentEvent;
    use ralph_actors::tracker::status::{Found, Status, StatusScanner};

    use super::*;

    /// A recorded run read through its format's reader; the status blocks found in its text.
    fn read(format: Format, output: &str) -> (Vec<AgentEvent>, Vec<Found>) {
        let mut reader = format.reader();
        let mut events = Vec::new();
        for line in output.lines() {
            reader.line(line, &mut events);
        }
        reader.finish(&mut events);
        let mut scanner = StatusScanner::new();
        let mut found = Vec::new();
        for event in &events {
            if let AgentEvent::Text { text } = event {
                scanner.feed(text.as_bytes(), &mut found);
                scanner.feed(b"\n", &mut found);
            }
        }
        scanner.finish(&mut found);
        found.retain(|f| matches!(f, Found::Block(_)));
        (events, found)
    }

    fn tools(events: &[AgentEvent]) -> Vec<&str> {
        events
            .iter()
            .filter_map(|e| match e {
                AgentEvent::Tool { name, .. } => Some(name.as_str()),
                _ => None,
            })
            .collect()
    }

    fn one_complete_block(found: &[Found]) {
        assert!(
            matches!(found, [Found::Block(b)] if b.status == Status::Complete && b.exit_signal),
            "{found:?}"
        );
    }

    /// Claude Code 2.1.332, run here against a local Anthropic-protocol server: its block is
    /// found once (its final result repeats the text, and is not scanned), its cost is the
    /// result's.
    #[test]
    fn a_recorded_claude_code_run() {
        let (events, found) = read(
            Format::ClaudeStreamJson,
            include_str!("../testdata/claude-2.1.332.jsonl"),
        );
        assert_eq!(tools(&events), ["Read", "Edit", "Bash"]);
        one_complete_block(&found);
        let result = events.last().unwrap();
        assert!(
            matches!(result, AgentEvent::Result { is_error: false, cost_usd: Some(c), tokens: Some(t), .. }
                if (*c - 0.273855).abs() < 1e-9 && t.input == 90105 && t.output == 236),
            "{result:?}"
        );
    }

    /// Codex 0.171.0's thread events, recorded the same way.
    #[test]
    fn a_recorded_codex_run() {
        let (events, found) = read(
            Format::CodexJson,
            include_str!("../testdata/codex-0.171.0.jsonl"),
        );
        assert_eq!(tools(&events), ["edit", "shell"]);
        one_complete_block(&found);
        assert!(matches!(
            events.last().unwrap(),
            AgentEvent::Result { is_error: false, cost_usd: None, tokens: Some(t), .. }
                if t.input == 29440 && t.output == 247
        ));
    }

    /// Aider 0.86.2 against a local OpenAI-protocol server.
    #[test]
    fn a_recorded_opencode_run() {
        let (events, _) = read(
            Format::OpenCodeJson,
            include_str!("../testdata/opencode-1.18.33.jsonl"),
        );
        assert_eq!(tools(&events), ["read", "edit"]);
        assert!(matches!(&events[0], AgentEvent::Session { id } if id.starts_with("ses_")));
        assert!(matches!(
            events.last().unwrap(),
            AgentEvent::Result { is_error: false, cost_usd: None, tokens: Some(t), text }
                if t.input == 3000 && t.output == 150 && text == "All done."
        ));
    }

    #[test]
    fn a_recorded_gemini_cli_run() {
        let (events, _) = read(
            Format::GeminiStreamJson,
            include_str!("../testdata/gemini-0.61.0.jsonl"),
        );
        assert_eq!(tools(&events), ["read_file", "replace"]);
        assert!(matches!(
            events.last().unwrap(),
            AgentEvent::Result { is_error: false, cost_usd: None, tokens: Some(t), text }
                if t.input == 3000 && t.output == 150 && text == "All done."
        ));
    }

    #[test]
    fn a_recorded_aider_run() {
        let (events, found) = read(Format::Aider, include_str!("../testdata/aider-0.86.2.txt"));
        one_complete_block(&found);
        assert!(events.iter().any(|e| matches!(
            e,
            AgentEvent::Usage { tokens, .. } if tokens.input == 2500 && tokens.output == 103
        )));
        assert!(matches!(
            events.last().unwrap(),
            AgentEvent::Result { cost_usd: Some(c), .. } if (*c - 0.0092).abs() < 1e-9
        ));
    }
}
