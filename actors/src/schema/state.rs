//! What a session has done so far: `state.json` (everything a resume needs) and the lines of
//! `iterations.log`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::role::Role;
use crate::schema::context::ContextSummary;
use crate::schema::report::{
    Checkpoint, FallbackRecord, FileLeft, FixReview, MemoryReport, TestsSnapshot, Timings,
};
use crate::schema::usage::{Overrun, Usage};

/// What a session has done so far; `state.json` in the session folder.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionState {
    pub session_id: String,
    pub target: String,
    pub test_command: String,
    /// `running` until the session ends, then its final status.
    pub status: String,
    /// Iterations completed.
    pub iteration: u32,
    pub ledger: LedgerSnapshot,
    pub breaker: Breaker,
    pub tests_before: Option<TestsSnapshot>,
    pub tests_after: Option<TestsSnapshot>,
    pub critic_rejections: u32,
    /// The Critic's word on the last proposal whose tests passed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fix_review: Option<FixReview>,
    #[serde(default)]
    pub test_integrity_rejections: u32,
    pub context_resets: u32,
    /// Wall time of the session's earlier runs (before a resume).
    pub elapsed_ms: u64,
    pub timings: Timings,
    pub warnings: Vec<String>,
    /// Choices made on the user's behalf, flags not honoured.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// What hooks asked the Artisan to address in the next iteration (a vetoed success's
    /// reasons), kept so that a resumed session still shows them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hook_notes: Vec<String>,
    #[serde(default)]
    pub fallbacks: Vec<FallbackRecord>,
    /// The largest share of its model's context window each role's prompt has used.
    #[serde(default)]
    pub context_use: BTreeMap<Role, f64>,
    /// LocalGuard's last placeholder number of each kind (`SECRET_AWS_ACCESS_KEY_ID` → 2):
    /// numbers only, never values. A resumed session numbers on from them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub guard_counters: BTreeMap<String, u32>,
    /// The MemoryVault's status and counts so far.
    #[serde(default)]
    pub memory: MemoryReport,
    /// The best state the target has reached (iteration 0: as it was): a proposal that does
    /// worse is undone to it, and a run that fails leaves it by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub best: Option<Checkpoint>,
    /// The iteration whose state the target holds now (0: the original); `None` while a
    /// proposal is written but not yet tested.
    #[serde(default = "original")]
    pub on_disk: Option<u32>,
    /// Proposals undone so far.
    #[serde(default)]
    pub reverts: u32,
    /// What the last undoing told the next iteration's Artisan, until it is shown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub undone: Option<String>,
    /// The user's words for the Artisan (`resume --guidance`, or typed when the breaker asked),
    /// shown from the next iteration on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guidance: Option<String>,
    /// Set when the run ended without success: the state it left in the target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_left: Option<FileLeft>,
    /// What Chaos has done so far (absent until its first round).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adversarial: Option<crate::schema::adversarial::AdversarialReport>,
    /// The checkpoint Chaos judged best so far, with its open findings: a later fix that leaves
    /// more of them open is undone back to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adversarial_floor: Option<crate::schema::adversarial::Floor>,
    pub started_at: String,
}

fn original() -> Option<u32> {
    Some(0)
}

impl SessionState {
    pub fn new(session_id: &str, target: &str, test_command: &str, entropy_threshold: u32) -> Self {
        Self {
            session_id: session_id.into(),
            target: target.into(),
            test_command: test_command.into(),
            status: "running".into(),
            iteration: 0,
            ledger: LedgerSnapshot::default(),
            breaker: Breaker::new(entropy_threshold),
            tests_before: None,
            tests_after: None,
            critic_rejections: 0,
            fix_review: None,
            test_integrity_rejections: 0,
            context_resets: 0,
            elapsed_ms: 0,
            timings: Timings::default(),
            warnings: Vec::new(),
            notes: Vec::new(),
            hook_notes: Vec::new(),
            fallbacks: Vec::new(),
            context_use: BTreeMap::new(),
            guard_counters: BTreeMap::new(),
            memory: MemoryReport::default(),
            best: None,
            on_disk: Some(0),
            reverts: 0,
            undone: None,
            guidance: None,
            file_left: None,
            adversarial: None,
            adversarial_floor: None,
            started_at: timestamp(),
        }
    }
}

/// What the ledger has spent, by role and model: saved with the state so a resumed session
/// counts what it spent before.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LedgerSnapshot {
    pub spent: f64,
    pub by_role: BTreeMap<String, f64>,
    pub by_model: BTreeMap<String, f64>,
    pub tokens: Usage,
    pub tokens_by_role: BTreeMap<String, Usage>,
    /// Calls that cost more than was reserved for them (see [`Overrun`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overruns: Vec<Overrun>,
    /// Calls abandoned before a reply (Ctrl+C, the time limit, a stalled stream, a timeout):
    /// each is charged what was reserved for it, since the provider may bill it.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub abandoned_calls: u32,
    /// Replies whose provider reported no usage (or zero with text): charged by estimate.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub estimated_calls: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// Counts how many iterations ended on each fingerprint.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Breaker {
    pub threshold: u32,
    pub seen: BTreeMap<String, u32>,
}

impl Breaker {
    pub fn new(threshold: u32) -> Self {
        Self {
            threshold,
            seen: BTreeMap::new(),
        }
    }

    /// Records one more iteration ending on `fp`; true when that trips the breaker.
    pub fn record(&mut self, fp: &str) -> bool {
        let n = self.seen.entry(fp.to_string()).or_default();
        *n += 1;
        *n >= self.threshold
    }
}

/// What one iteration did, one JSON object per line of `iterations.log`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IterationRecord {
    pub iteration: u32,
    pub started_at: String,
    pub duration_ms: u64,
    pub critic_rejections: u32,
    pub critic_approved: bool,
    pub tests: String,
    pub passed: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
    pub cost_usd: f64,
    /// `passed`, `failed`, or `undone` (the proposal did worse than the best state and was
    /// reverted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
    /// The project files the Librarian added to the prompt, and why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<ContextSummary>,
    /// Why the Librarian's analysis ran (`librarian.analyze`); absent when it did not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub analysis: Option<String>,
    /// How the Critic's review met the tests: `gate` (before them), `parallel` (beside them)
    /// or `off`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub critic: Option<String>,
    /// The passing proposal's review was still out when the iteration was recorded: it runs
    /// beside Chaos's round, and its verdict is the report's `fix_review`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub review_pending: bool,
}

/// Now, as the state and the report write times: RFC 3339 in UTC, to the second.
pub fn timestamp() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn breaker_trips_on_the_threshold() {
        let mut b = Breaker::new(3);
        assert!(!b.record("a"));
        assert!(!b.record("b"));
        assert!(!b.record("a"));
        assert!(b.record("a"));
    }
}
