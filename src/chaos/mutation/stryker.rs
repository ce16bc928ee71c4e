//! StrykerJS: its command test runner (the unit tests' own command, then each Chaos file's),
//! mutating in place in the scratch copy, limited to the changed lines (`mutate:
//! ["file:first-last"]`), its JSON report read back (already the mutation-testing-report-schema).
//!
//! Stryker numbers mutants by position in one run, so a re-run of the survivors (mutated on
//! their lines only) is matched back to them by line, column, mutator and replacement.

use std::path::Path;

use ralph_actors::ports::runner::RunnerError;
use ralph_actors::schema::mutation::{Mutant, MutantStatus, MutationRun};
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::job::{in_lines, report_text, source_line, supervised, Called, Job, PER_MUTANT_GRACE};
use super::scratch::Scratch;

#[derive(Deserialize)]
struct Report {
    files: std::collections::BTreeMap<String, File>,
}

#[derive(Deserialize)]
struct File {
    source: String,
    mutants: Vec<ReportMutant>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ReportMutant {
    mutator_name: String,
    #[serde(default)]
    replacement: Option<String>,
    location: Location,
    status: MutantStatus,
}

#[derive(Deserialize)]
struct Location {
    start: Position,
}

#[derive(Deserialize)]
struct Position {
    line: u32,
    column: u32,
}

pub(super) async fn run(
    bin: &Path,
    job: &Job<'_>,
    scratch: &Scratch,
    cancel: CancellationToken,
) -> Result<MutationRun, RunnerError> {
    let (cwd, relative) = job.in_copy(scratch);
    let lines: Vec<[u32; 2]> = match job.request.only.is_empty() {
        true => job.request.lines.clone(),
        false => job.request.only.iter().map(|m| [m.line, m.line]).collect(),
    };
    let mutate: Vec<String> = match lines.is_empty() {
        true => vec![relative.clone()],
        false => lines
            .iter()
            .map(|[a, b]| format!("{relative}:{a}-{b}"))
            .collect(),
    };
    let mut commands = vec![(job.unit_command)(&cwd)];
    commands.extend(
        job.suites
            .iter()
            .map(|s| (job.suite_command)(&scratch.map(s), &cwd)),
    );
    let aside = scratch.aside();
    let report_file = aside.join("stryker-report.json");
    let config = serde_json::json!({
        "testRunner": "command",
        "commandRunner": { "command": commands.join(" && ") },
        "mutate": mutate,
        "reporters": ["json"],
        "jsonReporter": { "fileName": report_file },
        // The copy is ours: mutating it in place saves a second copy.
        "inPlace": true,
        "tempDirName": aside.join("stryker-tmp"),
        "concurrency": std::thread::available_parallelism().map_or(1, |n| n.get()).min(4),
        "timeoutMS": PER_MUTANT_GRACE.as_millis() as u64,
        "cleanTempDir": true,
        "allowConsoleColors": false,
        "fileLogLevel": "off",
        "logLevel": "warn",
    });
    let config_file = aside.join("stryker.config.json");
    std::fs::write(&config_file, config.to_string())
        .map_err(|e| RunnerError::Internal(format!("cannot write Stryker's configuration: {e}")))?;
    let args = vec!["run".into(), config_file.into_os_string()];
    let (code, output) = supervised(
        bin.as_os_str(),
        args,
        &cwd,
        job.env.clone(),
        job,
        &cancel,
        Called::quoted("StrykerJS"),
    )
    .await?;
    let text = report_text(&report_file, "StrykerJS", code, &output)?;
    let report: Report = serde_json::from_str(&text)
        .map_err(|e| RunnerError::Internal(format!("StrykerJS's report cannot be read: {e}")))?;
    let mut mutants = Vec::new();
    for file in report.files.into_values() {
        let source: Vec<&str> = file.source.lines().collect();
        for m in file.mutants {
            let line = m.location.start.line;
            let column = m.location.start.column;
            if !in_lines(&job.request.lines, line) && job.request.only.is_empty() {
                continue;
            }
            mutants.push(Mutant {
                id: format!("{line}:{column}:{}", m.mutator_name),
                mutator: m.mutator_name,
                line,
                original: source_line(&source, line),
                replacement: m.replacement,
                status: m.status,
            });
        }
    }
    let mutants = match job.request.only.is_empty() {
        true => number(mutants),
        false => rematch(number(mutants), &job.request.only),
    };
    Ok(MutationRun {
        tool: "stryker".into(),
        file: String::new(),
        mutants,
        duration_ms: 0,
    })
}

/// Makes ids unique and stable: `line:column:mutator`, with `#2`, `#3` for the second and
/// third mutant of the same kind at the same place (`true`/`false` of one condition).
fn number(mut mutants: Vec<Mutant>) -> Vec<Mutant> {
    mutants.sort_by(|a, b| (a.line, &a.id, &a.replacement).cmp(&(b.line, &b.id, &b.replacement)));
    let mut seen: std::collections::HashMap<String, u32> = Default::default();
    for m in &mut mutants {
        let n = seen.entry(m.id.clone()).or_default();
        *n += 1;
        if *n > 1 {
            m.id = format!("{}#{n}", m.id);
        }
    }
    mutants
}

/// The mutants of a re-run that are the survivors asked for, under their ids.
fn rematch(found: Vec<Mutant>, only: &[Mutant]) -> Vec<Mutant> {
    only.iter()
        .filter_map(|s| {
            found
                .iter()
                .find(|m| {
                    m.line == s.line
                        && m.mutator == s.mutator
                        && m.replacement == s.replacement
                        && base(&m.id) == base(&s.id)
                })
                .map(|m| Mutant {
                    id: s.id.clone(),
                    ..m.clone()
                })
        })
        .collect()
}

fn base(id: &str) -> &str {
    id.split('#').next().unwrap_or(id)
}
