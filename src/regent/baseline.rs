//! `testing.mode: tdd`: the baseline (`.ralph/test_baseline.json`, the seed's format), and the
//! regressions against it. Tests are written before the code, so failing tests are expected; a
//! test that passed in the baseline and does not pass now (failing, or gone) is a regression.
//!
//! A test is known by its id where the tool reports tests one by one; a run read only from its
//! exit code (a `testing.command` whose output names no test) is one test named by its command.

use std::collections::BTreeSet;
use std::path::Path;

use chrono::{DateTime, Utc};
use ralph_actors::schema::test_run::{CaseStatus, TestRun};
use serde::{Deserialize, Serialize};

use crate::config::BaselineScope;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Baseline {
    pub captured_at: DateTime<Utc>,
    pub scope: BaselineScope,
    pub passing: Vec<String>,
    pub failing: Vec<String>,
    #[serde(default)]
    pub skipped: Vec<String>,
    /// When the project left its bootstrap phase (its first tests), if the loop saw it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bootstrap_completed_at: Option<DateTime<Utc>>,
}

impl Baseline {
    /// The baseline of `run`.
    pub fn of(run: &TestRun, scope: BaselineScope) -> Baseline {
        let (mut passing, mut failing, mut skipped) = (Vec::new(), Vec::new(), Vec::new());
        if run.tests.is_empty() {
            let id = run.command.clone();
            if run.passed() {
                passing.push(id);
            } else {
                failing.push(id);
            }
        }
        for t in &run.tests {
            match t.status {
                CaseStatus::Pass => passing.push(t.id.clone()),
                CaseStatus::Fail | CaseStatus::Timeout => failing.push(t.id.clone()),
                CaseStatus::Skip => skipped.push(t.id.clone()),
            }
        }
        for list in [&mut passing, &mut failing, &mut skipped] {
            list.sort();
            list.dedup();
        }
        Baseline {
            captured_at: Utc::now(),
            scope,
            passing,
            failing,
            skipped,
            bootstrap_completed_at: None,
        }
    }

    /// The baseline in `path`; `Ok(None)` when there is none, `Err` (why) when it cannot be
    /// read.
    pub fn load(path: &Path) -> Result<Option<Baseline>, String> {
        match std::fs::read(path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| format!("{} is not a test baseline ({e})", path.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(format!("cannot read {}: {e}", path.display())),
        }
    }

    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let mut bytes = serde_json::to_vec_pretty(self).map_err(std::io::Error::other)?;
        bytes.push(b'\n');
        crate::fsutil::write_atomic(path, &bytes)
    }

    /// The tests that passed in the baseline and do not pass in `run`.
    pub fn regressions(&self, run: &TestRun) -> Vec<String> {
        let now: BTreeSet<String> = Baseline::of(run, self.scope).passing.into_iter().collect();
        self.passing
            .iter()
            .filter(|id| !now.contains(*id))
            .cloned()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use ralph_actors::schema::test_run::{RunStatus, TestCase};

    use super::*;

    fn run(cases: &[(&str, CaseStatus)]) -> TestRun {
        let mut run = TestRun::new("pytest", RunStatus::Failed);
        for (id, status) in cases {
            run.tests.push(TestCase {
                id: (*id).into(),
                status: *status,
                ..TestCase::default()
            });
        }
        run
    }

    #[test]
    fn a_regression_is_a_baseline_pass_that_fails_or_vanished() {
        use CaseStatus::*;
        let base = Baseline::of(
            &run(&[
                ("t::a", Pass),
                ("t::b", Pass),
                ("t::new", Fail),
                ("t::s", Skip),
            ]),
            BaselineScope::Global,
        );
        assert_eq!(base.passing, ["t::a", "t::b"]);
        assert_eq!(base.failing, ["t::new"]);
        assert_eq!(base.skipped, ["t::s"]);
        // A new test passing and one still failing: no regression.
        assert!(base
            .regressions(&run(&[("t::a", Pass), ("t::b", Pass), ("t::new", Pass)]))
            .is_empty());
        // One fails, one is gone.
        assert_eq!(
            base.regressions(&run(&[("t::a", Fail), ("t::new", Pass)])),
            ["t::a", "t::b"]
        );
    }

    #[test]
    fn a_run_without_named_tests_is_one_test_and_the_file_round_trips() {
        let mut passed = TestRun::new("make test", RunStatus::Passed);
        passed.totals.passed = 1;
        let base = Baseline::of(&passed, BaselineScope::Session);
        assert_eq!(base.passing, ["make test"]);
        let failed = TestRun::new("make test", RunStatus::Failed);
        assert_eq!(base.regressions(&failed), ["make test"]);

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".ralph/test_baseline.json");
        assert_eq!(Baseline::load(&path).unwrap(), None);
        base.save(&path).unwrap();
        assert_eq!(Baseline::load(&path).unwrap(), Some(base));
        let text = std::fs::read_to_string(&path).unwrap();
        for key in [
            "captured_at",
            "\"scope\": \"session\"",
            "passing",
            "failing",
            "skipped",
        ] {
            assert!(text.contains(key), "{key}: {text}");
        }
        std::fs::write(&path, "[]").unwrap();
        assert!(Baseline::load(&path)
            .unwrap_err()
            .contains("not a test baseline"));
    }
}
