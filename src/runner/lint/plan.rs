//! Which linter a target gets ([`lint_plan`]): the configured command as is, else eslint, ruff or
//! clippy by language, each checked to be installed (and eslint to be configured) before the run.

use std::path::{Path, PathBuf};

use crate::runner::language::Language;
use crate::runner::tools::{capture, find_upward, node_bin, python_imports, sh_quote, ToolEnv};

/// The names eslint 9 and later read their flat config from.
const ESLINT_CONFIGS: &[&str] = &[
    "eslint.config.js",
    "eslint.config.mjs",
    "eslint.config.cjs",
    "eslint.config.ts",
    "eslint.config.mts",
    "eslint.config.cts",
];

/// How a linter's output is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LintFormat {
    /// eslint's `--format json` array.
    Eslint,
    /// ruff's `--output-format json` array.
    Ruff,
    /// cargo's `--message-format json` lines.
    Clippy,
    /// A configured command: any of the above if its output is one, else its exit status.
    Detect,
}

/// One linter command to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LintPlan {
    /// `eslint`, `ruff`, `clippy`, or the configured command.
    pub tool: String,
    pub language: Language,
    /// The shell command (`sh -c`).
    pub command: String,
    /// Where to run it: the project's directory.
    pub cwd: PathBuf,
    /// Variables added to the command's environment.
    pub env: Vec<(String, String)>,
    pub format: LintFormat,
}

/// Why the linter cannot run; found before the run, so ralph-loop can stop (exit 2) before any
/// model is called.
#[derive(Debug, thiserror::Error)]
pub enum LintError {
    #[error("linter_errors is set but {tool} is not installed for {language}: {install_hint}")]
    ToolMissing {
        language: &'static str,
        tool: &'static str,
        install_hint: String,
    },
    #[error(
        "linter_errors is set but eslint finds no configuration for {}: eslint 9 and later need \
         an eslint.config.js (or .mjs, .cjs, .ts) in the project; add one, or set \
         linting.command",
        target.display()
    )]
    NoEslintConfig { target: PathBuf },
}

/// The linter for `target` (the file being fixed) in the project at `cwd`: the configured
/// `command` as is, else eslint (TypeScript, JavaScript), ruff (Python) or clippy (Rust), checked
/// to be installed. Runs the tools briefly to check them.
pub fn lint_plan(
    language: Language,
    target: &Path,
    cwd: &Path,
    command: Option<&str>,
) -> Result<LintPlan, LintError> {
    plan_with(language, target, cwd, command, &Tools::current())
}

/// Fails when the linter [`lint_plan`] would pick is not there (what [`lint_plan`] does first, at
/// the run's start, before any model is called).
#[cfg(test)]
pub fn check_lint_tool(
    language: Language,
    target: &Path,
    cwd: &Path,
    command: Option<&str>,
) -> Result<(), LintError> {
    lint_plan(language, target, cwd, command).map(|_| ())
}

/// Where the linters are looked for; tests point these at empty places.
struct Tools {
    env: ToolEnv,
    python: String,
    cargo: String,
}

impl Tools {
    fn current() -> Self {
        Self {
            env: ToolEnv::current(),
            python: "python3".into(),
            cargo: "cargo".into(),
        }
    }
}

fn plan_with(
    language: Language,
    target: &Path,
    cwd: &Path,
    command: Option<&str>,
    tools: &Tools,
) -> Result<LintPlan, LintError> {
    let plan = |tool: &str, command: String, format| LintPlan {
        tool: tool.to_string(),
        language,
        command,
        cwd: cwd.to_path_buf(),
        env: Vec::new(),
        format,
    };
    if let Some(command) = command {
        return Ok(plan(
            &tool_named_in(command),
            command.to_string(),
            LintFormat::Detect,
        ));
    }
    let missing = |tool: &'static str, install_hint: String| LintError::ToolMissing {
        language: language.as_str(),
        tool,
        install_hint,
    };
    // `2>&1` joins the streams in one pipe, in order: read from two, a long JSON line could be
    // split by the other stream's text.
    match language {
        Language::TypeScript | Language::JavaScript => {
            if !node_bin(cwd, "eslint", &tools.env) {
                return Err(missing(
                    "eslint",
                    "run `npm install --save-dev eslint`".into(),
                ));
            }
            let file = cwd.join(target);
            let start = file.parent().unwrap_or(cwd);
            let configured = ESLINT_CONFIGS
                .iter()
                .any(|name| find_upward(start, name).is_some() || find_upward(cwd, name).is_some());
            if !configured {
                return Err(LintError::NoEslintConfig {
                    target: target.to_path_buf(),
                });
            }
            Ok(plan(
                "eslint",
                format!(
                    "npx --no-install eslint --format json {} 2>&1",
                    sh_quote(target)
                ),
                LintFormat::Eslint,
            ))
        }
        Language::Python => {
            let ruff = if python_imports(&tools.python, "ruff", cwd, &[]) {
                format!("{} -m ruff", tools.python)
            } else if tools.env.which("ruff").is_some() {
                "ruff".to_string()
            } else {
                return Err(missing(
                    "ruff",
                    format!("run `{} -m pip install ruff`", tools.python),
                ));
            };
            // --no-cache: no `.ruff_cache` left in the user's project.
            Ok(plan(
                "ruff",
                format!(
                    "{ruff} check --no-cache --output-format json {} 2>&1",
                    sh_quote(target)
                ),
                LintFormat::Ruff,
            ))
        }
        Language::Rust => {
            if capture(&format!("{} clippy --version", tools.cargo), cwd, &[]).is_none() {
                return Err(missing(
                    "clippy",
                    "run `rustup component add clippy`".into(),
                ));
            }
            Ok(plan(
                "clippy",
                format!(
                    "{} clippy --message-format json --all-targets 2>&1",
                    tools.cargo
                ),
                LintFormat::Clippy,
            ))
        }
    }
}

/// The linter a configured command names (a word `eslint`, `ruff`, `clippy`, or a path ending in
/// one), for `Lint::tool`; the command itself otherwise.
fn tool_named_in(command: &str) -> String {
    command
        .split_whitespace()
        .filter_map(|word| word.rsplit('/').next())
        .find_map(|name| {
            ["eslint", "ruff", "clippy"]
                .into_iter()
                .find(|t| *t == name)
        })
        .map_or_else(|| command.to_string(), str::to_string)
}

#[cfg(test)]
mod tests {
    use std::ffi::OsString;

    use super::*;
    use crate::testkit::projects::{bare_python, node_project, project};
    use crate::testkit::projects::{crate_project, ESLINT_CONFIG};

    /// Where nothing is installed.
    fn nowhere() -> ToolEnv {
        ToolEnv {
            path: Some(OsString::new()),
            cargo_home: None,
        }
    }

    #[test]
    fn eslint_needs_a_config_and_an_install() {
        let dir = node_project(&[("package.json", r#"{"name":"l","private":true}"#)]);
        let err = lint_plan(Language::TypeScript, Path::new("a.ts"), dir.path(), None)
            .expect_err("no config");
        assert!(matches!(err, LintError::NoEslintConfig { .. }), "{err}");
        assert!(
            err.to_string().contains("need an eslint.config.js"),
            "{err}"
        );
        // A config in a directory above the target counts.
        std::fs::write(dir.path().join("eslint.config.mjs"), "export default [];\n")
            .expect("write");
        assert!(lint_plan(
            Language::TypeScript,
            Path::new("src/a.ts"),
            dir.path(),
            None
        )
        .is_ok());

        let bare = project(&[("eslint.config.js", ESLINT_CONFIG)]);
        let tools = Tools {
            env: nowhere(),
            ..Tools::current()
        };
        assert_eq!(
            unavailable(Language::JavaScript, "a.js", bare.path(), &tools),
            "linter_errors is set but eslint is not installed for javascript: run `npm install \
             --save-dev eslint`"
        );
    }

    /// Why no lint plan can be made for `target` with `tools`: the linter is not installed.
    fn unavailable(language: Language, target: &str, dir: &Path, tools: &Tools) -> String {
        plan_with(language, Path::new(target), dir, None, tools)
            .expect_err("no linter")
            .to_string()
    }

    #[test]
    fn ruff_missing() {
        let dir = project(&[]);
        let python = bare_python(dir.path()).display().to_string();
        let tools = Tools {
            env: nowhere(),
            python: python.clone(),
            cargo: "cargo".into(),
        };
        assert_eq!(
            unavailable(Language::Python, "a.py", dir.path(), &tools),
            format!(
                "linter_errors is set but ruff is not installed for python: run `{python} -m \
                 pip install ruff`"
            )
        );
    }

    #[test]
    fn clippy_missing() {
        let dir = crate_project("pub fn f() {}\n");
        let tools = Tools {
            cargo: "/nonexistent/cargo".into(),
            ..Tools::current()
        };
        assert_eq!(
            unavailable(Language::Rust, "src/lib.rs", dir.path(), &tools),
            "linter_errors is set but clippy is not installed for rust: run `rustup component \
             add clippy`"
        );
    }

    #[test]
    fn configured_linters_are_named() {
        assert_eq!(tool_named_in("npx --no-install eslint ."), "eslint");
        assert_eq!(tool_named_in("./node_modules/.bin/eslint src"), "eslint");
        assert_eq!(tool_named_in("cargo clippy -- -D warnings"), "clippy");
        assert_eq!(tool_named_in("python3 -m ruff check ."), "ruff");
        assert_eq!(tool_named_in("truffle lint"), "truffle lint");
    }
}
