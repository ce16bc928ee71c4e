//! Finding a target's project root, manifest, tests and test file from the files around it, for
//! runs without `-t` / `-f` (see `docs/test-runners.md`).
//!
//! [`detect_plans`] turns the nearest manifests into [`TestPlan`]s: one per language found, each
//! asking its tool for a machine-readable report.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use crate::runner::language::Language;
use crate::runner::plan::{Framework, ReportSpec, TestPlan, TestingOptions};
use crate::runner::report::ReportFormat;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stack {
    Node,
    Python,
    Rust,
}

const NODE_MANIFESTS: &[&str] = &["package.json"];
const PYTHON_MANIFESTS: &[&str] = &[
    "pyproject.toml",
    "pytest.ini",
    "setup.cfg",
    "tox.ini",
    "requirements.txt",
    "setup.py",
];
const RUST_MANIFESTS: &[&str] = &["Cargo.toml"];

/// `-rfE` asks for the short summary of failures and errors (pytest's default, restated in case
/// the project's `addopts` turned it off): the text parser reads it when the report is missing.
const PYTEST_COMMAND: &str = "python3 -m pytest -rfE";
const NPM_COMMAND: &str = "npm test";

impl Stack {
    fn manifests(self) -> &'static [&'static str] {
        match self {
            Stack::Node => NODE_MANIFESTS,
            Stack::Python => PYTHON_MANIFESTS,
            Stack::Rust => RUST_MANIFESTS,
        }
    }

    fn of(language: Language) -> Stack {
        match language {
            Language::TypeScript | Language::JavaScript => Stack::Node,
            Language::Python => Stack::Python,
            Language::Rust => Stack::Rust,
        }
    }

    /// The order of a directory's stacks: the target's own language first, so its tests run
    /// (and its manifest is found) before the others'.
    fn order_for(target: &Path) -> [Stack; 3] {
        match target.extension().and_then(|e| e.to_str()).unwrap_or("") {
            "py" | "pyi" => [Stack::Python, Stack::Node, Stack::Rust],
            "rs" => [Stack::Rust, Stack::Node, Stack::Python],
            _ => [Stack::Node, Stack::Python, Stack::Rust],
        }
    }
}

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

/// The test tools that are optional extras, asked about once, on first need: whether pytest can
/// be imported (else Python projects get unittest) and whether cargo-nextest is installed.
#[derive(Debug, Default)]
pub struct Probe {
    pytest: OnceLock<bool>,
    nextest: OnceLock<bool>,
}

impl Probe {
    /// Asks this machine (`python3 -c "import pytest"`, `cargo nextest --version`).
    pub fn system() -> Self {
        Self::default()
    }

    /// Fixed answers, for tests and for callers that know better.
    pub fn fixed(pytest: bool, nextest: bool) -> Self {
        Self {
            pytest: OnceLock::from(pytest),
            nextest: OnceLock::from(nextest),
        }
    }

    pub fn pytest(&self) -> bool {
        *self
            .pytest
            .get_or_init(|| succeeds("python3", &["-c", "import pytest"]))
    }

    pub fn nextest(&self) -> bool {
        *self
            .nextest
            .get_or_init(|| succeeds("cargo", &["nextest", "--version"]))
    }
}

fn succeeds(program: &str, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
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

/// `-rfE`: the short summary of failures and errors, read when the report is missing. `xunit1`
/// puts each test's file and line in the XML; `junit_logging=all` its captured output.
const PYTEST_REPORT_FLAGS: &str = "-o junit_family=xunit1 -o junit_logging=all";
/// `--no-tests=warn`: a crate without tests passes, as it does under `cargo test`.
const NEXTEST_COMMAND: &str =
    "cargo nextest run --no-fail-fast --no-tests=warn --message-format libtest-json";
/// libtest's JSON lines need `-Z unstable-options`, which stable toolchains accept at run time
/// with `RUSTC_BOOTSTRAP=1` (the test binaries are not rebuilt for it). `2>&1`: the lines say
/// which binary they come from only by following cargo's `Running <source>` line, which is on
/// stderr; through two pipes the two streams can arrive out of order, through one they cannot.
const CARGO_JSON_COMMAND: &str =
    "cargo test --no-fail-fast -- -Z unstable-options --format json --report-time 2>&1";

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

/// pytest is named in the project's configuration: its own ini file or section, a `conftest.py`,
/// or a requirement.
fn pytest_configured(dir: &Path, manifests: &[PathBuf]) -> bool {
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

fn python_plan(framework: Framework, cwd: &Path, report_dir: &Path) -> TestPlan {
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

fn rust_plan(framework: Framework, cwd: &Path) -> TestPlan {
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

/// How a node tool is started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Invocation {
    /// `npm test -- <report flags>`: the project's script is one call of the tool, which gets the
    /// flags appended (its own arguments, `pretest` and the rest of npm's set-up are kept).
    NpmTest,
    /// `npx --no-install <tool> <report flags>`: the tool named by the dependencies, or by a
    /// script the flags cannot be appended to (`jest | tee log`, `jest && eslint .`).
    Npx,
}

/// The node plan of the `package.json` in `dir`, if it has tests: a `test` script (npm's
/// placeholder does not count) or jest, vitest or mocha among its dependencies.
fn node_plan(
    dir: &Path,
    target: &Path,
    language: Option<Language>,
    report_dir: &Path,
) -> Option<TestPlan> {
    let manifest = dir.join("package.json");
    if !manifest.is_file() {
        return None;
    }
    let language = language.or_else(|| {
        let ts = Language::of_file(target) == Some(Language::TypeScript)
            || dir.join("tsconfig.json").is_file();
        Some(if ts {
            Language::TypeScript
        } else {
            Language::JavaScript
        })
    });
    let package = std::fs::read_to_string(&manifest)
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok());
    let Some(package) = package else {
        // npm says what is wrong with it, which is more use than ignoring the file.
        return Some(custom_plan(NPM_COMMAND, dir.to_path_buf(), language));
    };
    let script = package
        .pointer("/scripts/test")
        .and_then(|t| t.as_str())
        .filter(|t| is_real_script(t));
    if let Some(script) = script {
        return Some(match script_tool(script) {
            Some((framework, invocation)) => {
                node_tool_plan(framework, invocation, language, dir, report_dir)
            }
            // Another runner (ava, tap, a script of the project's own): run and read as text.
            None => custom_plan(NPM_COMMAND, dir.to_path_buf(), language),
        });
    }
    let has_dependency = |name: &str| {
        ["dependencies", "devDependencies"]
            .iter()
            .any(|section| package.get(section).and_then(|d| d.get(name)).is_some())
    };
    [Framework::Vitest, Framework::Jest, Framework::Mocha]
        .into_iter()
        .find(|f| has_dependency(f.as_str()))
        .map(|f| node_tool_plan(f, Invocation::Npx, language, dir, report_dir))
}

/// The test tool a `test` script runs, and whether report flags can be appended to it: the tool
/// is in the script's last command, with no pipe or redirection after it.
fn script_tool(script: &str) -> Option<(Framework, Invocation)> {
    let commands: Vec<&str> = script
        .split("&&")
        .flat_map(|c| c.split("||"))
        .flat_map(|c| c.split(';'))
        .filter(|c| !c.trim().is_empty())
        .collect();
    let tool_of = |command: &str| {
        let words: Vec<&str> = command.split_whitespace().collect();
        if words.iter().any(|w| names_tool(w, "node")) && words.contains(&"--test") {
            return Some(Framework::Node);
        }
        [Framework::Vitest, Framework::Jest, Framework::Mocha]
            .into_iter()
            .find(|f| words.iter().any(|w| names_tool(w, f.as_str())))
    };
    let last = commands.last()?;
    if let Some(framework) = tool_of(last) {
        let plain = !last.contains('|') && !last.contains('>');
        // node's reporters are set through NODE_OPTIONS, which reach it wherever it is.
        let invocation = if plain || framework == Framework::Node {
            Invocation::NpmTest
        } else {
            Invocation::Npx
        };
        return Some((framework, invocation));
    }
    commands.iter().find_map(|c| tool_of(c)).map(|f| {
        let invocation = if f == Framework::Node {
            Invocation::NpmTest
        } else {
            Invocation::Npx
        };
        (f, invocation)
    })
}

/// `word` starts `tool`: its name, or a path to its binary (`node_modules/.bin/jest`,
/// `node_modules/jest/bin/jest.js`).
fn names_tool(word: &str, tool: &str) -> bool {
    let word = word.trim_matches(|c| c == '"' || c == '\'');
    word == tool || word.ends_with(&format!("/{tool}")) || word.contains(&format!("/{tool}/bin/"))
}

fn node_tool_plan(
    framework: Framework,
    invocation: Invocation,
    language: Option<Language>,
    cwd: &Path,
    report_dir: &Path,
) -> TestPlan {
    let (format, ext) = match framework {
        Framework::Jest => (ReportFormat::JestJson, "json"),
        Framework::Vitest => (ReportFormat::VitestJson, "json"),
        Framework::Mocha => (ReportFormat::MochaJson, "json"),
        _ => (ReportFormat::JunitXml, "xml"),
    };
    let file = report_file(report_dir, framework, ext);
    let quoted = shell_quote(&file);
    let mut env = Vec::new();
    let flags = match framework {
        Framework::Jest => format!("--json --outputFile={quoted}"),
        // The JSON reporter comes first: a reporter that throws (vitest 5's default one does on
        // node 20) stops the ones after it, and the report matters more than the text.
        Framework::Vitest => {
            format!("--reporter=json --reporter=default --outputFile.json={quoted}")
        }
        Framework::Mocha => format!("--reporter json --reporter-option output={quoted}"),
        _ => {
            // `node --test` takes no flags after its file arguments, and the script may run
            // other commands first: NODE_OPTIONS reaches it wherever it is. JUnit XML to the
            // file, and TAP (what the text parser reads) to the output.
            let mut options = std::env::var("NODE_OPTIONS").unwrap_or_default();
            if !options.is_empty() {
                options.push(' ');
            }
            options.push_str(&format!(
                "--test-reporter=junit --test-reporter-destination={} \
                 --test-reporter=tap --test-reporter-destination=stdout",
                file.display()
            ));
            env.push(("NODE_OPTIONS".to_string(), options));
            String::new()
        }
    };
    let command = match (framework, invocation) {
        (Framework::Node, _) => format!("{NPM_COMMAND} --silent"),
        (_, Invocation::NpmTest) => format!("{NPM_COMMAND} --silent -- {flags}"),
        (Framework::Vitest, Invocation::Npx) => format!("npx --no-install vitest run {flags}"),
        (_, Invocation::Npx) => format!("npx --no-install {} {flags}", framework.as_str()),
    };
    TestPlan {
        language,
        framework,
        command,
        cwd: cwd.to_path_buf(),
        report: Some(ReportSpec {
            format,
            file: Some(file),
        }),
        env,
    }
}

/// A report file of its own for each plan (two plans, or two runners, never share one).
fn report_file(report_dir: &Path, framework: Framework, ext: &str) -> PathBuf {
    let id = uuid::Uuid::new_v4().simple().to_string();
    report_dir.join(format!("{}-{}.{ext}", framework.as_str(), &id[..12]))
}

/// `path` as one `sh` word.
fn shell_quote(path: &Path) -> String {
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

/// The nearest ancestor of `start` (or `start` itself) holding `.git`, else `start`'s directory.
pub fn project_root(start: &Path) -> PathBuf {
    let dir = dir_of(start);
    dir.ancestors()
        .find(|d| d.join(".git").exists())
        .map_or_else(|| dir.clone(), Path::to_path_buf)
}

/// The nearest manifest of any kind between the target's directory and the project root.
pub fn find_manifest(target: &Path) -> Option<PathBuf> {
    let order = Stack::order_for(target);
    search_dirs(target).into_iter().find_map(|dir| {
        order
            .iter()
            .flat_map(|s| s.manifests())
            .map(|name| dir.join(name))
            .find(|m| m.is_file())
    })
}

/// The target's test file by the usual conventions (micro-agent's `name.test.ext` first); the
/// first that exists wins. In the target's directory: `name.test.ext`, `name.spec.ext` (for
/// TypeScript also `.tsx`), `test_name.py`, `name_test.py`, `name_test.go`; then
/// `__tests__/`, and `tests/` or `test/` beside the target, in its parent and at the project
/// root, where `name.ext` itself also counts (mocha's `test/name.js`, Rust's `tests/name.rs`).
pub fn find_test_file(target: &Path) -> Option<PathBuf> {
    let stem = target.file_stem()?.to_str()?;
    let ext = target.extension()?.to_str()?;
    let dir = dir_of(target);
    let names = test_names(stem, ext);

    let mut candidates: Vec<PathBuf> = names.iter().map(|n| dir.join(n)).collect();
    candidates.extend(names.iter().map(|n| dir.join("__tests__").join(n)));
    let root = project_root(target);
    let mut test_dirs: Vec<PathBuf> = Vec::new();
    for base in [Some(dir.as_path()), dir.parent(), Some(root.as_path())]
        .into_iter()
        .flatten()
    {
        for sub in ["tests", "test"] {
            let d = base.join(sub);
            if !test_dirs.contains(&d) {
                test_dirs.push(d);
            }
        }
    }
    for d in &test_dirs {
        candidates.extend(names.iter().map(|n| d.join(n)));
        if ext != "py" {
            candidates.push(d.join(format!("{stem}.{ext}")));
        }
    }
    let target = absolute(target);
    candidates.into_iter().find(|c| c.is_file() && *c != target)
}

/// Test file names for `stem.ext`, most likely first.
fn test_names(stem: &str, ext: &str) -> Vec<String> {
    match ext {
        "py" => vec![format!("test_{stem}.py"), format!("{stem}_test.py")],
        "go" => vec![format!("{stem}_test.go")],
        _ => {
            let exts: &[&str] = match ext {
                "ts" => &["ts", "tsx"],
                "tsx" => &["tsx", "ts"],
                "jsx" => &["jsx", "js"],
                other => &[other][..],
            };
            let mut names = Vec::new();
            for kind in ["test", "spec"] {
                names.extend(exts.iter().map(|e| format!("{stem}.{kind}.{e}")));
            }
            names.push(format!("{stem}_test.{ext}"));
            names
        }
    }
}

/// A `scripts.test` that is not npm's placeholder (`echo "Error: no test specified" && exit 1`).
fn is_real_script(script: &str) -> bool {
    !script.trim().is_empty() && !script.contains("no test specified")
}

/// The directories searched for manifests, nearest first: from the target's directory up to the
/// project root. Outside a git repository the search stops at the current directory when the
/// target is under it, else at the target's own directory, so a stray `package.json` in a home
/// directory is never picked up.
fn search_dirs(target: &Path) -> Vec<PathBuf> {
    let dir = dir_of(target);
    let root = project_root(&dir);
    let bound = if root.join(".git").exists() {
        root
    } else {
        std::env::current_dir()
            .ok()
            .and_then(|cwd| cwd.canonicalize().ok())
            .filter(|cwd| dir.starts_with(cwd))
            .unwrap_or_else(|| dir.clone())
    };
    let mut dirs = Vec::new();
    for d in dir.ancestors() {
        dirs.push(d.to_path_buf());
        if d == bound {
            break;
        }
    }
    dirs
}

/// The directory of `path` (itself when it is one), absolute and with symlinks resolved where
/// it exists, so that walks upward see the real parents.
fn dir_of(path: &Path) -> PathBuf {
    let path = absolute(path);
    if path.is_dir() {
        path
    } else {
        path.parent().map_or(path.clone(), Path::to_path_buf)
    }
}

fn absolute(path: &Path) -> PathBuf {
    if let Ok(p) = path.canonicalize() {
        return p;
    }
    // A file that does not exist yet: resolve its directory.
    if let (Some(parent), Some(name)) = (path.parent(), path.file_name()) {
        let parent = if parent.as_os_str().is_empty() {
            Path::new(".")
        } else {
            parent
        };
        if let Ok(p) = parent.canonicalize() {
            return p.join(name);
        }
    }
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    /// A temporary project: `files` are created (with parents), a trailing `/` makes a directory.
    fn project(files: &[&str]) -> tempfile::TempDir {
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

    fn write(dir: &Path, file: &str, text: &str) {
        fs::write(dir.join(file), text).ok();
    }

    fn real(p: &Path) -> PathBuf {
        p.canonicalize().unwrap_or_else(|_| p.to_path_buf())
    }

    #[test]
    fn project_root_is_the_nearest_git_ancestor() {
        let tmp = project(&[".git/", "a/b/c.py"]);
        let root = real(tmp.path());
        assert_eq!(project_root(&tmp.path().join("a/b/c.py")), root);
        assert_eq!(project_root(&tmp.path().join("a/b")), root);
        // A file not written yet still finds its project.
        assert_eq!(project_root(&tmp.path().join("a/b/new.py")), root);
    }

    #[test]
    fn without_git_the_root_is_the_start_dir() {
        let tmp = project(&["a/b/c.py"]);
        assert_eq!(
            project_root(&tmp.path().join("a/b/c.py")),
            real(&tmp.path().join("a/b"))
        );
    }

    /// The frameworks and directories of the plans for `target`, pytest importable and nextest
    /// not installed.
    fn found(target: &Path) -> Vec<(Framework, PathBuf)> {
        let opts = options(&target.with_file_name("reports"));
        detect_plans_with(target, &opts, &Probe::fixed(true, false))
            .map(|plans| plans.into_iter().map(|p| (p.framework, p.cwd)).collect())
            .unwrap_or_default()
    }

    #[test]
    fn a_package_json_needs_a_real_test_script_or_a_test_tool() {
        let tmp = project(&[".git/", "src/app.ts"]);
        let target = tmp.path().join("src/app.ts");
        package(
            tmp.path(),
            r#"{"scripts":{"test":"echo \"Error: no test specified\" && exit 1"}}"#,
        );
        assert_eq!(found(&target), []);
        package(tmp.path(), r#"{"scripts":{"test":"vitest run"}}"#);
        assert_eq!(found(&target), [(Framework::Vitest, real(tmp.path()))]);
    }

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
    fn the_search_stops_at_the_project_root() {
        let tmp = project(&["pyproject.toml", "proj/.git/", "proj/src/a.py"]);
        assert_eq!(found(&tmp.path().join("proj/src/a.py")), []);
        assert_eq!(find_manifest(&tmp.path().join("proj/src/a.py")), None);
    }

    #[test]
    fn find_manifest_takes_any_manifest() {
        let tmp = project(&[".git/", "package.json", "src/a.js"]);
        assert_eq!(
            find_manifest(&tmp.path().join("src/a.js")),
            Some(real(tmp.path()).join("package.json"))
        );
    }

    #[test]
    fn test_files_beside_the_target() {
        let cases: &[(&str, &str)] = &[
            ("src/sum.ts", "src/sum.test.ts"),
            ("src/sum.ts", "src/sum.spec.ts"),
            ("src/sum.ts", "src/sum.test.tsx"),
            ("src/sum.js", "src/sum.test.js"),
            ("app/calc.py", "app/test_calc.py"),
            ("app/calc.py", "app/calc_test.py"),
            ("pkg/calc.go", "pkg/calc_test.go"),
            ("src/sum.js", "src/__tests__/sum.test.js"),
            ("src/calc.py", "src/tests/test_calc.py"),
            ("pkg/src/calc.py", "pkg/tests/test_calc.py"),
            ("pkg/src/deep/calc.py", "tests/test_calc.py"),
            ("lib/util.js", "test/util.js"),
            ("src/parser.rs", "tests/parser.rs"),
        ];
        for (target, test) in cases {
            let tmp = project(&[".git/", target, test]);
            let found = find_test_file(&tmp.path().join(target));
            assert_eq!(
                found,
                Some(real(&tmp.path().join(test))),
                "{target} -> {test}"
            );
        }
    }

    #[test]
    fn the_first_convention_wins_and_none_is_none() {
        let tmp = project(&[
            ".git/",
            "src/sum.ts",
            "src/sum.spec.ts",
            "src/sum.test.ts",
            "tests/sum.test.ts",
        ]);
        assert_eq!(
            find_test_file(&tmp.path().join("src/sum.ts")),
            Some(real(&tmp.path().join("src/sum.test.ts")))
        );
        let tmp = project(&[".git/", "src/lonely.py"]);
        assert_eq!(find_test_file(&tmp.path().join("src/lonely.py")), None);
    }

    fn options(report_dir: &Path) -> TestingOptions {
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
        }
    }

    /// The plans for `target` under `tmp`, with pytest and nextest as said.
    fn plans_with(tmp: &Path, target: &str, opts: &TestingOptions, probe: &Probe) -> Vec<TestPlan> {
        match detect_plans_with(&tmp.join(target), opts, probe) {
            Ok(p) => p,
            Err(e) => panic!("{target}: {e}"),
        }
    }

    fn plans(tmp: &Path, target: &str) -> Vec<TestPlan> {
        let opts = options(&tmp.join(".ralph/reports"));
        plans_with(tmp, target, &opts, &Probe::fixed(true, false))
    }

    fn package(tmp: &Path, json: &str) {
        write(tmp, "package.json", json);
    }

    /// The report file a plan's command writes, checked to be named in its command (or its
    /// NODE_OPTIONS) and to lie in the report directory.
    fn report_path(plan: &TestPlan, report_dir: &Path) -> PathBuf {
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

    #[test]
    fn a_single_jest_call_gets_the_report_flags_through_npm_test() {
        let tmp = project(&[".git/", "src/sum.js"]);
        package(tmp.path(), r#"{"scripts":{"test":"jest --runInBand"}}"#);
        let p = plans(tmp.path(), "src/sum.js");
        assert_eq!(p.len(), 1);
        let plan = &p[0];
        assert_eq!(plan.framework, Framework::Jest);
        assert_eq!(plan.language, Some(Language::JavaScript));
        assert_eq!(plan.cwd, real(tmp.path()));
        let file = report_path(plan, &real(tmp.path()).join(".ralph/reports"));
        assert_eq!(
            plan.command,
            format!(
                "npm test --silent -- --json --outputFile={}",
                file.display()
            )
        );
        assert_eq!(
            plan.report.as_ref().map(|r| r.format),
            Some(ReportFormat::JestJson)
        );
        assert_eq!(file.extension().and_then(|e| e.to_str()), Some("json"));
    }

    #[test]
    fn a_script_that_cannot_take_flags_calls_the_tool_directly() {
        let tmp = project(&[".git/", "src/sum.js"]);
        for script in ["jest | tee log.txt", "jest && eslint ."] {
            package(
                tmp.path(),
                &format!(r#"{{"scripts":{{"test":"{script}"}}}}"#),
            );
            let plan = &plans(tmp.path(), "src/sum.js")[0];
            assert_eq!(plan.framework, Framework::Jest, "{script}");
            assert!(
                plan.command
                    .starts_with("npx --no-install jest --json --outputFile="),
                "{script}: {}",
                plan.command
            );
        }
        // The tool last, after a build step: the flags are appended to it.
        package(tmp.path(), r#"{"scripts":{"test":"tsc -p . && mocha"}}"#);
        let plan = &plans(tmp.path(), "src/sum.js")[0];
        assert_eq!(plan.framework, Framework::Mocha);
        assert!(
            plan.command
                .starts_with("npm test --silent -- --reporter json --reporter-option output="),
            "{}",
            plan.command
        );
    }

    #[test]
    fn typescript_with_vitest() {
        let tmp = project(&[".git/", "src/sum.ts"]);
        package(tmp.path(), r#"{"scripts":{"test":"vitest run"}}"#);
        let plan = &plans(tmp.path(), "src/sum.ts")[0];
        assert_eq!(
            (plan.language, plan.framework),
            (Some(Language::TypeScript), Framework::Vitest)
        );
        let file = report_path(plan, &real(tmp.path()).join(".ralph/reports"));
        assert_eq!(
            plan.command,
            format!(
                "npm test --silent -- --reporter=json --reporter=default --outputFile.json={}",
                file.display()
            )
        );
        // A .js target in a project with a tsconfig.json is TypeScript's too.
        write(tmp.path(), "tsconfig.json", "{}");
        write(tmp.path(), "src/util.js", "");
        let plan = &plans(tmp.path(), "src/util.js")[0];
        assert_eq!(plan.language, Some(Language::TypeScript));
    }

    #[test]
    fn the_dependencies_name_the_tool_when_no_script_does() {
        let tmp = project(&[".git/", "lib/a.js"]);
        package(
            tmp.path(),
            r#"{"scripts":{"test":"echo \"Error: no test specified\" && exit 1"},
                "devDependencies":{"mocha":"^12.0.0","eslint":"^10"}}"#,
        );
        let plan = &plans(tmp.path(), "lib/a.js")[0];
        assert_eq!(plan.framework, Framework::Mocha);
        assert!(
            plan.command
                .starts_with("npx --no-install mocha --reporter json --reporter-option output="),
            "{}",
            plan.command
        );
        package(tmp.path(), r#"{"dependencies":{"vitest":"5"}}"#);
        let plan = &plans(tmp.path(), "lib/a.js")[0];
        assert!(
            plan.command
                .starts_with("npx --no-install vitest run --reporter=json"),
            "{}",
            plan.command
        );
        // No script and no test tool: not a test manifest.
        package(tmp.path(), r#"{"devDependencies":{"prettier":"3"}}"#);
        let opts = options(&tmp.path().join("r"));
        let err = detect_plans_with(
            &tmp.path().join("lib/a.js"),
            &opts,
            &Probe::fixed(true, true),
        );
        assert!(
            matches!(err, Err(DetectError::NoManifest { .. })),
            "{err:?}"
        );
    }

    #[test]
    fn node_test_gets_its_reporters_through_node_options() {
        let tmp = project(&[".git/", "src/m.js"]);
        package(tmp.path(), r#"{"scripts":{"test":"node --test test/"}}"#);
        let plan = &plans(tmp.path(), "src/m.js")[0];
        assert_eq!(plan.framework, Framework::Node);
        assert_eq!(plan.command, "npm test --silent");
        let file = report_path(plan, &real(tmp.path()).join(".ralph/reports"));
        let node_options = plan
            .env
            .iter()
            .find(|(k, _)| k == "NODE_OPTIONS")
            .map(|(_, v)| v.as_str())
            .unwrap_or("");
        assert!(
            node_options.ends_with(&format!(
                "--test-reporter=junit --test-reporter-destination={} \
                 --test-reporter=tap --test-reporter-destination=stdout",
                file.display()
            )),
            "{node_options}"
        );
        assert_eq!(
            plan.report.as_ref().map(|r| r.format),
            Some(ReportFormat::JunitXml)
        );
    }

    #[test]
    fn another_runner_is_run_through_npm_and_read_as_text() {
        let tmp = project(&[".git/", "src/m.js"]);
        package(tmp.path(), r#"{"scripts":{"test":"ava --verbose"}}"#);
        let plan = &plans(tmp.path(), "src/m.js")[0];
        assert_eq!(
            (plan.framework, plan.command.as_str(), &plan.report),
            (Framework::Custom, "npm test", &None)
        );
        // A package.json npm cannot read: npm says why.
        package(tmp.path(), "{ not json");
        let plan = &plans(tmp.path(), "src/m.js")[0];
        assert_eq!(
            (plan.framework, plan.command.as_str()),
            (Framework::Custom, "npm test")
        );
    }

    #[test]
    fn python_gets_pytest_with_junit_xml_when_configured_or_installed() {
        let tmp = project(&[".git/", "pkg/calc.py", "requirements.txt"]);
        let opts = options(&tmp.path().join(".ralph/reports"));
        let plan = &plans_with(tmp.path(), "pkg/calc.py", &opts, &Probe::fixed(true, false))[0];
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
        let plan = &plans_with(
            tmp.path(),
            "pkg/calc.py",
            &opts,
            &Probe::fixed(false, false),
        )[0];
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
            let plan = &plans_with(
                tmp.path(),
                "pkg/calc.py",
                &opts,
                &Probe::fixed(false, false),
            )[0];
            assert_eq!(plan.framework, Framework::Pytest, "{file}");
        }
    }

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
    fn report_paths_are_quoted_for_the_shell() {
        assert_eq!(shell_quote(Path::new("/a/b-c_1.json")), "/a/b-c_1.json");
        assert_eq!(shell_quote(Path::new("/my dir/r.json")), "'/my dir/r.json'");
        assert_eq!(shell_quote(Path::new("/it's/r.json")), r"'/it'\''s/r.json'");
        let tmp = project(&[".git/", "m.py", "setup.cfg"]);
        let opts = options(&tmp.path().join("my reports"));
        let plan = &plans_with(tmp.path(), "m.py", &opts, &Probe::fixed(true, true))[0];
        assert!(plan.command.contains("--junitxml='/"), "{}", plan.command);
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

    #[test]
    fn the_system_probe_asks_this_machine() {
        let probe = Probe::system();
        let nextest = std::process::Command::new("cargo")
            .args(["nextest", "--version"])
            .output()
            .is_ok_and(|o| o.status.success());
        assert_eq!(probe.nextest(), nextest);
        let pytest = std::process::Command::new("python3")
            .args(["-m", "pytest", "--version"])
            .output()
            .is_ok_and(|o| o.status.success());
        assert_eq!(probe.pytest(), pytest);
        let fixed = Probe::fixed(false, true);
        assert!(!fixed.pytest() && fixed.nextest());
    }
}
