//! The gates of a run's promise, looked for before it starts and before any model is called:
//! the coverage tool of its tests, and the mutation tool of its language. A gate the config file
//! set whose tool is missing stops the run (exit 2) with what to install; a gate left at its
//! default is `unavailable` instead: said once as the run starts, listed so in the report's
//! `promise`, and the run goes on without it.

use std::path::Path;

use ralph_actors::settings::{RunSettings, Strategy};

use crate::config::Config;
use crate::error::Result;
use crate::runner::coverage::{CoverageError, CoverageTool};
use crate::runner::plan::TestingOptions;
use crate::runner::project::{BuildError, ProjectRunner};

/// The runner of `target`'s tests with coverage gathered when a coverage gate needs it, the
/// gates whose tools are missing taken out of `settings` (into `settings.unavailable`) or
/// refused.
pub(crate) fn build_runner(
    target: &Path,
    root: &Path,
    options: &mut TestingOptions,
    config: &Config,
    settings: &mut RunSettings,
) -> Result<ProjectRunner> {
    let coverage_set = config.success_criteria.coverage_threshold.set;
    let mut runner = match ProjectRunner::build(target, root, options) {
        Err(BuildError::Coverage(e)) if !coverage_set && options.coverage => {
            settings.chaos.coverage_min = None;
            settings.coverage_threshold = None;
            options.coverage = false;
            settings
                .unavailable
                .insert("coverage".into(), missing_coverage(&e));
            ProjectRunner::build(target, root, options)?
        }
        other => other?,
    };
    let totals_only = runner
        .coverage_tools()
        .any(|t| t == CoverageTool::Tarpaulin);
    if settings.chaos.coverage_min.is_some() && totals_only {
        // The changed lines are judged on a report of lines per file; cargo-tarpaulin's is read
        // as totals only. A threshold the config set is judged on each run's total instead.
        match coverage_set {
            true => settings.coverage_threshold = settings.chaos.coverage_min.take(),
            false => {
                settings.chaos.coverage_min = None;
                options.coverage = false;
                settings.unavailable.insert(
                    "coverage".into(),
                    "the changed lines of a Rust target are read from cargo-llvm-cov's report; \
                     cargo-tarpaulin's is read as totals only: run `cargo install cargo-llvm-cov` \
                     and `rustup component add llvm-tools-preview`"
                        .into(),
                );
                runner = ProjectRunner::build(target, root, options)?;
            }
        }
    }
    if settings.chaos.mutation() {
        let cwd = runner.plans().next().map_or(root, |p| p.cwd.as_path());
        if let Err(why) = crate::chaos::mutation::check_tool(target, cwd) {
            let asked = config.success_criteria.mutation_score_min.set
                || config.chaos.strategies.contains(&Strategy::Mutation);
            if asked {
                return Err(BuildError::MutationTool(why).into());
            }
            settings.chaos.mutation_score_min = None;
            settings.unavailable.insert("mutation".into(), why);
        }
    }
    Ok(runner)
}

/// The notes that say, once, which gates are unavailable and why.
pub(crate) fn notes(settings: &RunSettings) -> impl Iterator<Item = String> + '_ {
    settings.unavailable.iter().map(|(gate, why)| {
        format!("the {gate} gate is unavailable, so this run's success will not include it: {why}")
    })
}

/// Why the default coverage gate cannot be measured, without the words of a gate the user set.
fn missing_coverage(e: &CoverageError) -> String {
    match e {
        CoverageError::ToolMissing {
            framework,
            tool,
            install_hint,
        } => format!("{tool} is not installed for {framework}: {install_hint}"),
        CoverageError::Unsupported {
            framework,
            command,
            why,
        } => {
            format!("ralph-loop cannot add coverage to the {framework} command `{command}`: {why}")
        }
        other => other.to_string(),
    }
}
