//! What Chaos did in a run: its findings (adversarial tests that failed on a fix whose unit tests
//! passed) and the report's `adversarial` section.

use serde::{Deserialize, Serialize};

use crate::schema::mutation::{Mutant, MutationReport};
use crate::schema::test_run::LineHits;

/// Where a finding stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FindingStatus {
    /// The test fails on the file as it is: the Artisan is asked to fix it.
    Open,
    /// A later fix passes it.
    Fixed,
}

/// One adversarial test that failed on a fix whose unit tests passed, and that the Critic
/// judged a legitimate expectation of the target's contract.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// The round whose suite holds the test.
    pub round: u32,
    /// The test's id as its framework reports it.
    pub test: String,
    /// Why it failed, first lines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    pub status: FindingStatus,
}

/// A generated test the Critic judged not legitimate for the target's contract: dropped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rejected {
    pub round: u32,
    pub test: String,
    pub reason: String,
}

/// One round's test file, kept in the session folder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Suite {
    pub round: u32,
    /// The file, relative to the project root (under `.ralph/session-<id>/chaos/`).
    pub path: String,
    /// Tests it holds (as the framework counted them on its first run).
    pub tests: u32,
    /// Repairs it needed before it ran.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub repairs: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// The checkpoint Chaos judged best so far: the iteration whose version it is, and how many
/// findings it left open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Floor {
    pub iteration: u32,
    pub open: u32,
}

/// The report's `adversarial` section (absent when Chaos is off).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AdversarialReport {
    /// The strategies Chaos was asked to use (`chaos.strategies`).
    pub strategies: Vec<String>,
    /// Rounds taken: each a new attack, or a re-run of the accepted tests that still failed.
    pub rounds: u32,
    /// Tests in the suites Chaos wrote.
    pub tests_generated: u32,
    /// Failing tests the Critic judged not legitimate, dropped.
    pub tests_rejected: u32,
    /// Failing tests accepted as findings.
    pub failures_found: u32,
    /// Findings a later fix passes.
    pub failures_fixed: u32,
    /// Every finding, fixed or still open.
    pub findings: Vec<Finding>,
    /// Every test dropped, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rejected: Vec<Rejected>,
    /// The suites, in the session folder.
    pub suites: Vec<Suite>,
    /// The operational mutation score (percent) of the last mutation run, when mutation
    /// testing ran (`mutation` in `chaos.strategies`, or `success_criteria.mutation_score_min`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mutation_score: Option<f64>,
    /// The mutants no test noticed in the last mutation run, less those judged equivalent.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub surviving_mutants: Vec<Mutant>,
    /// The mutation runs: tool, scope, both scores, equivalents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mutation: Option<MutationReport>,
    /// Chaos's files added to the project on success (`chaos.keep_tests`), relative to its root.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kept_tests: Vec<String>,
    /// The coverage of the lines the run changed, by the unit tests and Chaos's passing files
    /// together (`success_criteria.coverage_threshold`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coverage: Option<ChangedCoverage>,
}

/// The coverage of the lines a run changed: of the target's lines the fix changed that the
/// tool counts (a blank line or a comment is not counted), how many some test ran.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChangedCoverage {
    /// The tool that counted (`coverage.py`, `jest`, `c8`, ...).
    pub tool: String,
    /// The changed lines, as `[first, last]` ranges of the target on disk.
    pub lines: Vec<[u32; 2]>,
    /// Changed lines the tool counts.
    pub coverable: u32,
    /// Of those, lines some test ran.
    pub covered: u32,
    /// `covered` over `coverable`, percent (100 when nothing changed is coverable).
    pub pct: f64,
    /// The gate (`success_criteria.coverage_threshold`).
    pub min: f64,
    /// Changed lines no test ran.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub uncovered: Vec<u32>,
    /// Measurements taken (one, and one more after each round written to cover lines).
    pub runs: u32,
}

impl ChangedCoverage {
    /// Judges `hits` on the lines `changed` against `min`.
    pub fn of(tool: &str, changed: &[[u32; 2]], hits: &LineHits, min: f64) -> Self {
        let within = |l: &u32| changed.iter().any(|[a, b]| (*a..=*b).contains(l));
        let covered = hits.covered.iter().filter(|l| within(l)).count() as u32;
        let uncovered: Vec<u32> = hits.missed.iter().copied().filter(within).collect();
        let coverable = covered + uncovered.len() as u32;
        let pct = match coverable {
            0 => 100.0,
            n => (f64::from(covered) / f64::from(n) * 10_000.0).round() / 100.0,
        };
        Self {
            tool: tool.to_string(),
            lines: changed.to_vec(),
            coverable,
            covered,
            pct,
            min,
            uncovered,
            runs: 1,
        }
    }

    pub fn met(&self) -> bool {
        self.pct + f64::EPSILON >= self.min
    }
}

impl AdversarialReport {
    /// Findings still failing.
    pub fn open(&self) -> impl Iterator<Item = &Finding> {
        self.findings
            .iter()
            .filter(|f| f.status == FindingStatus::Open)
    }
}

/// A failing input a property-based test found, as its library printed it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counterexample {
    /// The property's function (`test_between_min_and_max`); empty for fast-check, whose
    /// output names no function.
    pub function: String,
    /// Hypothesis: its arguments as keyword arguments (`values=[0, 1],`); fast-check: the
    /// counterexample as printed (`[[1e+308,1e+308]]`).
    pub arguments: String,
    /// fast-check's seed and path, which replay the failing run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}
