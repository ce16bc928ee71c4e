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
