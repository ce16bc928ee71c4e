//! Token usage, as providers report it and the ledger adds it up, and the calls that cost more
//! than was reserved for them.

use serde::{Deserialize, Serialize};

/// Token usage as the provider reported it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    #[serde(default)]
    pub cache_read_tokens: u64,
    #[serde(default)]
    pub cache_write_tokens: u64,
}

impl std::ops::AddAssign for Usage {
    /// Saturating: the counts are what a provider (or a proxy) said.
    fn add_assign(&mut self, o: Self) {
        self.input_tokens = self.input_tokens.saturating_add(o.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(o.output_tokens);
        self.cache_read_tokens = self.cache_read_tokens.saturating_add(o.cache_read_tokens);
        self.cache_write_tokens = self.cache_write_tokens.saturating_add(o.cache_write_tokens);
    }
}

/// A call that cost more than the ledger reserved for it: the provider ignored the output cap
/// it was sent, or counted far more prompt tokens than the prompt has bytes. No client can
/// prevent this one case; the run stops at once when it happens.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Overrun {
    pub role: String,
    pub model: String,
    /// What the ledger had reserved for the call.
    pub reserved_usd: f64,
    /// What the call cost.
    pub cost_usd: f64,
    /// How much more it cost than was reserved.
    #[serde(default)]
    pub excess_usd: f64,
}

impl std::fmt::Display for Overrun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the {} call on {} cost ${:.6}, ${:.6} more than the ${:.6} reserved for it",
            self.role, self.model, self.cost_usd, self.excess_usd, self.reserved_usd
        )
    }
}
