//! Gathering coverage: `plan`'s command changed so the test tool also writes a coverage summary
//! file ([`with_coverage`]), by flags for jest and vitest, by wrapping for c8, coverage.py,
//! cargo-llvm-cov and cargo-tarpaulin; the [`CoverageReader`] returned reads that file.

use std::path::{Path, PathBuf};

use super::summary::CoverageReader;
use super::tool::{
    pick_tool, split_cargo, split_python, unsupported_cargo, unsupported_python, CargoTests,
    CoverageError, CoverageTool,
};
use crate::runner::plan::{DependencyCoverage, Framework, TestPlan};
use crate::runner::tools::{sh_quote, ToolEnv};

/// `plan` changed to also write a coverage summary under `report_dir` (in a directory of its own,
/// `coverage-<framework>`), and the reader of that summary.
///
/// The changed command first deletes the summary a previous run left, so a run that ends before
/// writing one reads as [`CoverageError::NoSummary`], never as old numbers.
pub fn with_coverage(
    plan: &TestPlan,
    report_dir: &Path,
    dependency: Option<&DependencyCoverage>,
) -> Result<(TestPlan, CoverageReader), CoverageError> {
    let tool = pick_tool(plan, &ToolEnv::current())?;
    coverage_plan(plan, tool, report_dir, dependency)
}

/// `plan` changed to run under `tool`, which is known to be installed; with `dependency`, the
/// coverage read is that crate's (cargo-llvm-cov only).
fn coverage_plan(
    plan: &TestPlan,
    tool: CoverageTool,
    report_dir: &Path,
    dependency: Option<&DependencyCoverage>,
) -> Result<(TestPlan, CoverageReader), CoverageError> {
    // The command runs in plan.cwd and the reader in ours: both must name the same files.
    let report_dir = std::path::absolute(report_dir).map_err(|source| CoverageError::Io {
        path: report_dir.to_path_buf(),
        source,
    })?;
    let dir = report_dir.join(format!("coverage-{}", plan.framework.as_str()));
    let mut out = plan.clone();
    // istanbul's tools also write the lines of each file (`json`, coverage-final.json): the
    // coverage of the lines a run changed is read from it.
    let lines = dir.join("coverage-final.json");
    // What the istanbul tools (jest, vitest, c8) write, removed first so a stale one is never
    // read.
    let istanbul = dir.join("coverage-summary.json");
    let clear_istanbul = format!("rm -f {} {}", sh_quote(&istanbul), sh_quote(&lines));
    let (command, dir_q) = (&plan.command, sh_quote(&dir));
    let summary = match tool {
        CoverageTool::Jest => {
            // An empty coverageThreshold: thresholds in the project's jest config would fail a
            // run that only asked for coverage; ralph-loop judges the threshold itself.
            out.command = format!(
                "{clear_istanbul} && {command} --coverage --coverageReporters=json-summary \
                 --coverageReporters=json --coverageDirectory={dir_q} '--coverageThreshold={{}}'",
            );
            istanbul
        }
        CoverageTool::Vitest => {
            // reportOnFailure: vitest writes no coverage when a test fails otherwise. Zeroed
            // thresholds, as for jest: the project's global thresholds would fail the run.
            out.command = format!(
                "{clear_istanbul} && {command} --coverage.enabled --coverage.provider=v8 \
                 --coverage.reporter=json-summary --coverage.reporter=json \
                 --coverage.reportsDirectory={dir_q} \
                 --coverage.reportOnFailure --coverage.thresholds.lines=0 \
                 --coverage.thresholds.functions=0 --coverage.thresholds.branches=0 \
                 --coverage.thresholds.statements=0",
            );
            istanbul
        }
        CoverageTool::C8 => {
            out.command = format!(
                "{clear_istanbul} && npx --no-install c8 --reporter=json-summary --reporter=json \
                 --report-dir={dir_q} {command}",
            );
            istanbul
        }
        CoverageTool::CoveragePy => coverage_py(plan, &dir, &mut out)?,
        CoverageTool::LlvmCov => llvm_cov(plan, &dir, dependency, &mut out)?,
        CoverageTool::Tarpaulin => {
            let summary = dir.join("tarpaulin-report.json");
            let (sub, rest) = split_cargo(plan).ok_or_else(|| unsupported_cargo(plan))?;
            let rest = if sub == CargoTests::Nextest {
                // tarpaulin runs the test binaries itself, not nextest: ask them for libtest's
                // JSON lines, as under `cargo test`.
                out.framework = Framework::Cargo;
                out.env.retain(|(k, _)| !k.starts_with("NEXTEST_"));
                out.env.push(("RUSTC_BOOTSTRAP".into(), "1".into()));
                " --no-fail-fast -- -Z unstable-options --format json --report-time".to_string()
            } else {
                rest.to_string()
            };
            out.command = format!(
                "rm -f {} && cargo tarpaulin --out Json --output-dir {dir_q} --skip-clean{rest}",
                sh_quote(&summary),
            );
            summary
        }
    };
    // Made by the run, not now: a run that stops before its tests (a missing key) leaves no
    // `.ralph/` behind.
    out.command = format!("mkdir -p {dir_q} && {}", out.command);
    let lines = match tool {
        CoverageTool::Jest | CoverageTool::Vitest | CoverageTool::C8 => Some(lines),
        // `coverage json` and llvm-cov's export list each file's lines beside the totals.
        CoverageTool::CoveragePy | CoverageTool::LlvmCov => Some(summary.clone()),
        CoverageTool::Tarpaulin => None,
    };
    Ok((
        out,
        CoverageReader {
            tool,
            summary,
            lines,
            target: None,
        },
    ))
}

/// `plan`'s command under coverage.py (`run`, then `json` even when the tests fail); the
/// summary it writes.
fn coverage_py(plan: &TestPlan, dir: &Path, out: &mut TestPlan) -> Result<PathBuf, CoverageError> {
    let py = split_python(&plan.command).ok_or_else(|| unsupported_python(plan))?;
    let summary = dir.join("coverage.json");
    let data = dir.join(".coverage");
    let omit = if has_coverage_config(&plan.cwd) {
        String::new()
    } else {
        // Test files are not the code under test; jest, vitest and c8 leave them out by
        // default too. A project with its own coverage config decides for itself.
        format!(" '--omit={PY_TEST_FILES}'")
    };
    // `coverage json` must run even when the tests fail, and the tests' exit status
    // is the command's.
    out.command = format!(
        "rm -f {summary_q} {data_q} && {python} -m coverage run --data-file={data_q} \
         --branch{omit} -m {module}{rest}; status=$?; {python} -m coverage json \
         --data-file={data_q} -o {summary_q} -q; exit $status",
        summary_q = sh_quote(&summary),
        data_q = sh_quote(&data),
        python = py.python,
        module = py.module,
        rest = py.rest,
    );
    Ok(summary)
}

/// `plan`'s command under cargo-llvm-cov, of the tested crate or of `dependency`; the summary
/// it writes.
fn llvm_cov(
    plan: &TestPlan,
    dir: &Path,
    dependency: Option<&DependencyCoverage>,
    out: &mut TestPlan,
) -> Result<PathBuf, CoverageError> {
    let summary = dir.join("llvm-cov.json");
    let (sub, rest) = split_cargo(plan).ok_or_else(|| unsupported_cargo(plan))?;
    let sub = if sub == CargoTests::Nextest {
        " nextest"
    } else {
        ""
    };
    let summary_q = sh_quote(&summary);
    out.command = match dependency {
        // Without --ignore-run-fail: with it, failing tests would exit 0. The price: a
        // run with a failing test writes no summary (NoSummary). The export keeps each
        // file's segments (the changed lines are read from them), not its functions.
        None => format!(
            "rm -f {summary_q} && cargo llvm-cov{sub} --json --skip-functions \
             --output-path {summary_q}{rest}"
        ),
        // A dependency measured: the tests run with it instrumented (`--dep-coverage`)
        // and no report, then the report is made from the tested crate's manifest
        // (cargo-llvm-cov's own report of a dependency keeps only a registry crate's
        // files, never a path dependency's). The tests' exit status is the command's.
        Some(dep) => format!(
            "rm -f {summary_q} && cargo llvm-cov{sub} --no-report --dep-coverage \
             {package}{rest}; status=$?; cargo llvm-cov report --json \
             --skip-functions --output-path {summary_q} --manifest-path {manifest}; \
             exit $status",
            package = sh_quote(&dep.package),
            manifest = sh_quote(&dep.manifest),
        ),
    };
    // Fail instead of asking on a closed stdin to install llvm-tools.
    out.env.push(("CARGO_LLVM_COV_SETUP".into(), "no".into()));
    Ok(summary)
}

/// Files coverage.py leaves out when the project has no coverage config of its own.
const PY_TEST_FILES: &str = "*/test_*.py,*/*_test.py,*/tests/*,*/conftest.py";

/// Whether the project configures coverage.py itself (it reads these from the directory it runs
/// in).
fn has_coverage_config(cwd: &Path) -> bool {
    let has = |file: &str, section: &str| {
        std::fs::read_to_string(cwd.join(file)).is_ok_and(|text| text.contains(section))
    };
    cwd.join(".coveragerc").is_file()
        || has("pyproject.toml", "[tool.coverage")
        || has("setup.cfg", "[coverage:")
        || has("tox.ini", "[coverage:")
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use ralph_actors::schema::test_run::{Coverage, RunStatus, TestRun};
    use tokio_util::sync::CancellationToken;

    use super::super::tool::check_coverage_tool;
    use super::*;
    use crate::runner::ProcessRunner;
    use crate::testkit::plans::plan;
    use crate::testkit::projects::{node_project, project};

    async fn run(plan: &TestPlan) -> TestRun {
        let mut runner = ProcessRunner::new(
            plan.command.clone(),
            plan.cwd.clone(),
            Duration::from_secs(180),
            1024 * 1024,
        );
        for (k, v) in &plan.env {
            runner = runner.with_env(k.clone(), v.clone());
        }
        runner.run_once(CancellationToken::new()).await
    }

    /// Gathers coverage for `plan` and reads it; the run must end with `status`.
    async fn covered(plan: &TestPlan, status: RunStatus) -> Coverage {
        check_coverage_tool(plan).expect("tool installed");
        let reports = plan.cwd.join(".ralph/reports");
        let (changed, reader) = with_coverage(plan, &reports, None).expect("coverage plan");
        assert!(reader.summary_path().starts_with(&reports));
        // The module under test's own lines are read too, for the changed lines' coverage.
        let target = ["half.js", "half.py"]
            .map(|f| plan.cwd.join(f))
            .into_iter()
            .find(|p| p.is_file())
            .expect("the module under test");
        let reader = reader.for_target(&target, &plan.cwd);
        let run = run(&changed).await;
        assert_eq!(run.status, status, "{}\n{}", changed.command, run.output);
        reader
            .read()
            .unwrap_or_else(|e| panic!("{e}\n{}\n{}", changed.command, run.output))
    }

    /// Two functions, one with a branch; the tests call `a(1)` only: half the functions run,
    /// about half the lines (each tool counts lines its own way) and some of the branches.
    const HALF_JS: &str = "function a(x) {\n  if (x > 0) {\n    return 1;\n  }\n  return 2;\n}\n\
                           function b() {\n  const y = 3;\n  const z = 4;\n  return y + z;\n}\n";

    /// A node project of [`HALF_JS`] as a CommonJS module, `half.js`, and these other files.
    fn half_commonjs(files: &[(&str, &str)]) -> tempfile::TempDir {
        let half = format!("{HALF_JS}module.exports = {{ a, b }};\n");
        let mut all = vec![
            ("package.json", r#"{"name":"half","private":true}"#),
            ("half.js", half.as_str()),
        ];
        all.extend_from_slice(files);
        node_project(&all)
    }

    /// A jest test of `a(1)` that expects `expected`.
    fn jest_test(expected: u32) -> String {
        format!(
            "const {{ a }} = require('./half');\ntest('a', () => expect(a(1)).toBe({expected}));\n"
        )
    }

    /// A mocha test of `a(1)`, in `test/`, that expects `expected`.
    fn mocha_test(expected: u32) -> String {
        format!(
            "const assert = require('assert');\nconst {{ a }} = require('../half');\n\
             describe('half', () => {{ it('a', () => assert.equal(a(1), {expected})); }});\n"
        )
    }

    fn assert_half(c: &Coverage, tool: &str) {
        assert_eq!(c.tool, tool);
        // `a(1)` runs `return 1` (line 3), not `return 2` (5) nor `b`'s body (8-10).
        let lines = c.target.as_ref().expect("half.js's own lines");
        assert!(lines.covered.contains(&3), "{lines:?}");
        assert!(
            [5, 8, 9, 10].iter().all(|l| lines.missed.contains(l)),
            "{lines:?}"
        );
        assert!((25.0..=75.0).contains(&c.lines_pct), "{c:?}");
        assert_eq!(c.functions_pct, Some(50.0), "{c:?}");
        // Branches too are counted differently: c8 counts v8's blocks, so `a`'s body is one.
        assert!(
            c.branches_pct.is_some_and(|b| b > 0.0 && b < 100.0),
            "{c:?}"
        );
    }

    #[tokio::test]
    async fn jest_coverage_of_a_half_covered_module() {
        let dir = half_commonjs(&[
            ("half.test.js", &jest_test(1)),
            // A threshold the run would fail if ralph-loop did not override it.
            (
                "jest.config.js",
                "module.exports = { coverageThreshold: { global: { lines: 99 } } };\n",
            ),
        ]);
        let out = dir.path().join(".ralph/reports/jest.json");
        let p = plan(
            Framework::Jest,
            &format!(
                "npx --no-install jest --json --outputFile={}",
                out.display()
            ),
            dir.path(),
        );
        let c = covered(&p, RunStatus::Passed).await;
        assert_half(&c, "jest");
        // The test report the plan asked for is still written.
        assert!(out.is_file());
    }

    #[tokio::test]
    async fn jest_coverage_is_read_when_a_test_fails() {
        let dir = half_commonjs(&[("half.test.js", &jest_test(7))]);
        let p = plan(Framework::Jest, "npx --no-install jest", dir.path());
        assert_half(&covered(&p, RunStatus::Failed).await, "jest");
    }

    #[tokio::test]
    async fn vitest_coverage_of_a_half_covered_module() {
        let dir = node_project(&[
            (
                "package.json",
                r#"{"name":"half","private":true,"type":"module"}"#,
            ),
            ("half.js", &format!("{HALF_JS}export {{ a, b }};\n")),
            (
                "half.test.js",
                "import { test, expect } from 'vitest';\nimport { a } from './half.js';\n\
                 test('a', () => expect(a(1)).toBe(1));\n",
            ),
            (
                "vitest.config.js",
                "export default { test: { coverage: { thresholds: { lines: 99 } } } };\n",
            ),
        ]);
        let out = dir.path().join(".ralph/reports/vitest.json");
        let p = plan(
            Framework::Vitest,
            &format!(
                "npx --no-install vitest run --reporter=default --reporter=json \
                 --outputFile.json={}",
                out.display()
            ),
            dir.path(),
        );
        assert_half(&covered(&p, RunStatus::Passed).await, "vitest");
        // vitest empties its coverage directory: the test report lives outside it.
        assert!(out.is_file());
    }

    #[tokio::test]
    async fn c8_coverage_of_mocha_and_node_test() {
        let dir = half_commonjs(&[
            ("test/half.test.js", &mocha_test(1)),
            (
                "node/half.test.js",
                "const test = require('node:test');\nconst assert = require('assert');\n\
                 const { a } = require('../half');\ntest('a', () => assert.equal(a(1), 1));\n",
            ),
        ]);
        let mocha = plan(
            Framework::Mocha,
            "npx --no-install mocha --reporter json --reporter-option output=.ralph/mocha.json",
            dir.path(),
        );
        assert_half(&covered(&mocha, RunStatus::Passed).await, "c8");
        let node = plan(Framework::Node, "node --test node/", dir.path());
        assert_half(&covered(&node, RunStatus::Passed).await, "c8");
    }

    #[tokio::test]
    async fn c8_keeps_the_tests_exit_status() {
        let dir = half_commonjs(&[("test/half.test.js", &mocha_test(9))]);
        let p = plan(Framework::Mocha, "npx --no-install mocha", dir.path());
        assert_half(&covered(&p, RunStatus::Failed).await, "c8");
    }

    const HALF_PY: &str = "def a(x):\n    if x > 0:\n        return 1\n    return 2\n\n\n\
                           def b():\n    y = 3\n    z = 4\n    return y + z\n";

    #[tokio::test]
    async fn coverage_py_with_pytest_and_unittest() {
        let dir = project(&[
            ("half.py", HALF_PY),
            (
                "test_half.py",
                "import unittest\n\nfrom half import a\n\n\nclass T(unittest.TestCase):\n    \
                 def test_a(self):\n        self.assertEqual(a(1), 1)\n",
            ),
        ]);
        let junit = dir.path().join(".ralph/junit.xml");
        let pytest = plan(
            Framework::Pytest,
            &format!(
                "python3 -m pytest -rfE --junitxml={} -o junit_family=xunit1",
                junit.display()
            ),
            dir.path(),
        );
        // 8 statements in half.py, 4 run; the test file is left out, or it would count too.
        let c = covered(&pytest, RunStatus::Passed).await;
        assert_eq!(c.tool, "coverage.py");
        assert_eq!(c.lines_pct, 50.0, "{c:?}");
        assert_eq!(c.branches_pct, Some(50.0), "{c:?}");
        assert_eq!(c.functions_pct, Some(50.0), "{c:?}");
        let lines = c.target.as_ref().expect("half.py's own lines");
        assert_eq!(
            (lines.covered.as_slice(), lines.missed.as_slice()),
            (&[1, 2, 3, 7][..], &[4, 8, 9, 10][..])
        );
        assert!(junit.is_file());

        let unittest = plan(Framework::Unittest, "python3 -m unittest", dir.path());
        assert_eq!(covered(&unittest, RunStatus::Passed).await.lines_pct, 50.0);
    }

    #[tokio::test]
    async fn coverage_py_respects_the_projects_config() {
        // With its own config (no omit), the project's test file is measured too.
        let dir = project(&[
            ("half.py", HALF_PY),
            (
                "test_half.py",
                "from half import a\n\n\ndef test_a():\n    assert a(1) == 1\n",
            ),
            ("pyproject.toml", "[tool.coverage.run]\nbranch = true\n"),
        ]);
        let p = plan(Framework::Pytest, "python3 -m pytest", dir.path());
        let c = covered(&p, RunStatus::Passed).await;
        assert!(c.lines_pct > 50.0, "{c:?}");
    }

    #[tokio::test]
    async fn a_run_that_crashes_has_no_summary_not_the_last_one() {
        let dir = project(&[
            ("half.py", HALF_PY),
            (
                "test_half.py",
                "from half import a\n\n\ndef test_a():\n    assert a(1) == 1\n",
            ),
        ]);
        let p = plan(Framework::Pytest, "python3 -m pytest", dir.path());
        let reports = dir.path().join(".ralph/reports");
        let (changed, reader) = with_coverage(&p, &reports, None).expect("coverage plan");
        assert_eq!(run(&changed).await.status, RunStatus::Passed);
        assert_eq!(reader.read().expect("first summary").lines_pct, 50.0);

        // The process dies before coverage.py saves its data.
        std::fs::write(
            dir.path().join("conftest.py"),
            "import os\n\n\ndef pytest_sessionstart(session):\n    os._exit(3)\n",
        )
        .expect("write conftest");
        let second = run(&changed).await;
        assert_eq!(second.exit_code, Some(3), "{}", second.output);
        let err = reader.read().expect_err("no summary");
        assert!(
            matches!(
                err,
                CoverageError::NoSummary {
                    tool: "coverage.py",
                    ..
                }
            ),
            "{err}"
        );
        assert!(
            err.to_string().contains("wrote no coverage summary"),
            "{err}"
        );
    }

    #[test]
    fn cargo_commands_for_llvm_cov_and_tarpaulin() {
        let reports = tempfile::tempdir().expect("temp dir");
        let reports = reports.path();
        let test = plan(
            Framework::Cargo,
            "cargo test --no-fail-fast -- -Z unstable-options --format json --report-time",
            Path::new("/work/p"),
        );
        let (llvm, reader) =
            coverage_plan(&test, CoverageTool::LlvmCov, reports, None).expect("plan");
        let summary = reader.summary_path().display().to_string();
        assert_eq!(
            summary,
            format!("{}/coverage-cargo/llvm-cov.json", reports.display())
        );
        assert_eq!(
            llvm.command,
            format!(
                "mkdir -p {dir} && rm -f {summary} && cargo llvm-cov --json --skip-functions \
                 --output-path {summary} --no-fail-fast -- -Z unstable-options --format json \
                 --report-time",
                dir = reports.join("coverage-cargo").display()
            )
        );
        assert!(llvm
            .env
            .contains(&("CARGO_LLVM_COV_SETUP".into(), "no".into())));
        // A Chaos harness crate's run measures the user's crate, a path dependency of it.
        let dep = DependencyCoverage {
            package: "rs-median".into(),
            manifest: "/work/p/.ralph/s/chaos/Cargo.toml".into(),
        };
        assert_eq!(
            coverage_plan(&test, CoverageTool::LlvmCov, reports, Some(&dep))
                .expect("plan")
                .0
                .command,
            format!(
                "mkdir -p {dir} && rm -f {summary} && cargo llvm-cov --no-report --dep-coverage \
                 rs-median --no-fail-fast -- -Z unstable-options --format json --report-time; \
                 status=$?; cargo llvm-cov report --json --skip-functions --output-path {summary} \
                 --manifest-path /work/p/.ralph/s/chaos/Cargo.toml; exit $status",
                dir = reports.join("coverage-cargo").display()
            )
        );

        let nextest = TestPlan {
            env: vec![("NEXTEST_EXPERIMENTAL_LIBTEST_JSON".into(), "1".into())],
            ..plan(
                Framework::Nextest,
                "cargo nextest run --no-fail-fast --message-format libtest-json",
                Path::new("/work/p"),
            )
        };
        let (llvm, reader) =
            coverage_plan(&nextest, CoverageTool::LlvmCov, reports, None).expect("plan");
        let summary = reader.summary_path().display().to_string();
        assert_eq!(
            llvm.command,
            format!(
                "mkdir -p {dir} && rm -f {summary} && cargo llvm-cov nextest --json \
                 --skip-functions --output-path {summary} --no-fail-fast --message-format \
                 libtest-json",
                dir = reports.join("coverage-nextest").display()
            )
        );
        assert_eq!(llvm.framework, Framework::Nextest);

        let (tarp, reader) =
            coverage_plan(&nextest, CoverageTool::Tarpaulin, reports, None).expect("plan");
        let summary = reader.summary_path();
        assert!(summary.ends_with("coverage-nextest/tarpaulin-report.json"));
        assert_eq!(
            tarp.command,
            format!(
                "mkdir -p {dir} && rm -f {} && cargo tarpaulin --out Json --output-dir {dir} \
                 --skip-clean --no-fail-fast -- -Z unstable-options --format json --report-time",
                summary.display(),
                dir = summary.parent().expect("dir").display()
            )
        );
        // tarpaulin runs the test binaries as `cargo test` would.
        assert_eq!(tarp.framework, Framework::Cargo);
        assert!(tarp.env.contains(&("RUSTC_BOOTSTRAP".into(), "1".into())));
        assert!(!tarp.env.iter().any(|(k, _)| k.starts_with("NEXTEST_")));
    }
}
