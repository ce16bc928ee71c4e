//! Mutation testing in one schema, whichever tool ran it (StrykerJS, mutmut, cargo-mutants):
//! the mutants of the target and how the tests met them, with the statuses of the open
//! mutation-testing-report-schema, and the two scores computed from them.
//!
//! - *strict* score: detected (killed or timed out) over every valid mutant (all but those that
//!   did not compile, crashed the run, or were ignored);
//! - *operational* score: the same with the mutants Chaos argued equivalent left out (each with
//!   its stated reason, at most [`MAX_EQUIVALENT_SHARE`] of the valid ones). The gate
//!   `success_criteria.mutation_score_min` is checked against it.

use serde::{Deserialize, Serialize};

/// The largest share of valid mutants that may be excluded as equivalent.
pub const MAX_EQUIVALENT_SHARE: f64 = 0.10;

/// A mutant's status, named as the mutation-testing-report-schema names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum MutantStatus {
    Killed,
    Survived,
    NoCoverage,
    Timeout,
    CompileError,
    RuntimeError,
    Ignored,
    Pending,
}

impl MutantStatus {
    /// A test noticed the mutant (a timeout counts as noticed).
    pub fn detected(self) -> bool {
        matches!(self, MutantStatus::Killed | MutantStatus::Timeout)
    }

    /// The mutant counts toward the score: it ran, and was either detected or not.
    pub fn valid(self) -> bool {
        matches!(
            self,
            MutantStatus::Killed
                | MutantStatus::Survived
                | MutantStatus::NoCoverage
                | MutantStatus::Timeout
        )
    }

    /// It ran and no test noticed it.
    pub fn undetected(self) -> bool {
        matches!(self, MutantStatus::Survived | MutantStatus::NoCoverage)
    }
}

/// One mutant of the target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mutant {
    /// The tool's id (`3`, `median.x_median__mutmut_2`, `src/lib.rs:12:5: replace + with -`).
    pub id: String,
    /// What kind of change (`ArithmeticOperator`, `string`, `binary operator`).
    pub mutator: String,
    /// The line, 1-based, in the target as the fix has it.
    pub line: u32,
    /// The line as the fix has it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub original: Option<String>,
    /// What the tool put there (the mutated code, or its description).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replacement: Option<String>,
    pub status: MutantStatus,
}

/// A mutation run on the target: its mutants within the scope asked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MutationRun {
    /// `stryker`, `mutmut`, `cargo-mutants`.
    pub tool: String,
    /// The target, relative to the project root.
    pub file: String,
    pub mutants: Vec<Mutant>,
    /// Wall time of the tool's run(s), milliseconds.
    pub duration_ms: u64,
}

/// A mutant Chaos argued equivalent to the fix (no test can tell them apart), and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Equivalent {
    pub id: String,
    pub reason: String,
}

/// Counts and scores of a set of mutants.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Scores {
    pub total: u32,
    pub killed: u32,
    pub timeout: u32,
    pub survived: u32,
    pub no_coverage: u32,
    /// Did not compile, crashed the run, or ignored: not counted.
    pub invalid: u32,
    /// Undetected mutants excluded as equivalent.
    pub equivalent: u32,
    /// Percent, over every valid mutant. 100 when there is none.
    pub strict: f64,
    /// Percent, over the valid mutants not excluded as equivalent.
    pub operational: f64,
}

impl Scores {
    /// The scores of `mutants`, leaving out the undetected ones named in `equivalent`.
    pub fn of(mutants: &[Mutant], equivalent: &[Equivalent]) -> Self {
        let mut s = Scores {
            total: mutants.len() as u32,
            ..Scores::default()
        };
        for m in mutants {
            match m.status {
                MutantStatus::Killed => s.killed += 1,
                MutantStatus::Timeout => s.timeout += 1,
                MutantStatus::Survived => s.survived += 1,
                MutantStatus::NoCoverage => s.no_coverage += 1,
                _ => s.invalid += 1,
            }
            if m.status.undetected() && equivalent.iter().any(|e| e.id == m.id) {
                s.equivalent += 1;
            }
        }
        let detected = f64::from(s.killed + s.timeout);
        let valid = detected + f64::from(s.survived + s.no_coverage);
        s.strict = percent(detected, valid);
        s.operational = percent(detected, valid - f64::from(s.equivalent));
        s
    }

    /// How many mutants may be excluded as equivalent: a tenth of the valid ones, rounded down.
    pub fn max_equivalent(&self) -> u32 {
        let valid = self.killed + self.timeout + self.survived + self.no_coverage;
        (f64::from(valid) * MAX_EQUIVALENT_SHARE).floor() as u32
    }
}

fn percent(part: f64, whole: f64) -> f64 {
    if whole <= 0.0 {
        return 100.0;
    }
    (part / whole * 1000.0).round() / 10.0
}

/// The report's `mutation` part of the `adversarial` section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MutationReport {
    pub tool: String,
    /// The lines of the target the run changed, which the mutants were limited to
    /// (`[first, last]`, 1-based); empty when the whole file was mutated.
    pub lines: Vec<[u32; 2]>,
    /// The gate, when `success_criteria.mutation_score_min` sets one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_score: Option<f64>,
    pub scores: Scores,
    /// Mutation runs: the first on the whole scope, later ones on the survivors only.
    pub runs: u32,
    /// Wall time of every mutation run, milliseconds.
    pub duration_ms: u64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub equivalent: Vec<Equivalent>,
    /// The latest status of every mutant in scope, in the mutation-testing-report-schema file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report_path: Option<String>,
}

/// The mutation-testing-report-schema (version 1) document of `mutants` in `file`, whose
/// source is `source`: what mutation-testing-elements and dashboards read.
pub fn schema_document(
    file: &str,
    language: &str,
    source: &str,
    mutants: &[Mutant],
) -> serde_json::Value {
    let mutants: Vec<serde_json::Value> = mutants
        .iter()
        .map(|m| {
            let width = m
                .original
                .as_deref()
                .map(|l| l.chars().count())
                .unwrap_or(0) as u32;
            serde_json::json!({
                "id": m.id,
                "mutatorName": m.mutator,
                "replacement": m.replacement,
                "location": {
                    "start": { "line": m.line, "column": 1 },
                    "end": { "line": m.line, "column": width + 1 },
                },
                "status": m.status,
            })
        })
        .collect();
    serde_json::json!({
        "schemaVersion": "1",
        "thresholds": { "high": 80, "low": 60 },
        "files": {
            file: { "language": language, "source": source, "mutants": mutants }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mutant(id: &str, status: MutantStatus) -> Mutant {
        Mutant {
            id: id.into(),
            mutator: "ArithmeticOperator".into(),
            line: 3,
            original: Some("  return a + b;".into()),
            replacement: Some("a - b".into()),
            status,
        }
    }

    #[test]
    fn timeouts_count_as_detected_and_invalid_mutants_do_not_count() {
        use MutantStatus::*;
        let ms = [
            mutant("1", Killed),
            mutant("2", Timeout),
            mutant("3", Survived),
            mutant("4", NoCoverage),
            mutant("5", CompileError),
        ];
        let s = Scores::of(&ms, &[]);
        assert_eq!(
            (s.killed, s.timeout, s.survived, s.no_coverage, s.invalid),
            (1, 1, 1, 1, 1)
        );
        assert_eq!(s.strict, 50.0);
        assert_eq!(s.operational, 50.0);
        let eq = [Equivalent {
            id: "3".into(),
            reason: "same result".into(),
        }];
        let s = Scores::of(&ms, &eq);
        assert_eq!(s.equivalent, 1);
        assert_eq!(s.strict, 50.0);
        assert_eq!(s.operational, 66.7);
        assert_eq!(Scores::of(&[], &[]).strict, 100.0);
    }

    #[test]
    fn a_tenth_of_the_valid_mutants_may_be_equivalent() {
        let ms: Vec<Mutant> = (0..25)
            .map(|i| mutant(&i.to_string(), MutantStatus::Killed))
            .collect();
        assert_eq!(Scores::of(&ms, &[]).max_equivalent(), 2);
        assert_eq!(Scores::of(&ms[..9], &[]).max_equivalent(), 0);
    }

    #[test]
    fn the_schema_document_names_statuses_as_the_schema_does() {
        let doc = schema_document(
            "src/a.js",
            "javascript",
            "x",
            &[mutant("7", MutantStatus::NoCoverage)],
        );
        let m = &doc["files"]["src/a.js"]["mutants"][0];
        assert_eq!(m["status"], "NoCoverage");
        assert_eq!(m["location"]["start"]["line"], 3);
        assert_eq!(doc["schemaVersion"], "1");
    }
}
