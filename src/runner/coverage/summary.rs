//! Reading the coverage summary a run wrote ([`CoverageReader`], [`parse_summary`]): istanbul's
//! `json-summary` (jest, vitest, c8), `coverage json`, llvm-cov's export and tarpaulin's report,
//! each turned into the percentages of [`Coverage`].

use std::path::{Path, PathBuf};

use ralph_actors::schema::test_run::Coverage;
use serde_json::Value;

use super::tool::{CoverageError, CoverageTool};

/// Reads the coverage summary a run of the plan from [`super::with_coverage`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CoverageReader {
    pub(super) tool: CoverageTool,
    pub(super) summary: PathBuf,
    /// The report of lines per file (istanbul's `coverage-final.json`; coverage.py's summary
    /// has them), when the tool writes one.
    pub(super) lines: Option<PathBuf>,
    /// The file whose lines are read from it, and where the tests ran (relative paths in the
    /// report start there).
    pub(super) target: Option<(PathBuf, PathBuf)>,
}

impl CoverageReader {
    pub fn tool(&self) -> CoverageTool {
        self.tool
    }

    /// The summary file the run writes (the plan's command deletes it first, so a stale one from
    /// an earlier iteration is never read).
    #[cfg(test)]
    pub fn summary_path(&self) -> &Path {
        &self.summary
    }

    /// The reader, also reading `target`'s own lines after a run in `cwd`.
    pub fn for_target(mut self, target: &Path, cwd: &Path) -> Self {
        self.target = Some((target.to_path_buf(), cwd.to_path_buf()));
        self
    }

    /// The run's coverage, with the target's lines when [`Self::for_target`] named it and the
    /// tool reports lines per file. [`CoverageError::NoSummary`] when the run wrote no summary.
    pub fn read(&self) -> Result<Coverage, CoverageError> {
        let mut coverage = self.read_summary()?;
        if let (Some(lines), Some((target, cwd))) = (&self.lines, &self.target) {
            coverage.target = std::fs::read_to_string(lines)
                .ok()
                .and_then(|data| super::lines::target_lines(self.tool, &data, target, cwd));
        }
        Ok(coverage)
    }

    fn read_summary(&self) -> Result<Coverage, CoverageError> {
        let data = match std::fs::read_to_string(&self.summary) {
            Ok(data) => data,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(CoverageError::NoSummary {
                    tool: self.tool.as_str(),
                    path: self.summary.clone(),
                })
            }
            Err(e) => {
                return Err(CoverageError::Unreadable {
                    tool: self.tool.as_str(),
                    path: self.summary.clone(),
                    reason: e.to_string(),
                })
            }
        };
        parse_summary(self.tool, &data).map_err(|e| CoverageError::Unreadable {
            tool: self.tool.as_str(),
            path: self.summary.clone(),
            reason: e.to_string(),
        })
    }
}

/// Reads a summary file `tool` wrote. Percentages are computed from the covered and total counts
/// (more precise than the tools' rounded ones) and rounded to two decimals. A metric with nothing
/// to count (no branches) is `None`; lines with nothing to count are 0%, since then the tests
/// loaded no code at all.
pub fn parse_summary(tool: CoverageTool, data: &str) -> Result<Coverage, SummaryError> {
    let value: Value = serde_json::from_str(data)?;
    let (lines, branches, functions) = match tool {
        CoverageTool::Jest | CoverageTool::Vitest | CoverageTool::C8 => istanbul(&value)?,
        CoverageTool::CoveragePy => coverage_py(&value)?,
        CoverageTool::LlvmCov => llvm_cov(&value)?,
        CoverageTool::Tarpaulin => (tarpaulin(&value)?, None, None),
    };
    Ok(Coverage {
        tool: tool.as_str().to_string(),
        lines_pct: lines.unwrap_or(0.0),
        branches_pct: branches,
        functions_pct: functions,
        target: None,
    })
}

type Metrics = (Option<f64>, Option<f64>, Option<f64>);

/// Why a summary file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum SummaryError {
    #[error("not JSON: {0}")]
    NotJson(#[from] serde_json::Error),
    /// What the tool writes is not there: which entry or counts.
    #[error("no {0}")]
    Missing(String),
}

fn missing(what: impl Into<String>) -> SummaryError {
    SummaryError::Missing(what.into())
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

fn percent(covered: f64, total: f64) -> Option<f64> {
    (total > 0.0).then(|| round2(covered / total * 100.0))
}

fn number(v: &Value, key: &str) -> Option<f64> {
    v.get(key).and_then(Value::as_f64)
}

/// istanbul's `coverage-summary.json`: `total.{lines,branches,functions}.{total,covered,pct}`.
fn istanbul(v: &Value) -> Result<Metrics, SummaryError> {
    let total = v.get("total").ok_or(missing("`total` entry"))?;
    let metric = |name: &str| -> Result<Option<f64>, SummaryError> {
        let m = total
            .get(name)
            .ok_or_else(|| missing(format!("`total.{name}` entry")))?;
        match (number(m, "covered"), number(m, "total")) {
            (Some(covered), Some(all)) => Ok(percent(covered, all)),
            // `pct` is "Unknown" when there was nothing to count.
            _ => Ok(number(m, "pct")),
        }
    };
    Ok((metric("lines")?, metric("branches")?, metric("functions")?))
}

/// `coverage json`: `totals.{covered_lines,num_statements,covered_branches,num_branches}`.
/// `percent_covered` is not the lines figure when branches were measured (it counts both), so
/// it is only a fallback.
fn coverage_py(v: &Value) -> Result<Metrics, SummaryError> {
    let totals = v.get("totals").ok_or(missing("`totals` entry"))?;
    let lines = match (
        number(totals, "covered_lines"),
        number(totals, "num_statements"),
    ) {
        (Some(covered), Some(all)) => percent(covered, all),
        _ => Some(
            number(totals, "percent_statements_covered")
                .or_else(|| number(totals, "percent_covered"))
                .ok_or(missing("line counts in `totals`"))?,
        ),
    };
    let branches = match (
        number(totals, "covered_branches"),
        number(totals, "num_branches"),
    ) {
        (Some(covered), Some(all)) => percent(covered, all),
        _ => None,
    };
    Ok((lines, branches, coverage_py_functions(v)))
}

/// The share of functions that ran at least one line, from the per-file `functions` regions
/// (coverage.py 7.5 and later). The region named "" is module-level code, not a function.
fn coverage_py_functions(v: &Value) -> Option<f64> {
    let files = v.get("files")?.as_object()?;
    let (mut called, mut all) = (0u32, 0u32);
    for file in files.values() {
        for (name, function) in file.get("functions")?.as_object()? {
            let summary = function.get("summary")?;
            if name.is_empty() || number(summary, "num_statements")? == 0.0 {
                continue;
            }
            all += 1;
            if number(summary, "covered_lines")? > 0.0 {
                called += 1;
            }
        }
    }
    percent(f64::from(called), f64::from(all))
}

/// `llvm-cov export -format=text` (cargo llvm-cov --json):
/// `data[].totals.{lines,branches,functions}.{count,covered,percent}`.
fn llvm_cov(v: &Value) -> Result<Metrics, SummaryError> {
    let data = v
        .get("data")
        .and_then(Value::as_array)
        .filter(|d| !d.is_empty())
        .ok_or(missing("`data` entries"))?;
    let sum = |name: &str| -> Result<(f64, f64), SummaryError> {
        data.iter()
            .try_fold((0.0, 0.0), |(covered, count), export| {
                let m = export
                    .get("totals")
                    .and_then(|t| t.get(name))
                    .ok_or_else(|| missing(format!("`totals.{name}` entry")))?;
                match (number(m, "covered"), number(m, "count")) {
                    (Some(c), Some(n)) => Ok((covered + c, count + n)),
                    _ => Err(missing(format!("counts in `totals.{name}`"))),
                }
            })
    };
    let lines = sum("lines")?;
    let functions = sum("functions")?;
    // Branch counts are there only with `--branch` (nightly); absent, they are not measured.
    let branches = sum("branches").ok();
    Ok((
        percent(lines.0, lines.1),
        branches.and_then(|(c, n)| percent(c, n)),
        percent(functions.0, functions.1),
    ))
}

/// tarpaulin's `tarpaulin-report.json`: `covered` and `coverable` lines (tarpaulin 0.29 and
/// later), else summed over `files`, else its `coverage` percent.
fn tarpaulin(v: &Value) -> Result<Option<f64>, SummaryError> {
    if let (Some(covered), Some(all)) = (number(v, "covered"), number(v, "coverable")) {
        return Ok(percent(covered, all));
    }
    if let Some(files) = v.get("files").and_then(Value::as_array) {
        let (covered, all) = files.iter().fold((0.0, 0.0), |(c, n), file| {
            (
                c + number(file, "covered").unwrap_or(0.0),
                n + number(file, "coverable").unwrap_or(0.0),
            )
        });
        return Ok(percent(covered, all));
    }
    number(v, "coverage")
        .map(|pct| Some(round2(pct)))
        .ok_or_else(|| missing("`covered`/`coverable` counts, `files` or `coverage`"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn testdata(name: &str) -> String {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("src/runner/testdata/coverage")
            .join(name);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    #[test]
    fn llvm_cov_summary() {
        let c = parse_summary(CoverageTool::LlvmCov, &testdata("llvm-cov.json")).expect("read");
        assert_eq!(c.tool, "cargo-llvm-cov");
        // 11 of 32 lines, 3 of 6 functions; no branch counts without --branch.
        assert_eq!(c.lines_pct, 34.38);
        assert_eq!(c.functions_pct, Some(50.0));
        assert_eq!(c.branches_pct, None);
    }

    #[test]
    fn tarpaulin_summaries_old_and_new() {
        let c = parse_summary(CoverageTool::Tarpaulin, &testdata("tarpaulin-report.json"))
            .expect("read");
        assert_eq!((c.tool.as_str(), c.lines_pct), ("cargo-tarpaulin", 50.0));
        // Before 0.29, only per-file counts: 2 of 6 lines.
        let old = parse_summary(
            CoverageTool::Tarpaulin,
            &testdata("tarpaulin-report-0.28.json"),
        )
        .expect("read");
        assert_eq!(old.lines_pct, 33.33);
        assert_eq!(
            parse_summary(CoverageTool::Tarpaulin, r#"{"coverage": 71.428571}"#)
                .expect("percent only")
                .lines_pct,
            71.43
        );
    }

    #[test]
    fn istanbul_with_nothing_to_count() {
        // What c8 writes when the tests loaded no code: "Unknown" for empty metrics.
        let empty = r#"{"total":{"lines":{"total":0,"covered":0,"skipped":0,"pct":"Unknown"},
            "statements":{"total":0,"covered":0,"skipped":0,"pct":"Unknown"},
            "functions":{"total":0,"covered":0,"skipped":0,"pct":"Unknown"},
            "branches":{"total":0,"covered":0,"skipped":0,"pct":"Unknown"}}}"#;
        let c = parse_summary(CoverageTool::C8, empty).expect("read");
        assert_eq!(
            (c.lines_pct, c.branches_pct, c.functions_pct),
            (0.0, None, None)
        );
        assert!(parse_summary(CoverageTool::C8, "{}").is_err());
        assert!(parse_summary(CoverageTool::C8, "not json").is_err());
    }

    #[test]
    fn coverage_py_falls_back_on_percentages() {
        let c = parse_summary(
            CoverageTool::CoveragePy,
            r#"{"totals":{"percent_covered":64.5,"percent_covered_display":"64"}}"#,
        )
        .expect("read");
        assert_eq!((c.lines_pct, c.branches_pct), (64.5, None));
    }
}
