//! cargo-mutants: its mutants listed first (`--list --json`, no build), those on the changed
//! lines (or the survivors asked for again) chosen by name (`--re`), then tested in place in
//! the scratch copy with the crate's own tests plus Chaos's files, copied into the crate's
//! `tests/` there. Its `outcomes.json` is read into the one schema: caught is killed, missed
//! survived, a timeout stays a timeout (counted as detected), an unviable mutant a compile error.
//!
//! cargo-mutants names each mutant `file:line:column: description`; the id is the name without
//! the file, unique in a run and stable while the fix's lines stay where they are.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use ralph_actors::ports::runner::RunnerError;
use ralph_actors::schema::mutation::{Mutant, MutantStatus, MutationRun};
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::job::{on_path, report_text, source_line, supervised, tail, Called, Job};

/// The listing is read whole: a JSON array of every mutant of the file with its diff, about a
/// kilobyte each (a file of 30 small functions lists about 200).
const LISTING_OUTPUT: usize = 64 * 1024 * 1024;
use super::scratch::Scratch;
use crate::chaos::cargo::RustCrate;
use crate::chaos::property;
use crate::runner::language::Language;

#[derive(Debug, Clone, Deserialize)]
struct Listed {
    name: String,
    genre: String,
    #[serde(default)]
    replacement: Option<String>,
    span: Span,
}

#[derive(Debug, Clone, Deserialize)]
struct Span {
    start: Position,
    end: Position,
}

#[derive(Debug, Clone, Deserialize)]
struct Position {
    line: u32,
}

#[derive(Deserialize)]
struct Outcomes {
    outcomes: Vec<Outcome>,
}

#[derive(Deserialize)]
struct Outcome {
    scenario: Scenario,
    summary: String,
}

#[derive(Deserialize)]
enum Scenario {
    Baseline,
    Mutant(Listed),
}

pub(super) async fn run(
    job: &Job<'_>,
    krate: &RustCrate,
    scratch: &Scratch,
    cancel: CancellationToken,
) -> Result<MutationRun, RunnerError> {
    let tree = scratch.map(&krate.workspace_root);
    let target = scratch.map(job.target);
    let relative = target
        .strip_prefix(&tree)
        .unwrap_or(&target)
        .to_string_lossy()
        .into_owned();
    let out = scratch.aside();
    prepare(job, krate, scratch).map_err(|e| {
        RunnerError::Internal(format!("cannot prepare the copy for cargo-mutants: {e}"))
    })?;
    // The copy builds in a target directory of its own, as cargo-mutants's own copies do: cargo
    // hashes a path package by its path within the workspace, so a copy building in a shared
    // target directory (`CARGO_TARGET_DIR`) would overwrite the user's own crate's artifacts
    // there, or another copy's.
    let mut env = vec![(
        "CARGO_TARGET_DIR".to_string(),
        out.join("target").to_string_lossy().into_owned(),
    )];
    env.extend(job.env.iter().cloned());
    env.extend(
        property::PROPTEST_ENV
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string())),
    );
    let common = |extra: &[&str]| -> Vec<OsString> {
        let mut args: Vec<OsString> = vec!["mutants".into()];
        args.extend(extra.iter().map(OsString::from));
        args.extend(["--no-config", "--colors", "never", "--dir"].map(OsString::from));
        args.push(tree.clone().into_os_string());
        args.push("--file".into());
        args.push(relative.clone().into());
        args
    };
    let (code, listing) = supervised(
        "cargo",
        common(&["--list", "--json"]),
        &tree,
        env.clone(),
        job,
        &cancel,
        Called::read("cargo-mutants --list", LISTING_OUTPUT),
    )
    .await?;
    let listed: Vec<Listed> = serde_json::from_str(listing.trim()).map_err(|e| {
        RunnerError::Internal(format!(
            "cargo-mutants' listing cannot be read ({e}; exit {}): {}",
            code.map_or("by a signal".into(), |c| c.to_string()),
            tail(&listing)
        ))
    })?;
    let chosen: Vec<&Listed> = listed
        .iter()
        .filter(|m| match job.request.only.is_empty() {
            true => overlaps(&job.request.lines, &m.span),
            false => job.request.only.iter().any(|s| s.id == id_of(&m.name)),
        })
        .collect();
    let mut run = MutationRun {
        tool: "cargo-mutants".into(),
        file: String::new(),
        mutants: Vec::new(),
        duration_ms: 0,
    };
    if chosen.is_empty() {
        return Ok(run);
    }
    let names: Vec<String> = chosen.iter().map(|m| regex::escape(&m.name)).collect();
    let pattern = format!("^({})$", names.join("|"));
    let mut args = common(&["--in-place", "--no-shuffle"]);
    args.extend(["--re".into(), OsString::from(pattern), "--output".into()]);
    args.push(out.clone().into_os_string());
    let (code, output) = supervised(
        "cargo",
        args,
        &tree,
        env,
        job,
        &cancel,
        Called::quoted("cargo-mutants"),
    )
    .await?;
    let report = out.join("mutants.out").join("outcomes.json");
    let text = report_text(&report, "cargo-mutants", code, &output)?;
    let outcomes: Outcomes = serde_json::from_str(&text).map_err(|e| {
        RunnerError::Internal(format!("cargo-mutants's outcomes cannot be read: {e}"))
    })?;
    let source = std::fs::read_to_string(&target).unwrap_or_default();
    let lines: Vec<&str> = source.lines().collect();
    for outcome in outcomes.outcomes {
        let mutant = match outcome.scenario {
            Scenario::Baseline if outcome.summary != "Success" => {
                return Err(RunnerError::Internal(format!(
                    "the tests fail in the copy before any mutation, so cargo-mutants tested no mutant: {}",
                    tail(&output)
                )));
            }
            Scenario::Baseline => continue,
            Scenario::Mutant(m) => m,
        };
        let line = mutant.span.start.line;
        run.mutants.push(Mutant {
            id: id_of(&mutant.name),
            mutator: mutant.genre,
            line,
            original: source_line(&lines, line),
            replacement: mutant.replacement,
            status: status_of(&outcome.summary),
        });
    }
    run.mutants.sort_by_key(|m| m.line);
    Ok(run)
}

/// Chaos's files become integration tests of the crate in the copy (`tests/ralph_<file>`), with
/// proptest added to the copy's dev-dependencies when they use it and the crate lacks it; the
/// project's `Cargo.lock` is copied even where git ignores it, so the copy builds the versions
/// the project is locked to.
fn prepare(job: &Job<'_>, krate: &RustCrate, scratch: &Scratch) -> std::io::Result<()> {
    let tests = scratch.map(&krate.dir).join("tests");
    let mut proptest = false;
    for suite in &job.suites {
        let text = std::fs::read_to_string(suite)?;
        proptest |= property::uses_library(Language::Rust, &text);
        let name = suite
            .file_name()
            .map(|n| format!("ralph_{}", n.to_string_lossy()))
            .unwrap_or_else(|| "ralph_chaos.rs".into());
        std::fs::create_dir_all(&tests)?;
        std::fs::write(tests.join(name), text)?;
    }
    if proptest && krate.proptest.is_none() {
        let manifest = scratch.map(&krate.dir).join("Cargo.toml");
        let mut doc: toml_edit::DocumentMut = std::fs::read_to_string(&manifest)?
            .parse()
            .map_err(std::io::Error::other)?;
        let dev = doc
            .entry("dev-dependencies")
            .or_insert_with(|| toml_edit::Item::Table(toml_edit::Table::new()));
        dev["proptest"] = toml_edit::value(krate.proptest_requirement());
        std::fs::write(&manifest, doc.to_string())?;
    }
    let lock: PathBuf = krate.workspace_root.join("Cargo.lock");
    let there = scratch.map(&lock);
    if lock.is_file() && !there.exists() {
        std::fs::copy(&lock, there)?;
    }
    Ok(())
}

/// `src/lib.rs:9:27: replace % with / in median` → `9:27: replace % with / in median`.
fn id_of(name: &str) -> String {
    let mut parts = name.splitn(2, ".rs:");
    match (parts.next(), parts.next()) {
        (Some(_), Some(rest)) => rest.to_string(),
        _ => name.to_string(),
    }
}

/// Whether a mutant's span meets one of the changed line ranges (all lines when none given).
fn overlaps(lines: &[[u32; 2]], span: &Span) -> bool {
    lines.is_empty()
        || lines
            .iter()
            .any(|[a, b]| span.start.line <= *b && *a <= span.end.line)
}

fn status_of(summary: &str) -> MutantStatus {
    match summary {
        "CaughtMutant" => MutantStatus::Killed,
        "MissedMutant" => MutantStatus::Survived,
        "Timeout" => MutantStatus::Timeout,
        "Unviable" => MutantStatus::CompileError,
        _ => MutantStatus::RuntimeError,
    }
}

/// `cargo-mutants` on `PATH` or in cargo's own `bin` (`$CARGO_HOME/bin`, `~/.cargo/bin`), where
/// `cargo install` puts it and where `cargo mutants` finds it.
pub(super) fn find() -> Option<PathBuf> {
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cargo")));
    on_path("cargo-mutants").or_else(|| {
        cargo_home
            .map(|h| h.join("bin").join("cargo-mutants"))
            .filter(|p| p.is_file())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(name: &str, start: u32, end: u32) -> Listed {
        Listed {
            name: name.into(),
            genre: "BinaryOperator".into(),
            replacement: Some("/".into()),
            span: Span {
                start: Position { line: start },
                end: Position { line: end },
            },
        }
    }

    #[test]
    fn a_mutant_is_named_without_its_file_and_chosen_by_its_span() {
        assert_eq!(
            id_of("src/lib.rs:9:27: replace % with / in median"),
            "9:27: replace % with / in median"
        );
        let body = listed(
            "src/lib.rs:3:5: replace median -> Option<f64> with None",
            3,
            13,
        );
        assert!(
            overlaps(&[[9, 9]], &body.span),
            "a whole-body mutant meets line 9"
        );
        assert!(!overlaps(&[[20, 22]], &body.span));
        assert!(overlaps(&[], &body.span));
    }

    #[test]
    fn outcomes_read_into_the_schema() {
        let text = r#"{"outcomes": [
            {"scenario": "Baseline", "summary": "Success"},
            {"scenario": {"Mutant": {"name": "src/lib.rs:9:27: replace % with / in median",
              "genre": "BinaryOperator", "replacement": "/",
              "span": {"start": {"line": 9, "column": 27}, "end": {"line": 9, "column": 28}}}},
             "summary": "MissedMutant"}
        ]}"#;
        let outcomes: Outcomes = serde_json::from_str(text).expect("outcomes");
        assert!(matches!(outcomes.outcomes[0].scenario, Scenario::Baseline));
        assert!(
            matches!(&outcomes.outcomes[1].scenario, Scenario::Mutant(m) if m.span.start.line == 9)
        );
        assert_eq!(status_of("CaughtMutant"), MutantStatus::Killed);
        assert_eq!(status_of("MissedMutant"), MutantStatus::Survived);
        assert_eq!(status_of("Timeout"), MutantStatus::Timeout);
        assert_eq!(status_of("Unviable"), MutantStatus::CompileError);
    }
}
