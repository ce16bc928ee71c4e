//! The polyglot test runners on real projects: one small project per stack
//! (`tests/fixtures/stacks/`), TypeScript with vitest, JavaScript with jest and with mocha,
//! Python with pytest and with unittest, Rust with cargo test and with nextest. Each is run, by
//! the same detection and runner the app uses, in its variants: passing, failing, syntax error,
//! missing dependency, flaky, hanging and memory-hungry; then a whole fix run through the binary.
//!
//! Each variant writes one file over the base project: the module under test (`median`), so the
//! tests and their ids stay the same.

use std::path::Path;
use std::time::{Duration, Instant};

use ralph_actors::schema::test_run::{
    CaseStatus, Category, ResultSource, RunStatus, TestCase, TestRun,
};
use ralph_loop::runner::detect::{detect_plans_with, Probe};
use ralph_loop::runner::language::Language;
use ralph_loop::runner::plan::{Framework, Limits, SandboxKind, TestPlan, TestingOptions};
use ralph_loop::runner::project::ProjectRunner;
use serde_json::Value;
use tempfile::TempDir;
use tokio_util::sync::CancellationToken;

use super::support::*;

mod variants;
pub(super) use variants::module_source;

/// Long enough for a cold jest or cargo start on a loaded machine; the hanging variants get
/// [`HANG_TIMEOUT`].
pub(super) const TIMEOUT: Duration = Duration::from_secs(120);
pub(super) const HANG_TIMEOUT: Duration = Duration::from_secs(3);
pub(super) const MEMORY_LIMIT_MB: u64 = 256;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    TypeScript,
    /// CommonJS, as jest and mocha run it without a transform.
    JavaScript,
    Python,
    Rust,
}

/// One stack: a fixture, the framework detection must pick, and where its pieces are.
#[derive(Debug, Clone, Copy)]
pub(super) struct Stack {
    pub(super) fixture: &'static str,
    pub(super) kind: Kind,
    pub(super) framework: Framework,
    /// The module every variant replaces, relative to the project.
    pub(super) module: &'static str,
    /// The test file, as the report names it (`None`: the report does not name files).
    pub(super) test_file: Option<&'static str>,
    /// The name of the test of an even-length list, the one the logic bug and the flaky
    /// variant fail.
    pub(super) even_test: &'static str,
    /// The report read (`None`: the tool has none, its text is read).
    pub(super) format: Option<&'static str>,
}

pub(super) const VITEST: Stack = Stack {
    fixture: "ts-vitest",
    kind: Kind::TypeScript,
    framework: Framework::Vitest,
    module: "src/median.ts",
    test_file: Some("src/median.test.ts"),
    even_test: "averages the middle pair of an even list",
    format: Some("vitest-json"),
};
pub(super) const JEST: Stack = Stack {
    fixture: "js-jest",
    kind: Kind::JavaScript,
    framework: Framework::Jest,
    module: "src/median.js",
    test_file: Some("src/median.test.js"),
    even_test: "averages the middle pair of an even list",
    format: Some("jest-json"),
};
pub(super) const MOCHA: Stack = Stack {
    fixture: "js-mocha",
    kind: Kind::JavaScript,
    framework: Framework::Mocha,
    module: "src/median.js",
    test_file: Some("test/median.test.js"),
    even_test: "averages the middle pair of an even list",
    format: Some("mocha-json"),
};
pub(super) const PYTEST: Stack = Stack {
    fixture: "python",
    kind: Kind::Python,
    framework: Framework::Pytest,
    module: "stats/median.py",
    test_file: Some("tests/test_median.py"),
    even_test: "test_even_list",
    format: Some("junit-xml"),
};
pub(super) const UNITTEST: Stack = Stack {
    framework: Framework::Unittest,
    test_file: None,
    format: None,
    ..PYTEST
};
pub(super) const CARGO: Stack = Stack {
    fixture: "rust",
    kind: Kind::Rust,
    framework: Framework::Cargo,
    module: "src/lib.rs",
    test_file: None,
    even_test: "even_list",
    format: Some("libtest-json"),
};
pub(super) const NEXTEST: Stack = Stack {
    framework: Framework::Nextest,
    ..CARGO
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Variant {
    Passing,
    Failing,
    Syntax,
    MissingDependency,
    Flaky,
    Hanging,
    MemoryHungry,
}

/// The base project of `stack` in a temp git repository, node_modules linked for JavaScript.
pub(super) fn project(stack: &Stack) -> TempDir {
    let dir = fixture(&format!("stacks/{}", stack.fixture));
    if matches!(stack.kind, Kind::TypeScript | Kind::JavaScript) {
        link_node_modules(dir.path());
    }
    dir
}

pub(super) fn limits(timeout: Duration, memory_limit_mb: Option<u64>) -> Limits {
    Limits {
        timeout,
        max_output_bytes: 1 << 20,
        memory_limit_mb,
        sandbox: SandboxKind::Process,
    }
}

pub(super) fn options(dir: &Path, limits: Limits) -> TestingOptions {
    TestingOptions {
        command: None,
        command_cwd: None,
        language: None,
        limits,
        coverage: false,
        lint: false,
        lint_command: None,
        report_dir: dir.join(".ralph/reports"),
        coverage_of: None,
    }
}

/// What this machine has, with pytest and nextest as the stack needs.
pub(super) fn probe(stack: &Stack) -> Probe {
    Probe::fixed(
        stack.framework != Framework::Unittest,
        stack.framework == Framework::Nextest,
    )
}

/// Detects `stack`'s project in `dir` as the app does and checks the plan found.
pub(super) fn detect(stack: &Stack, dir: &Path, options: &TestingOptions) -> Vec<TestPlan> {
    let target = dir.join(stack.module);
    let mut plans = detect_plans_with(&target, options, &probe(stack)).unwrap();
    // Each project builds into its own target directory: one inherited from the environment
    // (CI sets CARGO_TARGET_DIR) would be shared by variants building at the same time, each
    // overwriting the others' test binaries.
    for plan in &mut plans {
        if plan.language == Some(Language::Rust) {
            let own = dir.join("target").display().to_string();
            plan.env.push(("CARGO_TARGET_DIR".into(), own));
        }
    }
    assert_eq!(plans.len(), 1, "{plans:?}");
    let plan = &plans[0];
    assert_eq!(plan.framework, stack.framework, "{plan:?}");
    let language = match stack.kind {
        Kind::TypeScript => Language::TypeScript,
        Kind::JavaScript => Language::JavaScript,
        Kind::Python => Language::Python,
        Kind::Rust => Language::Rust,
    };
    assert_eq!(plan.language, Some(language));
    assert_eq!(plan.cwd, dir.canonicalize().unwrap());
    plans
}

/// Builds the variant in a fresh project and runs it once.
pub(super) async fn run_variant(stack: &Stack, variant: Variant) -> (TempDir, TestRun) {
    let dir = project(stack);
    let (timeout, memory) = match variant {
        Variant::Hanging => (HANG_TIMEOUT, None),
        // The passing project runs under the same limit, which shows that it is the hog that
        // crosses it, not the tool.
        Variant::MemoryHungry | Variant::Passing => (TIMEOUT, Some(MEMORY_LIMIT_MB)),
        _ => (TIMEOUT, None),
    };
    let options = options(dir.path(), limits(timeout, memory));
    let plans = detect(stack, dir.path(), &options);
    if let Some(source) = module_source(stack.kind, variant) {
        write(dir.path(), stack.module, &source);
    }
    let limited = matches!(
        variant,
        Variant::Passing | Variant::Hanging | Variant::MemoryHungry
    );
    if stack.kind == Kind::Rust && limited {
        // What is timed and measured is the tests, not the build (rustc and the linker alone
        // come near 256 MB).
        prebuild(dir.path(), &plans[0]);
    }
    let runner = ProjectRunner::new(plans, &options, dir.path().join(stack.module));
    let started = Instant::now();
    let run = runner.run_all(CancellationToken::new()).await.unwrap();
    if variant == Variant::Hanging {
        // The timeout, a second of grace after SIGTERM, and a little reading.
        let took = started.elapsed();
        assert!(
            took < HANG_TIMEOUT + Duration::from_secs(4),
            "a {timeout:?} timeout took {took:?}"
        );
    }
    (dir, run)
}

/// Compiles a Rust project's tests with the plan's environment, so a run that follows only runs.
pub(super) fn prebuild(dir: &Path, plan: &TestPlan) {
    let status = std::process::Command::new("cargo")
        .args(["test", "--no-run", "--quiet"])
        .envs(plan.env.iter().map(|(k, v)| (k, v)))
        .current_dir(dir)
        .status()
        .unwrap();
    assert!(status.success());
}

/// The serialized run, checked against the result schema.
pub(super) fn schema_valid(run: &TestRun) -> Value {
    let json = serde_json::to_value(run).unwrap();
    assert_schema_valid(&json);
    json
}

pub(super) fn assert_schema_valid(json: &Value) {
    let schema_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/test-results.schema.json");
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(&schema_path).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", schema_path.display()));
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(json)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "not schema-valid: {errors:#?}\n{json:#}");
}

pub(super) fn failing(run: &TestRun) -> Vec<&TestCase> {
    run.failures().collect()
}

/// The run's context for assertion messages.
pub(super) fn shown(run: &TestRun) -> String {
    let mut run = run.clone();
    if run.output.len() > 6000 {
        let mut cut = run.output.len() - 6000;
        while !run.output.is_char_boundary(cut) {
            cut += 1;
        }
        run.output = format!("...{}", &run.output[cut..]);
    }
    format!("{run:#?}")
}

pub(super) fn assert_source(stack: &Stack, run: &TestRun) {
    match stack.format {
        Some(format) => {
            assert_eq!(run.source, ResultSource::Report, "{}", shown(run));
            assert_eq!(run.format.as_deref(), Some(format), "{}", shown(run));
            assert_eq!(run.parse_error, None, "{}", shown(run));
        }
        None => assert_ne!(run.source, ResultSource::Report, "{}", shown(run)),
    }
    assert_eq!(
        run.framework.as_deref(),
        Some(stack.framework.as_str()),
        "{}",
        shown(run)
    );
    assert_eq!(
        run.language.as_deref(),
        Some(match stack.kind {
            Kind::TypeScript => "typescript",
            Kind::JavaScript => "javascript",
            Kind::Python => "python",
            Kind::Rust => "rust",
        })
    );
}

/// The one failing test is the even-list test, named and placed as the report says.
pub(super) fn assert_even_test_failed(stack: &Stack, run: &TestRun) {
    let failed = failing(run);
    assert_eq!(failed.len(), 1, "{}", shown(run));
    let case = failed[0];
    assert_eq!(case.status, CaseStatus::Fail);
    assert!(case.id.contains(stack.even_test), "{case:#?}");
    if run.source == ResultSource::Report {
        // The text parsers give ids only; a report names each test too.
        assert!(case.name.contains(stack.even_test), "{case:#?}");
    }
    if let Some(file) = stack.test_file {
        assert_eq!(case.file.as_deref(), Some(file), "{case:#?}");
        assert!(case.id.starts_with(file), "{case:#?}");
    }
    assert_eq!(case.category, Some(Category::Logic), "{case:#?}");
    assert!(case.message.is_some(), "{case:#?}");
}

pub(super) async fn passing(stack: Stack) {
    let (_dir, run) = run_variant(&stack, Variant::Passing).await;
    assert_eq!(run.status, RunStatus::Passed, "{}", shown(&run));
    assert_eq!(run.exit_code, Some(0));
    assert_eq!(run.category, None);
    assert_source(&stack, &run);
    let sandbox = run.sandbox.clone().unwrap();
    assert_eq!(sandbox.memory_limit_mb, Some(MEMORY_LIMIT_MB));
    assert!(
        sandbox
            .peak_memory_mb
            .is_some_and(|peak| peak < MEMORY_LIMIT_MB),
        "{sandbox:?}"
    );
    if stack.format.is_some() || stack.framework == Framework::Unittest {
        assert_eq!(
            (run.totals.passed, run.totals.failed, run.totals.total()),
            (3, 0, 3),
            "{}",
            shown(&run)
        );
    }
    if stack.format.is_some() {
        // A report lists every test, passing ones too.
        assert_eq!(run.tests.len(), 3, "{}", shown(&run));
        assert!(run.tests.iter().all(|t| t.status == CaseStatus::Pass));
    }
    schema_valid(&run);
}

pub(super) async fn failing_logic(stack: Stack) {
    let (_dir, run) = run_variant(&stack, Variant::Failing).await;
    assert_eq!(run.status, RunStatus::Failed, "{}", shown(&run));
    assert_ne!(run.exit_code, Some(0));
    assert_eq!(run.category, Some(Category::Logic), "{}", shown(&run));
    assert_source(&stack, &run);
    assert_eq!(
        (run.totals.passed, run.totals.failed),
        (2, 1),
        "{}",
        shown(&run)
    );
    assert_even_test_failed(&stack, &run);
    schema_valid(&run);
}

pub(super) async fn syntax_error(stack: Stack) {
    let (_dir, run) = run_variant(&stack, Variant::Syntax).await;
    assert_eq!(run.status, RunStatus::Failed, "{}", shown(&run));
    assert_eq!(run.category, Some(Category::Syntax), "{}", shown(&run));
    assert_eq!(run.totals.passed, 0, "{}", shown(&run));
    schema_valid(&run);
    run_assertions_for_broken_module(&stack, &run);
}

pub(super) async fn missing_dependency(stack: Stack) {
    let (_dir, run) = run_variant(&stack, Variant::MissingDependency).await;
    assert_eq!(run.status, RunStatus::Failed, "{}", shown(&run));
    assert_eq!(run.category, Some(Category::Environment), "{}", shown(&run));
    assert_eq!(run.totals.passed, 0, "{}", shown(&run));
    let named = match stack.kind {
        Kind::Python => "leftpad_not_installed",
        Kind::Rust => "left_pad_not_in_cargo_toml",
        _ => "left-pad-not-installed",
    };
    // In the output, or (vitest 5's text reporter fails on node 20) in the report's message.
    let in_messages = failing(&run)
        .iter()
        .any(|t| t.message.as_deref().is_some_and(|m| m.contains(named)));
    assert!(run.output.contains(named) || in_messages, "{}", shown(&run));
    schema_valid(&run);
    run_assertions_for_broken_module(&stack, &run);
}

/// A module that does not load: where the tool still writes its report (jest, vitest, pytest),
/// it is read, and the failure is on the test file; a compile error (Rust) leaves no report, and
/// the run is read from its output.
pub(super) fn run_assertions_for_broken_module(stack: &Stack, run: &TestRun) {
    assert_eq!(
        run.framework.as_deref(),
        Some(stack.framework.as_str()),
        "{}",
        shown(run)
    );
    match stack.framework {
        Framework::Jest | Framework::Vitest | Framework::Pytest => {
            assert_eq!(run.source, ResultSource::Report, "{}", shown(run));
            let failed = failing(run);
            assert!(!failed.is_empty(), "{}", shown(run));
            if let Some(file) = stack.test_file {
                assert!(
                    failed.iter().all(|t| t.file.as_deref() == Some(file)),
                    "{}",
                    shown(run)
                );
            }
        }
        Framework::Mocha => {
            // mocha stops at loading the file, before its reporter starts: no report.
            assert_eq!(run.source, ResultSource::Raw, "{}", shown(run));
            let why = run.parse_error.as_deref().unwrap_or_default();
            assert!(why.contains("wrote no report"), "{}", shown(run));
        }
        Framework::Cargo | Framework::Nextest => {
            // cargo stops at the compile error: no test ran, so no JSON line was printed.
            assert_ne!(run.source, ResultSource::Report, "{}", shown(run));
            assert!(run.parse_error.is_some(), "{}", shown(run));
            assert!(run.output.contains("error"), "{}", shown(run));
        }
        _ => {}
    }
}

pub(super) async fn flaky(stack: Stack) {
    let dir = project(&stack);
    let options = options(dir.path(), limits(TIMEOUT, None));
    let plans = detect(&stack, dir.path(), &options);
    write(
        dir.path(),
        stack.module,
        &module_source(stack.kind, Variant::Flaky).unwrap(),
    );
    let runner = ProjectRunner::new(plans, &options, dir.path().join(stack.module));

    let first = runner.run_all(CancellationToken::new()).await.unwrap();
    assert_eq!(first.status, RunStatus::Failed, "{}", shown(&first));
    assert_eq!(first.category, Some(Category::Logic), "{}", shown(&first));
    assert_source(&stack, &first);
    assert_even_test_failed(&stack, &first);

    // The same runner again, as a retry runs it: it passes now, and says so.
    let second = runner.run_all(CancellationToken::new()).await.unwrap();
    assert_eq!(second.status, RunStatus::Passed, "{}", shown(&second));
    assert_eq!(second.category, None);
    assert_source(&stack, &second);
    if stack.format.is_some() || stack.framework == Framework::Unittest {
        assert_eq!(
            (second.totals.passed, second.totals.failed),
            (3, 0),
            "{}",
            shown(&second)
        );
    }
    schema_valid(&second);
}

pub(super) async fn hanging(stack: Stack) {
    let (_dir, run) = run_variant(&stack, Variant::Hanging).await;
    assert_eq!(run.status, RunStatus::Timeout, "{}", shown(&run));
    assert_eq!(run.category, Some(Category::Performance), "{}", shown(&run));
    assert_eq!(run.exit_code, None);
    assert!(run.output.contains("killed after 3 s"), "{}", shown(&run));
    schema_valid(&run);
}

pub(super) async fn memory_hungry(stack: Stack) {
    let started = Instant::now();
    let (_dir, run) = run_variant(&stack, Variant::MemoryHungry).await;
    assert_eq!(run.status, RunStatus::MemoryLimit, "{}", shown(&run));
    assert_eq!(run.category, Some(Category::Performance), "{}", shown(&run));
    let sandbox = run.sandbox.clone().unwrap();
    assert_eq!(sandbox.memory_limit_mb, Some(MEMORY_LIMIT_MB));
    assert!(
        sandbox.peak_memory_mb.unwrap_or(0) >= MEMORY_LIMIT_MB,
        "{sandbox:?}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "{:?}",
        started.elapsed()
    );
    schema_valid(&run);
}

/// One test per stack and variant, so they run in parallel and fail by name.
macro_rules! variants {
    ($stack:ident: $($variant:ident),* $(,)?) => {
        #[allow(non_snake_case)]
        mod $stack {
            $(
                #[tokio::test(flavor = "multi_thread")]
                async fn $variant() {
                    super::$variant(super::$stack).await;
                }
            )*
        }
    };
}

variants!(VITEST: passing, failing_logic, syntax_error, missing_dependency, flaky, hanging, memory_hungry);
variants!(JEST: passing, failing_logic, syntax_error, missing_dependency, flaky, hanging, memory_hungry);
variants!(MOCHA: passing, failing_logic, syntax_error, missing_dependency, flaky, hanging, memory_hungry);
variants!(PYTEST: passing, failing_logic, syntax_error, missing_dependency, flaky, hanging, memory_hungry);
variants!(UNITTEST: passing, failing_logic, missing_dependency, flaky);
variants!(CARGO: passing, failing_logic, syntax_error, missing_dependency, flaky, hanging, memory_hungry);
variants!(NEXTEST: passing, failing_logic, flaky, hanging);

// ---------------------------------------------------------------------------------------------
// Reading: the fallback to text, and several languages in one project

#[test]
fn every_variant_changes_the_module() {
    let all = [
        Variant::Failing,
        Variant::Syntax,
        Variant::MissingDependency,
        Variant::Flaky,
        Variant::Hanging,
        Variant::MemoryHungry,
    ];
    for stack in [VITEST, JEST, MOCHA, PYTEST, CARGO] {
        let base = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/stacks")
                .join(stack.fixture)
                .join(stack.module),
        )
        .unwrap();
        let mut seen: Vec<String> = vec![base];
        for v in all {
            let source = module_source(stack.kind, v).unwrap();
            assert!(!seen.contains(&source), "{stack:?} {v:?}");
            seen.push(source);
        }
        assert_eq!(module_source(stack.kind, Variant::Passing), None);
    }
}
