//! The recorded outputs the parsers' tests read (`src/runner/testdata/`), and what their tests
//! look at in [`super::parse`]'s result.

use std::path::Path;

use ralph_actors::schema::test_run::Totals;

use super::{parse, strip_ansi, Parsed};

pub(crate) fn sample(name: &str) -> String {
    let text = match name {
        "pytest" => include_str!("../testdata/pytest.txt"),
        "pytest_collect" => include_str!("../testdata/pytest_collect.txt"),
        "pytest_pass" => include_str!("../testdata/pytest_pass.txt"),
        "pytest_none" => include_str!("../testdata/pytest_none.txt"),
        "pytest_q" => include_str!("../testdata/pytest_q.txt"),
        "cargo" => include_str!("../testdata/cargo.txt"),
        "cargo_bt" => include_str!("../testdata/cargo_bt.txt"),
        "cargo_build" => include_str!("../testdata/cargo_build.txt"),
        "jest" => include_str!("../testdata/jest.txt"),
        "jest_bad" => include_str!("../testdata/jest_bad.txt"),
        "vitest" => include_str!("../testdata/vitest.txt"),
        "node_tap" => include_str!("../testdata/node_tap.txt"),
        "node_tap2" => include_str!("../testdata/node_tap2.txt"),
        "node_spec" => include_str!("../testdata/node_spec.txt"),
        "node_spec2" => include_str!("../testdata/node_spec2.txt"),
        "mocha" => include_str!("../testdata/mocha.txt"),
        "mocha_pass" => include_str!("../testdata/mocha_pass.txt"),
        "mocha_syn" => include_str!("../testdata/mocha_syn.txt"),
        "unittest" => include_str!("../testdata/unittest.txt"),
        "unittest_v" => include_str!("../testdata/unittest_v.txt"),
        "unittest_ok" => include_str!("../testdata/unittest_ok.txt"),
        _ => "",
    };
    strip_ansi(text).into_owned()
}

pub(crate) fn parsed(name: &str, cwd: &str) -> Parsed {
    match parse(&sample(name), Path::new(cwd)) {
        Some(p) => p,
        None => panic!("{name} not recognised"),
    }
}

pub(crate) fn totals(passed: u32, failed: u32, skipped: u32) -> Totals {
    Totals {
        passed,
        failed,
        skipped,
        ..Totals::default()
    }
}

pub(crate) fn ids(p: &Parsed) -> Vec<&str> {
    p.tests.iter().map(|t| t.id.as_str()).collect()
}

pub(crate) fn message<'a>(p: &'a Parsed, id: &str) -> &'a str {
    p.tests
        .iter()
        .find(|t| t.id == id)
        .and_then(|t| t.message.as_deref())
        .unwrap_or("<none>")
}

use Says::*;

/// How a failure's message must read, for [`assert_failures`].
#[derive(Debug)]
pub(crate) enum Says {
    /// Exactly this.
    Is(&'static str),
    /// This, somewhere in it.
    Has(&'static str),
    /// Beginning with this.
    Begins(&'static str),
    /// Ending with this.
    Ends(&'static str),
    /// Whatever it says: the test looks at other things.
    Any,
}

/// Asserts that the failures parsed from sample `name` are these, in this order, each message
/// reading as its [`Says`] tells.
pub(crate) fn assert_failures(name: &str, p: &Parsed, expected: &[(&str, Says)]) {
    let want: Vec<&str> = expected.iter().map(|(id, _)| *id).collect();
    assert_eq!(ids(p), want, "{name}");
    for (id, says) in expected {
        let m = message(p, id);
        let ok = match says {
            Says::Is(text) => m == *text,
            Says::Has(piece) => m.contains(piece),
            Says::Begins(start) => m.starts_with(start),
            Says::Ends(end) => m.ends_with(end),
            Says::Any => true,
        };
        assert!(ok, "{name}: {id}: {m:?} is not {says:?}");
    }
}

/// What a sample parses to: its framework (where a test checks it), its totals (passed,
/// failed, skipped) and its failures, for [`as_expected`].
pub(crate) struct Expected {
    name: &'static str,
    /// The directory the run was in, which paths are made relative to.
    cwd: &'static str,
    framework: Option<&'static str>,
    totals: [u32; 3],
    failures: &'static [(&'static str, Says)],
}

/// The samples every parser's first test checks, one table so that each reads the same way.
const EXPECTED: &[Expected] = &[
    // Two binaries: the lib's unit tests and tests/it.rs.
    Expected {
        name: "cargo",
        cwd: "/tmp/ct",
        framework: Some("cargo"),
        totals: [2, 2, 1],
        failures: &[
        ("src/lib.rs::tests::bad", Is("panicked at src/lib.rs:6:24:\nassertion `left == right` failed: math is broken\n  left: 2\n right: 3")),
        ("src/lib.rs::tests::panics", Is("panicked at src/lib.rs:8:27:\nboom")),
        ],
    },
    // Blocks joined by ` > `, as in jest's JSON report.
    Expected {
        name: "jest",
        cwd: "/tmp/jsamp",
        framework: Some("jest"),
        totals: [2, 2, 1],
        failures: &[
        ("src/sum.test.js::Suite > name", Is("expect(received).toBe(expected) // Object.is equality\n\nExpected: 3\nReceived: 2")),
        ("src/sum.test.js::Suite > inner > deep fails", Is("deep boom")),
        ],
    },
    // As in jest's JSON report: a file that did not run is its own id, and a parse
    // error's message is the error after jest's long explanation.
    Expected {
        name: "jest_bad",
        cwd: "/tmp/jsamp",
        framework: None,
        totals: [0, 2, 0],
        failures: &[
        (
            "bad/imp.test.js",
            Is("Cannot find module 'nosuch' from 'bad/imp.test.js'"),
        ),
        (
            "bad/syn.test.js",
            Is("SyntaxError: /tmp/jsamp/bad/syn.test.js: Unexpected token (1:26)"),
        ),
        ],
    },
    // 2 failed tests plus the file that did not load.
    Expected {
        name: "vitest",
        cwd: "/tmp/jsamp",
        framework: Some("vitest"),
        totals: [2, 3, 1],
        failures: &[
        ("vt/syn.test.ts", Has("[PARSE_ERROR]")),
        ("vt/a.test.ts::suite > name", Is("AssertionError: expected 2 to be 3 // Object.is equality\n\n- Expected\n+ Received\n\n- 3\n+ 2")),
        ("vt/a.test.ts::suite > inner > deep", Is("Error: deep boom")),
        ],
    },
    Expected {
        name: "mocha",
        cwd: "/",
        framework: Some("mocha"),
        totals: [1, 2, 1],
        failures: &[
        ("suite > name", Is("AssertionError [ERR_ASSERTION]: Expected values to be strictly equal:\n2 !== 3\n+ expected - actual\n-2\n+3")),
        ("suite > inner > deep", Is("Error: deep boom")),
        ],
    },
    Expected {
        name: "node_tap",
        cwd: "/tmp/samp/node",
        framework: Some("node"),
        totals: [2, 2, 2],
        failures: &[
        (
            "test/m.test.js::subtracts wrong",
            Is("Expected values to be strictly equal:\n\n2 !== 1"),
        ),
        (
            "test/m.test.js::math suite > nested fail",
            Is("boom \"quoted\"\nsecond line"),
        ),
        ],
    },
    Expected {
        name: "node_spec",
        cwd: "/",
        framework: Some("node"),
        totals: [2, 2, 2],
        failures: &[
        (
            "test/m.test.js::subtracts wrong",
            Begins("AssertionError [ERR_ASSERTION]: Expected values to be strictly equal:"),
        ),
        ("test/m.test.js::nested fail", Any),
        ],
    },
    Expected {
        name: "pytest",
        cwd: "/tmp/samp/py",
        framework: Some("pytest"),
        totals: [3, 4, 1],
        failures: &[
        (
            "tests/test_m.py::test_bad",
            Is("AssertionError: math is broken\nassert (1 + 1) == 3"),
        ),
        (
            "tests/test_m.py::TestCls::test_in_class",
            Has("At index 1 diff"),
        ),
        ("tests/test_m.py::test_param[2]", Any),
        (
            "tests/test_m.py::test_err",
            Is("RuntimeError: fixture exploded"),
        ),
        ],
    },
    Expected {
        name: "pytest_collect",
        cwd: "/",
        framework: None,
        totals: [0, 2, 0],
        failures: &[
        (
            "tests/test_imp.py",
            Is("ModuleNotFoundError: No module named 'nosuchmod'"),
        ),
        ("tests/test_syn.py", Has("SyntaxError: invalid syntax")),
        ],
    },
];

/// The sample `name` parsed, once checked against its [`EXPECTED`] entry: framework, totals
/// and failures.
pub(crate) fn as_expected(name: &str) -> Parsed {
    let Some(e) = EXPECTED.iter().find(|e| e.name == name) else {
        panic!("no expectations for sample {name}");
    };
    let p = parsed(name, e.cwd);
    if let Some(framework) = e.framework {
        assert_eq!(p.framework, framework, "{name}");
    }
    let [passed, failed, skipped] = e.totals;
    assert_eq!(p.totals, totals(passed, failed, skipped), "{name}");
    assert_failures(name, &p, e.failures);
    p
}
