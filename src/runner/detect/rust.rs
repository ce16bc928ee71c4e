//! Rust's plan: cargo-nextest when installed, else `cargo test`, each printing libtest's JSON
//! lines.

use std::path::Path;

use crate::runner::language::Language;
use crate::runner::plan::{Framework, ReportSpec, TestPlan};
use crate::runner::report::ReportFormat;

/// `--no-tests=warn`: a crate without tests passes, as it does under `cargo test`.
const NEXTEST_COMMAND: &str =
    "cargo nextest run --no-fail-fast --no-tests=warn --message-format libtest-json";
/// libtest's JSON lines need `-Z unstable-options`, which stable toolchains accept at run time
/// with `RUSTC_BOOTSTRAP=1` (the test binaries are not rebuilt for it). `2>&1`: the lines say
/// which binary they come from only by following cargo's `Running <source>` line, which is on
/// stderr; through two pipes the two streams can arrive out of order, through one they cannot.
const CARGO_JSON_COMMAND: &str =
    "cargo test --no-fail-fast -- -Z unstable-options --format json --report-time 2>&1";

pub(super) fn rust_plan(framework: Framework, cwd: &Path) -> TestPlan {
    let (command, env) = if framework == Framework::Nextest {
        (NEXTEST_COMMAND, ("NEXTEST_EXPERIMENTAL_LIBTEST_JSON", "1"))
    } else {
        (CARGO_JSON_COMMAND, ("RUSTC_BOOTSTRAP", "1"))
    };
    TestPlan {
        language: Some(Language::Rust),
        framework,
        command: command.to_string(),
        cwd: cwd.to_path_buf(),
        // Both print libtest's JSON lines on stdout, between cargo's own messages.
        report: Some(ReportSpec {
            format: ReportFormat::LibtestJson,
            file: None,
        }),
        env: vec![(env.0.to_string(), env.1.to_string())],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::detect::Probe;
    use crate::testkit::plans::{options, plans_with, project};

    #[test]
    fn rust_gets_nextest_when_installed_else_cargo_test_with_json() {
        let tmp = project(&[".git/", "Cargo.toml", "src/lib.rs"]);
        let opts = options(&tmp.path().join("r"));
        let plan = &plans_with(tmp.path(), "src/lib.rs", &opts, &Probe::fixed(true, true))[0];
        assert_eq!(plan.framework, Framework::Nextest);
        assert_eq!(
            plan.command,
            "cargo nextest run --no-fail-fast --no-tests=warn --message-format libtest-json"
        );
        assert_eq!(
            plan.env,
            [(
                "NEXTEST_EXPERIMENTAL_LIBTEST_JSON".to_string(),
                "1".to_string()
            )]
        );
        let plan = &plans_with(tmp.path(), "src/lib.rs", &opts, &Probe::fixed(true, false))[0];
        assert_eq!(plan.framework, Framework::Cargo);
        assert_eq!(
            plan.command,
            "cargo test --no-fail-fast -- -Z unstable-options --format json --report-time 2>&1"
        );
        assert_eq!(plan.env, [("RUSTC_BOOTSTRAP".to_string(), "1".to_string())]);
        // The JSON lines come on stdout: no file.
        assert_eq!(
            plan.report,
            Some(ReportSpec {
                format: ReportFormat::LibtestJson,
                file: None
            })
        );
        assert_eq!(plan.language, Some(Language::Rust));
    }
}
