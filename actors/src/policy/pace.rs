//! What an iteration waits for: whether the Librarian's analysis is worth a model call, and
//! whether the Critic's review binds the proposal or only advises.
//!
//! Each call on an iteration's critical path costs the user a model's latency (5–30 s with
//! real models), so a call is on the path only where it pays: the analysis when the Artisan
//! cannot already see the failure whole (and then beside the Artisan's call), the review
//! always beside the tests, binding only when the tests are slower than a review (there a
//! rejection stops a slow test run of a bad proposal).

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// When the Librarian asks its model for an analysis of the last failure (`librarian.analyze`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Analyze {
    /// Only when it pays: see [`analysis`].
    #[default]
    Auto,
    /// Whenever the last run failed (the behaviour before `auto`).
    Always,
    Never,
}

/// How the Critic's review and the tests are ordered (`critic.mode`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CriticMode {
    /// `binding` when the last test run took longer than a review is expected to, else
    /// `parallel`.
    #[default]
    Auto,
    /// The review comes first; a rejected proposal goes back to the Artisan untested (no code
    /// runs that the Critic has not approved).
    Gate,
    /// The review runs beside the tests and binds: a rejection stops the tests and sends the
    /// proposal back, as `gate` does, without the review's latency on a proposal it approves.
    Binding,
    /// The review runs beside the tests; a rejection of a passing fix is kept as a note, a
    /// review of a failing one reaches the Artisan if it is in by the next call.
    Parallel,
    Off,
}

impl CriticMode {
    pub fn as_str(self) -> &'static str {
        match self {
            CriticMode::Auto => "auto",
            CriticMode::Gate => "gate",
            CriticMode::Binding => "binding",
            CriticMode::Parallel => "parallel",
            CriticMode::Off => "off",
        }
    }
}

/// The Artisan sees a failure whole when at most this many tests fail.
pub const FEW_FAILURES: usize = 3;

/// What the Supervisor knows of the run's history that the last run alone does not show.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct History {
    /// The last run failed as a run before it did: the Artisan's own reading did not fix it.
    pub repeat: bool,
    /// The last proposal made things worse and was undone.
    pub undone: bool,
}

/// What the Artisan's prompt shows of the last test run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Shown {
    pub passed: bool,
    /// Failing tests.
    pub failing: usize,
    /// Failing tests left out of the prompt for size.
    pub omitted: usize,
    /// Some failure is shown with neither a message nor a stack (or none is, only output).
    pub undetailed: bool,
}

/// Why the Librarian's analysis runs this iteration; `None`: it does not.
pub fn analysis(mode: Analyze, last: Shown, history: History) -> Option<&'static str> {
    if last.passed {
        return None;
    }
    match mode {
        Analyze::Never => None,
        Analyze::Always => Some("librarian.analyze is always"),
        Analyze::Auto => {
            if history.repeat {
                Some("the same failure as before")
            } else if history.undone {
                Some("the last change made things worse")
            } else if last.omitted > 0 {
                Some("some failures did not fit in the Artisan's prompt")
            } else if last.failing > FEW_FAILURES {
                Some("many tests fail")
            } else if last.undetailed {
                Some("a failure has no message, only output")
            } else {
                None
            }
        }
    }
}

/// What `auto` resolves to: the review binds when the tests take longer than a review is
/// expected to (the Critic's last call, else the shortest call of the run so far), and with
/// nothing measured yet; otherwise it only advises (`parallel`): fast tests are a cheaper judge
/// of a passing fix than another iteration.
pub fn critic_mode(mode: CriticMode, tests: Duration, review: Option<Duration>) -> CriticMode {
    match mode {
        CriticMode::Auto => match review {
            Some(review) if tests < review => CriticMode::Parallel,
            _ => CriticMode::Binding,
        },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failing(n: usize, detail: bool) -> Shown {
        Shown {
            passed: false,
            failing: n,
            omitted: 0,
            undetailed: !detail,
        }
    }

    #[test]
    fn auto_skips_a_few_clear_failures_seen_for_the_first_time() {
        let h = History::default();
        assert_eq!(analysis(Analyze::Auto, failing(3, true), h), None);
        assert_eq!(
            analysis(Analyze::Always, failing(3, true), h),
            Some("librarian.analyze is always")
        );
        assert_eq!(analysis(Analyze::Never, failing(9, false), h), None);
    }

    #[test]
    fn auto_analyses_what_the_artisan_cannot_see_whole_or_did_not_fix() {
        let h = History::default();
        let mut cut = failing(2, true);
        cut.omitted = 1;
        let repeat = History {
            repeat: true,
            undone: false,
        };
        let undone = History {
            repeat: false,
            undone: true,
        };
        let cases = [
            (failing(4, true), h, "many tests fail"),
            (
                failing(1, false),
                h,
                "a failure has no message, only output",
            ),
            (cut, h, "some failures did not fit in the Artisan's prompt"),
            (failing(1, true), repeat, "the same failure as before"),
            (
                failing(1, true),
                undone,
                "the last change made things worse",
            ),
        ];
        for (shown, history, why) in cases {
            assert_eq!(analysis(Analyze::Auto, shown, history), Some(why), "{why}");
        }
    }

    #[test]
    fn nothing_to_analyse_when_the_last_run_passed() {
        let mut passed = failing(0, true);
        passed.passed = true;
        assert_eq!(analysis(Analyze::Always, passed, History::default()), None);
    }

    #[test]
    fn auto_binds_only_tests_slower_than_a_review() {
        let s = Duration::from_secs;
        assert_eq!(
            critic_mode(CriticMode::Auto, s(1), Some(s(5))),
            CriticMode::Parallel
        );
        assert_eq!(
            critic_mode(CriticMode::Auto, s(9), Some(s(5))),
            CriticMode::Binding
        );
        assert_eq!(
            critic_mode(CriticMode::Auto, s(1), None),
            CriticMode::Binding
        );
        for fixed in [
            CriticMode::Gate,
            CriticMode::Binding,
            CriticMode::Parallel,
            CriticMode::Off,
        ] {
            assert_eq!(critic_mode(fixed, s(1), Some(s(5))), fixed);
        }
    }
}
