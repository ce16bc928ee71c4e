//! A project's tests as ralph-loop runs them: the plans [`crate::runner::detect`] found (one per
//! language), each run under the sandbox limits, its tool's report read into the unified result
//! schema (the text when the report is missing), its failures categorised, coverage and lint
//! added when asked for, and the runs merged into one [`TestRun`].

use std::path::{Path, PathBuf};

use ralph_actors::ports::runner::{RunnerError, TestRunner};
use ralph_actors::schema::test_run::{
    CaseStatus, Category, ResultSource, RunStatus, Suite, TestRun, Totals,
};
use tokio_util::sync::CancellationToken;

use super::classify::{classify_case, classify_output, dominant};
use super::coverage::{with_coverage, CoverageError, CoverageReader, CoverageTool};
use super::language::Language;
use super::lint::{lint_plan, run_lint, LintError, LintPlan};
use super::plan::{Framework, Limits, ReportSpec, TestPlan, TestingOptions};
use super::report::parse_report;
use super::{note, ProcessRunner};
use crate::process::capture::cap_output;
use crate::process::groups::ProcessGroups;
use crate::runner::detect::{self, DetectError};

/// The most output captured from a run whose report is in its output (libtest's JSON lines):
/// about 300,000 tests' worth.
const REPORT_OUTPUT_CAP: usize = 64 * 1024 * 1024;

/// Why a [`ProjectRunner`] could not be built: no tests found, or a coverage or lint tool asked
/// for is missing. Each says what to do.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error(transparent)]
    Detect(#[from] DetectError),
    #[error(transparent)]
    Coverage(#[from] CoverageError),
    #[error(transparent)]
    Lint(#[from] LintError),
    /// Mutation testing was asked for and its tool is missing: what to install.
    #[error("{0}")]
    MutationTool(String),
}

/// Runs a project's test plans in turn and merges their results; see [`ProjectRunner::run_all`].
#[derive(Debug)]
pub struct ProjectRunner {
    plans: Vec<Prepared>,
    /// The linter run after the tests (`options.lint`).
    lint: Option<LintPlan>,
    limits: Limits,
    /// Mounted into a container with the tests, so that report files are seen from both sides.
    project_dir: PathBuf,
    /// Why the runner cannot run (a coverage or lint tool is missing): every run fails with it.
    setup_error: Option<String>,
    /// Where each run's process group is registered while it runs.
    groups: ProcessGroups,
}

/// A plan as run: with coverage added when asked for.
#[derive(Debug)]
struct Prepared {
    plan: TestPlan,
    coverage: Option<CoverageReader>,
    /// The command as detected or given, before coverage wrapped it: what a person is shown.
    shown: String,
}

impl ProjectRunner {
    /// A runner for `plans` (from [`detect::detect_plans`], or made by hand) under the limits
    /// of `options`, with coverage and the linter when `options` asks for them. `target` is the
    /// file being fixed: the linter's target, and its project root is what a container mounts.
    ///
    /// A coverage or lint tool that is missing makes every run fail with the reason; see
    /// [`ProjectRunner::build`] to learn it at once.
    pub fn new(plans: Vec<TestPlan>, options: &TestingOptions, target: PathBuf) -> Self {
        let project_dir = detect::project_root(&target);
        match prepare(&plans, options, &target) {
            Ok((prepared, lint)) => Self {
                plans: prepared,
                lint,
                limits: options.limits.clone(),
                project_dir,
                setup_error: None,
                groups: ProcessGroups::new(),
            },
            Err(e) => Self {
                plans: plans
                    .into_iter()
                    .map(|plan| Prepared {
                        shown: plan.command.clone(),
                        plan,
                        coverage: None,
                    })
                    .collect(),
                lint: None,
                limits: options.limits.clone(),
                project_dir,
                setup_error: Some(e.to_string()),
                groups: ProcessGroups::new(),
            },
        }
    }

    /// Detects the plans for `target` ([`detect::detect_plans`]) and builds their runner,
    /// failing when no tests are found or a coverage or lint tool asked for is missing. A
    /// configured command (`options.command`) with no `command_cwd` runs in `root`, the
    /// project's root, which is also what a container mounts.
    pub fn build(target: &Path, root: &Path, options: &TestingOptions) -> Result<Self, BuildError> {
        let mut options = options.clone();
        if options.command.is_some() && options.command_cwd.is_none() {
            options.command_cwd = Some(root.to_path_buf());
        }
        let plans = detect::detect_plans(target, &options)?;
        let (plans, lint) = prepare(&plans, &options, target)?;
        Ok(Self {
            plans,
            lint,
            limits: options.limits.clone(),
            project_dir: root.to_path_buf(),
            setup_error: None,
            groups: ProcessGroups::new(),
        })
    }

    /// Registers every run's process group in `groups` (the program's registry, which the
    /// binary's edge kills on a hard exit).
    pub fn with_groups(mut self, groups: ProcessGroups) -> Self {
        self.groups = groups;
        self
    }

    /// The plans, in the order they run, as run (coverage flags included).
    pub fn plans(&self) -> impl Iterator<Item = &TestPlan> {
        self.plans.iter().map(|p| &p.plan)
    }

    /// The coverage tools the plans run under, when coverage is gathered.
    pub fn coverage_tools(&self) -> impl Iterator<Item = CoverageTool> + '_ {
        self.plans
            .iter()
            .filter_map(|p| p.coverage.as_ref().map(CoverageReader::tool))
    }

    /// The linter run after the tests, if any.
    pub fn lint_plan(&self) -> Option<&LintPlan> {
        self.lint.as_ref()
    }

    /// Runs every plan in turn (stopping early when `cancel` fires), merges the results, then
    /// runs the linter. Fails only when the runner could not be set up (see
    /// [`ProjectRunner::new`]).
    pub async fn run_all(&self, cancel: CancellationToken) -> Result<TestRun, RunnerError> {
        if let Some(why) = &self.setup_error {
            return Err(RunnerError::Setup(why.clone()));
        }
        let mut runs = Vec::with_capacity(self.plans.len());
        for prepared in &self.plans {
            let run = self.run_plan(prepared, cancel.clone()).await;
            runs.push((&prepared.plan, run));
            if cancel.is_cancelled() {
                break;
            }
        }
        let mut run = merge(runs);
        if let Some(lint) = &self.lint {
            if !cancel.is_cancelled() {
                run.lint = Some(run_lint(lint, &self.limits, cancel, &self.groups).await);
            }
        }
        Ok(run)
    }

    async fn run_plan(&self, prepared: &Prepared, cancel: CancellationToken) -> TestRun {
        let plan = &prepared.plan;
        let mut setup_notes = Vec::new();
        if let Some(ReportSpec {
            file: Some(file), ..
        }) = &plan.report
        {
            // A report left by an earlier run (a retry runs the same command) must not be read
            // as this run's.
            if let Err(e) = clear_report(file) {
                setup_notes.push(format!("report file {}: {e}", file.display()));
            }
        }
        // A report read from the output (libtest's JSON lines) must arrive whole: a large suite
        // writes megabytes of it. It is captured up to REPORT_OUTPUT_CAP, and the output is cut
        // to the configured cap once the report has been read.
        let report_in_output = matches!(&plan.report, Some(ReportSpec { file: None, .. }));
        let mut limits = self.limits.clone();
        if report_in_output {
            limits.max_output_bytes = limits.max_output_bytes.max(REPORT_OUTPUT_CAP);
        }
        let mut runner = ProcessRunner::new(
            plan.command.clone(),
            plan.cwd.clone(),
            limits.timeout,
            limits.max_output_bytes,
        )
        .with_limits(&limits)
        .with_language(plan.language)
        .with_project_dir(self.project_dir.clone())
        .with_groups(self.groups.clone());
        for (name, value) in &plan.env {
            runner = runner.with_env(name.clone(), value.clone());
        }
        let mut run = runner.run_once(cancel).await;
        for n in setup_notes {
            note(&mut run.output, &n);
        }
        read_results(plan, &mut run);
        if report_in_output && run.output.len() > self.limits.max_output_bytes {
            let (output, cut) = cap_output(&run.output, self.limits.max_output_bytes);
            run.output = output;
            run.output_truncated |= cut;
        }
        categorise(&mut run, plan.language);
        if let Some(reader) = &prepared.coverage {
            match reader.read() {
                Ok(coverage) => run.coverage = Some(coverage),
                // The run is kept without coverage (the criterion then counts as unmet).
                Err(e) => note(&mut run.output, &e.to_string()),
            }
        }
        run
    }
}

#[async_trait::async_trait]
impl TestRunner for ProjectRunner {
    async fn run(&self, cancel: CancellationToken) -> Result<TestRun, RunnerError> {
        self.run_all(cancel).await
    }

    /// The commands as detected or given: the coverage tool's wrapping is ralph-loop's own.
    fn command(&self) -> String {
        joined_commands(self.plans.iter().map(|p| p.shown.as_str()))
    }
}

/// The plans with coverage added (`options.coverage`), and the linter (`options.lint`) for the
/// target's language, run where its tests run.
fn prepare(
    plans: &[TestPlan],
    options: &TestingOptions,
    target: &Path,
) -> Result<(Vec<Prepared>, Option<LintPlan>), BuildError> {
    let mut prepared = Vec::with_capacity(plans.len());
    for plan in plans {
        let shown = &plan.command;
        prepared.push(if options.coverage {
            let (plan, reader) =
                with_coverage(plan, &options.report_dir, options.coverage_of.as_ref())?;
            let reader = reader.for_target(target, &plan.cwd);
            Prepared {
                plan,
                coverage: Some(reader),
                shown: shown.clone(),
            }
        } else {
            Prepared {
                plan: plan.clone(),
                coverage: None,
                shown: shown.clone(),
            }
        });
    }
    let lint = if options.lint {
        let first = plans.first();
        let language = first
            .and_then(|p| p.language)
            .or_else(|| Language::of_file(target));
        match language {
            Some(language) => {
                let cwd = first.map_or_else(|| detect::project_root(target), |p| p.cwd.clone());
                Some(lint_plan(
                    language,
                    target,
                    &cwd,
                    options.lint_command.as_deref(),
                )?)
            }
            None => None,
        }
    } else {
        None
    };
    Ok((prepared, lint))
}

fn joined_commands<'a>(commands: impl Iterator<Item = &'a str>) -> String {
    commands.collect::<Vec<_>>().join(" && ")
}

/// Makes sure the report's directory exists and no report is in it yet.
fn clear_report(file: &Path) -> std::io::Result<()> {
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir)?;
    }
    match std::fs::remove_file(file) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Fills `run` (which [`ProcessRunner::run_once`] filled from the text) from the plan's report
/// when there is one: the report's tests and totals, else the text with `parse_error` saying why
/// the report could not be used.
fn read_results(plan: &TestPlan, run: &mut TestRun) {
    run.language = plan.language.map(|l| l.as_str().to_string());
    if plan.framework != Framework::Custom {
        run.framework = Some(plan.framework.as_str().to_string());
    }
    if let Some(spec) = &plan.report {
        match read_report(plan, spec, &run.output) {
            Ok(parsed) => {
                run.source = ResultSource::Report;
                run.format = Some(parsed.format.to_string());
                run.totals = parsed.totals;
                run.tests = parsed.tests;
                run.parse_error = None;
            }
            Err(why) => {
                run.parse_error = Some(why);
                if run.source != ResultSource::Text {
                    run.source = ResultSource::Raw;
                    run.format = None;
                    run.totals = Totals::default();
                    run.tests.clear();
                }
            }
        }
    }
    // The exit code says failed even when the report lists no failure (a suite that did not
    // load, a crash after the last test); a run that exited 0 with failing tests failed too.
    if run.status == RunStatus::Passed && run.failures().next().is_some() {
        run.status = RunStatus::Failed;
        note(
            &mut run.output,
            "the command exited 0 but its report lists failing tests",
        );
    }
}

fn read_report(plan: &TestPlan, spec: &ReportSpec, output: &str) -> Result<super::Parsed, String> {
    let data = match &spec.file {
        None => std::borrow::Cow::Borrowed(output),
        Some(file) => match std::fs::read_to_string(file) {
            Ok(data) => std::borrow::Cow::Owned(data),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(format!(
                    "{} wrote no report ({} is missing)",
                    plan.framework.as_str(),
                    file.display()
                ))
            }
            Err(e) => return Err(format!("cannot read the report {}: {e}", file.display())),
        },
    };
    parse_report(spec.format, &data, &plan.cwd).map_err(|e| e.to_string())
}

/// Categorises every failing test, then the run: PERFORMANCE when a limit stopped it, else the
/// most common category of its failing tests, else what its output shows (a module that did not
/// load, a compile error: no test named).
fn categorise(run: &mut TestRun, language: Option<Language>) {
    for case in run
        .tests
        .iter_mut()
        .filter(|t| matches!(t.status, CaseStatus::Fail | CaseStatus::Timeout))
    {
        classify_case(case, language);
    }
    run.category = match run.status {
        RunStatus::Timeout | RunStatus::MemoryLimit => Some(Category::Performance),
        RunStatus::Passed => None,
        RunStatus::Failed | RunStatus::Error => {
            dominant(&run.tests).or_else(|| classify_output(&run.output, language))
        }
    };
}

/// How bad a status is, for the worst of several runs.
fn severity(status: RunStatus) -> u8 {
    match status {
        RunStatus::Passed => 0,
        RunStatus::Failed => 1,
        RunStatus::Timeout => 2,
        RunStatus::MemoryLimit => 3,
        RunStatus::Error => 4,
    }
}

/// How much of a result was read, for the least of several runs.
fn depth(source: ResultSource) -> u8 {
    match source {
        ResultSource::Raw => 0,
        ResultSource::Text => 1,
        ResultSource::Report => 2,
    }
}

/// One run from several: the commands joined with ` && `, the worst status, totals summed,
/// tests concatenated, each command listed in `suites` and its output under a header line.
/// `language` and `framework` are the first plan's (the target's own language runs first).
fn merge(mut runs: Vec<(&TestPlan, TestRun)>) -> TestRun {
    if runs.len() <= 1 {
        return match runs.pop() {
            Some((_, run)) => run,
            None => {
                let mut run = TestRun::new("", RunStatus::Error);
                note(&mut run.output, "no test command to run");
                run
            }
        };
    }
    let command = joined_commands(runs.iter().map(|(p, _)| p.command.as_str()));
    let mut merged = TestRun::new(command, RunStatus::Passed);
    merged.language = runs.first().and_then(|(_, r)| r.language.clone());
    merged.framework = runs.first().and_then(|(_, r)| r.framework.clone());
    merged.source = ResultSource::Report;
    let mut formats: Vec<String> = Vec::new();
    let mut parse_errors = Vec::new();
    let mut categories = Vec::new();
    for (plan, run) in runs {
        merged.suites.push(Suite {
            language: run.language.clone(),
            framework: run.framework.clone(),
            command: run.command.clone(),
            status: run.status,
            exit_code: run.exit_code,
            duration_ms: run.duration_ms,
            source: run.source,
            totals: run.totals,
        });
        if severity(run.status) > severity(merged.status) {
            merged.status = run.status;
        }
        if merged.exit_code.is_none_or(|c| c == 0) {
            merged.exit_code = run.exit_code.or(merged.exit_code);
        }
        merged.duration_ms += run.duration_ms;
        if depth(run.source) < depth(merged.source) {
            merged.source = run.source;
        }
        if let Some(f) = run.format {
            if !formats.contains(&f) {
                formats.push(f);
            }
        }
        if let Some(e) = run.parse_error {
            parse_errors.push(format!("{}: {e}", plan.framework.as_str()));
        }
        categories.extend(run.category);
        let t = &mut merged.totals;
        t.passed += run.totals.passed;
        t.failed += run.totals.failed;
        t.skipped += run.totals.skipped;
        t.timed_out += run.totals.timed_out;
        t.flaky += run.totals.flaky;
        merged.tests.extend(run.tests);
        merged.retries += run.retries;
        // One tool's numbers are kept: the first, unless it never loaded the target and a
        // later one ran some of its lines (a Python target in a project whose node tests run
        // first).
        let runs_target = |c: &Option<ralph_actors::schema::test_run::Coverage>| {
            c.as_ref()
                .and_then(|c| c.target.as_ref())
                .is_some_and(|t| !t.covered.is_empty())
        };
        if merged.coverage.is_none()
            || (!runs_target(&merged.coverage) && runs_target(&run.coverage))
        {
            merged.coverage = run.coverage;
        }
        if merged.lint.is_none() {
            merged.lint = run.lint;
        }
        match (&mut merged.sandbox, run.sandbox) {
            (None, s) => merged.sandbox = s,
            (Some(m), Some(s)) => m.peak_memory_mb = m.peak_memory_mb.max(s.peak_memory_mb),
            (Some(_), None) => {}
        }
        merged.output.push_str(&format!(
            "[ralph-loop] $ {}  (in {})\n",
            plan.command,
            plan.cwd.display()
        ));
        merged.output.push_str(&run.output);
        if !merged.output.ends_with('\n') {
            merged.output.push('\n');
        }
        merged.output_truncated |= run.output_truncated;
    }
    merged.format = (!formats.is_empty()).then(|| formats.join("+"));
    merged.parse_error = (!parse_errors.is_empty()).then(|| parse_errors.join("; "));
    merged.category = if categories.contains(&Category::Performance) {
        Some(Category::Performance)
    } else {
        categories.first().copied()
    };
    if merged.status == RunStatus::Passed {
        merged.category = None;
    }
    merged
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use ralph_actors::schema::test_run::CaseStatus;

    use super::*;
    use crate::runner::plan::SandboxKind;
    use crate::runner::report::ReportFormat;

    /// pytest's JUnit XML (xunit1) for two tests, one failing on an assertion.
    const JUNIT: &str = r#"<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" errors="0" failures="1" skipped="0" tests="2"><testcase classname="tests.test_m" name="test_ok" file="tests/test_m.py" line="3" time="0.001"/><testcase classname="tests.test_m" name="test_bad" file="tests/test_m.py" line="6" time="0.002"><failure message="AssertionError: assert 3 == 4">def test_bad():
&gt;       assert add(1, 2) == 4
E       AssertionError: assert 3 == 4

tests/test_m.py:7: AssertionError</failure></testcase></testsuite></testsuites>"#;

    struct Project {
        dir: tempfile::TempDir,
    }

    impl Project {
        fn new() -> Self {
            let dir = match tempfile::tempdir() {
                Ok(d) => d,
                Err(e) => panic!("tempdir: {e}"),
            };
            Self { dir }
        }

        fn path(&self) -> &Path {
            self.dir.path()
        }

        fn options(&self, timeout: Duration) -> TestingOptions {
            TestingOptions {
                command: None,
                command_cwd: None,
                language: None,
                limits: Limits {
                    timeout,
                    max_output_bytes: 1 << 20,
                    memory_limit_mb: None,
                    sandbox: SandboxKind::Process,
                },
                coverage: false,
                lint: false,
                lint_command: None,
                report_dir: self.path().join("reports"),
                coverage_of: None,
            }
        }

        fn report(&self, name: &str) -> PathBuf {
            self.path().join("reports").join(name)
        }

        /// A pytest plan whose command is `command`, reading JUnit XML from `report`.
        fn plan(&self, command: &str, report: Option<&Path>) -> TestPlan {
            TestPlan {
                language: Some(Language::Python),
                framework: Framework::Pytest,
                command: command.to_string(),
                cwd: self.path().to_path_buf(),
                report: report.map(|f| ReportSpec {
                    format: ReportFormat::JunitXml,
                    file: Some(f.to_path_buf()),
                }),
                env: Vec::new(),
            }
        }

        async fn run(&self, plans: Vec<TestPlan>, timeout: Duration) -> TestRun {
            let runner =
                ProjectRunner::new(plans, &self.options(timeout), self.path().join("m.py"));
            match runner.run_all(CancellationToken::new()).await {
                Ok(run) => run,
                Err(e) => panic!("{e}"),
            }
        }
    }

    /// A command that puts `text` in `file` (copied from a file, so no quoting trouble).
    fn writes(project: &Project, file: &Path, text: &str) -> String {
        let source = project.path().join(format!(
            "source-{}",
            file.file_name().and_then(|n| n.to_str()).unwrap_or("x")
        ));
        if let Err(e) = std::fs::write(&source, text) {
            panic!("{e}");
        }
        format!("cp '{}' '{}'", source.display(), file.display())
    }

    const T: Duration = Duration::from_secs(20);

    #[tokio::test]
    async fn a_report_in_the_output_is_read_whole_past_the_output_cap() {
        let p = Project::new();
        let mut lines =
            String::from("{ \"type\": \"suite\", \"event\": \"started\", \"test_count\": 3000 }\n");
        for i in 0..3000 {
            lines.push_str(&format!(
                "{{ \"type\": \"test\", \"name\": \"tests::case_{i:04}\", \"event\": \"ok\", \"exec_time\": 0.001 }}\n"
            ));
        }
        lines.push_str("{ \"type\": \"suite\", \"event\": \"ok\", \"passed\": 3000, \"failed\": 0, \"ignored\": 0, \"measured\": 0, \"filtered_out\": 0, \"exec_time\": 3.0 }\n");
        let out = p.path().join("out.jsonl");
        let copy = writes(&p, &out, &lines);
        let plan = TestPlan {
            language: Some(Language::Rust),
            framework: Framework::Cargo,
            command: format!("{copy} && cat '{}'", out.display()),
            cwd: p.path().to_path_buf(),
            report: Some(ReportSpec {
                format: ReportFormat::LibtestJson,
                file: None,
            }),
            env: Vec::new(),
        };
        let mut options = p.options(T);
        options.limits.max_output_bytes = 8 * 1024;
        let runner = ProjectRunner::new(vec![plan], &options, p.path().join("src/lib.rs"));
        let run = match runner.run_all(CancellationToken::new()).await {
            Ok(run) => run,
            Err(e) => panic!("{e}"),
        };
        assert!(lines.len() > 200 * 1024, "the report is far over the cap");
        assert_eq!(run.source, ResultSource::Report, "{}", run.output);
        assert_eq!(run.totals.passed, 3000);
        assert!(run.output_truncated);
        assert!(
            run.output.len() < 9 * 1024,
            "{} bytes kept",
            run.output.len()
        );
    }

    #[tokio::test]
    async fn the_report_the_command_writes_is_read_and_categorised() {
        let p = Project::new();
        let report = p.report("r.xml");
        let run = p
            .run(
                vec![p.plan(
                    &format!("{}; echo ran; exit 1", writes(&p, &report, JUNIT)),
                    Some(&report),
                )],
                T,
            )
            .await;
        assert_eq!((run.status, run.exit_code), (RunStatus::Failed, Some(1)));
        assert_eq!(run.source, ResultSource::Report);
        assert_eq!(run.format.as_deref(), Some("junit-xml"));
        assert_eq!(run.parse_error, None);
        assert_eq!(
            (run.language.as_deref(), run.framework.as_deref()),
            (Some("python"), Some("pytest"))
        );
        assert_eq!((run.totals.passed, run.totals.failed), (1, 1));
        assert_eq!(run.tests.len(), 2);
        assert_eq!(run.failing_ids(), ["tests/test_m.py::test_bad"]);
        let bad = run.failures().next().map(|t| t.category);
        assert_eq!(bad, Some(Some(Category::Logic)));
        // Passing tests get no category.
        assert!(run
            .tests
            .iter()
            .filter(|t| t.status == CaseStatus::Pass)
            .all(|t| t.category.is_none()));
        assert_eq!(run.category, Some(Category::Logic));
        assert!(run.suites.is_empty());
        assert_eq!(run.output, "ran\n");
    }

    #[tokio::test]
    async fn a_report_left_by_an_earlier_run_is_not_read() {
        let p = Project::new();
        let report = p.report("stale.xml");
        if let Some(dir) = report.parent() {
            std::fs::create_dir_all(dir).ok();
        }
        std::fs::write(&report, JUNIT).ok();
        // This run writes no report, and passes.
        let run = p.run(vec![p.plan("echo fine", Some(&report))], T).await;
        assert_eq!(run.status, RunStatus::Passed);
        assert!(!report.exists());
        assert_eq!(run.source, ResultSource::Raw);
        assert!(run.tests.is_empty());
        let why = run.parse_error.unwrap_or_default();
        assert!(
            why.starts_with("pytest wrote no report") && why.contains("stale.xml"),
            "{why}"
        );
    }

    #[tokio::test]
    async fn without_a_report_the_text_is_read_and_the_reason_kept() {
        let p = Project::new();
        let report = p.report("r.xml");
        let text = "FAILED tests/test_m.py::test_bad - AssertionError: assert 3 == 4\n\
                    ========================= 1 failed, 1 passed in 0.02s =========================\n";
        let source = p.path().join("out.txt");
        std::fs::write(&source, text).ok();
        let command = format!("cat '{}'; exit 1", source.display());
        let run = p.run(vec![p.plan(&command, Some(&report))], T).await;
        assert_eq!(run.source, ResultSource::Text);
        assert!(run.parse_error.is_some());
        assert_eq!((run.totals.passed, run.totals.failed), (1, 1));
        assert_eq!(run.failing_ids(), ["tests/test_m.py::test_bad"]);
        assert_eq!(run.category, Some(Category::Logic));

        // An unreadable report: the same fallback, saying what was wrong with it.
        let command = format!(
            "{}; cat '{}'; exit 1",
            writes(&p, &report, "<testsuites"),
            source.display()
        );
        let run = p.run(vec![p.plan(&command, Some(&report))], T).await;
        assert_eq!(run.source, ResultSource::Text, "{run:?}");
        assert_eq!((run.totals.passed, run.totals.failed), (1, 1));
        let why = run.parse_error.unwrap_or_default();
        assert!(why.starts_with("junit-xml report unreadable"), "{why}");
    }

    #[tokio::test]
    async fn the_exit_code_decides_failure() {
        let p = Project::new();
        // A report listing no failing test, but the command failed (a suite that did not load):
        // failed, with the category its output shows.
        let report = p.report("empty.xml");
        let empty = r#"<testsuites><testsuite name="pytest" tests="0"></testsuite></testsuites>"#;
        let command = format!(
            "{}; echo \"ModuleNotFoundError: No module named 'requests'\"; exit 2",
            writes(&p, &report, empty)
        );
        let run = p.run(vec![p.plan(&command, Some(&report))], T).await;
        assert_eq!((run.status, run.exit_code), (RunStatus::Failed, Some(2)));
        assert_eq!(run.source, ResultSource::Report);
        assert_eq!(run.totals.failed, 0);
        assert_eq!(run.category, Some(Category::Environment));

        // Exit 0 while the report lists a failure: failed.
        let report = p.report("zero.xml");
        let run = p
            .run(vec![p.plan(&writes(&p, &report, JUNIT), Some(&report))], T)
            .await;
        assert_eq!(run.status, RunStatus::Failed);
        assert!(run
            .output
            .contains("exited 0 but its report lists failing tests"));
    }

    #[tokio::test]
    async fn a_run_stopped_at_the_timeout_is_performance() {
        let p = Project::new();
        let started = Instant::now();
        let run = p
            .run(vec![p.plan("sleep 30", None)], Duration::from_millis(300))
            .await;
        assert!(started.elapsed() < Duration::from_secs(5));
        assert_eq!(run.status, RunStatus::Timeout);
        assert_eq!(run.category, Some(Category::Performance));
    }

    #[tokio::test]
    async fn several_plans_merge_into_one_run() {
        let p = Project::new();
        let report = p.report("py.xml");
        let python = p.plan(
            &format!("{}; echo ran; exit 1", writes(&p, &report, JUNIT)),
            Some(&report),
        );
        let rust = TestPlan {
            language: Some(Language::Rust),
            framework: Framework::Cargo,
            command: "echo '{ \"type\": \"suite\", \"event\": \"started\", \"test_count\": 1 }'; \
                      echo '{ \"type\": \"test\", \"event\": \"ok\", \"name\": \"t::a\" }'; \
                      echo '{ \"type\": \"suite\", \"event\": \"ok\", \"passed\": 1, \"failed\": 0, \"ignored\": 0, \"measured\": 0, \"filtered_out\": 0 }'"
                .into(),
            cwd: p.path().to_path_buf(),
            report: Some(ReportSpec {
                format: ReportFormat::LibtestJson,
                file: None,
            }),
            env: vec![("RUSTC_BOOTSTRAP".into(), "1".into())],
        };
        let commands = format!("{} && {}", python.command, rust.command);
        let runner = ProjectRunner::new(vec![python, rust], &p.options(T), p.path().join("m.py"));
        assert_eq!(runner.command(), commands);
        let run = match runner.run(CancellationToken::new()).await {
            Ok(r) => r,
            Err(e) => panic!("{e}"),
        };
        assert_eq!(run.command, commands);
        assert_eq!((run.status, run.exit_code), (RunStatus::Failed, Some(1)));
        assert_eq!(run.suites.len(), 2);
        assert_eq!(
            run.suites.iter().map(|s| s.status).collect::<Vec<_>>(),
            [RunStatus::Failed, RunStatus::Passed]
        );
        assert_eq!(run.suites[1].framework.as_deref(), Some("cargo"));
        assert_eq!(run.suites[1].totals.passed, 1);
        assert_eq!((run.totals.passed, run.totals.failed), (2, 1));
        assert_eq!(run.tests.len(), 3);
        assert_eq!(run.source, ResultSource::Report);
        assert_eq!(run.format.as_deref(), Some("junit-xml+libtest-json"));
        assert_eq!(run.category, Some(Category::Logic));
        assert_eq!(
            (run.language.as_deref(), run.framework.as_deref()),
            (Some("python"), Some("pytest"))
        );
        assert_eq!(
            run.output.matches("[ralph-loop] $ ").count(),
            2,
            "{}",
            run.output
        );
        assert!(
            run.output.starts_with("[ralph-loop] $ cp "),
            "{}",
            run.output
        );
    }

    #[test]
    fn the_worst_status_and_least_read_source_win() {
        let p = Project::new();
        let plan = p.plan("x", None);
        let run = |status, source| TestRun {
            source,
            ..TestRun::new("x", status)
        };
        let merged = merge(vec![
            (&plan, run(RunStatus::Passed, ResultSource::Report)),
            (&plan, run(RunStatus::Timeout, ResultSource::Text)),
            (&plan, run(RunStatus::Failed, ResultSource::Report)),
        ]);
        assert_eq!(merged.status, RunStatus::Timeout);
        assert_eq!(merged.source, ResultSource::Text);
        assert_eq!(merged.command, "x && x && x");
        let none = merge(Vec::new());
        assert_eq!(none.status, RunStatus::Error);
    }

    /// A Python target in a project whose node tests run first: c8 never loaded it, coverage.py
    /// ran its lines; coverage.py's numbers are kept.
    #[test]
    fn the_coverage_kept_is_the_tool_s_that_ran_the_target() {
        use ralph_actors::schema::test_run::{Coverage, LineHits};
        let p = Project::new();
        let plan = p.plan("x", None);
        let covered = |tool: &str, covered: Vec<u32>| TestRun {
            coverage: Some(Coverage {
                tool: tool.into(),
                lines_pct: 50.0,
                branches_pct: None,
                functions_pct: None,
                target: Some(LineHits {
                    covered,
                    missed: vec![1, 2, 3],
                }),
            }),
            ..TestRun::new("x", RunStatus::Passed)
        };
        let merged = merge(vec![
            (&plan, covered("c8", Vec::new())),
            (&plan, covered("coverage.py", vec![4])),
        ]);
        assert_eq!(
            merged.coverage.map(|c| c.tool).as_deref(),
            Some("coverage.py")
        );
        let first = merge(vec![
            (&plan, covered("c8", vec![4])),
            (&plan, covered("coverage.py", vec![5])),
        ]);
        assert_eq!(first.coverage.map(|c| c.tool).as_deref(), Some("c8"));
    }

    #[tokio::test]
    async fn a_cancelled_run_stops_before_the_next_plan() {
        let p = Project::new();
        let marker = p.path().join("second-ran");
        let first = p.plan("sleep 30", None);
        let second = p.plan(&format!("touch '{}'", marker.display()), None);
        let runner = ProjectRunner::new(vec![first, second], &p.options(T), p.path().join("m.py"));
        let cancel = CancellationToken::new();
        let trigger = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            trigger.cancel();
        });
        let run = match runner.run_all(cancel).await {
            Ok(r) => r,
            Err(e) => panic!("{e}"),
        };
        assert_eq!(run.status, RunStatus::Error);
        assert!(!marker.exists());
    }

    #[tokio::test]
    async fn a_missing_coverage_tool_is_a_build_error_and_fails_every_run() {
        let p = Project::new();
        std::fs::write(p.path().join("m.py"), "").ok();
        let mut options = p.options(T);
        options.coverage = true;
        options.command = Some("make test".into());
        // A command of the user's own: coverage cannot be added to it.
        let built = ProjectRunner::build(&p.path().join("m.py"), p.path(), &options);
        let Err(BuildError::Coverage(e)) = built else {
            panic!("{built:?}");
        };
        assert!(e.to_string().contains("make test"), "{e}");
        let plans = vec![crate::runner::detect::custom_plan(
            "make test",
            p.path().to_path_buf(),
            None,
        )];
        let runner = ProjectRunner::new(plans, &options, p.path().join("m.py"));
        let run = runner.run(CancellationToken::new()).await;
        assert!(
            matches!(&run, Err(why) if why.to_string().contains("coverage_threshold")),
            "{run:?}"
        );
    }

    #[tokio::test]
    async fn a_given_command_runs_in_the_root_by_default() {
        let p = Project::new();
        std::fs::write(p.path().join("m.py"), "").ok();
        let mut options = p.options(T);
        options.command = Some("pwd".into());
        let runner = match ProjectRunner::build(&p.path().join("m.py"), p.path(), &options) {
            Ok(r) => r,
            Err(e) => panic!("{e}"),
        };
        let run = match runner.run_all(CancellationToken::new()).await {
            Ok(r) => r,
            Err(e) => panic!("{e}"),
        };
        let root = p.path().canonicalize().unwrap_or_default();
        assert_eq!(run.output.trim(), root.display().to_string());
        assert_eq!(run.framework, None);
        assert_eq!(run.language.as_deref(), Some("python"));
        assert_eq!(run.source, ResultSource::Raw);
        assert_eq!(run.parse_error, None);
    }
}
