//! Chaos's rules: what it is asked to try ([`Strategy`]), how many rounds it gets
//! ([`ChaosSettings`]), and how a run of its tests is read: a file that could not run at all
//! goes back to Chaos for repair ([`could_not_run`]); failing tests are candidates for the
//! Critic's judgement ([`candidates`]).
//!
//! A round is one pass of Chaos over a fix whose unit tests pass: the accepted tests of earlier
//! rounds run again, and when they all pass, Chaos writes a new test file. Failures it finds go
//! to the Artisan; they never count toward the entropy breaker.

use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use crate::schema::adversarial::Counterexample;
use crate::schema::test_run::{Category, RunStatus, TestRun};

/// What Chaos tries (`chaos.strategies`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    /// null, 0, -1, the integer limits, NaN and infinities, empty and huge inputs, unicode.
    Boundary,
    /// Invariants over at least 100 generated inputs (Hypothesis, fast-check, proptest).
    Property,
    /// Interleaved calls with varied timing, for async or shared-state code.
    Concurrency,
    /// The mutation score of the lines the run changed (StrykerJS, mutmut), with tests written
    /// to kill the mutants that survive. Off unless listed, or unless
    /// `success_criteria.mutation_score_min` is set: it needs the tool installed.
    Mutation,
}

impl Strategy {
    pub const ALL: [Strategy; 4] = [
        Strategy::Boundary,
        Strategy::Property,
        Strategy::Concurrency,
        Strategy::Mutation,
    ];

    /// What Chaos uses when `chaos.strategies` is not set.
    pub const DEFAULT: [Strategy; 3] = [
        Strategy::Boundary,
        Strategy::Property,
        Strategy::Concurrency,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Strategy::Boundary => "boundary",
            Strategy::Property => "property",
            Strategy::Concurrency => "concurrency",
            Strategy::Mutation => "mutation",
        }
    }
}

/// How Chaos runs (`chaos:` in config, `--adversarial` / `--no-adversarial`).
#[derive(Debug, Clone, PartialEq)]
pub struct ChaosSettings {
    pub enabled: bool,
    pub strategies: Vec<Strategy>,
    /// Rounds at most: each a new attack, or a re-run of the accepted tests that still fail.
    pub max_rounds: u32,
    /// Times a test file that cannot run goes back to Chaos to be repaired, per round.
    pub max_repairs: u32,
    /// Success needs every accepted adversarial test to pass
    /// (`success_criteria.adversarial_tests_pass`); otherwise Chaos's findings are reported
    /// and the run ends after its first round.
    pub must_pass: bool,
    /// The operational mutation score success needs, percent
    /// (`success_criteria.mutation_score_min`, 70 to 100).
    pub mutation_score_min: Option<f64>,
    /// The share of the lines the run changed that the unit tests and Chaos's passing files
    /// must run, percent (`success_criteria.coverage_threshold`): checked once Chaos's attacks
    /// find nothing, a round spent on the lines no test runs while it is below.
    pub coverage_min: Option<f64>,
    /// The longest a mutation run may take (`chaos.mutation_timeout_seconds`).
    pub mutation_timeout: Duration,
    /// On success, Chaos's accepted files are added to the project (`chaos.keep_tests`).
    pub keep_tests: bool,
}

impl Default for ChaosSettings {
    fn default() -> Self {
        Self {
            enabled: true,
            strategies: Strategy::DEFAULT.to_vec(),
            max_rounds: 3,
            max_repairs: 2,
            must_pass: true,
            mutation_score_min: None,
            coverage_min: None,
            mutation_timeout: Duration::from_secs(300),
            keep_tests: false,
        }
    }
}

impl ChaosSettings {
    /// Chaos off: the run ends when the unit tests pass (micro-agent's behaviour).
    pub fn off() -> Self {
        Self {
            enabled: false,
            ..Self::default()
        }
    }

    /// Whether mutation testing runs once Chaos's attacks find nothing.
    pub fn mutation(&self) -> bool {
        self.enabled
            && (self.strategies.contains(&Strategy::Mutation) || self.mutation_score_min.is_some())
    }

    /// The strategies Chaos's own test files use (mutation is the tool's, not a file's).
    pub fn attacks(&self) -> impl Iterator<Item = Strategy> + '_ {
        self.strategies
            .iter()
            .copied()
            .filter(|s| *s != Strategy::Mutation)
    }
}

/// Why a test file could not run at all (an import that fails, a syntax error, no test found, a
/// file that hangs), from its run: what goes back to Chaos for repair. `None` when its tests ran.
pub fn could_not_run(run: &TestRun) -> Option<String> {
    let why = if run.tests.is_empty() {
        match run.status {
            RunStatus::Timeout => "it ran past its time limit before any test finished",
            RunStatus::MemoryLimit => "it ran past its memory limit before any test finished",
            _ => "no test ran",
        }
    } else if run.totals.passed == 0
        && run.failures().count() > 0
        && run
            .failures()
            .all(|t| matches!(t.category, Some(Category::Syntax | Category::Environment)))
    {
        "it failed to load"
    } else if matches!(run.status, RunStatus::Timeout | RunStatus::MemoryLimit)
        && run.failures().count() == 0
    {
        "it ran past its limits"
    } else {
        return None;
    };
    let detail: Vec<String> = run
        .failures()
        .filter_map(|t| t.message.clone().or_else(|| t.stack.clone()))
        .take(3)
        .collect();
    let output = tail(&run.output, 3000);
    Some(match detail.is_empty() {
        true => format!("{why}.\n{output}"),
        false => format!("{why}:\n{}\n{output}", detail.join("\n")),
    })
}

/// A failing adversarial test, for the Critic's judgement and the Artisan's prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Candidate {
    pub test: String,
    pub message: Option<String>,
}

/// The failing tests of a run of Chaos's file, without those already dropped.
pub fn candidates(run: &TestRun, dropped: &[String]) -> Vec<Candidate> {
    run.failures()
        .filter(|t| !dropped.contains(&t.id))
        .map(|t| Candidate {
            test: t.id.clone(),
            message: match (&t.error_type, &t.message) {
                (Some(kind), Some(m)) if !m.starts_with(kind.as_str()) => {
                    Some(format!("{kind}: {m}"))
                }
                (_, Some(m)) => Some(m.clone()),
                (Some(kind), None) => Some(kind.clone()),
                (None, None) => t.stack.clone(),
            },
        })
        .collect()
}

/// The counterexample Hypothesis printed in a failure (`Falsifying example: f(x=1,)`, or
/// `Failing test case: f(...)` in newer versions), when there is one. A method's (`self=`)
/// is not replayable by keyword and is left out.
pub fn counterexample(text: &str) -> Option<Counterexample> {
    let start = ["Falsifying example: ", "Failing test case: "]
        .iter()
        .find_map(|m| text.find(m).map(|i| i + m.len()))?;
    let rest = &text[start..];
    let open = rest.find('(')?;
    let function = rest[..open].trim();
    if function.is_empty() || !function.chars().all(|c| c.is_alphanumeric() || c == '_') {
        return None;
    }
    // The arguments run to the parenthesis that closes the call.
    let mut depth = 0usize;
    let mut end = None;
    // Inside a string literal: its quote, and whether the last character was a backslash.
    let mut quoted: Option<(char, bool)> = None;
    for (i, c) in rest[open..].char_indices() {
        if let Some((q, escaped)) = quoted {
            quoted = match (c, escaped) {
                (_, true) => Some((q, false)),
                ('\\', false) => Some((q, true)),
                (c, false) if c == q => None,
                _ => Some((q, false)),
            };
            continue;
        }
        match c {
            '\'' | '"' => quoted = Some((c, false)),
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    end = Some(open + i);
                    break;
                }
            }
            _ => {}
        }
    }
    let arguments = rest[open + 1..end?]
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    if arguments.starts_with("self=") {
        return None;
    }
    Some(Counterexample {
        function: function.to_string(),
        arguments,
        seed: None,
        path: None,
    })
}

/// The counterexample fast-check printed in a failure (`Counterexample: [...]`, with the
/// `{ seed: 42, path: "0:1" }` that replays it), when there is one.
pub fn fast_check_counterexample(text: &str) -> Option<Counterexample> {
    let start = text.find("Counterexample: ")? + "Counterexample: ".len();
    let arguments = text[start..].lines().next()?.trim().to_string();
    if arguments.is_empty() {
        return None;
    }
    let field = |name: &str| -> Option<String> {
        let at = text.find(&format!("{name}: "))? + name.len() + 2;
        let value: String = text[at..]
            .chars()
            .take_while(|c| !matches!(c, ',' | ' ' | '}' | '\n'))
            .collect();
        Some(value.trim_matches('"').to_string()).filter(|v| !v.is_empty())
    };
    Some(Counterexample {
        function: String::new(),
        arguments,
        seed: field("seed"),
        path: field("path"),
    })
}

/// The input proptest shrank a failure to (`minimal failing input: values = [...]`), when there
/// is one; proptest prints no seed of its own (ralph-loop fixes it for the whole run).
pub fn proptest_counterexample(text: &str) -> Option<Counterexample> {
    let start = text.find("minimal failing input: ")? + "minimal failing input: ".len();
    let rest = &text[start..];
    // The input runs to proptest's counters (`\tsuccesses: 3`), else to a blank line.
    let end = ["\n\tsuccesses:", "\n\n"]
        .iter()
        .filter_map(|m| rest.find(m))
        .min()
        .unwrap_or(rest.len());
    let arguments = rest[..end]
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    if arguments.is_empty() {
        return None;
    }
    Some(Counterexample {
        function: String::new(),
        arguments,
        seed: None,
        path: None,
    })
}

/// The last `max` bytes of `text`, at a character boundary.
fn tail(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut start = text.len() - max;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::test_run::{CaseStatus, TestCase, Totals};

    fn case(id: &str, status: CaseStatus, category: Option<Category>) -> TestCase {
        TestCase {
            id: id.into(),
            name: id.into(),
            file: None,
            status,
            duration_ms: None,
            category,
            error_type: Some("AssertionError".into()),
            message: Some(format!("{id} failed")),
            stack: None,
            location: None,
            stdout: None,
            stderr: None,
            fingerprint: None,
        }
    }

    fn run(tests: Vec<TestCase>, status: RunStatus) -> TestRun {
        let mut run = TestRun::new("pytest chaos.py", status);
        run.totals = Totals {
            passed: tests
                .iter()
                .filter(|t| t.status == CaseStatus::Pass)
                .count() as u32,
            failed: tests
                .iter()
                .filter(|t| t.status == CaseStatus::Fail)
                .count() as u32,
            ..Totals::default()
        };
        run.tests = tests;
        run.output = "E   ModuleNotFoundError: No module named 'hypothesis'".into();
        run
    }

    #[test]
    fn a_file_that_did_not_load_goes_back_for_repair() {
        let none = run(vec![], RunStatus::Error);
        assert!(could_not_run(&none)
            .expect("nothing ran")
            .starts_with("no test ran."));
        let import = run(
            vec![case(
                "chaos.py",
                CaseStatus::Fail,
                Some(Category::Environment),
            )],
            RunStatus::Failed,
        );
        let why = could_not_run(&import).expect("it failed to load");
        assert!(why.contains("No module named 'hypothesis'"), "{why}");
    }

    #[test]
    fn proptest_counterexamples_are_read_to_its_counters() {
        let text = "Test failed: median inf out of [1, 2] at ../chaos_round_1.rs:10.\nminimal failing input: values = [\n    9.979829566565578e307,\n    9.921122002321284e307,\n]\n\tsuccesses: 12\n\tlocal rejects: 0\n";
        assert_eq!(
            proptest_counterexample(text).map(|c| c.arguments),
            Some("values = [ 9.979829566565578e307, 9.921122002321284e307, ]".to_string())
        );
        assert_eq!(proptest_counterexample("assertion failed"), None);
    }

    #[test]
    fn hypothesis_counterexamples_are_read_in_both_spellings() {
        let new = "assert 1 == ((0 + 1) / 2)\n +  where 1 = median([0, 1])\nFailing test case: test_two(\n    values=[0, 1],\n)";
        assert_eq!(
            counterexample(new),
            Some(Counterexample {
                function: "test_two".into(),
                arguments: "values=[0, 1],".into(),
                seed: None,
                path: None,
            })
        );
        let fc = "Error: Property failed after 1 tests\n{ seed: 42, path: \"0:1:0\", endOnFailure: true }\nCounterexample: [8.98846567431158e+307]\nShrunk 2 time(s)";
        assert_eq!(
            fast_check_counterexample(fc),
            Some(Counterexample {
                function: String::new(),
                arguments: "[8.98846567431158e+307]".into(),
                seed: Some("42".into()),
                path: Some("0:1:0".into()),
            })
        );
        assert_eq!(fast_check_counterexample("expected 1 to be 2"), None);
        let old = "Falsifying example: test_pair(\n    a=(1, 2),\n    b='x)',\n)\nmore";
        let c = counterexample(old).expect("found");
        assert_eq!(c.function, "test_pair");
        assert_eq!(c.arguments, "a=(1, 2), b='x)',");
        assert_eq!(
            counterexample("Failing test case: T.test(self=<T>, x=1)"),
            None
        );
        assert_eq!(counterexample("AssertionError: nothing here"), None);
    }

    #[test]
    fn failing_tests_are_candidates_unless_dropped() {
        let r = run(
            vec![
                case("t::ok", CaseStatus::Pass, None),
                case("t::empty", CaseStatus::Fail, Some(Category::Logic)),
                case("t::nan", CaseStatus::Fail, Some(Category::Logic)),
            ],
            RunStatus::Failed,
        );
        assert_eq!(could_not_run(&r), None);
        let c = candidates(&r, &["t::nan".to_string()]);
        assert_eq!(
            c,
            vec![Candidate {
                test: "t::empty".into(),
                message: Some("AssertionError: t::empty failed".into()),
            }]
        );
    }
}
