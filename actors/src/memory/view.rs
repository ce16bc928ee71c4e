//! What the Artisan's prompt shows of a recalled attempt.

use serde::{Deserialize, Serialize};

use crate::memory::text::cut_to;
use crate::schema::attempt::{Origin, RecalledFix};

/// What the Artisan's prompt shows of a recalled attempt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryView {
    pub signature: String,
    pub worked: bool,
    /// Cosine similarity to this failure, two decimals.
    pub similarity: String,
    /// `2 of 3 attempts worked` for the attempt's signature.
    pub record: String,
    pub hypothesis: String,
    pub diff: String,
    /// When it was tried (UTC date).
    pub when: String,
    pub model: String,
    pub shared: bool,
}

/// The most of an attempt's diff a prompt shows.
const VIEW_DIFF_BYTES: usize = 3_000;
/// The most of an attempt's hypothesis a prompt shows.
const VIEW_HYPOTHESIS_BYTES: usize = 600;

impl From<&RecalledFix> for MemoryView {
    fn from(r: &RecalledFix) -> Self {
        let a = &r.attempt;
        let worked = (r.success_rate * f64::from(r.pattern_attempts)).round() as u32;
        let mut diff = a.diff.clone();
        cut_to(&mut diff, VIEW_DIFF_BYTES);
        let mut hypothesis = a.hypothesis.clone();
        cut_to(&mut hypothesis, VIEW_HYPOTHESIS_BYTES);
        MemoryView {
            signature: a.signature.clone(),
            worked: a.success,
            similarity: format!("{:.2}", r.similarity),
            record: format!(
                "{worked} of {} attempt{} at this failure worked",
                r.pattern_attempts,
                if r.pattern_attempts == 1 { "" } else { "s" }
            ),
            hypothesis,
            diff,
            when: chrono::DateTime::from_timestamp_millis(a.timestamp_ms)
                .map(|t| t.format("%Y-%m-%d").to_string())
                .unwrap_or_default(),
            model: a.model.clone(),
            shared: r.origin == Origin::Shared,
        }
    }
}
