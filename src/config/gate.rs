//! The gates of `success_criteria` (`coverage_threshold`, `mutation_score_min`): a threshold
//! that remembers whether the config file set it, since a default gate whose tool is missing is
//! `unavailable` where a gate the user asked for stops the run.

use serde::{Deserializer, Serialize};

use super::checks::{opt_mutation_score, opt_percent};

/// A gate of `success_criteria`: its threshold in percent (`None`: set to `null`, off), and
/// whether the config file set it. A gate left at its default whose tool is missing is
/// reported `unavailable` and the run goes on; one the file set stops the run before it starts.
#[derive(Debug, Clone, Copy)]
pub struct Gate {
    pub min: Option<f64>,
    pub set: bool,
}

/// Two gates are alike when their thresholds are: where a value came from is not the value.
impl PartialEq for Gate {
    fn eq(&self, other: &Self) -> bool {
        self.min == other.min
    }
}

impl Gate {
    /// The built-in default, `min` percent.
    pub const fn default_at(min: f64) -> Self {
        Self {
            min: Some(min),
            set: false,
        }
    }

    /// A value the config file (or a caller) set.
    pub const fn set(min: Option<f64>) -> Self {
        Self { min, set: true }
    }

    pub fn is_some(&self) -> bool {
        self.min.is_some()
    }
}

impl Serialize for Gate {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.min.serialize(s)
    }
}

pub(super) fn coverage_gate<'de, D: Deserializer<'de>>(d: D) -> Result<Gate, D::Error> {
    opt_percent(d).map(Gate::set)
}

pub(super) fn mutation_gate<'de, D: Deserializer<'de>>(d: D) -> Result<Gate, D::Error> {
    opt_mutation_score(d).map(Gate::set)
}
