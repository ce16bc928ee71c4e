//! One file's coverable lines, covered or missed, from a tool's report of lines per file: what
//! the coverage of the lines a run changed is judged on ([`target_lines`]).
//!
//! | tool             | report                    | a line is coverable when                     |
//! |------------------|---------------------------|----------------------------------------------|
//! | jest, vitest, c8 | istanbul `coverage-final.json` | a statement starts on it (istanbul's own line count) |
//! | coverage.py      | `coverage json`           | it is in `executed_lines` or `missing_lines` |
//! | cargo-llvm-cov   | `llvm-cov export` (`--json`) | llvm-cov's own rule over the file's `segments` |
//!
//! cargo-tarpaulin is read as totals only (`summary`).

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
        CoverageTool::LlvmCov => value
            .get("data")?
            .as_array()?
            .iter()
            .filter_map(|export| export.get("files")?.as_array())
            .flatten()
            .find(|file| {
                file.get("filename")
                    .and_then(Value::as_str)
                    .is_some_and(same)
            })
            .map(llvm_cov),
        CoverageTool::Tarpaulin => return None,
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

/// One of llvm-cov's segments: `[line, column, count, has_count, is_region_entry, is_gap]`.
struct Segment {
    line: u32,
    count: u64,
    has_count: bool,
    region_entry: bool,
    gap: bool,
}

/// `llvm-cov export`'s file entry, its lines counted as llvm-cov counts them (its
/// `LineCoverageStats`, which its lcov and text reports use): a line is coverable when a region
/// with a count starts on it, or the region it continues from an earlier line has a count,
/// unless a skipped region starts it; its count is the larger of that continued region's and
/// the regions starting on it.
/// More lines than any target file has.
const MOST_LINES: u32 = 1_000_000;

fn llvm_cov(file: &Value) -> Option<LineHits> {
    let segments: Vec<Segment> = file
        .get("segments")?
        .as_array()?
        .iter()
        .map(|s| {
            let s = s.as_array()?;
            Some(Segment {
                line: u32::try_from(s.first()?.as_u64()?).ok()?,
                count: s.get(2)?.as_u64()?,
                has_count: s.get(3)?.as_bool()?,
                region_entry: s.get(4)?.as_bool()?,
                gap: s.get(5)?.as_bool()?,
            })
        })
        .collect::<Option<_>>()?;
    let mut hits = LineHits::default();
    let Some(last) = segments.last().map(|s| s.line) else {
        return Some(hits);
    };
    let mut wrapped: Option<&Segment> = None;
    let mut next = 0;
    // A report's lines past any source file's are not walked (one region to line 4e9 would
    // be four billion lines).
    for line in segments[0].line..=last.min(MOST_LINES) {
        let start = next;
        while next < segments.len() && segments[next].line == line {
            next += 1;
        }
        let on_line = &segments[start..next];
        let starts_region = |s: &&Segment| !s.gap && s.has_count && s.region_entry;
        let starting = on_line.iter().filter(starts_region).count();
        let skipped = on_line
            .first()
            .is_some_and(|s| !s.has_count && s.region_entry);
        let mapped = (!skipped && (wrapped.is_some_and(|w| w.has_count) || starting > 0))
            || on_line.iter().any(|s| s.region_entry && s.has_count);
        if mapped {
            let count = on_line
                .iter()
                .filter(starts_region)
                .map(|s| s.count)
                .chain(wrapped.map(|w| w.count))
                .max()
                .unwrap_or(0);
            match count {
                0 => hits.missed.push(line),
                _ => hits.covered.push(line),
            }
        }
        if let Some(end) = on_line.last() {
            wrapped = Some(end);
        }
    }
    Some(hits)
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
    }

    /// Found reading the parsers for the fuzz targets: a region from line 1 to line 4e9 was
    /// walked line by line, into a 16 GB list.
    #[test]
    fn a_region_to_a_far_line_walks_no_further_than_any_file_goes() {
        let file = serde_json::json!({
            "segments": [[1, 1, 5, true, true, false], [4_000_000_000u64, 1, 0, false, false, false]]
        });
        let hits = llvm_cov(&file).expect("read");
        assert_eq!(hits.covered.len(), MOST_LINES as usize);
        let beyond = serde_json::json!({"segments": [[5_000_000_000u64, 1, 5, true, true, false]]});
        assert!(llvm_cov(&beyond).is_none(), "a line past u32 is no line");
    }

    /// llvm-cov's segments give the lines llvm-cov's own lcov report counts, from one real run.
    #[test]
    fn llvm_cov_lines_are_llvm_cov_s_own() {
        let dir = tempfile::tempdir().expect("dir");
        let data =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/runner/testdata/coverage");
        let read = |name: &str| {
            std::fs::read_to_string(data.join(name))
                .expect("testdata")
                .replace("/PROJECT/", &format!("{}/", dir.path().display()))
        };
        let target = dir.path().join("src/lib.rs");
        let hits = target_lines(
            CoverageTool::LlvmCov,
            &read("llvm-cov-lines.json"),
            &target,
            dir.path(),
        )
        .expect("the file's lines");
        let (mut covered, mut missed) = (Vec::new(), Vec::new());
        for da in read("llvm-cov-lines.lcov")
            .lines()
            .filter_map(|l| l.strip_prefix("DA:"))
        {
            let (line, count) = da.split_once(',').expect("DA:line,count");
            let line: u32 = line.parse().expect("a line");
            match count == "0" {
                true => missed.push(line),
                false => covered.push(line),
            }
        }
        assert_eq!(hits.covered, covered);
        assert_eq!(hits.missed, missed);
        assert!(
            missed.contains(&21) && missed.contains(&48),
            "the untested arm and function"
        );
        assert!(
            target_lines(CoverageTool::Tarpaulin, "{}", &target, dir.path()).is_none(),
            "tarpaulin is read as totals only"
        );
    }
}
