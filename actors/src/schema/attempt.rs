//! A fix attempt as the MemoryVault keeps it, and as it comes back from a recall.

use serde::{Deserialize, Serialize};

use crate::schema::test_run::Category;

/// One fix attempt: the failure, the change, and whether it worked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FixAttempt {
    /// Unique per attempt (a UUID).
    pub id: String,
    /// Which project it came from (a hash of the project root; `shared` for imported patterns).
    pub project_id: String,
    /// The normalised failure it tried to fix (see [`crate::memory::signature`]).
    pub signature: String,
    /// The failure's category (`LOGIC`, `SYNTAX`, ...), when the run had one.
    pub category: Option<Category>,
    /// The failing tests' ids.
    pub test_ids: Vec<String>,
    /// What the Artisan said it was doing: its reply without the code.
    pub hypothesis: String,
    /// The change, as a unified diff of the target.
    pub diff: String,
    /// Whether the tests passed (every success criterion met) after the change.
    pub success: bool,
    /// When the attempt ended, in milliseconds since the Unix epoch.
    pub timestamp_ms: i64,
    /// Tokens the iteration used (input + output, every role).
    pub tokens: u64,
    /// What the iteration cost, in USD.
    pub cost_usd: f64,
    /// The Artisan's model (`provider/model`).
    pub model: String,
    /// The target's language (`python`, `typescript`, ...).
    pub language: String,
}

/// A stored attempt found near a query, with its cosine similarity (1 = the same signature).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Scored {
    pub attempt: FixAttempt,
    pub similarity: f32,
}

/// Where a recalled attempt came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// This project's vault.
    Project,
    /// The opt-in shared store (`memory.global_uri`), anonymised.
    Shared,
}

/// An attempt recalled for the Artisan, with what ranked it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecalledFix {
    pub attempt: FixAttempt,
    pub similarity: f32,
    /// Successful attempts over all attempts recalled for the same signature.
    pub success_rate: f64,
    /// How many attempts were recalled for that signature.
    pub pattern_attempts: u32,
    pub origin: Origin,
}
