//! The coverage tool each test framework gets ([`CoverageTool`]), checked to be installed before
//! the run (`pick_tool`, which `with_coverage` calls first), and the ways gathering coverage
//! fails ([`CoverageError`]).
//! The test command's shape (`<python> -m pytest`, `cargo nextest run`) decides both whether a
//! tool fits and how `gather` wraps the command, so it is read here for both.

use std::path::{Path, PathBuf};

use crate::runner::plan::{Framework, TestPlan};
use crate::runner::tools::{capture, node_bin, node_package, python_imports, ToolEnv};

/// A coverage tool ralph-loop drives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CoverageTool {
    /// jest's built-in coverage (istanbul).
    Jest,
    /// vitest with the `@vitest/coverage-v8` provider.
    Vitest,
    /// `c8`, wrapping a mocha or `node --test` command.
    C8,
    /// coverage.py, running pytest or unittest.
    CoveragePy,
    /// `cargo llvm-cov`.
    LlvmCov,
    /// `cargo tarpaulin`.
    Tarpaulin,
}

impl CoverageTool {
    /// The name saved in results' `coverage.tool`.
    pub fn as_str(self) -> &'static str {
        match self {
            CoverageTool::Jest => "jest",
            CoverageTool::Vitest => "vitest",
            CoverageTool::C8 => "c8",
            CoverageTool::CoveragePy => "coverage.py",
            CoverageTool::LlvmCov => "cargo-llvm-cov",
            CoverageTool::Tarpaulin => "cargo-tarpaulin",
        }
    }
}

impl std::fmt::Display for CoverageTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why coverage cannot be gathered or read.
#[derive(Debug, thiserror::Error)]
pub enum CoverageError {
    /// The tool the framework needs is not installed; found before the run, so ralph-loop can
    /// stop (exit 2) before any model is called.
    #[error(
        "coverage_threshold is set but {tool} is not installed for {framework}: {install_hint}"
    )]
    ToolMissing {
        framework: &'static str,
        tool: &'static str,
        install_hint: String,
    },
    /// The test command is not one coverage can be added to (a configured command, or a detected
    /// one in an unexpected shape).
    #[error(
        "coverage_threshold is set but ralph-loop cannot add coverage to the {framework} command \
         `{command}`: {why}"
    )]
    Unsupported {
        framework: &'static str,
        command: String,
        why: &'static str,
    },
    /// The run ended (a crash, a timeout, a build failure) before the tool wrote its summary: the
    /// run is recorded without coverage and the coverage criterion is unmet.
    #[error(
        "{tool} wrote no coverage summary ({}): the test run ended before coverage was reported",
        path.display()
    )]
    NoSummary { tool: &'static str, path: PathBuf },
    #[error("{tool}'s coverage summary {} is unreadable: {reason}", path.display())]
    Unreadable {
        tool: &'static str,
        path: PathBuf,
        reason: String,
    },
    #[error("could not prepare the coverage directory {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Fails when the coverage tool `plan`'s framework needs is not installed (what
/// [`super::with_coverage`] does first, at the run's start, before any model is called).
#[cfg(test)]
pub fn check_coverage_tool(plan: &TestPlan) -> Result<(), CoverageError> {
    pick_tool(plan, &ToolEnv::current()).map(|_| ())
}

/// The tool for `plan`, checked to be installed.
pub(super) fn pick_tool(plan: &TestPlan, env: &ToolEnv) -> Result<CoverageTool, CoverageError> {
    let framework = plan.framework.as_str();
    let missing = |tool: &'static str, install_hint: String| CoverageError::ToolMissing {
        framework,
        tool,
        install_hint,
    };
    match plan.framework {
        // Coverage ships with jest.
        Framework::Jest => Ok(CoverageTool::Jest),
        Framework::Vitest => {
            if node_package(&plan.cwd, "@vitest/coverage-v8") {
                Ok(CoverageTool::Vitest)
            } else {
                Err(missing(
                    "@vitest/coverage-v8",
                    "run `npm install --save-dev @vitest/coverage-v8`".into(),
                ))
            }
        }
        Framework::Mocha | Framework::Node => {
            if node_bin(&plan.cwd, "c8", env) {
                Ok(CoverageTool::C8)
            } else {
                Err(missing("c8", "run `npm install --save-dev c8`".into()))
            }
        }
        Framework::Pytest | Framework::Unittest => {
            let py = split_python(&plan.command).ok_or_else(|| unsupported_python(plan))?;
            if python_imports(py.python, "coverage", &plan.cwd, &plan.env) {
                Ok(CoverageTool::CoveragePy)
            } else {
                Err(missing(
                    "coverage.py",
                    format!("run `{} -m pip install coverage`", py.python),
                ))
            }
        }
        Framework::Cargo | Framework::Nextest => {
            split_cargo(plan).ok_or_else(|| unsupported_cargo(plan))?;
            let llvm_cov = env.cargo_subcommand("cargo-llvm-cov");
            let tarpaulin = env.cargo_subcommand("cargo-tarpaulin");
            if llvm_cov && llvm_tools_installed(&plan.cwd, &plan.env) {
                Ok(CoverageTool::LlvmCov)
            } else if tarpaulin {
                Ok(CoverageTool::Tarpaulin)
            } else if llvm_cov {
                Err(missing(
                    "llvm-tools-preview (needed by cargo-llvm-cov)",
                    "run `rustup component add llvm-tools-preview`".into(),
                ))
            } else {
                Err(missing(
                    "cargo-llvm-cov (or cargo-tarpaulin)",
                    "run `cargo install cargo-llvm-cov` and `rustup component add \
                     llvm-tools-preview`, or `cargo install cargo-tarpaulin`"
                        .into(),
                ))
            }
        }
        Framework::Custom => Err(CoverageError::Unsupported {
            framework,
            command: plan.command.clone(),
            why: "a configured test command is run as is; unset testing.command (and -t) so \
                  ralph-loop detects the test tool, or unset coverage_threshold",
        }),
    }
}

pub(super) fn unsupported_python(plan: &TestPlan) -> CoverageError {
    CoverageError::Unsupported {
        framework: plan.framework.as_str(),
        command: plan.command.clone(),
        why: "expected `<python> -m pytest ...`, `<python> -m unittest ...` or `pytest ...`",
    }
}

pub(super) fn unsupported_cargo(plan: &TestPlan) -> CoverageError {
    CoverageError::Unsupported {
        framework: plan.framework.as_str(),
        command: plan.command.clone(),
        why: "expected `cargo test ...` or `cargo nextest run ...`",
    }
}

/// A Python test command cut around its module: `<python> -m <module><rest>`.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct PythonCommand<'a> {
    /// The interpreter, as the command calls it (`python3`, `.venv/bin/python`, `uv run python`).
    pub python: &'a str,
    pub module: &'static str,
    /// The arguments after the module, with their leading space.
    pub rest: &'a str,
}

pub(super) fn split_python(command: &str) -> Option<PythonCommand<'_>> {
    let command = command.trim();
    for module in ["pytest", "unittest"] {
        let marker = format!(" -m {module}");
        if let Some(at) = command.find(&marker) {
            let rest = &command[at + marker.len()..];
            if rest.is_empty() || rest.starts_with(char::is_whitespace) {
                return Some(PythonCommand {
                    python: command[..at].trim(),
                    module,
                    rest,
                });
            }
        }
    }
    // A bare `pytest` script: coverage.py runs its module instead.
    let rest = command.strip_prefix("pytest")?;
    (rest.is_empty() || rest.starts_with(char::is_whitespace)).then_some(PythonCommand {
        python: "python3",
        module: "pytest",
        rest,
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum CargoTests {
    Test,
    Nextest,
}

/// `cargo test<rest>` or `cargo nextest run<rest>`.
pub(super) fn split_cargo(plan: &TestPlan) -> Option<(CargoTests, &str)> {
    let command = plan.command.trim();
    let after = |prefix: &str| {
        command
            .strip_prefix(prefix)
            .filter(|rest| rest.is_empty() || rest.starts_with(char::is_whitespace))
    };
    after("cargo test")
        .map(|rest| (CargoTests::Test, rest))
        .or_else(|| after("cargo nextest run").map(|rest| (CargoTests::Nextest, rest)))
}

/// Whether `llvm-profdata`, which cargo-llvm-cov needs, is in the toolchain (or named by
/// `LLVM_PROFDATA`).
fn llvm_tools_installed(cwd: &Path, env: &[(String, String)]) -> bool {
    if std::env::var_os("LLVM_PROFDATA").is_some() && std::env::var_os("LLVM_COV").is_some() {
        return true;
    }
    // `rustc` in the project's directory: a rust-toolchain file there picks the toolchain.
    let Some(sysroot) = capture("rustc --print sysroot", cwd, env) else {
        return false;
    };
    let Ok(hosts) = std::fs::read_dir(Path::new(sysroot.trim()).join("lib/rustlib")) else {
        return false;
    };
    hosts
        .flatten()
        .any(|host| host.path().join("bin/llvm-profdata").is_file())
}

#[cfg(test)]
mod tests {
    use std::ffi::OsString;

    use super::*;
    use crate::runner::coverage::with_coverage;
    use crate::testkit::plans::plan;
    use crate::testkit::projects::{bare_python, node_tools, project};

    #[test]
    fn vitest_without_its_coverage_provider() {
        // vitest itself, but not @vitest/coverage-v8.
        let dir = project(&[("package.json", r#"{"name":"v","private":true}"#)]);
        std::fs::create_dir_all(dir.path().join("node_modules")).expect("mkdir");
        std::os::unix::fs::symlink(
            node_tools().join("vitest"),
            dir.path().join("node_modules/vitest"),
        )
        .expect("link vitest");
        let p = plan(Framework::Vitest, "npx --no-install vitest run", dir.path());
        let err = check_coverage_tool(&p).expect_err("provider missing");
        assert_eq!(
            err.to_string(),
            "coverage_threshold is set but @vitest/coverage-v8 is not installed for vitest: \
             run `npm install --save-dev @vitest/coverage-v8`"
        );
        assert!(with_coverage(&p, &dir.path().join("r"), None).is_err());
    }

    #[test]
    fn mocha_without_c8() {
        let dir = project(&[("package.json", r#"{"name":"m","private":true}"#)]);
        let p = plan(Framework::Mocha, "npx --no-install mocha", dir.path());
        // No node_modules and nothing on PATH: c8 is nowhere.
        let nowhere = ToolEnv {
            path: Some(OsString::new()),
            cargo_home: None,
        };
        let err = pick_tool(&p, &nowhere).expect_err("c8 missing");
        assert_eq!(
            err.to_string(),
            "coverage_threshold is set but c8 is not installed for mocha: run `npm install \
             --save-dev c8`"
        );
        // With the tools linked in, it is found.
        std::os::unix::fs::symlink(node_tools(), dir.path().join("node_modules"))
            .expect("link node_modules");
        assert_eq!(pick_tool(&p, &nowhere).ok(), Some(CoverageTool::C8));
    }

    #[test]
    fn pytest_without_coverage_py() {
        // A virtual environment without pip has neither pytest nor coverage.
        let dir = project(&[]);
        let python = bare_python(dir.path());
        let p = plan(
            Framework::Pytest,
            &format!("{} -m pytest -rfE", python.display()),
            dir.path(),
        );
        let err = check_coverage_tool(&p).expect_err("coverage.py missing");
        assert_eq!(
            err.to_string(),
            format!(
                "coverage_threshold is set but coverage.py is not installed for pytest: run \
                 `{} -m pip install coverage`",
                python.display()
            )
        );
    }

    #[test]
    fn cargo_without_llvm_cov_or_tarpaulin() {
        let dir = project(&[]);
        let p = plan(
            Framework::Cargo,
            "cargo test --no-fail-fast -- -Z unstable-options --format json --report-time",
            dir.path(),
        );
        let bare = ToolEnv {
            path: Some(OsString::new()),
            cargo_home: Some(dir.path().to_path_buf()),
        };
        let err = pick_tool(&p, &bare).expect_err("nothing installed");
        assert_eq!(
            err.to_string(),
            "coverage_threshold is set but cargo-llvm-cov (or cargo-tarpaulin) is not installed \
             for cargo: run `cargo install cargo-llvm-cov` and `rustup component add \
             llvm-tools-preview`, or `cargo install cargo-tarpaulin`"
        );
        let nextest = plan(
            Framework::Nextest,
            "cargo nextest run --no-fail-fast",
            dir.path(),
        );
        assert!(matches!(
            pick_tool(&nextest, &bare),
            Err(CoverageError::ToolMissing {
                framework: "nextest",
                ..
            })
        ));

        // On this machine, as ralph-loop would see it.
        let here = ToolEnv::current();
        if !here.cargo_subcommand("cargo-llvm-cov") && !here.cargo_subcommand("cargo-tarpaulin") {
            let err = check_coverage_tool(&p).expect_err("neither is installed here");
            assert!(matches!(err, CoverageError::ToolMissing { .. }), "{err}");
        }
    }

    #[test]
    fn a_configured_command_cannot_gather_coverage() {
        let p = plan(Framework::Custom, "make test", Path::new("."));
        let err = check_coverage_tool(&p).expect_err("unsupported");
        assert!(
            err.to_string()
                .starts_with("coverage_threshold is set but ralph-loop cannot add coverage"),
            "{err}"
        );
    }

    #[test]
    fn python_commands_are_split_at_their_module() {
        let p = split_python("python3 -m pytest -rfE --junitxml=/r/j.xml").expect("pytest");
        assert_eq!(
            (p.python, p.module, p.rest),
            ("python3", "pytest", " -rfE --junitxml=/r/j.xml")
        );
        let p = split_python("uv run python -m unittest").expect("unittest");
        assert_eq!(
            (p.python, p.module, p.rest),
            ("uv run python", "unittest", "")
        );
        let p = split_python("pytest -q").expect("bare pytest");
        assert_eq!((p.python, p.module, p.rest), ("python3", "pytest", " -q"));
        assert_eq!(split_python("python3 -m pytest_cov"), None);
        assert_eq!(split_python("make test"), None);
    }
}
