//! Mutation testing of the target, for Chaos: the language's tool (StrykerJS for JavaScript
//! and TypeScript, mutmut for Python, cargo-mutants for Rust) runs in a scratch copy of the project, never in the
//! user's tree, so a killed run cannot leave a mutant behind; its results are read into the
//! one schema ([`MutationRun`]).
//!
//! - `scratch`: the copy (the project's files as git sees them, its `node_modules` linked, the
//!   Chaos files asked for);
//! - `job`: a run's inputs, and running a tool's command under the run's limits;
//! - `stryker`, `mutmut`, `cargo_mutants`: each tool's configuration, run and report.
//!
//! [`check_tool`] answers before a run starts whether the tool is installed, with the command
//! that installs it.

mod cargo_mutants;
mod job;
mod mutmut;
mod scratch;
mod stryker;

use std::path::{Path, PathBuf};

use ralph_actors::ports::runner::RunnerError;
use ralph_actors::schema::mutation::MutationRun;
use tokio_util::sync::CancellationToken;

use crate::runner::language::Language;

pub use job::Job;
pub use scratch::Scratch;

/// The mutation tool of a language, as found on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tool {
    /// StrykerJS's `stryker` executable.
    Stryker(PathBuf),
    /// mutmut 3.8 or later, as `python3 -m mutmut`.
    Mutmut,
    /// cargo-mutants, as `cargo mutants`.
    CargoMutants,
}

/// The tool for `language`, looked for from `cwd` (the unit tests' directory): StrykerJS in the
/// project's `node_modules` or on `PATH`; mutmut importable by `python3`. `Err` names what to
/// install.
pub fn find_tool(language: Language, cwd: &Path) -> Result<Tool, String> {
    match language {
        Language::JavaScript | Language::TypeScript => {
            let local = std::path::absolute(cwd).ok().and_then(|cwd| {
                cwd.ancestors()
                    .map(|d| d.join("node_modules/.bin/stryker"))
                    .find(|p| p.is_file())
            });
            let found = local.or_else(|| job::on_path("stryker"));
            found.map(Tool::Stryker).ok_or_else(|| {
                "mutation testing of JavaScript and TypeScript needs StrykerJS: \
                 npm install --save-dev @stryker-mutator/core (or npm install -g @stryker-mutator/core)"
                    .to_string()
            })
        }
        Language::Python => match mutmut::version(cwd) {
            Some((major, minor)) if (major, minor) >= (3, 8) => Ok(Tool::Mutmut),
            Some((major, minor)) => Err(format!(
                "mutation testing of Python needs mutmut 3.8 or later (found {major}.{minor}): pip install --upgrade 'mutmut>=3.8'"
            )),
            None => Err(
                "mutation testing of Python needs mutmut: pip install 'mutmut>=3.8'".to_string(),
            ),
        },
        Language::Rust => cargo_mutants::find()
            .map(|_| Tool::CargoMutants)
            .ok_or_else(|| {
                "mutation testing of Rust needs cargo-mutants: cargo install --locked cargo-mutants"
                    .to_string()
            }),
    }
}

/// Whether the mutation tool for `target` is there; `Err` says what to install.
pub fn check_tool(target: &Path, cwd: &Path) -> Result<(), String> {
    match Language::of_file(target) {
        Some(language) => find_tool(language, cwd).map(|_| ()),
        None => Ok(()),
    }
}

/// Runs `job`'s tool in a scratch copy of the project.
pub async fn run(job: Job<'_>, cancel: CancellationToken) -> Result<MutationRun, RunnerError> {
    // mutmut's version was checked as the run started (`check_tool`); a Python start-up less.
    let tool = match job.language {
        Language::Python => Tool::Mutmut,
        language => find_tool(language, job.cwd).map_err(RunnerError::Setup)?,
    };
    let scratch = Scratch::create(job.root, job.cwd, &job.suites).map_err(|e| {
        RunnerError::Internal(format!("cannot copy the project for mutation testing: {e}"))
    })?;
    let started = std::time::Instant::now();
    let mut run = match tool {
        Tool::Stryker(bin) => stryker::run(&bin, &job, &scratch, cancel).await?,
        Tool::Mutmut => mutmut::run(&job, &scratch, cancel).await?,
        Tool::CargoMutants => {
            let krate = job.krate.ok_or_else(|| {
                RunnerError::Internal("a Rust target's crate was not read".into())
            })?;
            cargo_mutants::run(&job, krate, &scratch, cancel).await?
        }
    };
    run.duration_ms = started.elapsed().as_millis() as u64;
    run.file = job
        .target
        .strip_prefix(job.root)
        .unwrap_or(job.target)
        .to_string_lossy()
        .into_owned();
    Ok(run)
}
