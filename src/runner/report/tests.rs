//! The readers on real reports, recorded from the tools on small projects (testdata/): jest 30,
//! vitest 5, mocha 12, pytest 9 (xunit1 and xunit2), cargo test's libtest JSON and cargo-nextest
//! 0.9, each with passing, failing, skipped and timed-out tests and files that do not load.

use super::*;
use crate::runner::classify::classify_case;
use crate::runner::language::Language;
use crate::runner::reading::pytest_ids::python_node_id;
use ralph_actors::schema::test_run::{Location, ResultSource, RunStatus, TestRun};

/// (name, format, the directory the tool ran in, language)
const SAMPLES: &[(&str, ReportFormat, &str, Language)] = &[
    (
        "jest.json",
        ReportFormat::JestJson,
        "/tmp/rls/js",
        Language::JavaScript,
    ),
    (
        "vitest.json",
        ReportFormat::VitestJson,
        "/tmp/rls/vt",
        Language::TypeScript,
    ),
    (
        "vitest_missing.json",
        ReportFormat::VitestJson,
        "/tmp/rls/vt",
        Language::TypeScript,
    ),
    (
        "mocha.json",
        ReportFormat::MochaJson,
        "/tmp/rls/mo",
        Language::JavaScript,
    ),
    (
        "mocha_hook.json",
        ReportFormat::MochaJson,
        "/tmp/rls/mo",
        Language::JavaScript,
    ),
    (
        "pytest_xunit1.xml",
        ReportFormat::JunitXml,
        "/tmp/rls/py",
        Language::Python,
    ),
    (
        "pytest_xunit2.xml",
        ReportFormat::JunitXml,
        "/tmp/rls/py",
        Language::Python,
    ),
    (
        "pytest_collect.xml",
        ReportFormat::JunitXml,
        "/tmp/rls/py",
        Language::Python,
    ),
    (
        "libtest.txt",
        ReportFormat::LibtestJson,
        "/tmp/rls/rs",
        Language::Rust,
    ),
    (
        "libtest_time.txt",
        ReportFormat::LibtestJson,
        "/tmp/rls/rs",
        Language::Rust,
    ),
    (
        "libtest_crash.txt",
        ReportFormat::LibtestJson,
        "/tmp/rls/rs2",
        Language::Rust,
    ),
    (
        "nextest.txt",
        ReportFormat::LibtestJson,
        "/tmp/rls/rs",
        Language::Rust,
    ),
    (
        "nextest_crash.txt",
        ReportFormat::LibtestJson,
        "/tmp/rls/rs2",
        Language::Rust,
    ),
];

fn sample(name: &str) -> &'static str {
    match name {
        "jest.json" => include_str!("testdata/jest.json"),
        "vitest.json" => include_str!("testdata/vitest.json"),
        "vitest_missing.json" => include_str!("testdata/vitest_missing.json"),
        "mocha.json" => include_str!("testdata/mocha.json"),
        "mocha_hook.json" => include_str!("testdata/mocha_hook.json"),
        "pytest_xunit1.xml" => include_str!("testdata/pytest_xunit1.xml"),
        "pytest_xunit2.xml" => include_str!("testdata/pytest_xunit2.xml"),
        "pytest_collect.xml" => include_str!("testdata/pytest_collect.xml"),
        "libtest.txt" => include_str!("testdata/libtest.txt"),
        "libtest_time.txt" => include_str!("testdata/libtest_time.txt"),
        "libtest_crash.txt" => include_str!("testdata/libtest_crash.txt"),
        "libtest_build.txt" => include_str!("testdata/libtest_build.txt"),
        "nextest.txt" => include_str!("testdata/nextest.txt"),
        "nextest_crash.txt" => include_str!("testdata/nextest_crash.txt"),
        "nextest_build.txt" => include_str!("testdata/nextest_build.txt"),
        _ => panic!("no sample {name}"),
    }
}

fn read(name: &str) -> Parsed {
    let (_, format, cwd, _) = SAMPLES
        .iter()
        .find(|s| s.0 == name)
        .unwrap_or_else(|| panic!("no sample {name}"));
    parse_report(*format, sample(name), Path::new(cwd)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn totals(passed: u32, failed: u32, skipped: u32, timed_out: u32) -> Totals {
    Totals {
        passed,
        failed,
        skipped,
        timed_out,
        flaky: 0,
    }
}

fn get<'a>(p: &'a Parsed, id: &str) -> &'a TestCase {
    p.tests
        .iter()
        .find(|t| t.id == id)
        .unwrap_or_else(|| panic!("no test {id} in {:?}", ids(p)))
}

/// Asserts that test `t` failed with an error of type `error_type` saying `message`, raised at
/// `location`.
fn assert_raised(t: &TestCase, error_type: &str, message: &str, location: Option<Location>) {
    assert_eq!(t.error_type.as_deref(), Some(error_type), "{}", t.id);
    assert_eq!(t.message.as_deref(), Some(message), "{}", t.id);
    assert_eq!(t.location, location, "{}", t.id);
}

fn ids(p: &Parsed) -> Vec<&str> {
    p.tests.iter().map(|t| t.id.as_str()).collect()
}

fn statuses(p: &Parsed) -> Vec<(&str, CaseStatus)> {
    p.tests.iter().map(|t| (t.id.as_str(), t.status)).collect()
}

fn at(file: &str, line: u32, column: Option<u32>) -> Option<Location> {
    Some(Location {
        file: file.into(),
        line: Some(line),
        column,
    })
}

/// The tool's own counts in a jest-shaped report.
fn jest_counts(data: &str) -> (u64, u64, u64, u64) {
    let v: serde_json::Value = serde_json::from_str(data).expect("json");
    let n = |k: &str| v[k].as_u64().expect(k);
    (
        n("numPassedTests"),
        n("numFailedTests"),
        n("numPendingTests"),
        n("numTodoTests"),
    )
}

#[test]
fn jest_reads_every_test_with_its_suites_and_the_files_that_did_not_run() {
    let p = read("jest.json");
    assert_eq!((p.framework, p.format), ("jest", "jest-json"));
    // jest counts 2 passed, 3 failed (one a timeout), 1 pending, 1 todo, and two files that did
    // not run.
    assert_eq!(jest_counts(sample("jest.json")), (2, 3, 1, 1));
    assert_eq!(p.totals, totals(2, 2 + 2, 1 + 1, 1));
    assert_eq!(
        statuses(&p),
        [
            ("src/math.test.js::math > adds", CaseStatus::Pass),
            (
                "src/math.test.js::math > median of even length",
                CaseStatus::Fail
            ),
            (
                "src/math.test.js::math > errors > throws a type error",
                CaseStatus::Fail
            ),
            (
                "src/math.test.js::math > errors > skipped one",
                CaseStatus::Skip
            ),
            (
                "src/math.test.js::math > errors > write this",
                CaseStatus::Skip
            ),
            ("src/math.test.js::math > slow", CaseStatus::Timeout),
            ("src/math.test.js::top level passes", CaseStatus::Pass),
            ("src/syn.test.js", CaseStatus::Fail),
            ("src/imp.test.js", CaseStatus::Fail),
        ]
    );
    let t = get(&p, "src/math.test.js::math > median of even length");
    assert_eq!(t.name, "math > median of even length");
    assert_eq!(t.file.as_deref(), Some("src/math.test.js"));
    assert_eq!(t.duration_ms, Some(4.0));
    assert_raised(
        t,
        "AssertionError",
        "expect(received).toBe(expected) // Object.is equality\n\nExpected: 2.5\nReceived: 3",
        at("src/math.test.js", 8, Some(34)),
    );
    let stack = t.stack.as_deref().unwrap_or("");
    assert!(
        stack.starts_with("    at Object.toBe (/tmp/rls/js/src/math.test.js:8:34)"),
        "{stack}"
    );

    // Raised in the code under test: its place, not the test's.
    let t = get(&p, "src/math.test.js::math > errors > throws a type error");
    assert_raised(
        t,
        "TypeError",
        "TypeError: cannot read the list",
        at("src/math.js", 9, Some(9)),
    );

    let t = get(&p, "src/math.test.js::math > slow");
    assert!(t
        .message
        .as_deref()
        .unwrap_or("")
        .contains("Exceeded timeout of 50 ms"));
    assert_eq!(t.location, at("src/math.test.js", 17, Some(3)));

    let t = get(&p, "src/syn.test.js");
    assert_eq!(t.name, "");
    assert_raised(
        t,
        "SyntaxError",
        "SyntaxError: /tmp/rls/js/src/syn.test.js: Unexpected token (1:10)",
        at("src/syn.test.js", 1, Some(10)),
    );
    let t = get(&p, "src/imp.test.js");
    assert_eq!(
        t.message.as_deref(),
        Some("Cannot find module 'left-padder-nosuch' from 'src/imp.test.js'")
    );
    assert_eq!(t.location, at("src/imp.test.js", 1, Some(11)));
    // Passing and skipped tests carry no failure fields.
    for t in p
        .tests
        .iter()
        .filter(|t| matches!(t.status, CaseStatus::Pass | CaseStatus::Skip))
    {
        assert_eq!(
            (&t.message, &t.stack, &t.location),
            (&None, &None, &None),
            "{}",
            t.id
        );
    }
}

#[test]
fn vitest_reads_its_jest_shaped_report() {
    let p = read("vitest.json");
    assert_eq!((p.framework, p.format), ("vitest", "vitest-json"));
    assert_eq!(jest_counts(sample("vitest.json")), (2, 3, 1, 1));
    assert_eq!(p.totals, totals(2, 2 + 2, 2, 1));
    assert_eq!(
        ids(&p),
        [
            "src/imp.test.ts",
            "src/math.test.ts::math > adds",
            "src/math.test.ts::math > median of even length",
            "src/math.test.ts::math > errors > throws a type error",
            "src/math.test.ts::math > errors > skipped one",
            "src/math.test.ts::math > errors > write this",
            "src/math.test.ts::math > slow",
            "src/math.test.ts::top level passes",
            "src/syn.test.ts",
        ]
    );
    let t = get(&p, "src/math.test.ts::math > median of even length");
    assert_raised(
        t,
        "AssertionError",
        "AssertionError: expected 3 to be 2.5 // Object.is equality",
        at("src/math.test.ts", 9, Some(34)),
    );
    let t = get(&p, "src/math.test.ts::math > slow");
    assert_eq!(t.status, CaseStatus::Timeout);
    assert_eq!(t.error_type.as_deref(), Some("TestTimeoutError"));
    assert_eq!(t.location, at("src/math.test.ts", 18, Some(3)));
    // vitest's code frame is coloured even with NO_COLOR: no escape may remain.
    let t = get(&p, "src/syn.test.ts");
    assert_eq!(
        t.message.as_deref(),
        Some("Transform failed with 1 error:\n\n[PARSE_ERROR] Unexpected token")
    );
    assert!(!t.stack.as_deref().unwrap_or("").contains('\x1b'));
    assert_eq!(t.location, at("src/syn.test.ts", 1, Some(11)));
    assert_eq!(
        get(&p, "src/imp.test.ts").message.as_deref(),
        Some("Cannot find package 'left-padder-nosuch' imported from /tmp/rls/vt/src/imp.test.ts")
    );
    let p = read("vitest_missing.json");
    assert_eq!(p.totals, totals(0, 1, 0, 0));
    assert_eq!(ids(&p), ["url/url.test.ts"]);
}

#[test]
fn mocha_reads_tests_hooks_and_rebuilds_suite_paths() {
    let p = read("mocha.json");
    assert_eq!((p.framework, p.format), ("mocha", "mocha-json"));
    // stats: 2 passes, 3 failures (one a timeout), 2 pending.
    assert_eq!(p.totals, totals(2, 2, 2, 1));
    assert_eq!(
        statuses(&p),
        [
            ("test/math.test.js::top level passes", CaseStatus::Pass),
            ("test/math.test.js::math > adds", CaseStatus::Pass),
            (
                "test/math.test.js::math > median of even length",
                CaseStatus::Fail
            ),
            ("test/math.test.js::math > slow", CaseStatus::Timeout),
            (
                "test/math.test.js::math > errors > throws a type error",
                CaseStatus::Fail
            ),
            (
                "test/math.test.js::math > errors > skipped one",
                CaseStatus::Skip
            ),
            (
                "test/math.test.js::math > errors > pending without body",
                CaseStatus::Skip
            ),
        ]
    );
    let t = get(&p, "test/math.test.js::math > median of even length");
    assert_raised(
        t,
        "AssertionError",
        "AssertionError [ERR_ASSERTION]: Expected values to be strictly equal:\n\n3 !== 2.5",
        at("test/math.test.js", 9, Some(12)),
    );
    assert_eq!(t.duration_ms, Some(2.0));
    let t = get(&p, "test/math.test.js::math > errors > throws a type error");
    assert_eq!(t.location, at("src/math.js", 9, Some(9)));
    // Only node's timers in the stack: no place in the project.
    assert_eq!(get(&p, "test/math.test.js::math > slow").location, None);

    // A failing `before` hook is only in `failures`; its tests never ran.
    let p = read("mocha_hook.json");
    assert_eq!(p.totals, totals(1, 1, 0, 0));
    let t = get(
        &p,
        "hook/hook.test.js::db > \"before all\" hook for \"reads\"",
    );
    assert_eq!(
        t.message.as_deref(),
        Some("Error: ECONNREFUSED 127.0.0.1:5432")
    );
    assert_eq!(t.location, at("hook/hook.test.js", 4, Some(11)));
}

#[test]
fn mocha_suite_paths_from_full_titles() {
    let report = r#"{"stats":{},"tests":[
        {"title":"t1","fullTitle":"a b t1","file":"/p/x.js","err":{}},
        {"title":"t2","fullTitle":"a b c d t2","file":"/p/x.js","err":{}},
        {"title":"t3","fullTitle":"t3","file":"/p/x.js","err":{}}
    ],"failures":[],"pending":[]}"#;
    let p = parse_report(ReportFormat::MochaJson, report, Path::new("/p")).expect("mocha");
    // `a b` holds tests; `a b c d` starts with it, so `c d` is a suite inside it.
    assert_eq!(
        ids(&p),
        ["x.js::a b > t1", "x.js::a b > c d > t2", "x.js::t3"]
    );
}

#[test]
fn junit_from_pytest_gives_node_ids_output_and_places() {
    for name in ["pytest_xunit1.xml", "pytest_xunit2.xml"] {
        let p = read(name);
        assert_eq!((p.framework, p.format), ("pytest", "junit-xml"), "{name}");
        // `3 failed, 2 passed, 1 skipped, 1 xfailed, 1 error`.
        assert_eq!(p.totals, totals(2, 4, 2, 0), "{name}");
        assert_eq!(
            statuses(&p),
            [
                ("tests/test_stats.py::test_median_odd", CaseStatus::Pass),
                ("tests/test_stats.py::test_median_even", CaseStatus::Fail),
                ("tests/test_stats.py::test_skipped", CaseStatus::Skip),
                ("tests/test_stats.py::test_xfail", CaseStatus::Skip),
                (
                    "tests/test_stats.py::TestLoad::test_missing_file",
                    CaseStatus::Fail
                ),
                (
                    "tests/test_stats.py::TestLoad::test_param[1]",
                    CaseStatus::Pass
                ),
                (
                    "tests/test_stats.py::TestLoad::test_param[2]",
                    CaseStatus::Fail
                ),
                ("tests/test_stats.py::test_uses_broken", CaseStatus::Fail),
            ],
            "{name}"
        );
        let t = get(&p, "tests/test_stats.py::test_median_even");
        assert_eq!(t.file.as_deref(), Some("tests/test_stats.py"));
        // `&#10;` in the attribute is a line break.
        assert_eq!(
            t.message.as_deref(),
            Some("assert 3 == 2.5\n +  where 3 = median([1, 2, 3, 4])")
        );
        assert_eq!(t.error_type.as_deref(), Some("AssertionError"));
        assert_eq!(t.location, at("tests/test_stats.py", 13, None));
        assert!(t
            .stack
            .as_deref()
            .unwrap_or("")
            .contains("E       assert 3 == 2.5"));
        let t = get(&p, "tests/test_stats.py::TestLoad::test_missing_file");
        assert_eq!(t.name, "TestLoad > test_missing_file");
        assert_eq!(t.error_type.as_deref(), Some("FileNotFoundError"));
        // Raised in the code under test.
        assert_eq!(t.location, at("src/pkg/stats.py", 7, None));
        let t = get(&p, "tests/test_stats.py::test_uses_broken");
        assert_eq!(
            t.message.as_deref(),
            Some("failed on setup with \"RuntimeError: fixture exploded\"")
        );
        assert_eq!(t.error_type.as_deref(), Some("RuntimeError"));
    }
    // Only with junit_logging: the captured output, without pytest's section rules.
    let p = read("pytest_xunit1.xml");
    let t = get(&p, "tests/test_stats.py::test_median_even");
    assert_eq!(t.stdout.as_deref(), Some("computing the median"));
    assert_eq!(t.stderr.as_deref(), Some("to stderr"));
    assert_eq!(get(&p, "tests/test_stats.py::test_median_odd").stdout, None);
    assert_eq!(
        get(
            &read("pytest_xunit2.xml"),
            "tests/test_stats.py::test_median_even"
        )
        .stdout,
        None
    );
}

#[test]
fn junit_collection_errors_are_their_module() {
    let p = read("pytest_collect.xml");
    assert_eq!(p.totals, totals(0, 2, 0, 0));
    assert_eq!(ids(&p), ["tests/test_imp.py", "tests/test_syn.py"]);
    let t = get(&p, "tests/test_imp.py");
    // Not pytest's `collection failure`: the error itself.
    assert_eq!(
        t.message.as_deref(),
        Some("ModuleNotFoundError: No module named 'nosuchmod'")
    );
    assert_eq!(t.error_type.as_deref(), Some("ModuleNotFoundError"));
    assert_eq!(t.location, at("tests/test_imp.py", 1, None));
    let t = get(&p, "tests/test_syn.py");
    assert_eq!(t.error_type.as_deref(), Some("SyntaxError"));
    assert!(t
        .message
        .as_deref()
        .unwrap_or("")
        .ends_with("SyntaxError: invalid syntax"));
    assert_eq!(t.location, at("tests/test_syn.py", 1, None));
}

#[test]
fn junit_from_other_tools_and_node_ids_without_files() {
    let xml = r#"<?xml version="1.0"?>
<testsuite name="calc" tests="3" failures="1">
  <testcase classname="com.acme.CalcTest" name="adds" time="0.002"/>
  <testcase classname="com.acme.CalcTest" name="divides" time="0.010">
    <failure message="expected 2 but was 3" type="java.lang.AssertionError"><![CDATA[java.lang.AssertionError: expected 2 but was 3
	at com.acme.CalcTest.divides(CalcTest.java:14)]]></failure>
    <system-out>dividing</system-out>
  </testcase>
  <testcase classname="com.acme.CalcTest" name="slow"><skipped/></testcase>
</testsuite>"#;
    let p = parse_report(ReportFormat::JunitXml, xml, Path::new("/p")).expect("junit");
    assert_eq!(p.framework, "junit");
    assert_eq!(p.totals, totals(1, 1, 1, 0));
    let t = get(&p, "com.acme.CalcTest::divides");
    assert_eq!(t.error_type.as_deref(), Some("java.lang.AssertionError"));
    assert_eq!(t.message.as_deref(), Some("expected 2 but was 3"));
    assert_eq!(t.stdout.as_deref(), Some("dividing"));
    assert_eq!(t.duration_ms, Some(10.0));

    // xunit2 gives no file: the module is the classname up to the first class.
    let cwd = Path::new("/nonexistent-project");
    assert_eq!(
        python_node_id("tests.unit.test_a.TestX.TestInner", "test_y[2]", None, cwd),
        (
            "tests/unit/test_a.py::TestX::TestInner::test_y[2]".into(),
            "TestX > TestInner > test_y[2]".into(),
            Some("tests/unit/test_a.py".into())
        )
    );
    assert_eq!(
        python_node_id("test_top", "test_y", None, cwd).0,
        "test_top.py::test_y"
    );
}

#[test]
fn libtest_sums_every_binary_and_the_doctests() {
    let p = read("libtest.txt");
    assert_eq!((p.framework, p.format), ("cargo", "libtest-json"));
    // The suites' own counts: lib 2/3/1, tests/it.rs 2/1/0, doctests 1/1/0.
    assert_eq!(p.totals, totals(5, 5, 1, 0));
    assert_eq!(
        statuses(&p),
        [
            ("src/lib.rs::tests::ignored_one", CaseStatus::Skip),
            ("src/lib.rs::tests::empty_panics", CaseStatus::Pass),
            ("src/lib.rs::tests::median_even", CaseStatus::Fail),
            ("src/lib.rs::tests::median_odd", CaseStatus::Pass),
            ("src/lib.rs::tests::nested::deep", CaseStatus::Fail),
            ("src/lib.rs::tests::port_parses", CaseStatus::Fail),
            ("tests/it.rs::integration_ok", CaseStatus::Pass),
            ("tests/it.rs::integration_fails", CaseStatus::Fail),
            ("tests/it.rs::slow_one", CaseStatus::Pass),
            ("src/lib.rs - median (line 5)", CaseStatus::Pass),
            ("src/lib.rs - median (line 9)", CaseStatus::Fail),
        ]
    );
    let t = get(&p, "src/lib.rs::tests::median_even");
    assert_eq!(t.name, "tests::median_even");
    assert_eq!(t.file.as_deref(), Some("src/lib.rs"));
    assert_eq!(t.error_type.as_deref(), Some("panic"));
    // Worded as the text parser words it, so a run read either way has the same message.
    assert_eq!(
        t.message.as_deref(),
        Some("panicked at src/lib.rs:36:9:\nassertion `left == right` failed: median of an even list\n  left: 3\n right: 2")
    );
    assert_eq!(t.stdout.as_deref(), Some("computing the median"));
    assert_eq!(t.location, at("src/lib.rs", 36, Some(9)));
    assert!(t
        .stack
        .as_deref()
        .unwrap_or("")
        .starts_with("stack backtrace:"));
    assert!(t.duration_ms.is_some_and(|d| d > 100.0));
    let t = get(&p, "tests/it.rs::integration_fails");
    assert_eq!(t.location, at("src/lib.rs", 17, Some(6)));
    // A doctest panics in a generated file: its place is the block in the source.
    let t = get(&p, "src/lib.rs - median (line 9)");
    assert_eq!(t.file.as_deref(), Some("src/lib.rs"));
    assert_eq!(t.location, at("src/lib.rs", 9, None));
}

/// Found reading the parsers for the fuzz targets: each finished test was searched for among
/// every one still running, and a crash's output read again for each test it ended.
#[test]
fn a_crash_among_thousands_running_at_once_ends_each_of_them_in_start_order() {
    const N: usize = 20_000;
    let mut out = String::from(
        "     Running unittests src/lib.rs (target/debug/deps/m-1)\n{ \"type\": \"suite\", \"event\": \"started\", \"test_count\": 20000 }\n",
    );
    for i in 0..N {
        out += &format!("{{ \"type\": \"test\", \"event\": \"started\", \"name\": \"t{i}\" }}\n");
    }
    for i in (2..N).rev() {
        out += &format!("{{ \"type\": \"test\", \"name\": \"t{i}\", \"event\": \"ok\" }}\n");
    }
    out +=
        "thread 't1' (7) has overflowed its stack\nfatal runtime error: stack overflow, aborting\n";
    out += &"   at frame\n".repeat(10_000);
    out += "error: test failed, to rerun pass `--lib`\n";
    let p = parse_report(ReportFormat::LibtestJson, &out, Path::new("/p")).expect("parses");
    assert_eq!(p.totals, totals(N as u32 - 2, 2, 0, 0));
    let crashed: Vec<&TestCase> = p
        .tests
        .iter()
        .filter(|t| t.status == CaseStatus::Fail)
        .collect();
    assert_eq!(
        crashed.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(),
        ["src/lib.rs::t0", "src/lib.rs::t1"]
    );
    assert!(crashed
        .iter()
        .all(|t| t.error_type.as_deref() == Some("crash")
            && t.message
                .as_deref()
                .is_some_and(|m| m.contains("overflowed its stack"))));
}

#[test]
fn libtest_time_limits_are_timeouts() {
    let p = read("libtest_time.txt");
    assert_eq!(p.totals, totals(1, 1, 0, 1));
    let t = get(&p, "tests/it.rs::slow_one");
    assert_eq!(t.status, CaseStatus::Timeout);
    assert_eq!(t.message.as_deref(), Some("time limit exceeded"));
}

#[test]
fn libtest_crashed_binaries_fail_their_unfinished_tests() {
    let p = read("libtest_crash.txt");
    assert_eq!(p.totals, totals(1, 2, 0, 0));
    let t = get(&p, "src/lib.rs::tests::overflows");
    assert_eq!(t.status, CaseStatus::Fail);
    assert_eq!(t.error_type.as_deref(), Some("crash"));
    assert_eq!(
        t.message.as_deref(),
        Some("thread has overflowed its stack\nfatal runtime error: stack overflow, aborting")
    );
    let t = get(&p, "tests/alloc.rs::allocates_too_much");
    assert_eq!(
        t.message.as_deref(),
        Some("memory allocation of 4398046511104 bytes failed")
    );
    assert_eq!(t.location, at("tests/alloc.rs", 3, Some(22)));

    // nextest runs each test in its own process and reports the crash itself.
    let p = read("nextest_crash.txt");
    assert_eq!(p.totals, totals(1, 2, 0, 0));
    assert_eq!(
        get(&p, "crashy::crashy$tests::overflows").message,
        get(&read("libtest_crash.txt"), "src/lib.rs::tests::overflows").message
    );
}

#[test]
fn libtest_tests_left_running_at_the_end_timed_out() {
    let out = "     Running unittests src/lib.rs (target/debug/deps/x-1)\n\
        { \"type\": \"suite\", \"event\": \"started\", \"test_count\": 2 }\n\
        { \"type\": \"test\", \"event\": \"started\", \"name\": \"a\" }\n\
        { \"type\": \"test\", \"event\": \"started\", \"name\": \"hangs\" }\n\
        { \"type\": \"test\", \"name\": \"a\", \"event\": \"ok\", \"exec_time\": 0.1 }\n\
        [ralph-loop] killed after 300 s: the test command ran past its timeout\n";
    let p = parse_report(ReportFormat::LibtestJson, out, Path::new("/p")).expect("libtest");
    assert_eq!(p.totals, totals(1, 0, 0, 1));
    assert_eq!(get(&p, "src/lib.rs::hangs").status, CaseStatus::Timeout);
}

#[test]
fn nextest_names_are_kept_whole() {
    let p = read("nextest.txt");
    assert_eq!((p.framework, p.format), ("nextest", "libtest-json"));
    // nextest's summary: `8 tests run: 3 passed, 4 failed, 1 timed out, 1 skipped`.
    assert_eq!(p.totals, totals(3, 4, 1, 1));
    let t = get(&p, "stats::stats$tests::median_even");
    assert_eq!(t.name, "tests::median_even");
    assert_eq!(t.file, None);
    assert_eq!(t.location, at("src/lib.rs", 36, Some(9)));
    assert_eq!(get(&p, "stats::it$slow_one").status, CaseStatus::Timeout);
}

#[test]
fn unreadable_reports_say_why() {
    let cwd = Path::new("/p");
    let reason = |format, data: &str| match parse_report(format, data, cwd) {
        Ok(p) => panic!("read {} tests from a bad report", p.tests.len()),
        Err(e) => {
            assert_eq!(e.format, format.as_str());
            e.reason
        }
    };
    let has = |reason: String, needle: &str| {
        assert!(
            reason.contains(needle),
            "{reason:?} does not say {needle:?}"
        );
    };
    for format in [
        ReportFormat::JestJson,
        ReportFormat::VitestJson,
        ReportFormat::MochaJson,
        ReportFormat::JunitXml,
        ReportFormat::LibtestJson,
    ] {
        assert_eq!(reason(format, " \n"), "the report is empty");
    }
    // Cut at a character boundary near the middle, as a killed writer leaves a file.
    let half = |s: &'static str| {
        let mut at = s.len() / 2;
        while !s.is_char_boundary(at) {
            at += 1;
        }
        &s[..at]
    };
    let jest = sample("jest.json");
    has(reason(ReportFormat::JestJson, half(jest)), "truncated");
    has(
        reason(ReportFormat::JestJson, "{\"x\": 1}"),
        "not a jest-style JSON report",
    );
    has(
        reason(ReportFormat::MochaJson, jest),
        "not a mocha JSON report",
    );
    let mocha = sample("mocha.json");
    has(
        reason(ReportFormat::MochaJson, &mocha[..mocha.len() - 10]),
        "truncated",
    );
    let xml = sample("pytest_xunit1.xml");
    has(reason(ReportFormat::JunitXml, half(xml)), "truncated");
    has(
        reason(ReportFormat::JunitXml, "<html><body/></html>"),
        "not JUnit XML",
    );
    has(
        reason(ReportFormat::JunitXml, "plain text"),
        "not a JUnit report",
    );
    // A build that failed runs no test.
    for name in ["libtest_build.txt", "nextest_build.txt"] {
        has(
            reason(ReportFormat::LibtestJson, sample(name)),
            "did not run",
        );
    }
    // The runner cut the middle of a long output: events are missing.
    let libtest = sample("libtest.txt");
    let cut = format!(
        "{}\n... [123 bytes cut] ...\n{}",
        &libtest[..2000],
        &libtest[4000..]
    );
    has(reason(ReportFormat::LibtestJson, &cut), "cut in the middle");
    // Read as the wrong format.
    has(reason(ReportFormat::LibtestJson, jest), "no libtest JSON");
}

#[test]
fn duplicate_names_keep_every_test() {
    let report = r#"{"testResults":[{"name":"/p/a.test.js","status":"passed","message":"","assertionResults":[
        {"ancestorTitles":[],"title":"same","status":"passed","failureMessages":[]},
        {"ancestorTitles":[],"title":"same","status":"passed","failureMessages":[]}]}]}"#;
    let p = parse_report(ReportFormat::JestJson, report, Path::new("/p")).expect("jest");
    assert_eq!(ids(&p), ["a.test.js::same", "a.test.js::same #2"]);
    assert_eq!(p.totals, totals(2, 0, 0, 0));
}

// ---------------------------------------------------------------------------------------------
// The schema: generated from the types, and every sample read validates against it.

fn schema_path() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/test-results.schema.json")
}

fn schema_text() -> String {
    let schema = schemars::schema_for!(TestRun);
    let mut text = serde_json::to_string_pretty(&schema).expect("schema serialises");
    text.push('\n');
    text
}

/// `docs/test-results.schema.json` is the types' schema. After changing the types, regenerate it
/// with `UPDATE_SCHEMA=1 cargo test -p ralph-loop --lib schema_file`.
#[test]
fn schema_file_is_generated_from_the_types() {
    let text = schema_text();
    if std::env::var_os("UPDATE_SCHEMA").is_some_and(|v| v == "1") {
        std::fs::write(schema_path(), &text).expect("write the schema");
        return;
    }
    let saved = std::fs::read_to_string(schema_path()).unwrap_or_default();
    assert!(
        saved == text,
        "docs/test-results.schema.json is out of date: run `UPDATE_SCHEMA=1 cargo test -p ralph-loop --lib schema_file`"
    );
}

/// A run as the runner saves it, from a parsed report.
fn run_of(p: Parsed, language: Language) -> TestRun {
    let mut tests = p.tests;
    for t in &mut tests {
        classify_case(t, Some(language));
    }
    let failed = p.totals.failed + p.totals.timed_out > 0;
    let status = if failed {
        RunStatus::Failed
    } else {
        RunStatus::Passed
    };
    TestRun {
        language: Some(language.as_str().into()),
        framework: Some(p.framework.into()),
        exit_code: Some(i32::from(failed)),
        duration_ms: 1234,
        source: ResultSource::Report,
        format: Some(p.format.into()),
        totals: p.totals,
        category: crate::runner::classify::dominant(&tests),
        tests,
        ..TestRun::new("the test command", status)
    }
}

#[test]
fn every_sample_read_validates_against_the_schema() {
    let schema: serde_json::Value =
        serde_json::from_str(&schema_text()).expect("the schema is JSON");
    let validator = jsonschema::validator_for(&schema).expect("a valid JSON Schema");
    for (name, ..) in SAMPLES {
        let language = SAMPLES
            .iter()
            .find(|s| s.0 == *name)
            .map_or(Language::Rust, |s| s.3);
        let run = run_of(read(name), language);
        let value = serde_json::to_value(&run).expect("serialises");
        let errors: Vec<String> = validator
            .iter_errors(&value)
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "{name}: {errors:?}");
        // And it reads back as the same run.
        let back: TestRun = serde_json::from_value(value).expect("deserialises");
        assert_eq!(back, run, "{name}");
    }
    // The schema is not vacuous: a wrong status is refused.
    let mut bad =
        serde_json::to_value(run_of(read("jest.json"), Language::JavaScript)).expect("json");
    bad["tests"][0]["status"] = "exploded".into();
    assert!(!validator.is_valid(&bad));
}

#[test]
fn categories_of_the_samples() {
    use ralph_actors::schema::test_run::Category::{Environment, Logic, Performance, Syntax};
    let categories =
        |name: &str, language| -> Vec<(String, Option<ralph_actors::schema::test_run::Category>)> {
            run_of(read(name), language)
                .failures()
                .map(|t| (t.id.clone(), t.category))
                .collect()
        };
    assert_eq!(
        categories("jest.json", Language::JavaScript),
        [
            (
                "src/math.test.js::math > median of even length".to_string(),
                Some(Logic)
            ),
            (
                "src/math.test.js::math > errors > throws a type error".to_string(),
                Some(Logic)
            ),
            (
                "src/math.test.js::math > slow".to_string(),
                Some(Performance)
            ),
            ("src/syn.test.js".to_string(), Some(Syntax)),
            ("src/imp.test.js".to_string(), Some(Environment)),
        ]
    );
    let vitest = categories("vitest.json", Language::TypeScript);
    assert_eq!(
        vitest[0],
        ("src/imp.test.ts".to_string(), Some(Environment))
    );
    assert_eq!(vitest[4], ("src/syn.test.ts".to_string(), Some(Syntax)));
    assert_eq!(
        categories("pytest_collect.xml", Language::Python),
        [
            ("tests/test_imp.py".to_string(), Some(Environment)),
            ("tests/test_syn.py".to_string(), Some(Syntax)),
        ]
    );
    let mocha = categories("mocha_hook.json", Language::JavaScript);
    assert_eq!(mocha[0].1, Some(Environment));
    for (id, category) in categories("libtest_crash.txt", Language::Rust) {
        assert_eq!(category, Some(Performance), "{id}");
    }
    let run = run_of(read("pytest_xunit1.xml"), Language::Python);
    assert_eq!(run.category, Some(Logic));
}
