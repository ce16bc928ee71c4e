//! The report's `promise`: each check a run's success stands on, read from its settings and
//! what it measured. A gate whose tool is missing is `unavailable`, with why, never `met`.

use crate::policy::pace::CriticMode;
use crate::schema::adversarial::AdversarialReport;
use crate::schema::promise::{Check, CheckStatus, Profile, Promise};
use crate::schema::report::Status;
use crate::supervisor::run::Run;

impl Run {
    pub(super) fn promise(&self, status: Status) -> Promise {
        let s = &self.settings;
        let gates = Gates::of(self, status == Status::Success);
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
            _ => Check::new("critic", met(gates.success), ""),
        });
        checks.push(gates.adversarial());
        checks.push(gates.coverage());
        checks.push(gates.mutation());
        if gates.success && self.state.iteration == 0 {
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

fn met(ok: bool) -> CheckStatus {
    match ok {
        true => CheckStatus::Met,
        false => CheckStatus::Unmet,
    }
}

/// What the gates that Chaos carries (adversarial, coverage, mutation) are judged from.
struct Gates<'a> {
    run: &'a Run,
    success: bool,
    /// Why Chaos is off (the quick profile, or Chaos itself), or empty.
    off_why: &'static str,
    /// Chaos on, but it cannot attack this target (a crate without a library): neither can
    /// the gates it carries be reached.
    unattacked: Option<&'static str>,
}

impl<'a> Gates<'a> {
    fn of(run: &'a Run, success: bool) -> Self {
        let s = &run.settings;
        let off_why = match (s.profile, s.chaos.enabled) {
            (Profile::Quick, _) => "the quick profile",
            (_, false) => "Chaos is off",
            _ => "",
        };
        let unattacked = (s.chaos.enabled && run.team.chaos.is_none())
            .then_some("Chaos cannot attack this target (see the run's notes)");
        Gates {
            run,
            success,
            off_why,
            unattacked,
        }
    }

    fn report(&self) -> Option<&'a AdversarialReport> {
        self.run.state.adversarial.as_ref()
    }

    /// Why a gate that is `on` cannot be measured: its tool is missing, or Chaos, which
    /// carries it, cannot attack.
    fn unavailable(&self, gate: &str, on: bool) -> Option<String> {
        self.run
            .settings
            .unavailable
            .get(gate)
            .cloned()
            .or_else(|| self.unattacked.filter(|_| on).map(str::to_string))
    }

    /// The gate's `Off` check: why Chaos is off, else `otherwise`.
    fn off(&self, gate: &str, otherwise: &str) -> Check {
        let why = match self.off_why {
            "" => otherwise,
            why => why,
        };
        Check::new(gate, CheckStatus::Off, why)
    }

    fn adversarial(&self) -> Check {
        if !self.run.settings.chaos.enabled {
            return Check::new("adversarial", CheckStatus::Off, self.off_why);
        }
        if let Some(why) = self.unavailable("adversarial", true) {
            return Check::new("adversarial", CheckStatus::Unavailable, why);
        }
        match self.report() {
            Some(r) if r.open().next().is_some() => Check::new(
                "adversarial",
                CheckStatus::Unmet,
                format!("{} finding(s) still failing", r.open().count()),
            ),
            Some(r) => Check::new(
                "adversarial",
                met(self.success),
                format!(
                    "{} round(s), {} finding(s) fixed",
                    r.rounds, r.failures_fixed
                ),
            ),
            None => Check::new("adversarial", CheckStatus::Unmet, "not reached"),
        }
    }

    fn coverage(&self) -> Check {
        let s = &self.run.settings;
        let coverage_on = s.chaos.coverage_min.is_some() || s.coverage_threshold.is_some();
        if let Some(why) = self.unavailable("coverage", coverage_on) {
            return Check::new("coverage", CheckStatus::Unavailable, why);
        }
        if let (true, Some(min)) = (s.chaos.enabled, s.chaos.coverage_min) {
            return match self.report().and_then(|r| r.coverage.as_ref()) {
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
            };
        }
        let Some(min) = s.coverage_threshold else {
            return self.off("coverage", "success_criteria.coverage_threshold is null");
        };
        let criterion = self
            .run
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
    }

    fn mutation(&self) -> Check {
        let chaos = &self.run.settings.chaos;
        if let Some(why) = self.unavailable("mutation", chaos.mutation()) {
            return Check::new("mutation", CheckStatus::Unavailable, why);
        }
        if !chaos.mutation() {
            return self.off("mutation", "success_criteria.mutation_score_min is null");
        }
        let measured = self.report().and_then(|r| r.mutation.as_ref());
        match (measured, chaos.mutation_score_min) {
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
    }
}
