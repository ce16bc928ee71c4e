//! The node plan of a `package.json`: the test tool its `test` script runs (or its dependencies
//! name), called through `npm test` when the report flags can be appended to the script, else
//! directly through `npx`; the flags or `NODE_OPTIONS` that make each tool write its report.

use std::path::Path;

use super::command::{custom_plan, report_file, shell_quote};
use crate::runner::language::Language;
use crate::runner::plan::{Framework, ReportSpec, TestPlan};
use crate::runner::report::ReportFormat;

pub(super) const NPM_COMMAND: &str = "npm test";

/// How a node tool is started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Invocation {
    /// `npm test -- <report flags>`: the project's script is one call of the tool, which gets the
    /// flags appended (its own arguments, `pretest` and the rest of npm's set-up are kept).
    NpmTest,
    /// `npx --no-install <tool> <report flags>`: the tool named by the dependencies, or by a
    /// script the flags cannot be appended to (`jest | tee log`, `jest && eslint .`).
    Npx,
}

/// The node plan of the `package.json` in `dir`, if it has tests: a `test` script (npm's
/// placeholder does not count) or jest, vitest or mocha among its dependencies.
pub(super) fn node_plan(
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

pub(super) fn node_tool_plan(
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

/// A `scripts.test` that is not npm's placeholder (`echo "Error: no test specified" && exit 1`).
fn is_real_script(script: &str) -> bool {
    !script.trim().is_empty() && !script.contains("no test specified")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::detect::{detect_plans_with, DetectError, Probe};
    use crate::testkit::plans::{
        found, options, package, plans, project, real, report_path, write,
    };

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

    /// Asserts that the first plan for `target` in `root` runs `framework` with a command that
    /// begins `start`; `case` names the case on failure.
    fn assert_runs(root: &Path, target: &str, framework: Framework, start: &str, case: &str) {
        let plan = &plans(root, target)[0];
        assert_eq!(plan.framework, framework, "{case}");
        assert!(plan.command.starts_with(start), "{case}: {}", plan.command);
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
            let start = "npx --no-install jest --json --outputFile=";
            assert_runs(tmp.path(), "src/sum.js", Framework::Jest, start, script);
        }
        // The tool last, after a build step: the flags are appended to it.
        package(tmp.path(), r#"{"scripts":{"test":"tsc -p . && mocha"}}"#);
        let start = "npm test --silent -- --reporter json --reporter-option output=";
        assert_runs(
            tmp.path(),
            "src/sum.js",
            Framework::Mocha,
            start,
            "tsc then mocha",
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
        let start = "npx --no-install mocha --reporter json --reporter-option output=";
        assert_runs(
            tmp.path(),
            "lib/a.js",
            Framework::Mocha,
            start,
            "devDependencies",
        );
        package(tmp.path(), r#"{"dependencies":{"vitest":"5"}}"#);
        let start = "npx --no-install vitest run --reporter=json";
        assert_runs(
            tmp.path(),
            "lib/a.js",
            Framework::Vitest,
            start,
            "dependencies",
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
}
