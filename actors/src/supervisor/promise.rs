//! The report's `promise`: each check a run's success stands on, read from its settings and
//! what it measured. A gate whose tool is missing is `unavailable`, with why, never `met`.

use crate::policy::pace::CriticMode;
use crate::schema::promise::{Check, CheckStatus, Profile, Promise};
use crate::schema::report::Status;
use crate::supervisor::run::Run;

impl Run {
    pub(super) fn promise(&self, status: Status) -> Promise {
        let s = &self.settings;
        let success = status == Status::Success;
        let met = |ok: bool| match ok {
            true => CheckStatus::Met,
            false => CheckStatus::Unmet,
        };
        let tests_pass = self.last_run.as_ref().is_some_and(|r| r.passed());
        let mut checks = vec![Check::new(
            "tests",
            met(tests_pass),
            self.last_run
                .as_ref()
                .map(|r| match r.totals.failed {
                    0 => format!("{} passed", r.totals.passed),
                    failed => format!("{} passed, {failed} failed", r.totals.passed),
                })
                .unwrap_or_default(),
        )];
        checks.push(match s.critic_mode {
            CriticMode::Off => Check::new("critic", CheckStatus::Off, "critic.mode is off"),
            _ => Check::new("critic", met(success), ""),
        });
        let off_why = match (s.profile, s.chaos.enabled) {
            (Profile::Quick, _) => "the quick profile",
            (_, false) => "Chaos is off",
            _ => "",
        };
        let report = self.state.adversarial.as_ref();
        // Chaos on, but it cannot attack this target (a crate without a library): neither can
        // the gates it carries be reached.
        let unattacked = (s.chaos.enabled && self.team.chaos.is_none())
            .then_some("Chaos cannot attack this target (see the run's notes)");
        // Why a gate that is `on` cannot be measured: its tool is missing, or Chaos, which
        // carries it, cannot attack.
        let unavailable = |gate: &str, on: bool| {
            s.unavailable
                .get(gate)
                .cloned()
                .or_else(|| unattacked.filter(|_| on).map(str::to_string))
        };
        checks.push(if !s.chaos.enabled {
            Check::new("adversarial", CheckStatus::Off, off_why)
        } else if let Some(why) = unavailable("adversarial", true) {
            Check::new("adversarial", CheckStatus::Unavailable, why)
        } else {
            match report {
                Some(r) if r.open().next().is_some() => Check::new(
                    "adversarial",
                    CheckStatus::Unmet,
                    format!("{} finding(s) still failing", r.open().count()),
                ),
                Some(r) => Check::new(
                    "adversarial",
                    met(success),
                    format!(
                        "{} round(s), {} finding(s) fixed",
                        r.rounds, r.failures_fixed
                    ),
                ),
                None => Check::new("adversarial", CheckStatus::Unmet, "not reached"),
            }
        });
        let coverage_on = s.chaos.coverage_min.is_some() || s.coverage_threshold.is_some();
        checks.push(if let Some(why) = unavailable("coverage", coverage_on) {
            Check::new("coverage", CheckStatus::Unavailable, why)
        } else if let (true, Some(min)) = (s.chaos.enabled, s.chaos.coverage_min) {
            match report.and_then(|r| r.coverage.as_ref()) {
                Some(c) => Check::new(
                    "coverage",
                    met(c.met()),
                    format!(
                        "{}% of {} changed line(s) by {}, at least {min}%",
                        c.pct, c.coverable, c.tool
                    ),
                ),
                None => Check::new(
                    "coverage",
                    CheckStatus::Unmet,
                    format!("not reached (at least {min}% of the changed lines)"),
                ),
            }
        } else if let Some(min) = s.coverage_threshold {
            let criterion = self
                .last_run
                .as_ref()
                .and_then(|r| r.criteria.iter().find(|c| c.name == "coverage_threshold"));
            match criterion {
                Some(c) => Check::new("coverage", met(c.met), c.detail.clone()),
                None => Check::new(
                    "coverage",
                    CheckStatus::Unmet,
                    format!("not reached (at least {min}% of lines)"),
                ),
            }
        } else {
            Check::new(
                "coverage",
                CheckStatus::Off,
                match off_why {
                    "" => "success_criteria.coverage_threshold is null",
                    why => why,
                },
            )
        });
        checks.push(
            if let Some(why) = unavailable("mutation", s.chaos.mutation()) {
                Check::new("mutation", CheckStatus::Unavailable, why)
            } else if s.chaos.mutation() {
                match (
                    report.and_then(|r| r.mutation.as_ref()),
                    s.chaos.mutation_score_min,
                ) {
                    (Some(m), Some(min)) => Check::new(
                        "mutation",
                        met(m.scores.operational + f64::EPSILON >= min),
                        format!("{}% by {}, at least {min}%", m.scores.operational, m.tool),
                    ),
                    (Some(m), None) => Check::new(
                        "mutation",
                        CheckStatus::Met,
                        format!("{}% by {}, no gate", m.scores.operational, m.tool),
                    ),
                    (None, _) => Check::new("mutation", CheckStatus::Unmet, "not reached"),
                }
            } else {
                Check::new(
                    "mutation",
                    CheckStatus::Off,
                    match off_why {
                        "" => "success_criteria.mutation_score_min is null",
                        why => why,
                    },
                )
            },
        );
        if success && self.state.iteration == 0 {
            // The tests passed as they were: nothing changed, so there were no changed lines to
            // attack or measure.
            for check in checks.iter_mut().filter(|c| c.status == CheckStatus::Unmet) {
                check.status = CheckStatus::Off;
                check.detail = "nothing changed: the tests passed as they were".into();
            }
        }
        Promise {
            profile: s.profile,
            checks,
        }
    }
}
