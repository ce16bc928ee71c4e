//! Where Chaos's test file goes and how it reaches the target, per framework: its name (one the
//! framework recognises as a test), how it imports the target from the session folder, and the
//! command that runs it alone with the tool's machine-readable report.

use std::path::{Component, Path, PathBuf};

use ralph_actors::ports::chaos::ChaosLayout;

use super::cargo::RustCrate;
use crate::runner::detect;
use crate::runner::language::Language;
use crate::runner::plan::{Framework, TestPlan, TestingOptions};

/// The framework Chaos's files run under, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    pub framework: Framework,
    pub language: Language,
    /// Where the command runs: the unit tests' directory (their manifest's).
    pub cwd: PathBuf,
    /// The target, absolute.
    pub target: PathBuf,
    /// The session's `chaos/` folder, absolute: the files live here.
    pub dir: PathBuf,
    /// The unit test file's text, when there is one: its import style is copied.
    pub unit_tests: Option<String>,
    /// A Rust target's crate: Chaos's files are integration tests of its library.
    pub krate: Option<RustCrate>,
}

/// The framework of the unit tests that run for `target`: the first plan of the target's
/// language (of any, else). A test command given as is (`-t`) names no framework: the project's
/// manifests are read for one, else the language's own runner is used (pytest when it can be
/// imported, else unittest; node's runner). A Rust target's files always run under `cargo test`
/// (a harness crate of their own), from the directory of its unit tests.
pub fn framework_for(
    plans: &[TestPlan],
    target: &Path,
    options: &TestingOptions,
) -> Option<(Framework, Language, PathBuf)> {
    let language = Language::of_file(target)?;
    if language == Language::Rust {
        let cwd = plans
            .iter()
            .find(|p| p.language == Some(Language::Rust))
            .map(|p| p.cwd.clone())
            .or_else(|| target.parent().map(Path::to_path_buf))?;
        return Some((Framework::Cargo, language, cwd));
    }
    let same = |p: &&TestPlan| {
        p.language
            .is_some_and(|l| l.is_node() == language.is_node())
    };
    let plan = plans.iter().find(same).or(plans.first())?;
    if plan.framework != Framework::Custom {
        return Some((plan.framework, language, plan.cwd.clone()));
    }
    let mut detected = options.clone();
    detected.command = None;
    detected.language = None;
    if let Some(found) = detect::detect_plans(target, &detected)
        .ok()
        .and_then(|plans| plans.into_iter().find(|p| p.framework != Framework::Custom))
    {
        return Some((found.framework, language, found.cwd));
    }
    let framework = match language {
        Language::Python if detect::Probe::system().pytest() => Framework::Pytest,
        Language::Python => Framework::Unittest,
        Language::JavaScript | Language::TypeScript => Framework::Node,
        Language::Rust => return None,
    };
    Some((framework, language, plan.cwd.clone()))
}

impl Placement {
    /// Round `round`'s file name.
    pub fn file_name(&self, round: u32) -> String {
        let ext = self
            .target
            .extension()
            .and_then(|e| e.to_str())
            .unwrap_or("js");
        match self.framework {
            Framework::Pytest | Framework::Unittest => format!("test_chaos_round_{round}.py"),
            Framework::Cargo => format!("chaos_round_{round}.rs"),
            _ => format!("chaos_round_{round}.test.{ext}"),
        }
    }

    /// Round `round`'s file, absolute.
    pub fn file(&self, round: u32) -> PathBuf {
        self.dir.join(self.file_name(round))
    }

    /// What Chaos's prompt says of round `round`'s file; `property` names the property-based
    /// testing library and how it is imported, when there is one for the language.
    pub fn layout(&self, round: u32, property: Option<(&str, &str)>) -> ChaosLayout {
        let (import_hint, mut notes) = self.import();
        match self.framework {
            Framework::Vitest => notes.push(
                "import `test`, `expect` (and `describe` if you use it) from 'vitest'".into(),
            ),
            Framework::Node => notes.push(
                "use node's runner and assertions: `const test = require('node:test')` and \
                 `const assert = require('node:assert')` (or their `import` forms)"
                    .into(),
            ),
            Framework::Mocha => notes
                .push("mocha's `describe` and `it` are globals; assert with `node:assert`".into()),
            Framework::Unittest => {
                notes.push("write `unittest.TestCase` classes; pytest is not installed".into())
            }
            Framework::Cargo => notes.push(
                "write `#[test]` functions; a test that expects a panic says so with \
                 `#[should_panic]`"
                    .into(),
            ),
            _ => {}
        }
        ChaosLayout {
            framework: self.framework.as_str().to_string(),
            language: self.language.as_str().to_string(),
            file_name: self.file_name(round),
            import_hint,
            property_library: property.map(|(name, _)| name.to_string()),
            property_setup: property.map(|(_, setup)| setup.to_string()),
            concurrency: None,
            notes,
        }
    }

    /// How the file imports the target, and what else that needs saying.
    fn import(&self) -> (String, Vec<String>) {
        let stem = self
            .target
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("target");
        match self.language {
            Language::Python => (
                format!("import {stem}  (or `from {stem} import ...`)"),
                vec![format!(
                    "the target's directory is on sys.path, so `{stem}` imports as a top-level module"
                )],
            ),
            Language::Rust => {
                let (lib, package) = self
                    .krate
                    .as_ref()
                    .map_or((stem, stem), |k| (k.lib.as_str(), k.package.as_str()));
                (
                    format!("use {lib}::...;  (the paths its own integration tests use)"),
                    vec![format!(
                        "your file is compiled as an integration test of the crate `{package}` \
                         (as if in its `tests/` directory): only its public items are reachable, \
                         and no crate but std, `{lib}` and the property library"
                    )],
                )
            }
            Language::JavaScript | Language::TypeScript => {
                let esm = self.is_esm();
                let spec = self.spec_from(&self.dir);
                let hint = if esm {
                    format!("import {{ ... }} from '{spec}';")
                } else {
                    format!("const {{ ... }} = require('{spec}');")
                };
                (
                    hint,
                    vec![format!(
                        "the path is relative to the session folder your file is saved in; \
                         write it exactly so ({} imports, as the unit tests use)",
                        if esm { "ES module" } else { "CommonJS" }
                    )],
                )
            }
        }
    }

    /// The module specifier of the target from a file in `dir` (JavaScript, TypeScript).
    fn spec_from(&self, dir: &Path) -> String {
        let relative = relative_path(dir, &self.target);
        match (self.is_esm(), self.language) {
            // Node's ESM resolution needs the extension; TypeScript tools resolve without one.
            (true, Language::JavaScript) => relative,
            _ => strip_extension(&relative),
        }
    }

    /// A Chaos file's text as it must read from a file in `dir`: its imports of the target,
    /// relative to the session folder, rewritten relative to `dir` (Python and Rust import by
    /// name: unchanged).
    pub fn rehome(&self, suite: &str, dir: &Path) -> String {
        if matches!(self.language, Language::Python | Language::Rust) {
            return suite.to_string();
        }
        let (from, to) = (self.spec_from(&self.dir), self.spec_from(dir));
        suite
            .replace(&format!("'{from}'"), &format!("'{to}'"))
            .replace(&format!("\"{from}\""), &format!("\"{to}\""))
    }

    /// ES module imports: TypeScript, `.mjs`, a unit test file that imports, or a package of
    /// `"type": "module"`.
    fn is_esm(&self) -> bool {
        if self.language == Language::TypeScript
            || self.target.extension().is_some_and(|e| e == "mjs")
        {
            return true;
        }
        if let Some(tests) = &self.unit_tests {
            let imports = tests.lines().any(|l| l.trim_start().starts_with("import "));
            let requires = tests.contains("require(");
            if imports != requires {
                return imports;
            }
        }
        std::fs::read_to_string(self.cwd.join("package.json"))
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .is_some_and(|p| p["type"] == "module")
    }
}

/// `to` relative to the directory `from`, `/`-separated, starting with `./` or `../`.
fn relative_path(from: &Path, to: &Path) -> String {
    let from: Vec<Component> = from.components().collect();
    let to_parts: Vec<Component> = to.components().collect();
    let common = from
        .iter()
        .zip(&to_parts)
        .take_while(|(a, b)| a == b)
        .count();
    let mut parts: Vec<String> = vec!["..".into(); from.len() - common];
    parts.extend(
        to_parts[common..]
            .iter()
            .map(|c| c.as_os_str().to_string_lossy().into_owned()),
    );
    let joined = parts.join("/");
    if joined.starts_with("..") {
        joined
    } else {
        format!("./{joined}")
    }
}

fn strip_extension(path: &str) -> String {
    match path.rsplit_once('.') {
        Some((stem, ext)) if !ext.contains('/') && !stem.ends_with('.') => stem.to_string(),
        _ => path.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn placement(framework: Framework, target: &str, tests: Option<&str>) -> Placement {
        Placement {
            framework,
            language: Language::of_file(Path::new(target)).expect("a language"),
            cwd: PathBuf::from("/p"),
            target: PathBuf::from(target),
            dir: PathBuf::from("/p/.ralph/session-1/chaos"),
            unit_tests: tests.map(str::to_string),
            krate: None,
        }
    }

    #[test]
    fn each_framework_gets_a_test_file_name_and_an_import_from_the_session_folder() {
        let py = placement(Framework::Pytest, "/p/median.py", None);
        assert_eq!(py.file_name(2), "test_chaos_round_2.py");
        assert!(py.layout(1, None).import_hint.starts_with("import median"));
        let cjs = placement(
            Framework::Jest,
            "/p/src/median.js",
            Some("const { median } = require('../src/median');"),
        );
        assert_eq!(cjs.file_name(1), "chaos_round_1.test.js");
        assert_eq!(
            cjs.layout(1, None).import_hint,
            "const { ... } = require('../../../src/median');"
        );
        let ts = placement(Framework::Vitest, "/p/src/median.ts", None);
        assert_eq!(ts.file_name(1), "chaos_round_1.test.ts");
        assert_eq!(
            ts.layout(1, None).import_hint,
            "import { ... } from '../../../src/median';"
        );
        let esm = placement(
            Framework::Node,
            "/p/src/median.js",
            Some("import { median } from '../src/median.js';"),
        );
        assert_eq!(
            esm.layout(1, None).import_hint,
            "import { ... } from '../../../src/median.js';"
        );
    }

    #[test]
    fn a_kept_file_imports_the_target_from_where_it_lands() {
        let cjs = placement(Framework::Jest, "/p/src/median.js", None);
        let suite = "const { median } = require('../../../src/median');\n";
        assert_eq!(
            cjs.rehome(suite, Path::new("/p/test")),
            "const { median } = require('../src/median');\n"
        );
        let py = placement(Framework::Pytest, "/p/median.py", None);
        assert_eq!(
            py.rehome("import median\n", Path::new("/p/tests")),
            "import median\n"
        );
    }

    #[test]
    fn relative_paths() {
        assert_eq!(
            relative_path(Path::new("/a/b/c"), Path::new("/a/x.js")),
            "../../x.js"
        );
        assert_eq!(
            relative_path(Path::new("/a"), Path::new("/a/b/x.js")),
            "./b/x.js"
        );
    }
}
