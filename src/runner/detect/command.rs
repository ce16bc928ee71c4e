//! The pieces every stack's plan is built from: the plan of a command run as is and read as text
//! ([`custom_plan`]), and the report file of a plan's own, quoted for the shell.

use std::path::{Path, PathBuf};

use crate::runner::language::Language;
use crate::runner::plan::{Framework, TestPlan};

/// A command given by the user: run as is, read as text.
pub fn custom_plan(command: &str, cwd: PathBuf, language: Option<Language>) -> TestPlan {
    TestPlan {
        language,
        framework: Framework::Custom,
        command: command.to_string(),
        cwd,
        report: None,
        env: Vec::new(),
    }
}

/// A report file of its own for each plan (two plans, or two runners, never share one).
pub(super) fn report_file(report_dir: &Path, framework: Framework, ext: &str) -> PathBuf {
    let id = uuid::Uuid::new_v4().simple().to_string();
    report_dir.join(format!("{}-{}.{ext}", framework.as_str(), &id[..12]))
}

/// `path` as one `sh` word.
pub(super) fn shell_quote(path: &Path) -> String {
    let text = path.display().to_string();
    let plain = text
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-+=:@%,".contains(c));
    if plain && !text.is_empty() {
        text
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::detect::Probe;
    use crate::testkit::plans::{options, plans_with, project};

    #[test]
    fn report_paths_are_quoted_for_the_shell() {
        assert_eq!(shell_quote(Path::new("/a/b-c_1.json")), "/a/b-c_1.json");
        assert_eq!(shell_quote(Path::new("/my dir/r.json")), "'/my dir/r.json'");
        assert_eq!(shell_quote(Path::new("/it's/r.json")), r"'/it'\''s/r.json'");
        let tmp = project(&[".git/", "m.py", "setup.cfg"]);
        let opts = options(&tmp.path().join("my reports"));
        let plan = &plans_with(tmp.path(), "m.py", &opts, &Probe::fixed(true, true))[0];
        assert!(plan.command.contains("--junitxml='/"), "{}", plan.command);
    }
}
