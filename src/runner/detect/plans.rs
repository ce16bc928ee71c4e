//! Detecting a target's plans ([`detect_plans`]): the configured command, else the nearest
//! directory's manifests, one plan per stack found there, the target's own first; and why none
//! was found ([`DetectError`]). [`framework_plan`] builds one framework's plan without detection.

use std::path::{Path, PathBuf};

use super::command::custom_plan;
use super::node::{node_plan, node_tool_plan, Invocation, NPM_COMMAND};
use super::python::{pytest_configured, python_plan};
use super::rust::rust_plan;
use super::search::{absolute, dir_of, project_root, search_dirs};
use super::stack::{Probe, Stack, PYTHON_MANIFESTS};
use crate::runner::language::Language;
use crate::runner::plan::{Framework, TestPlan, TestingOptions};

/// Why no tests could be found for a target.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DetectError {
    #[error(
        "no tests found for {}: no package.json with tests, Python manifest (pyproject.toml, \
         requirements.txt, setup.cfg, pytest.ini, tox.ini, setup.py) or Cargo.toml between its \
         directory and {}; pass -t \"<command>\" or set testing.command in ralph.config.yaml",
        target.display(),
        searched_to.display()
    )]
    NoManifest {
        target: PathBuf,
        /// The last directory searched (the project root).
        searched_to: PathBuf,
    },
    #[error(
        "no {language} tests found for {}: its manifests are for {}; drop --language \
         (testing.language), or pass -t \"<command>\"",
        target.display(),
        language_list(found)
    )]
    LanguageNotFound {
        language: Language,
        target: PathBuf,
        /// The languages whose tests were found instead.
        found: Vec<Language>,
    },
}

fn language_list(languages: &[Language]) -> String {
    let names: Vec<&str> = languages.iter().map(|l| l.as_str()).collect();
    names.join(" and ")
}

/// The plans to run for `target`, asking this machine which optional tools it has; see
/// [`detect_plans_with`].
pub fn detect_plans(target: &Path, options: &TestingOptions) -> Result<Vec<TestPlan>, DetectError> {
    detect_plans_with(target, options, &Probe::system())
}

/// The plans to run for `target`:
///
/// - `options.command` set (`-t`, `testing.command`): that command alone, run as is in
///   `options.command_cwd` (else the project root), its output read as text;
/// - `options.language` set: the plan of that language's nearest manifest;
/// - otherwise the nearest directory (from the target's up to the project root) holding a
///   manifest with tests, and one plan per language found there, the target's language first.
///
/// Each plan's command asks its tool for a report in `options.report_dir`, under a file name of
/// its own.
pub fn detect_plans_with(
    target: &Path,
    options: &TestingOptions,
    probe: &Probe,
) -> Result<Vec<TestPlan>, DetectError> {
    if let Some(command) = &options.command {
        let cwd = options
            .command_cwd
            .clone()
            .unwrap_or_else(|| project_root(target));
        let language = options.language.or_else(|| Language::of_file(target));
        return Ok(vec![custom_plan(command, cwd, language)]);
    }
    let report_dir = absolute(&options.report_dir);
    let dirs = search_dirs(target);
    let searched_to = dirs.last().cloned().unwrap_or_else(|| dir_of(target));
    let no_manifest = || DetectError::NoManifest {
        target: target.to_path_buf(),
        searched_to: searched_to.clone(),
    };
    let found_in = |dir: &Path, stacks: &[Stack], language: Option<Language>| -> Vec<TestPlan> {
        stacks
            .iter()
            .filter_map(|s| stack_plan(*s, dir, target, language, &report_dir, probe))
            .collect()
    };
    let order = Stack::order_for(target);
    if let Some(language) = options.language {
        let stack = Stack::of(language);
        if let Some(plan) = dirs
            .iter()
            .find_map(|d| found_in(d, &[stack], Some(language)).pop())
        {
            return Ok(vec![plan]);
        }
        let found: Vec<Language> = dirs
            .iter()
            .map(|d| found_in(d, &order, None))
            .find(|plans| !plans.is_empty())
            .map(|plans| plans.iter().filter_map(|p| p.language).collect())
            .ok_or_else(no_manifest)?;
        return Err(DetectError::LanguageNotFound {
            language,
            target: target.to_path_buf(),
            found,
        });
    }
    dirs.iter()
        .map(|d| found_in(d, &order, None))
        .find(|plans| !plans.is_empty())
        .ok_or_else(no_manifest)
}

/// The plan of one framework in `cwd`, calling the tool directly (`npx --no-install jest`, not
/// the project's `npm test`); its report goes to a new file in `report_dir`. For the detected
/// plan of a project, with its own `test` script honoured, see [`detect_plans`].
pub fn framework_plan(
    framework: Framework,
    language: Option<Language>,
    cwd: &Path,
    report_dir: &Path,
) -> TestPlan {
    let report_dir = absolute(report_dir);
    match framework {
        Framework::Jest | Framework::Vitest | Framework::Mocha => {
            node_tool_plan(framework, Invocation::Npx, language, cwd, &report_dir)
        }
        Framework::Node => {
            node_tool_plan(framework, Invocation::NpmTest, language, cwd, &report_dir)
        }
        Framework::Pytest | Framework::Unittest => python_plan(framework, cwd, &report_dir),
        Framework::Cargo | Framework::Nextest => rust_plan(framework, cwd),
        Framework::Custom => custom_plan(NPM_COMMAND, cwd.to_path_buf(), language),
    }
}

/// The plan for one stack's manifest in `dir`, if it has one with tests.
fn stack_plan(
    stack: Stack,
    dir: &Path,
    target: &Path,
    language: Option<Language>,
    report_dir: &Path,
    probe: &Probe,
) -> Option<TestPlan> {
    match stack {
        Stack::Node => node_plan(dir, target, language, report_dir),
        Stack::Python => {
            let manifests: Vec<PathBuf> = PYTHON_MANIFESTS
                .iter()
                .map(|m| dir.join(m))
                .filter(|m| m.is_file())
                .collect();
            if manifests.is_empty() {
                return None;
            }
            let framework = if pytest_configured(dir, &manifests) || probe.pytest() {
                Framework::Pytest
            } else {
                Framework::Unittest
            };
            Some(python_plan(framework, dir, report_dir))
        }
        Stack::Rust => {
            if !dir.join("Cargo.toml").is_file() {
                return None;
            }
            let framework = if probe.nextest() {
                Framework::Nextest
            } else {
                Framework::Cargo
            };
            Some(rust_plan(framework, dir))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::plans::{
        found, options, package, plans, plans_with, project, real, report_path,
    };

    #[test]
    fn python_and_rust_manifests() {
        for manifest in PYTHON_MANIFESTS {
            let tmp = project(&[".git/", manifest, "pkg/mod.py"]);
            assert_eq!(
                found(&tmp.path().join("pkg/mod.py")),
                [(Framework::Pytest, real(tmp.path()))],
                "{manifest}"
            );
        }
        let tmp = project(&[".git/", "Cargo.toml", "src/lib.rs"]);
        assert_eq!(
            found(&tmp.path().join("src/lib.rs")),
            [(Framework::Cargo, real(tmp.path()))]
        );
    }

    #[test]
    fn the_nearest_manifest_wins_and_sets_cwd() {
        let tmp = project(&[
            ".git/",
            "Cargo.toml",
            "tools/py/pyproject.toml",
            "tools/py/x/y.py",
        ]);
        assert_eq!(
            found(&tmp.path().join("tools/py/x/y.py")),
            [(Framework::Pytest, real(&tmp.path().join("tools/py")))]
        );
    }

    #[test]
    fn every_language_of_the_nearest_manifest_directory_runs_target_first() {
        let tmp = project(&[
            ".git/",
            "pyproject.toml",
            "Cargo.toml",
            "app.py",
            "web/app.js",
        ]);
        package(tmp.path(), r#"{"scripts":{"test":"jest"}}"#);
        let frameworks = |t: &str| {
            plans(tmp.path(), t)
                .iter()
                .map(|p| p.framework)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            frameworks("app.py"),
            [Framework::Pytest, Framework::Jest, Framework::Cargo]
        );
        // web/ has no manifest: the root's, node first for a .js target.
        assert_eq!(
            frameworks("web/app.js"),
            [Framework::Jest, Framework::Pytest, Framework::Cargo]
        );
        // A nearer manifest is a project of its own.
        package(&tmp.path().join("web"), r#"{"scripts":{"test":"vitest"}}"#);
        assert_eq!(frameworks("web/app.js"), [Framework::Vitest]);
        // Two plans never share a report file.
        let p = plans(tmp.path(), "app.py");
        let dir = real(tmp.path()).join(".ralph/reports");
        assert_ne!(report_path(&p[0], &dir), report_path(&p[1], &dir));
    }

    #[test]
    fn language_picks_one() {
        let tmp = project(&[".git/", "pyproject.toml", "src/app.py"]);
        package(tmp.path(), r#"{"scripts":{"test":"jest"}}"#);
        let mut opts = options(&tmp.path().join("r"));
        opts.language = Some(Language::JavaScript);
        let p = plans_with(tmp.path(), "src/app.py", &opts, &Probe::fixed(true, false));
        assert_eq!(p.len(), 1);
        assert_eq!(
            (p[0].language, p[0].framework),
            (Some(Language::JavaScript), Framework::Jest)
        );
        opts.language = Some(Language::Python);
        let p = plans_with(tmp.path(), "src/app.py", &opts, &Probe::fixed(true, false));
        assert_eq!(
            p.iter().map(|p| p.framework).collect::<Vec<_>>(),
            [Framework::Pytest]
        );
        opts.language = Some(Language::Rust);
        let err = detect_plans_with(
            &tmp.path().join("src/app.py"),
            &opts,
            &Probe::fixed(true, false),
        );
        let Err(err @ DetectError::LanguageNotFound { .. }) = err else {
            panic!("{err:?}");
        };
        let text = err.to_string();
        assert!(
            text.contains("no rust tests found")
                && text.contains("python and javascript")
                && text.contains("--language")
                && text.contains("-t"),
            "{text}"
        );
    }

    #[test]
    fn a_configured_command_overrides_detection() {
        let tmp = project(&[".git/", "Cargo.toml", "src/lib.rs", "tools/"]);
        let mut opts = options(&tmp.path().join("r"));
        opts.command = Some("make check".into());
        let p = plans(tmp.path(), "src/lib.rs");
        assert_eq!(p[0].framework, Framework::Cargo);
        let p = plans_with(tmp.path(), "src/lib.rs", &opts, &Probe::fixed(true, true));
        assert_eq!(
            p,
            [TestPlan {
                language: Some(Language::Rust),
                framework: Framework::Custom,
                command: "make check".into(),
                cwd: real(tmp.path()),
                report: None,
                env: Vec::new(),
            }]
        );
        opts.command_cwd = Some(tmp.path().join("tools"));
        opts.language = Some(Language::Python);
        let p = plans_with(tmp.path(), "src/lib.rs", &opts, &Probe::fixed(true, true));
        assert_eq!(p[0].cwd, tmp.path().join("tools"));
        assert_eq!(p[0].language, Some(Language::Python));
    }

    #[test]
    fn no_manifest_is_an_error_that_suggests_t() {
        let tmp = project(&[".git/", "src/lonely.py"]);
        let opts = options(&tmp.path().join("r"));
        let err = detect_plans_with(
            &tmp.path().join("src/lonely.py"),
            &opts,
            &Probe::fixed(true, true),
        );
        let Err(err) = err else { panic!("{err:?}") };
        assert_eq!(
            err,
            DetectError::NoManifest {
                target: tmp.path().join("src/lonely.py"),
                searched_to: real(tmp.path()),
            }
        );
        let text = err.to_string();
        assert!(text.contains("pass -t \"<command>\""), "{text}");
        assert!(text.contains("lonely.py"), "{text}");
    }

    #[test]
    fn framework_plans_call_the_tool_directly() {
        let tmp = project(&[]);
        let dir = tmp.path().join("reports");
        let plan = framework_plan(Framework::Unittest, None, tmp.path(), &dir);
        assert_eq!(
            (plan.command.as_str(), plan.language),
            ("python3 -m unittest", Some(Language::Python))
        );
        let plan = framework_plan(
            Framework::Jest,
            Some(Language::JavaScript),
            tmp.path(),
            &dir,
        );
        assert!(
            plan.command.starts_with("npx --no-install jest --json"),
            "{}",
            plan.command
        );
        let plan = framework_plan(Framework::Nextest, None, tmp.path(), &dir);
        assert_eq!(plan.framework, Framework::Nextest);
    }
}
