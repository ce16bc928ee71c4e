//! Temporary projects and the plans detected in them, for the detection tests.

use std::fs;
use std::path::{Path, PathBuf};

use crate::runner::detect::{detect_plans_with, Probe};
use crate::runner::plan::{Framework, ReportSpec, TestPlan, TestingOptions};

/// A temporary project: `files` are created (with parents), a trailing `/` makes a directory.
pub(crate) fn project(files: &[&str]) -> tempfile::TempDir {
    let tmp = match tempfile::tempdir() {
        Ok(t) => t,
        Err(e) => panic!("tempdir: {e}"),
    };
    for f in files {
        let path = tmp.path().join(f);
        if f.ends_with('/') {
            fs::create_dir_all(&path).ok();
        } else {
            if let Some(p) = path.parent() {
                fs::create_dir_all(p).ok();
            }
            fs::write(&path, "").ok();
        }
    }
    tmp
}

pub(crate) fn write(dir: &Path, file: &str, text: &str) {
    fs::write(dir.join(file), text).ok();
}

pub(crate) fn real(p: &Path) -> PathBuf {
    p.canonicalize().unwrap_or_else(|_| p.to_path_buf())
}

/// The frameworks and directories of the plans for `target`, pytest importable and nextest
/// not installed.
pub(crate) fn found(target: &Path) -> Vec<(Framework, PathBuf)> {
    let opts = options(&target.with_file_name("reports"));
    detect_plans_with(target, &opts, &Probe::fixed(true, false))
        .map(|plans| plans.into_iter().map(|p| (p.framework, p.cwd)).collect())
        .unwrap_or_default()
}

pub(crate) fn options(report_dir: &Path) -> TestingOptions {
    TestingOptions {
        command: None,
        command_cwd: None,
        language: None,
        limits: crate::runner::plan::Limits {
            timeout: std::time::Duration::from_secs(60),
            max_output_bytes: 1 << 20,
            memory_limit_mb: None,
            sandbox: crate::runner::plan::SandboxKind::Process,
        },
        coverage: false,
        lint: false,
        lint_command: None,
        report_dir: report_dir.to_path_buf(),
        coverage_of: None,
    }
}

/// The plans for `target` under `tmp`, with pytest and nextest as said.
pub(crate) fn plans_with(
    tmp: &Path,
    target: &str,
    opts: &TestingOptions,
    probe: &Probe,
) -> Vec<TestPlan> {
    match detect_plans_with(&tmp.join(target), opts, probe) {
        Ok(p) => p,
        Err(e) => panic!("{target}: {e}"),
    }
}

pub(crate) fn plans(tmp: &Path, target: &str) -> Vec<TestPlan> {
    let opts = options(&tmp.join(".ralph/reports"));
    plans_with(tmp, target, &opts, &Probe::fixed(true, false))
}

pub(crate) fn package(tmp: &Path, json: &str) {
    write(tmp, "package.json", json);
}

/// The report file a plan's command writes, checked to be named in its command (or its
/// NODE_OPTIONS) and to lie in the report directory.
pub(crate) fn report_path(plan: &TestPlan, report_dir: &Path) -> PathBuf {
    let Some(ReportSpec {
        file: Some(file), ..
    }) = &plan.report
    else {
        panic!("no report file: {plan:?}");
    };
    assert!(
        file.starts_with(report_dir),
        "{file:?} not in {report_dir:?}"
    );
    let shown = file.display().to_string();
    assert!(
        plan.command.contains(&shown) || plan.env.iter().any(|(_, v)| v.contains(&shown)),
        "{plan:?}"
    );
    file.clone()
}

/// The plan the coverage tests start from.
pub(crate) fn plan(framework: Framework, command: &str, cwd: &Path) -> TestPlan {
    TestPlan {
        language: None,
        framework,
        command: command.to_string(),
        cwd: cwd.to_path_buf(),
        report: None,
        env: Vec::new(),
    }
}
