//! The test runners beyond detection's defaults: a missing report falls back to the text, a given
//! command overrides detection, two languages in one project run in turn, and node's test runner
//! reports JUnit.

use std::path::Path;

use ralph_actors::schema::test_run::{Category, ResultSource, RunStatus};
use ralph_loop::runner::language::Language;
use ralph_loop::runner::plan::{Framework, ReportSpec, TestPlan};
use ralph_loop::runner::project::ProjectRunner;
use ralph_loop::runner::report::ReportFormat;
use tokio_util::sync::CancellationToken;

use super::runners::*;
use super::support::*;

/// A plan whose tool writes no report: the text is read instead, and the run says why.
/// The pytest stack's project with its module's failing variant.
fn failing_pytest() -> tempfile::TempDir {
    let dir = project(&PYTEST);
    write(
        dir.path(),
        PYTEST.module,
        &module_source(Kind::Python, Variant::Failing).unwrap(),
    );
    dir
}

#[tokio::test(flavor = "multi_thread")]
async fn a_missing_report_falls_back_to_the_text() {
    let dir = failing_pytest();
    let report = dir.path().join(".ralph/reports/never-written.xml");
    let plan = TestPlan {
        language: Some(Language::Python),
        framework: Framework::Pytest,
        // No --junitxml: pytest writes its text only.
        command: "python3 -m pytest -rfE".into(),
        cwd: dir.path().to_path_buf(),
        report: Some(ReportSpec {
            format: ReportFormat::JunitXml,
            file: Some(report.clone()),
        }),
        env: Vec::new(),
    };
    let options = options(dir.path(), limits(TIMEOUT, None));
    let runner = ProjectRunner::new(vec![plan], &options, dir.path().join(PYTEST.module));
    let run = runner.run_all(CancellationToken::new()).await.unwrap();
    assert_eq!(run.status, RunStatus::Failed);
    assert_eq!(run.source, ResultSource::Text, "{}", shown(&run));
    let why = run.parse_error.clone().unwrap_or_default();
    assert!(
        why.contains("no report") && why.contains(&report.display().to_string()),
        "{why}"
    );
    assert_eq!(run.framework.as_deref(), Some("pytest"));
    assert_eq!((run.totals.passed, run.totals.failed), (2, 1));
    assert_eq!(
        run.failing_ids(),
        ["tests/test_median.py::TestMedian::test_even_list"]
    );
    assert_eq!(run.category, Some(Category::Logic), "{}", shown(&run));
    schema_valid(&run);

    // Nothing recognisable at all: raw, with the exit code and the output.
    let plan = TestPlan {
        command: "echo 'something went wrong'; exit 3".into(),
        ..runner.plans().next().unwrap().clone()
    };
    let run = ProjectRunner::new(vec![plan], &options, dir.path().join(PYTEST.module))
        .run_all(CancellationToken::new())
        .await
        .unwrap();
    assert_eq!((run.status, run.exit_code), (RunStatus::Failed, Some(3)));
    assert_eq!(run.source, ResultSource::Raw);
    assert!(run.parse_error.is_some() && run.tests.is_empty());
    assert!(run.output.contains("something went wrong"));
    schema_valid(&run);
}

/// `-t` (or `testing.command`) is run as is and read as text, whatever the manifests say.
#[tokio::test(flavor = "multi_thread")]
async fn a_given_command_overrides_detection() {
    let dir = failing_pytest();
    let mut options = options(dir.path(), limits(TIMEOUT, None));
    options.command = Some("python3 -m pytest -q tests".into());
    let runner =
        ProjectRunner::build(&dir.path().join(PYTEST.module), dir.path(), &options).unwrap();
    let plans: Vec<&TestPlan> = runner.plans().collect();
    assert_eq!(plans.len(), 1);
    assert_eq!(plans[0].framework, Framework::Custom);
    assert_eq!(plans[0].cwd, dir.path());
    let run = runner.run_all(CancellationToken::new()).await.unwrap();
    assert_eq!(run.command, "python3 -m pytest -q tests");
    assert_eq!(run.source, ResultSource::Text, "{}", shown(&run));
    assert_eq!(run.framework.as_deref(), Some("pytest"));
    assert_eq!(run.parse_error, None);
    assert_eq!((run.totals.passed, run.totals.failed), (2, 1));
    assert_eq!(run.category, Some(Category::Logic), "{}", shown(&run));
    schema_valid(&run);
}

/// A project with a package.json (jest) and a pyproject.toml: both run, in turn, into one
/// result; `--language` picks one.
#[tokio::test(flavor = "multi_thread")]
async fn two_languages_in_one_project_run_in_turn() {
    let dir = project(&PYTEST);
    // The JavaScript half: jest's fixture beside the Python one.
    let jest = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/stacks/js-jest");
    std::fs::create_dir_all(dir.path().join("src")).unwrap();
    for file in ["package.json", "src/median.js", "src/median.test.js"] {
        std::fs::copy(jest.join(file), dir.path().join(file)).unwrap();
    }
    link_node_modules(dir.path());
    write(
        dir.path(),
        "src/median.js",
        &module_source(Kind::JavaScript, Variant::Failing).unwrap(),
    );
    let target = dir.path().join(PYTEST.module);
    let options = options(dir.path(), limits(TIMEOUT, None));
    let runner = ProjectRunner::build(&target, dir.path(), &options).unwrap();
    let frameworks: Vec<Framework> = runner.plans().map(|p| p.framework).collect();
    // The target's own language first.
    assert_eq!(frameworks, [Framework::Pytest, Framework::Jest]);

    let run = runner.run_all(CancellationToken::new()).await.unwrap();
    assert_eq!(run.status, RunStatus::Failed, "{}", shown(&run));
    assert_eq!(run.suites.len(), 2, "{}", shown(&run));
    assert_eq!(
        (run.suites[0].status, run.suites[1].status),
        (RunStatus::Passed, RunStatus::Failed)
    );
    assert_eq!(run.suites[0].framework.as_deref(), Some("pytest"));
    assert_eq!(run.suites[1].framework.as_deref(), Some("jest"));
    assert!(run.suites.iter().all(|s| s.source == ResultSource::Report));
    assert_eq!(
        run.command,
        format!("{} && {}", run.suites[0].command, run.suites[1].command)
    );
    assert_eq!((run.totals.passed, run.totals.failed), (5, 1));
    assert_eq!(run.tests.len(), 6);
    assert_eq!(run.category, Some(Category::Logic));
    assert_eq!(run.source, ResultSource::Report);
    assert_eq!(run.format.as_deref(), Some("junit-xml+jest-json"));
    for suite in &run.suites {
        assert!(
            run.output
                .contains(&format!("[ralph-loop] $ {}", suite.command)),
            "{}",
            run.output
        );
    }
    assert_eq!(
        run.failing_ids(),
        ["src/median.test.js::median > averages the middle pair of an even list"]
    );
    schema_valid(&run);

    let mut python_only = options.clone();
    python_only.language = Some(Language::Python);
    let runner = ProjectRunner::build(&target, dir.path(), &python_only).unwrap();
    let run = runner.run_all(CancellationToken::new()).await.unwrap();
    assert_eq!(run.status, RunStatus::Passed, "{}", shown(&run));
    assert!(run.suites.is_empty());
    assert_eq!(run.framework.as_deref(), Some("pytest"));
}

/// node's own runner writes JUnit XML through its reporter flags.
#[tokio::test(flavor = "multi_thread")]
async fn node_test_runner_reports_junit() {
    let dir = fixture("js-median");
    let target = dir.path().join("src/median.js");
    let options = options(dir.path(), limits(TIMEOUT, None));
    let runner = ProjectRunner::build(&target, dir.path(), &options).unwrap();
    let run = runner.run_all(CancellationToken::new()).await.unwrap();
    assert_eq!(run.framework.as_deref(), Some("node"));
    assert_eq!(run.status, RunStatus::Failed, "{}", shown(&run));
    assert_eq!(run.source, ResultSource::Report, "{}", shown(&run));
    assert_eq!(run.format.as_deref(), Some("junit-xml"));
    assert_eq!(run.totals.total(), 4, "{}", shown(&run));
    assert!(run.totals.failed >= 1);
    assert_eq!(run.category, Some(Category::Logic), "{}", shown(&run));
    schema_valid(&run);
}

// ---------------------------------------------------------------------------------------------
// A whole fix run in each stack, through the binary: no -t, detection finds the tests.
