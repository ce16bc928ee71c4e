//! The completion promise a run kept, the report's `promise`: the profile it ran under and each
//! check its success stands on, met, not met, off, or unavailable and why. A gate whose tool is
//! missing is `unavailable`, never a silent pass.

use serde::{Deserialize, Serialize};

/// What a run checks before it calls a fix done (`--quick`, `profile:` in config).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Profile {
    /// The seed's promise: the tests, the Critic, Chaos's attacks, and the coverage and
    /// mutation gates on the lines the run changed.
    #[default]
    Full,
    /// The tests and the Critic only: no Chaos, no coverage or mutation gate.
    Quick,
}

impl Profile {
    pub fn as_str(self) -> &'static str {
        match self {
            Profile::Full => "full",
            Profile::Quick => "quick",
        }
    }
}

/// Where a check stands at the end of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckStatus {
    /// Checked, and met.
    Met,
    /// Not met, or not reached before the run ended.
    Unmet,
    /// Part of the promise, but its tool is missing: the run said so and went on without it.
    Unavailable,
    /// Not part of this run's promise (the quick profile, Chaos off, a gate set to `null`).
    Off,
}

impl CheckStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            CheckStatus::Met => "met",
            CheckStatus::Unmet => "unmet",
            CheckStatus::Unavailable => "unavailable",
            CheckStatus::Off => "off",
        }
    }
}

/// One check: `tests`, `critic`, `adversarial`, `coverage`, `mutation`, `linter`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Check {
    pub name: String,
    pub status: CheckStatus,
    /// What was measured, or why the check is off or unavailable.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub detail: String,
}

impl Check {
    pub fn new(name: &str, status: CheckStatus, detail: impl Into<String>) -> Self {
        Self {
            name: name.to_string(),
            status,
            detail: detail.into(),
        }
    }
}

/// The report's `promise`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Promise {
    pub profile: Profile,
    pub checks: Vec<Check>,
}

impl Promise {
    /// The check named `name`, if the promise lists it.
    pub fn check(&self, name: &str) -> Option<&Check> {
        self.checks.iter().find(|c| c.name == name)
    }

    /// The line the summary and the views show: `promise (full): tests met · critic met · …`.
    pub fn summary(&self) -> String {
        format!("promise ({}): {}", self.profile.as_str(), self.line())
    }

    /// The summary without the checks' details, for a line that must fit a terminal's width:
    /// `promise (full): tests met · critic met · coverage unavailable · …`.
    pub fn brief(&self) -> String {
        let checks: Vec<String> = self
            .checks
            .iter()
            .map(|c| format!("{} {}", c.name, c.status.as_str()))
            .collect();
        format!(
            "promise ({}): {}",
            self.profile.as_str(),
            checks.join(" · ")
        )
    }

    /// Its checks in one line: `tests met · coverage unavailable (c8 is not installed) · ...`.
    pub fn line(&self) -> String {
        self.checks
            .iter()
            .map(|c| match c.detail.is_empty() {
                true => format!("{} {}", c.name, c.status.as_str()),
                false => format!("{} {} ({})", c.name, c.status.as_str(), c.detail),
            })
            .collect::<Vec<_>>()
            .join(" · ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_promise_reads_as_one_line_of_its_checks() {
        let p = Promise {
            profile: Profile::Full,
            checks: vec![
                Check::new("tests", CheckStatus::Met, ""),
                Check::new(
                    "mutation",
                    CheckStatus::Unavailable,
                    "mutmut is not installed",
                ),
            ],
        };
        assert_eq!(
            p.line(),
            "tests met · mutation unavailable (mutmut is not installed)"
        );
        assert_eq!(
            p.brief(),
            "promise (full): tests met · mutation unavailable"
        );
        assert_eq!(
            p.check("mutation").map(|c| c.status),
            Some(CheckStatus::Unavailable)
        );
        let json = serde_json::to_value(&p).expect("json");
        assert_eq!(json["profile"], "full");
        assert_eq!(json["checks"][1]["status"], "unavailable");
    }
}
