//! Reading a 10,000-test report of each format with `parse_report`: jest JSON, vitest JSON,
//! mocha JSON, pytest's JUnit XML and libtest's JSON lines (mixed into cargo's output, as the
//! runner captures it). 2 % of the tests fail, each with a stack of the length the real tools
//! print; the shapes follow the reports recorded in `src/runner/report/testdata/`. The target is
//! under 100 ms per report. Run with `cargo bench --bench parsers`; see `docs/performance.md`.

// A benchmark that cannot set up has nothing to measure: panicking with a message is right here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::path::Path;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ralph_loop::runner::report::{parse_report, ReportFormat};
use serde_json::{json, Value};

const TESTS: usize = 10_000;
/// One test in fifty fails.
const FAIL_EVERY: usize = 50;
const PER_FILE: usize = 25;
const CWD: &str = "/home/runner/work/project";

fn failing(i: usize) -> bool {
    i % FAIL_EVERY == 7
}

fn skipped(i: usize) -> bool {
    i % 97 == 3
}

/// A V8 stack as jest and vitest print it: the test's frame, then the runner's.
fn js_stack(i: usize, file: &str) -> String {
    let mut s = format!(
        "Error: expect(received).toBe(expected) // Object.is equality\n\nExpected: {i}.5\nReceived: {i}\n    at Object.toBe ({CWD}/{file}:{}:34)\n",
        10 + i % 40
    );
    for (n, f) in [
        "Promise.finally.completed",
        "new Promise",
        "callAsyncCircusFn",
        "_callCircusTest",
        "_runTestInContext",
        "runTestWithContext",
        "_runTestsForDescribeBlockOnce",
        "_runTestsForDescribeBlock",
        "_runTestsForDescribeBlockOnce",
        "_runTestsForDescribeBlock",
        "run",
        "runAndTransformResultsToJestFormat",
        "jestAdapter",
        "runTestInternal",
        "runTest",
    ]
    .iter()
    .enumerate()
    {
        s.push_str(&format!(
            "    at {f} ({CWD}/node_modules/jest-circus/build/jestAdapterInit.js:{}:{})\n",
            1000 + n * 37,
            3 + n
        ));
    }
    s
}

fn js_file(i: usize) -> String {
    format!("src/module{:03}/feature{}.test.ts", i / 500, i / PER_FILE)
}

/// jest `--json` (and vitest's, which copies its shape, with float durations).
fn jest_report(vitest: bool) -> String {
    let mut files: Vec<Value> = Vec::new();
    for start in (0..TESTS).step_by(PER_FILE) {
        let file = js_file(start);
        let mut results = Vec::new();
        let mut any_failed = false;
        for i in start..start + PER_FILE {
            let status = if failing(i) {
                any_failed = true;
                "failed"
            } else if skipped(i) {
                "pending"
            } else {
                "passed"
            };
            let messages: Vec<String> = if failing(i) {
                vec![js_stack(i, &file)]
            } else {
                Vec::new()
            };
            let details: Vec<Value> = messages
                .iter()
                .map(|_| json!({"matcherResult": {"actual": i, "expected": i as f64 + 0.5, "name": "toBe", "pass": false}}))
                .collect();
            let duration = if vitest {
                json!(1.0 + (i % 13) as f64 * 0.731)
            } else {
                json!(1 + i % 13)
            };
            results.push(json!({
                "ancestorTitles": [format!("module {}", i / 500), format!("feature {}", i / PER_FILE)],
                "duration": duration,
                "failing": false,
                "failureDetails": details,
                "failureMessages": messages,
                "fullName": format!("module {} feature {} handles case {i}", i / 500, i / PER_FILE),
                "invocations": 1,
                "location": null,
                "numPassingAsserts": 1,
                "retryReasons": [],
                "status": status,
                "title": format!("handles case {i}"),
            }));
        }
        files.push(json!({
            "assertionResults": results,
            "endTime": 1_795_339_278_837u64,
            "message": if any_failed { "  ● a summary of the failures above" } else { "" },
            "name": format!("{CWD}/{file}"),
            "startTime": 1_795_339_278_319u64,
            "status": if any_failed { "failed" } else { "passed" },
            "summary": "",
        }));
    }
    json!({
        "numFailedTestSuites": 0, "numFailedTests": TESTS / FAIL_EVERY, "numPassedTests": 0,
        "numTotalTests": TESTS, "success": false, "startTime": 1_795_339_278_138u64,
        "testResults": files,
    })
    .to_string()
}

/// mocha's JSON reporter: every test in `tests`, and again in `passes`, `failures` or `pending`.
fn mocha_report() -> String {
    let (mut tests, mut passes, mut failures, mut pending) = (vec![], vec![], vec![], vec![]);
    for i in 0..TESTS {
        let file = format!("{CWD}/test/feature{}.test.js", i / PER_FILE);
        let suite = format!("module {} feature {}", i / 500, i / PER_FILE);
        let title = format!("handles case {i}");
        let err = if failing(i) {
            json!({
                "stack": format!("AssertionError [ERR_ASSERTION]: Expected values to be strictly equal:\n\n{i} !== {i}.5\n\n    at Context.<anonymous> (test/feature{}.test.js:{}:12)\n    at process.processImmediate (node:internal/timers:483:21)", i / PER_FILE, 10 + i % 40),
                "message": format!("Expected values to be strictly equal:\n\n{i} !== {i}.5\n"),
                "generatedMessage": true, "name": "AssertionError", "code": "ERR_ASSERTION",
                "actual": i.to_string(), "expected": format!("{i}.5"), "operator": "strictEqual",
            })
        } else {
            json!({})
        };
        let t = json!({
            "title": title, "fullTitle": format!("{suite} {title}"), "file": file,
            "duration": i % 13, "currentRetry": 0, "speed": "fast", "err": err,
        });
        if failing(i) {
            failures.push(t.clone());
        } else if skipped(i) {
            pending.push(t.clone());
        } else {
            passes.push(t.clone());
        }
        tests.push(t);
    }
    json!({
        "stats": {"suites": TESTS / PER_FILE, "tests": TESTS, "passes": passes.len(), "pending": pending.len(), "failures": failures.len(), "duration": 5912},
        "tests": tests, "pending": pending, "failures": failures, "passes": passes,
    })
    .to_string()
}

/// pytest's JUnit XML (xunit1, with captured output on the failures).
fn junit_report() -> String {
    let failures = (0..TESTS).filter(|&i| failing(i)).count();
    let skips = (0..TESTS).filter(|&i| !failing(i) && skipped(i)).count();
    let mut xml = format!(
        r#"<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests"><testsuite name="pytest" errors="0" failures="{failures}" skipped="{skips}" tests="{TESTS}" time="41.113" timestamp="2026-11-22T09:22:10.126841+00:00" hostname="vm">"#,
    );
    for i in 0..TESTS {
        let module = format!("tests/pkg{}/test_feature{}", i / 500, i / PER_FILE);
        let classname = format!("{}.TestFeature", module.replace('/', "."));
        let head = format!(
            r#"<testcase classname="{classname}" name="test_case[{i}]" file="{module}.py" line="{}" time="0.00{}""#,
            10 + i % 40,
            i % 10
        );
        xml.push_str(&head);
        if failing(i) {
            xml.push_str(&format!(
                "><failure message=\"assert {i} == {i}.5&#10; +  where {i} = median([{i}, 3, 1, 2])\">self = &lt;test_feature.TestFeature object at 0x7fa76ab7e150&gt;\n\n    def test_case(self):\n&gt;       assert median([{i}, 3, 1, 2]) == {i}.5\nE       assert {i} == {i}.5\nE        +  where {i} = median([{i}, 3, 1, 2])\n\n{module}.py:{}: AssertionError</failure><system-out>--------------------------------- Captured Out ---------------------------------\ncomputing the median of case {i}\n</system-out></testcase>",
                12 + i % 40
            ));
        } else if skipped(i) {
            xml.push_str("><skipped type=\"pytest.skip\" message=\"not ready\">not ready</skipped></testcase>");
        } else {
            xml.push_str(" />");
        }
    }
    xml.push_str("</testsuite></testsuites>");
    xml
}

/// cargo test's output with libtest's JSON lines: 20 test binaries, each announced by cargo.
fn libtest_output() -> String {
    let mut out = String::from("   Compiling project v0.1.0 (/home/runner/work/project)\n    Finished `test` profile [unoptimized + debuginfo] target(s) in 12.06s\n");
    let per_binary = TESTS / 20;
    for b in 0..20 {
        out.push_str(&format!(
            "     Running tests/suite{b}.rs (target/debug/deps/suite{b}-5d0e5f02f0c6e9e1)\n"
        ));
        out.push_str(&format!(
            "{{ \"type\": \"suite\", \"event\": \"started\", \"test_count\": {per_binary} }}\n"
        ));
        let (mut passed, mut failed, mut ignored) = (0, 0, 0);
        for i in b * per_binary..(b + 1) * per_binary {
            let name = format!("feature{}::handles_case_{i}", i / PER_FILE);
            out.push_str(&format!(
                "{{ \"type\": \"test\", \"event\": \"started\", \"name\": \"{name}\" }}\n"
            ));
            if failing(i) {
                failed += 1;
                let mut stdout = format!("\\nthread '{name}' (23582) panicked at tests/suite{b}.rs:{}:9:\\nassertion `left == right` failed: case {i}\\n  left: {i}\\n right: {}\\nstack backtrace:\\n", 10 + i % 40, i + 1);
                for f in 0..8 {
                    stdout.push_str(&format!("   {f}: core::panicking::frame_{f}\\n             at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/core/src/panicking.rs:{}:5\\n", 80 + f));
                }
                out.push_str(&format!(
                    "{{ \"type\": \"test\", \"name\": \"{name}\", \"event\": \"failed\", \"exec_time\": 0.107044219, \"stdout\": \"{stdout}\" }}\n"
                ));
            } else if skipped(i) {
                ignored += 1;
                out.push_str(&format!(
                    "{{ \"type\": \"test\", \"name\": \"{name}\", \"event\": \"ignored\", \"message\": \"slow\" }}\n"
                ));
            } else {
                passed += 1;
                out.push_str(&format!(
                    "{{ \"type\": \"test\", \"name\": \"{name}\", \"event\": \"ok\", \"exec_time\": 0.000005621 }}\n"
                ));
            }
        }
        out.push_str(&format!(
            "{{ \"type\": \"suite\", \"event\": \"failed\", \"passed\": {passed}, \"failed\": {failed}, \"ignored\": {ignored}, \"measured\": 0, \"filtered_out\": 0, \"exec_time\": 1.2 }}\n"
        ));
        out.push_str(&format!(
            "error: test failed, to rerun pass `--test suite{b}`\n"
        ));
    }
    out
}

fn bench_reports(c: &mut Criterion) {
    let cwd = Path::new(CWD);
    let reports = [
        ("jest_json", ReportFormat::JestJson, jest_report(false)),
        ("vitest_json", ReportFormat::VitestJson, jest_report(true)),
        ("mocha_json", ReportFormat::MochaJson, mocha_report()),
        ("junit_xml", ReportFormat::JunitXml, junit_report()),
        ("libtest_json", ReportFormat::LibtestJson, libtest_output()),
    ];
    let mut g = c.benchmark_group("parse_report");
    g.sample_size(20);
    for (name, format, data) in &reports {
        let parsed = parse_report(*format, data, cwd).expect("the generated report reads");
        let t = parsed.totals;
        assert_eq!(t.total() as usize, TESTS, "{name}");
        assert_eq!(t.failed as usize, TESTS / FAIL_EVERY, "{name}");
        assert!(
            parsed.tests.iter().filter(|t| t.location.is_some()).count() == TESTS / FAIL_EVERY,
            "{name}: every failure located"
        );
        println!(
            "parse_report/{name}: {:.2} MB, {} tests, {} failed, {} skipped",
            data.len() as f64 / 1e6,
            t.total(),
            t.failed,
            t.skipped
        );
        g.throughput(Throughput::Bytes(data.len() as u64));
        g.bench_function(*name, |b| {
            b.iter(|| parse_report(*format, black_box(data), cwd))
        });
        // The baseline, in the same run: only reading the same bytes into a generic tree (JSON
        // value, XML events), with nothing mapped into the schema.
        g.bench_function(format!("{name}_bare_parse"), |b| {
            b.iter(|| bare_parse(*format, black_box(data)))
        });
    }
    g.finish();
}

/// Reads `data` the cheapest generic way for its format; returns a count so nothing is optimised
/// away.
fn bare_parse(format: ReportFormat, data: &str) -> usize {
    match format {
        ReportFormat::JunitXml => {
            let mut reader = quick_xml::Reader::from_str(data);
            let mut events = 0;
            loop {
                match reader.read_event() {
                    Ok(quick_xml::events::Event::Eof) | Err(_) => break events,
                    Ok(_) => events += 1,
                }
            }
        }
        ReportFormat::LibtestJson => data
            .lines()
            .filter(|l| l.starts_with('{'))
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .count(),
        _ => serde_json::from_str::<serde_json::Value>(data)
            .map(|v| v.as_object().map_or(0, |o| o.len()))
            .unwrap_or(0),
    }
}

criterion_group!(benches, bench_reports);
criterion_main!(benches);
