//! What the agent's turn in an iteration left (see [`super::turn`]), for the loop and its
//! judgement.

use std::time::Duration;

use ralph_actors::schema::agent::AgentTokens;
use ralph_actors::tracker::status::Found;

/// How the turn ended.
#[derive(Debug)]
pub enum TurnEnd {
    /// The agent finished its turn (exited 0, or gave its result and lingered).
    Finished,
    /// The iteration's cost cap was crossed: the agent was killed.
    OverCost,
    /// Crashed or hung more than `max_retries` times in a row: why, the last time.
    Failed(String),
    /// SIGQUIT: the agent was killed.
    Quit,
    /// SIGINT or SIGTERM during a backoff, with no agent running: nothing left to finish.
    Interrupted,
}

/// What the turn left.
#[derive(Debug)]
pub struct Turn {
    pub end: TurnEnd,
    pub runs: u32,
    /// The last run's ending, as the report names it.
    pub ending: String,
    pub exit_code: Option<i32>,
    pub duration: Duration,
    pub cost_usd: f64,
    pub cost_estimated: bool,
    pub tokens: AgentTokens,
    pub tokens_estimated: bool,
    /// What the last run's text said (status blocks, indicators).
    pub found: Vec<Found>,
    /// What the Regent has to tell the next iteration's agent.
    pub notes: Vec<String>,
}
