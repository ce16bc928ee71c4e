//! [`Format`]: the structured output an agent offers, and its reader.

use serde::{Deserialize, Serialize};

use super::reader::Reader;
use super::{claude, codex, plain};

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
    /// Text: every line is the agent's text.
    Plain,
}

impl Format {
    pub fn as_str(self) -> &'static str {
        match self {
            Format::ClaudeStreamJson => "claude-stream-json",
            Format::CodexJson => "codex-json",
            Format::Plain => "plain",
        }
    }

    /// A reader of this format.
    pub fn reader(self) -> Box<dyn Reader> {
        match self {
            Format::ClaudeStreamJson => Box::new(claude::ClaudeReader::default()),
            Format::CodexJson => Box::new(codex::CodexReader::default()),
            Format::Plain => Box::new(plain::PlainReader),
        }
    }
}
