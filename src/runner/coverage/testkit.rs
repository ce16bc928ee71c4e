//! The plan the coverage tests start from.

use std::path::Path;

use crate::runner::plan::{Framework, TestPlan};

pub(super) fn plan(framework: Framework, command: &str, cwd: &Path) -> TestPlan {
    TestPlan {
        language: None,
        framework,
        command: command.to_string(),
        cwd: cwd.to_path_buf(),
        report: None,
        env: Vec::new(),
    }
}
