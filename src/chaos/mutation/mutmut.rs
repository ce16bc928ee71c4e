//! mutmut (3.8 or later): configured by a `[mutmut]` section written into the scratch copy's
//! `setup.cfg` (a `[tool.mutmut]` table of the project's is renamed in the copy, so it does not
//! take precedence), run once on the mutants of the functions the changed lines touch (by name
//! pattern; mutmut mutates functions only) or on the survivors by name. Its results are read
//! from `mutants/<file>.meta` (exit code per mutant), and the line of each mutant from the
//! trampolined copy (`.spans`), compared with the function's original; mutants outside the
//! changed lines are left out.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::Path;

use ralph_actors::ports::runner::RunnerError;
use ralph_actors::schema::mutation::{Mutant, MutantStatus, MutationRun};
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::job::{in_lines, source_line, supervised, tail, Called, Job};
use super::scratch::Scratch;

/// The installed mutmut's `(major, minor)`, when `python3` (from `cwd`) has it. Read from the
/// package's metadata: importing mutmut reads its configuration, which fails outside a project.
pub(super) fn version(cwd: &Path) -> Option<(u32, u32)> {
    let mut python = std::process::Command::new("python3");
    python
        .args([
            "-c",
            "import importlib.metadata as m; print(m.version('mutmut'))",
        ])
        .current_dir(cwd);
    let out = crate::process::probe::output(python, crate::process::probe::LIMIT).ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut parts = text.trim().split('.').map(|p| p.parse::<u32>().ok());
    Some((parts.next()??, parts.next()??))
}

/// Where Chaos's files are put in the copy.
const CHAOS_DIR: &str = "ralph_chaos_tests";

#[derive(Deserialize)]
struct Meta {
    exit_code_by_key: BTreeMap<String, Option<i32>>,
}

#[derive(Deserialize)]
struct Spans {
    spans: BTreeMap<String, [usize; 2]>,
}

pub(super) async fn run(
    job: &Job<'_>,
    scratch: &Scratch,
    cancel: CancellationToken,
) -> Result<MutationRun, RunnerError> {
    let (cwd, relative) = job.in_copy(scratch);
    // Chaos's files go where pytest's discovery finds them: not under the hidden `.ralph`,
    // which it never enters and whose files it drops when a parent directory is also named.
    let chaos_dir = cwd.join(CHAOS_DIR);
    let mut suites = Vec::new();
    for suite in &job.suites {
        let name = suite.file_name().unwrap_or_default();
        std::fs::create_dir_all(&chaos_dir)
            .and_then(|_| std::fs::copy(suite, chaos_dir.join(name)))
            .map_err(|e| RunnerError::Internal(format!("cannot copy {}: {e}", suite.display())))?;
        suites.push(format!("{CHAOS_DIR}/{}", name.to_string_lossy()));
        // The interleaving harness a concurrency test imports comes along with it.
        let harness = suite.with_file_name(crate::chaos::interleave::PY_MODULE);
        if harness.is_file() && !chaos_dir.join(crate::chaos::interleave::PY_MODULE).exists() {
            std::fs::copy(
                &harness,
                chaos_dir.join(crate::chaos::interleave::PY_MODULE),
            )
            .map_err(|e| {
                RunnerError::Internal(format!("cannot copy {}: {e}", harness.display()))
            })?;
        }
    }
    configure(&cwd, &relative, &suites)
        .map_err(|e| RunnerError::Internal(format!("cannot configure mutmut in the copy: {e}")))?;
    // mutmut puts its copy of the sources on the path itself; the variables passed on are the
    // property library's (a path of the mutated directory would shadow the test modules).
    let mut env = job.env.clone();
    env.push(("NO_COLOR".into(), "1".into()));

    // The mutants to run, by name or by pattern: the survivors asked for, else every mutant of
    // the functions the changed lines touch (mutmut mutates functions only), else all.
    let whole = job.request.only.is_empty() && job.request.lines.is_empty();
    let names: Vec<String> = match job.request.only.is_empty() {
        false => job.request.only.iter().map(|m| m.id.clone()).collect(),
        true if whole => Vec::new(),
        true => {
            let source = std::fs::read_to_string(cwd.join(&relative)).map_err(|e| {
                RunnerError::Internal(format!("cannot read {relative} in the copy: {e}"))
            })?;
            functions(&source)
                .into_iter()
                .filter(|(first, last, _)| {
                    job.request
                        .lines
                        .iter()
                        .any(|[a, b]| a <= last && b >= first)
                })
                .map(|(_, _, name)| format!("*.{name}__mutmut_*"))
                .collect()
        }
    };
    if names.is_empty() && !whole {
        return Ok(MutationRun {
            tool: "mutmut".into(),
            file: String::new(),
            mutants: Vec::new(),
            duration_ms: 0,
        });
    }
    let mut args: Vec<OsString> = vec!["run".into()];
    args.extend(names.iter().map(OsString::from));
    mutmut(&cwd, args, &env, job, &cancel).await?;
    let only: Vec<&str> = job.request.only.iter().map(|m| m.id.as_str()).collect();
    let mutants = read(&cwd, &relative)?
        .into_iter()
        .filter(|m| match only.is_empty() {
            true => m.status != MutantStatus::Pending && in_lines(&job.request.lines, m.line),
            false => only.contains(&m.id.as_str()),
        })
        .collect();
    Ok(MutationRun {
        tool: "mutmut".into(),
        file: String::new(),
        mutants,
        duration_ms: 0,
    })
}

async fn mutmut(
    cwd: &Path,
    args: Vec<OsString>,
    env: &[(String, String)],
    job: &Job<'_>,
    cancel: &CancellationToken,
) -> Result<(), RunnerError> {
    let mut all: Vec<OsString> = vec!["-m".into(), "mutmut".into()];
    all.extend(args);
    let (code, output) = supervised(
        "python3",
        all,
        cwd,
        env.to_vec(),
        job,
        cancel,
        Called::quoted("mutmut"),
    )
    .await?;
    match code {
        Some(0) => Ok(()),
        code => Err(RunnerError::Internal(format!(
            "mutmut failed (exit {}): {}",
            code.map_or("by a signal".into(), |c| c.to_string()),
            tail(&output)
        ))),
    }
}

/// Writes the `[mutmut]` section: the target to mutate, the tests to run (the project's as
/// pytest finds them, and Chaos's files), and every other file of the copy to copy along.
fn configure(cwd: &Path, target: &str, suites: &[String]) -> std::io::Result<()> {
    let pyproject = cwd.join("pyproject.toml");
    if let Ok(text) = std::fs::read_to_string(&pyproject) {
        if text.contains("[tool.mutmut]") {
            std::fs::write(
                &pyproject,
                text.replace("[tool.mutmut]", "[tool.mutmut-project]"),
            )?;
        }
    }
    // mutmut copies the files it mutates; everything else the tests import comes along by
    // these (top-level entries: it copies a directory whole, a nested file not at all).
    let mut also_copy = Vec::new();
    for entry in std::fs::read_dir(cwd)?.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !["mutants", "setup.cfg", target].contains(&name.as_str()) {
            also_copy.push(name);
        }
    }
    also_copy.sort();
    let cfg = cwd.join("setup.cfg");
    let existing = std::fs::read_to_string(&cfg)
        .unwrap_or_default()
        .replace("[mutmut]", "[mutmut-project]");
    let list =
        |items: &[String]| -> String { items.iter().map(|i| format!("\n    {i}")).collect() };
    let mut section = format!(
        "\n[mutmut]\nsource_paths ={}\nalso_copy ={}\n",
        list(&[target.to_string()]),
        list(&also_copy)
    );
    if !suites.is_empty() {
        // The whole copy, past a `testpaths` setting that would leave Chaos's files out.
        section.push_str("pytest_add_cli_args_test_selection =\n    .\n");
    }
    std::fs::write(&cfg, format!("{existing}{section}"))
}

/// Every mutant mutmut generated for the target, with its status and line.
fn read(cwd: &Path, target: &str) -> Result<Vec<Mutant>, RunnerError> {
    let mutants_dir = cwd.join("mutants");
    let load = |name: String| -> Result<String, RunnerError> {
        std::fs::read_to_string(mutants_dir.join(&name))
            .map_err(|e| RunnerError::Internal(format!("mutmut left no mutants/{name}: {e}")))
    };
    let meta: Meta = serde_json::from_str(&load(format!("{target}.meta"))?).map_err(|e| {
        RunnerError::Internal(format!("mutmut's {target}.meta cannot be read: {e}"))
    })?;
    let spans: Spans = serde_json::from_str(&load(format!("{target}.spans"))?).map_err(|e| {
        RunnerError::Internal(format!("mutmut's {target}.spans cannot be read: {e}"))
    })?;
    let trampolined = load(target.to_string())?;
    let copy: Vec<&str> = trampolined.lines().collect();
    let original = std::fs::read_to_string(cwd.join(target))
        .map_err(|e| RunnerError::Internal(format!("cannot read {target} in the copy: {e}")))?;
    let source: Vec<&str> = original.lines().collect();
    let span_lines = |[a, b]: [usize; 2]| -> &[&str] {
        copy.get(a.saturating_sub(1)..b.min(copy.len()))
            .unwrap_or(&[])
    };
    let mut mutants = Vec::new();
    for (key, code) in meta.exit_code_by_key {
        let name = key.rsplit_once('.').map_or(key.as_str(), |(_, n)| n);
        let Some((function, _)) = name.rsplit_once("__mutmut_") else {
            continue;
        };
        let (Some(mutant), Some(orig)) = (
            spans.spans.get(name),
            spans.spans.get(&format!("{function}__mutmut_orig")),
        ) else {
            continue;
        };
        let (mutant, orig) = (span_lines(*mutant), span_lines(*orig));
        // The `def` lines differ by name; the first other line that differs is the mutant's.
        let offset = mutant
            .iter()
            .zip(orig)
            .skip(1)
            .position(|(m, o)| m != o)
            .map_or(0, |i| i + 1);
        let start = def_line(&source, function, orig.first().copied().unwrap_or(""));
        let line = start + offset as u32;
        mutants.push(Mutant {
            id: key.clone(),
            mutator: "mutmut".into(),
            line,
            original: source_line(&source, line),
            replacement: mutant.get(offset).map(|l| l.trim().to_string()),
            status: status(code),
        });
    }
    mutants.sort_by_key(|m| m.line);
    Ok(mutants)
}

/// The functions and methods of a Python source, as mutmut names them (`x_median`,
/// `xǁStackǁpush`), with their first and last lines (1-based). Nested functions are part of
/// theirs; code outside functions is not mutated by mutmut and not listed.
fn functions(source: &str) -> Vec<(u32, u32, String)> {
    let mut found = Vec::new();
    let mut classes: Vec<(usize, String)> = Vec::new();
    // The function being read: its indentation, first line, name.
    let mut open: Option<(usize, u32, String)> = None;
    let mut last_code = 0u32;
    for (i, line) in source.lines().enumerate() {
        let n = i as u32 + 1;
        let text = line.trim_start();
        if text.is_empty() || text.starts_with('#') {
            continue;
        }
        let indent = line.len() - text.len();
        if let Some((fi, first, name)) = open.take() {
            if indent > fi {
                open = Some((fi, first, name));
                last_code = n;
                continue;
            }
            found.push((first, last_code, name));
        }
        last_code = n;
        classes.retain(|(ci, _)| *ci < indent);
        let def = text
            .strip_prefix("async def ")
            .or_else(|| text.strip_prefix("def "));
        let name = |rest: &str| -> String {
            rest.split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .next()
                .unwrap_or("")
                .to_string()
        };
        if let Some(rest) = text.strip_prefix("class ") {
            classes.push((indent, name(rest)));
        } else if let Some(rest) = def {
            let mangled = match classes.last() {
                Some((_, class)) => format!("xǁ{class}ǁ{}", name(rest)),
                None if indent == 0 => format!("x_{}", name(rest)),
                None => continue,
            };
            open = Some((indent, n, mangled));
        }
    }
    if let Some((_, first, name)) = open {
        found.push((first, last_code, name));
    }
    found
}

/// The line (1-based) where `function` (mutmut's mangled name: `x_median`, `xǁStackǁpush`) is
/// defined in `source`, found by its `def` line as mutmut copied it (`orig_def`).
fn def_line(source: &[&str], function: &str, orig_def: &str) -> u32 {
    let real = function
        .rsplit('ǁ')
        .next()
        .filter(|_| function.contains('ǁ'))
        .unwrap_or_else(|| function.strip_prefix("x_").unwrap_or(function));
    let wanted = orig_def.replace(&format!("{function}__mutmut_orig"), real);
    let wanted = wanted.trim();
    source
        .iter()
        .position(|l| l.trim() == wanted)
        .or_else(|| {
            source.iter().position(|l| {
                let l = l.trim_start();
                l.starts_with(&format!("def {real}("))
                    || l.starts_with(&format!("async def {real}("))
            })
        })
        .map_or(1, |i| i as u32 + 1)
}

/// mutmut's exit codes (its `status_by_exit_code`) as the schema's statuses.
fn status(code: Option<i32>) -> MutantStatus {
    match code {
        Some(1 | 3) => MutantStatus::Killed,
        Some(0) => MutantStatus::Survived,
        Some(5 | 33) => MutantStatus::NoCoverage,
        Some(24 | -24 | 36 | 152 | 255) => MutantStatus::Timeout,
        Some(34) => MutantStatus::Ignored,
        Some(37) => MutantStatus::CompileError,
        // A crash (segfault, killed) is a test noticing the mutant.
        Some(-11 | -9) => MutantStatus::Killed,
        None => MutantStatus::Pending,
        Some(_) => MutantStatus::RuntimeError,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mutated_function_is_found_by_its_def_line() {
        let source = ["import math", "", "def median(values):", "    return 1"];
        assert_eq!(
            def_line(&source, "x_median", "def x_median__mutmut_orig(values):"),
            3
        );
        let class = ["class Stack:", "    def push(self, x):", "        pass"];
        assert_eq!(
            def_line(
                &class,
                "xǁStackǁpush",
                "    def xǁStackǁpush__mutmut_orig(self, x):"
            ),
            2
        );
    }

    #[test]
    fn functions_are_named_as_mutmut_names_them() {
        let source = "import os\n\ndef median(xs):\n    def key(x):\n        return x\n\n    return xs\n\nclass Stack:\n    def push(self, x):\n        pass\n\n    async def pop(self):\n        return 1\nX = 1\n";
        assert_eq!(
            functions(source),
            vec![
                (3, 7, "x_median".to_string()),
                (10, 11, "xǁStackǁpush".to_string()),
                (13, 14, "xǁStackǁpop".to_string()),
            ]
        );
    }

    #[test]
    fn exit_codes_read_as_the_schema_s_statuses() {
        assert_eq!(status(Some(1)), MutantStatus::Killed);
        assert_eq!(status(Some(0)), MutantStatus::Survived);
        assert_eq!(status(Some(33)), MutantStatus::NoCoverage);
        assert_eq!(status(Some(36)), MutantStatus::Timeout);
        assert_eq!(status(None), MutantStatus::Pending);
    }
}
