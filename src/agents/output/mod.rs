//! Readers of agents' output: each turns one agent's format, a line at a time, into
//! `AgentEvent`s. Claude Code's stream-JSON ([`claude`]), Codex's `--json` events in both of
//! their schemas ([`codex`]), OpenCode's `run --format json` ([`opencode`]), the Gemini CLI's
//! stream-JSON ([`gemini`]), Aider's text with its cost lines ([`aider`]), and plain text for
//! every other agent without a structured mode ([`plain`]); [`Format`] names them and makes their readers ([`Reader`]).

pub(crate) mod aider;
pub(crate) mod claude;
pub(crate) mod codex;
pub(crate) mod gemini;
pub(crate) mod opencode;
mod format;
pub(crate) mod plain;
mod reader;

pub use format::Format;
pub use reader::Reader;
