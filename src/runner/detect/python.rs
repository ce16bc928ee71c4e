//! Python's plan: pytest when the project names it or it is importable, writing JUnit XML;
//! unittest otherwise, read as text.

use std::path::{Path, PathBuf};

use super::command::{report_file, shell_quote};
use crate::runner::language::Language;
use crate::runner::plan::{Framework, ReportSpec, TestPlan};
use crate::runner::report::ReportFormat;

/// `-rfE` asks for the short summary of failures and errors (pytest's default, restated in case
/// the project's `addopts` turned it off): the text parser reads it when the report is missing.
const PYTEST_COMMAND: &str = "python3 -m pytest -rfE";

/// `-rfE`: the short summary of failures and errors, read when the report is missing. `xunit1`
/// puts each test's file and line in the XML; `junit_logging=all` its captured output.
const PYTEST_REPORT_FLAGS: &str = "-o junit_family=xunit1 -o junit_logging=all";

/// pytest is named in the project's configuration: its own ini file or section, a `conftest.py`,
/// or a requirement.
pub(super) fn pytest_configured(dir: &Path, manifests: &[PathBuf]) -> bool {
    if dir.join("pytest.ini").is_file() || dir.join("conftest.py").is_file() {
        return true;
    }
    let extra = [
        "requirements-dev.txt",
        "requirements-test.txt",
        "dev-requirements.txt",
    ];
    manifests
        .iter()
        .cloned()
        .chain(extra.iter().map(|f| dir.join(f)))
        .filter_map(|m| std::fs::read_to_string(m).ok())
        .any(|text| text.contains("pytest"))
}

pub(super) fn python_plan(framework: Framework, cwd: &Path, report_dir: &Path) -> TestPlan {
    let (command, report) = if framework == Framework::Pytest {
        let file = report_file(report_dir, framework, "xml");
        let command = format!(
            "{PYTEST_COMMAND} --junitxml={} {PYTEST_REPORT_FLAGS}",
            shell_quote(&file)
        );
        (
            command,
            Some(ReportSpec {
                format: ReportFormat::JunitXml,
                file: Some(file),
            }),
        )
    } else {
        // unittest has no report format of its own: its text is read.
        ("python3 -m unittest".to_string(), None)
    };
    TestPlan {
        language: Some(Language::Python),
        framework,
        command,
        cwd: cwd.to_path_buf(),
        report,
        env: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::detect::Probe;
    use crate::runner::plan::TestingOptions;
    use crate::testkit::plans::{options, plans_with, project, real, report_path, write};

    /// The plan for `pkg/calc.py` in `root`, where pytest is importable or not.
    fn calc_plan(root: &Path, opts: &TestingOptions, importable: bool) -> TestPlan {
        plans_with(root, "pkg/calc.py", opts, &Probe::fixed(importable, false)).remove(0)
    }

    #[test]
    fn python_gets_pytest_with_junit_xml_when_configured_or_installed() {
        let tmp = project(&[".git/", "pkg/calc.py", "requirements.txt"]);
        let opts = options(&tmp.path().join(".ralph/reports"));
        let plan = &calc_plan(tmp.path(), &opts, true);
        assert_eq!(plan.framework, Framework::Pytest);
        let file = report_path(plan, &real(tmp.path()).join(".ralph/reports"));
        assert_eq!(
            plan.command,
            format!(
                "python3 -m pytest -rfE --junitxml={} -o junit_family=xunit1 -o junit_logging=all",
                file.display()
            )
        );
        assert_eq!(file.extension().and_then(|e| e.to_str()), Some("xml"));

        // Not importable and not configured: unittest, read as text.
        let plan = &calc_plan(tmp.path(), &opts, false);
        assert_eq!(
            (plan.framework, plan.command.as_str(), &plan.report),
            (Framework::Unittest, "python3 -m unittest", &None)
        );
        // Configured, though not importable here: pytest, which says what is missing.
        for (file, text) in [
            ("requirements.txt", "pytest>=8\n"),
            (
                "pyproject.toml",
                "[tool.pytest.ini_options]\naddopts = \"-q\"\n",
            ),
            ("conftest.py", ""),
        ] {
            let tmp = project(&[".git/", "pkg/calc.py", "setup.py"]);
            write(tmp.path(), file, text);
            let plan = &calc_plan(tmp.path(), &opts, false);
            assert_eq!(plan.framework, Framework::Pytest, "{file}");
        }
    }
}
