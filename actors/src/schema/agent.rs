//! What a coding-agent CLI's output says, whichever agent printed it: its text (where status
//! blocks and completion indicators are read), its tool activity, its token use and cost, and its
//! final result. Each agent's reader (Claude Code's stream-JSON, Codex's `--json` events, plain
//! text) turns its own format into these.

use serde::{Deserialize, Serialize};

/// One thing an agent's output said, in the order it said it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum AgentEvent {
    /// The agent's session or thread id (to resume it, and for the log).
    Session { id: String },
    /// Text the agent wrote for the user: its reasoning aloud, its summary. Status blocks are
    /// read from this.
    Text { text: String },
    /// A tool the agent ran: a shell command, a file edit, a search. `detail` is a one-line
    /// summary (the command, the path).
    Tool { name: String, detail: String },
    /// Token use the agent reported, as a running total or an increment (`cumulative`).
    Usage {
        #[serde(flatten)]
        tokens: AgentTokens,
        cumulative: bool,
    },
    /// The agent's last word: its final text, whether it counts itself failed, and its cost
    /// when it reports one.
    Result {
        text: String,
        is_error: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost_usd: Option<f64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tokens: Option<AgentTokens>,
    },
    /// An error the agent reported (an API failure, a refused request).
    Error { message: String },
}

/// Tokens as agents report them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentTokens {
    pub input: u64,
    pub output: u64,
    /// Input tokens served from the provider's prompt cache (read), when reported.
    #[serde(default)]
    pub cached_input: u64,
}

impl AgentTokens {
    pub fn add(&mut self, other: AgentTokens) {
        // Saturating: the counts come from an agent's output, which may say anything.
        self.input = self.input.saturating_add(other.input);
        self.output = self.output.saturating_add(other.output);
        self.cached_input = self.cached_input.saturating_add(other.cached_input);
    }
}
