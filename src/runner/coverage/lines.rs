//! One file's coverable lines, covered or missed, from a tool's report of lines per file: what
//! the coverage of the lines a run changed is judged on ([`target_lines`]).
//!
//! | tool             | report                    | a line is coverable when                     |
//! |------------------|---------------------------|----------------------------------------------|
//! | jest, vitest, c8 | istanbul `coverage-final.json` | a statement starts on it (istanbul's own line count) |
//! | coverage.py      | `coverage json`           | it is in `executed_lines` or `missing_lines` |
//!
//! cargo-llvm-cov and cargo-tarpaulin are read as totals only (`summary`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use ralph_actors::schema::test_run::LineHits;
use serde_json::Value;

use super::tool::CoverageTool;

/// The target's lines in the report `data` of `tool` (relative paths in it start at `cwd`).
/// A target the report does not list was never loaded: every line with code on it is missed.
/// `None` when the tool reports no lines per file or the report is unreadable.
pub fn target_lines(tool: CoverageTool, data: &str, target: &Path, cwd: &Path) -> Option<LineHits> {
    let value: Value = serde_json::from_str(data).ok()?;
    let target = canonical(target);
    let same = |key: &str| {
        let path = Path::new(key);
        let path = match path.is_absolute() {
            true => path.to_path_buf(),
            false => cwd.join(path),
        };
        canonical(&path) == target
    };
    let found = match tool {
        CoverageTool::Jest | CoverageTool::Vitest | CoverageTool::C8 => value
            .as_object()?
            .iter()
            .find(|(key, file)| {
                same(key) || file.get("path").and_then(Value::as_str).is_some_and(same)
            })
            .map(|(_, file)| istanbul(file)),
        CoverageTool::CoveragePy => value
            .get("files")?
            .as_object()?
            .iter()
            .find(|(key, _)| same(key))
            .map(|(_, file)| coverage_py(file)),
        CoverageTool::LlvmCov | CoverageTool::Tarpaulin => return None,
    };
    match found {
        Some(hits) => hits,
        None => Some(never_loaded(&target)),
    }
}

fn canonical(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

/// istanbul's file coverage: a line's count is the largest of the statements starting on it.
fn istanbul(file: &Value) -> Option<LineHits> {
    let statements = file.get("statementMap")?.as_object()?;
    let counts = file.get("s")?.as_object()?;
    let mut lines: BTreeMap<u32, u64> = BTreeMap::new();
    for (id, span) in statements {
        let Some(line) = span
            .get("start")
            .and_then(|s| s.get("line"))
            .and_then(Value::as_u64)
        else {
            continue;
        };
        let count = counts.get(id).and_then(Value::as_u64).unwrap_or(0);
        let entry = lines.entry(line as u32).or_insert(0);
        *entry = (*entry).max(count);
    }
    let (covered, missed): (Vec<_>, Vec<_>) = lines.into_iter().partition(|(_, n)| *n > 0);
    Some(LineHits {
        covered: covered.into_iter().map(|(l, _)| l).collect(),
        missed: missed.into_iter().map(|(l, _)| l).collect(),
    })
}

/// `coverage json`'s file entry: `executed_lines` and `missing_lines`.
fn coverage_py(file: &Value) -> Option<LineHits> {
    let lines = |key: &str| -> Option<Vec<u32>> {
        file.get(key)?
            .as_array()?
            .iter()
            .map(|l| l.as_u64().map(|l| l as u32))
            .collect()
    };
    Some(LineHits {
        covered: lines("executed_lines")?,
        missed: lines("missing_lines")?,
    })
}

/// A file no test loaded: its lines with code on them (not blank, not only a comment), missed.
fn never_loaded(target: &Path) -> LineHits {
    let text = std::fs::read_to_string(target).unwrap_or_default();
    let missed = text
        .lines()
        .enumerate()
        .filter(|(_, l)| {
            let l = l.trim();
            !(l.is_empty()
                || l.starts_with('#')
                || l.starts_with("//")
                || l.starts_with("/*")
                || l.starts_with('*'))
        })
        .map(|(i, _)| i as u32 + 1)
        .collect();
    LineHits {
        covered: Vec::new(),
        missed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn istanbul_lines_are_the_statements_start_lines() {
        let dir = tempfile::tempdir().expect("dir");
        let target = dir.path().join("median.js");
        std::fs::write(&target, "a\nb\nc\n").expect("write");
        let report = serde_json::json!({
            target.to_string_lossy(): {
                "path": target.to_string_lossy(),
                "statementMap": {
                    "0": {"start": {"line": 1, "column": 0}, "end": {"line": 1, "column": 9}},
                    "1": {"start": {"line": 2, "column": 2}, "end": {"line": 2, "column": 9}},
                    "2": {"start": {"line": 2, "column": 10}, "end": {"line": 2, "column": 19}},
                    "3": {"start": {"line": 3, "column": 2}, "end": {"line": 3, "column": 9}}
                },
                "s": {"0": 1, "1": 0, "2": 4, "3": 0}
            }
        });
        let hits =
            target_lines(CoverageTool::C8, &report.to_string(), &target, dir.path()).expect("hits");
        assert_eq!(
            hits.covered,
            vec![1, 2],
            "a line runs when any statement on it does"
        );
        assert_eq!(hits.missed, vec![3]);
    }

    #[test]
    fn coverage_py_paths_are_relative_to_where_it_ran() {
        let dir = tempfile::tempdir().expect("dir");
        std::fs::create_dir(dir.path().join("src")).expect("mkdir");
        let target = dir.path().join("src/mean.py");
        std::fs::write(
            &target,
            "def mean(xs):\n    # the average\n    return sum(xs)\n",
        )
        .expect("write");
        let report = r#"{"files": {"src/mean.py": {"executed_lines": [1], "missing_lines": [3]}}}"#;
        let hits =
            target_lines(CoverageTool::CoveragePy, report, &target, dir.path()).expect("hits");
        assert_eq!((hits.covered, hits.missed), (vec![1], vec![3]));
        let unlisted = target_lines(
            CoverageTool::CoveragePy,
            r#"{"files": {}}"#,
            &target,
            dir.path(),
        )
        .expect("a file no test loaded");
        assert_eq!(
            unlisted.missed,
            vec![1, 3],
            "its code lines, missed; not the comment"
        );
        assert!(target_lines(CoverageTool::LlvmCov, "{}", &target, dir.path()).is_none());
    }
}
