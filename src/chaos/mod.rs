//! Chaos's test files on disk: [`FsChaosRunner`], the real [`ChaosRunner`]. Each round's file is
//! saved in the session folder (`.ralph/session-<id>/chaos/`), never among the project's own
//! files, and run alone with the project's framework and the same limits, report reading and
//! process-group supervision as the unit tests ([`ProjectRunner`]).
//!
//! - `layout`: which framework runs the files, their names, how they import the target;
//! - `cargo`: a Rust target's crate, and the harness crate its Chaos files build in;
//! - `property`: the property-based testing libraries, installed aside when the project lacks
//!   them;
//! - `interleave`: how concurrency tests run interleavings, and the Python harness for it;
//! - `mutation`: mutation testing (StrykerJS, mutmut, cargo-mutants) in a scratch copy of the
//!   project.

pub mod cargo;
mod interleave;
mod layout;
pub mod mutation;
mod property;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use ralph_actors::policy::adversarial::Counterexample;
use ralph_actors::ports::chaos::{ChaosLayout, ChaosRunner, Covered, MutationRequest};
use ralph_actors::ports::runner::RunnerError;
use ralph_actors::schema::mutation::MutationRun;
use ralph_actors::schema::test_run::{LineHits, TestRun};
use tokio_util::sync::CancellationToken;

use crate::process::groups::ProcessGroups;
use crate::runner::detect;
use crate::runner::language::Language;
use crate::runner::plan::{DependencyCoverage, Framework, TestPlan, TestingOptions};
use crate::runner::project::ProjectRunner;
use cargo::RustCrate;
pub use layout::{framework_for, Placement};

/// Why Chaos cannot attack a target: the run then ends when the unit tests pass, and says why.
#[derive(Debug, thiserror::Error)]
pub enum Unattackable {
    #[error("only Python, JavaScript, TypeScript and Rust targets are attacked")]
    Language,
    #[error(transparent)]
    Crate(#[from] cargo::CrateError),
}

/// Runs Chaos's files for one session.
pub struct FsChaosRunner {
    placement: Placement,
    /// The project root: paths in reports are relative to it.
    root: PathBuf,
    options: TestingOptions,
    /// The unit tests' command as the user gave it (`-t`), if they did: mutation testing runs it.
    unit_command: Option<String>,
    /// Where kept files go (`chaos.keep_tests`): the unit test file's directory, else the
    /// target's.
    test_dir: PathBuf,
    groups: ProcessGroups,
    /// The property library's variables, once it has been made importable.
    property_env: Mutex<Option<Vec<(String, String)>>>,
    /// Installing it failed once: not tried again in this run.
    property_failed: AtomicBool,
}

impl FsChaosRunner {
    /// The runner for `target`, whose unit tests run as `plans`, keeping its files in
    /// `session_dir/chaos`; `Err` says why Chaos cannot attack this target (a language it does
    /// not know, a Rust crate without a library).
    pub fn new(
        target: &Path,
        root: &Path,
        session_dir: &Path,
        plans: &[TestPlan],
        test_file: Option<&Path>,
        options: &TestingOptions,
        groups: ProcessGroups,
    ) -> Result<Self, Unattackable> {
        let unit_tests = test_file.and_then(|f| std::fs::read_to_string(f).ok());
        let (framework, language, cwd) =
            framework_for(plans, target, options).ok_or(Unattackable::Language)?;
        let krate = match language {
            Language::Rust => Some(RustCrate::of(target)?),
            _ => None,
        };
        // Kept files go beside the unit tests; a crate's integration tests are in its `tests/`.
        let test_dir = match &krate {
            Some(k) => k.dir.join("tests"),
            None => test_file
                .and_then(Path::parent)
                .or_else(|| target.parent())
                .unwrap_or(root)
                .to_path_buf(),
        };
        let mut options = options.clone();
        let unit_command = options.command.take();
        // Chaos's files are judged by their tests alone: no coverage, no linter.
        options.coverage = false;
        options.lint = false;
        options.command = None;
        Ok(Self {
            placement: Placement {
                framework,
                language,
                cwd,
                target: target.to_path_buf(),
                dir: session_dir.join("chaos"),
                unit_tests,
                krate,
            },
            root: root.to_path_buf(),
            options,
            unit_command,
            test_dir,
            groups,
            property_env: Mutex::new(None),
            property_failed: AtomicBool::new(false),
        })
    }

    /// The command that runs `file` alone, with the framework's report.
    fn plan(&self, file: &Path, env: Vec<(String, String)>) -> TestPlan {
        self.plan_in(file, env, &self.placement.cwd, &self.options.report_dir)
    }

    /// [`Self::plan`] run from `cwd`, reporting into `report_dir` (a scratch copy's).
    fn plan_in(
        &self,
        file: &Path,
        env: Vec<(String, String)>,
        cwd: &Path,
        report_dir: &Path,
    ) -> TestPlan {
        let p = &self.placement;
        let mut plan = detect::framework_plan(p.framework, Some(p.language), cwd, report_dir);
        let quoted = shell_quote(file);
        plan.command = match p.framework {
            Framework::Pytest => format!("{} -p no:cacheprovider {quoted}", plan.command),
            Framework::Unittest => {
                let dir = file.parent().unwrap_or(file);
                let name = file.file_name().map(|n| n.to_string_lossy().into_owned());
                format!(
                    "python3 -m unittest discover -s {} -p {} -t {}",
                    shell_quote(dir),
                    shell_quote(Path::new(&name.unwrap_or_default())),
                    shell_quote(dir)
                )
            }
            Framework::Jest => format!("{} --runTestsByPath {quoted}", plan.command),
            Framework::Node => format!("node --test {quoted}"),
            // The harness crate beside the file (`cargo::RustCrate::write_harness`) names it
            // as a test target of its stem.
            Framework::Cargo => {
                let manifest = file.with_file_name(cargo::HARNESS_MANIFEST);
                let stem = file.file_stem().map(|s| s.to_string_lossy().into_owned());
                plan.command.replacen(
                    "cargo test ",
                    &format!(
                        "cargo test --manifest-path {} --test {} ",
                        shell_quote(&manifest),
                        stem.unwrap_or_default()
                    ),
                    1,
                )
            }
            _ => format!("{} {quoted}", plan.command),
        };
        if p.language == Language::Python {
            // The target imports as a top-level module, as its own tests import it.
            let mut path: Vec<String> = vec![
                p.target
                    .parent()
                    .unwrap_or(&p.cwd)
                    .to_string_lossy()
                    .into_owned(),
                p.cwd.to_string_lossy().into_owned(),
            ];
            path.extend(
                env.iter()
                    .filter(|(k, _)| k == "PYTHONPATH")
                    .map(|(_, v)| v.clone()),
            );
            if let Ok(existing) = std::env::var("PYTHONPATH") {
                path.push(existing);
            }
            plan.env.push(("PYTHONPATH".into(), path.join(":")));
        }
        if let Some(krate) = &p.krate {
            plan.env.push((
                "CARGO_TARGET_DIR".into(),
                krate.target_dir.to_string_lossy().into_owned(),
            ));
            plan.env.extend(
                property::PROPTEST_ENV
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string())),
            );
        }
        plan
    }

    /// What round `round`'s file (`suite`) needs beside it to run: the harness crate naming it
    /// as its test (Rust), ralph-loop's interleavings harness when it imports it (Python).
    fn ready(&self, round: u32, suite: &str) -> Result<(), RunnerError> {
        if let Some(krate) = &self.placement.krate {
            krate
                .write_harness(
                    &self.placement.dir,
                    &[self.placement.file_name(round)],
                    suite,
                )
                .map_err(|e| {
                    RunnerError::Internal(format!("cannot write Chaos's harness crate: {e}"))
                })?;
        }
        if interleave::uses_harness(self.placement.language, suite) {
            interleave::write_harness(&self.placement.dir).map_err(|e| {
                RunnerError::Internal(format!("cannot write {}: {e}", interleave::PY_MODULE))
            })?;
        }
        Ok(())
    }

    /// The property library's variables, installing it on first need.
    async fn property_env(&self, suite: &str, cancel: &CancellationToken) -> Vec<(String, String)> {
        let language = self.placement.language;
        if !property::uses_library(language, suite) || self.property_failed.load(Ordering::Relaxed)
        {
            return Vec::new();
        }
        if let Some(env) = lock(&self.property_env).clone() {
            return env;
        }
        match property::ensure(
            language,
            &self.placement.cwd,
            &self.placement.dir,
            &self.groups,
            cancel,
        )
        .await
        {
            Ok(env) => {
                *lock(&self.property_env) = Some(env.clone());
                env
            }
            Err(why) => {
                tracing::warn!("chaos: {why}");
                self.property_failed.store(true, Ordering::Relaxed);
                Vec::new()
            }
        }
    }

    /// Round `round`'s file, for a test to be added to it.
    fn read_round(&self, round: u32) -> Result<String, RunnerError> {
        let file = self.placement.file(round);
        std::fs::read_to_string(&file).map_err(file_error("read", &file))
    }

    /// Round `round`'s file as `suite` with `code` appended.
    fn write_round(&self, round: u32, suite: &str, code: &str) -> Result<(), RunnerError> {
        let file = self.placement.file(round);
        let text = format!("{}\n\n{}\n", suite.trim_end(), code.trim_end());
        crate::fsutil::write_atomic(&file, text.as_bytes()).map_err(file_error("write", &file))
    }

    async fn run_file(
        &self,
        round: u32,
        suite: &str,
        cancel: CancellationToken,
    ) -> Result<TestRun, RunnerError> {
        let file = self.placement.file(round);
        self.ready(round, suite)?;
        let env = self.property_env(suite, &cancel).await;
        let plan = self.plan(&file, env);
        let runner = ProjectRunner::new(vec![plan], &self.options, self.placement.target.clone())
            .with_groups(self.groups.clone());
        runner.run_all(cancel).await
    }
}

/// The error of a file that could not be `done` (read, written, saved): its path and why.
fn file_error<'a>(
    done: &'static str,
    file: &'a Path,
) -> impl FnOnce(std::io::Error) -> RunnerError + 'a {
    move |e| RunnerError::Internal(format!("cannot {done} {}: {e}", file.display()))
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn shell_quote(path: &Path) -> String {
    format!("'{}'", path.to_string_lossy().replace('\'', r"'\''"))
}

#[async_trait::async_trait]
impl ChaosRunner for FsChaosRunner {
    fn layout(&self, round: u32) -> ChaosLayout {
        let mut layout = self
            .placement
            .layout(round, property::library(self.placement.language));
        layout.concurrency = Some(interleave::setup(self.placement.language).to_string());
        layout
    }

    async fn run(
        &self,
        round: u32,
        suite: &str,
        cancel: CancellationToken,
    ) -> Result<TestRun, RunnerError> {
        let file = self.placement.file(round);
        let write = || -> std::io::Result<()> {
            std::fs::create_dir_all(&self.placement.dir)?;
            crate::fsutil::write_atomic(&file, suite.as_bytes())
        };
        write().map_err(file_error("save", &file))?;
        self.run_file(round, suite, cancel).await
    }

    async fn rerun(&self, round: u32, cancel: CancellationToken) -> Result<TestRun, RunnerError> {
        let suite = self.suite(round).await.ok_or_else(|| {
            RunnerError::Internal(format!(
                "Chaos's round {round} file is missing: {}",
                self.placement.file(round).display()
            ))
        })?;
        self.run_file(round, &suite, cancel).await
    }

    async fn suite(&self, round: u32) -> Option<String> {
        std::fs::read_to_string(self.placement.file(round)).ok()
    }

    fn path(&self, round: u32) -> String {
        let file = self.placement.file(round);
        file.strip_prefix(&self.root)
            .unwrap_or(&file)
            .to_string_lossy()
            .into_owned()
    }

    async fn regress(
        &self,
        round: u32,
        example: &Counterexample,
    ) -> Result<Option<String>, RunnerError> {
        let p = &self.placement;
        if p.language != Language::Python {
            return Ok(None);
        }
        let suite = self.read_round(round)?;
        let base = format!(
            "test_regression_{}",
            example.function.trim_start_matches("test_")
        );
        let mut name = base.clone();
        let mut k = 1;
        while suite.contains(&format!("def {name}(")) {
            k += 1;
            name = format!("{base}_{k}");
        }
        let code = format!(
            "\ndef {name}():\n    \"\"\"The counterexample Hypothesis found for {f}, replayed as it was.\"\"\"\n    {f}.hypothesis.inner_test({args})\n",
            f = example.function,
            args = example.arguments,
        );
        self.write_round(round, &suite, &code)?;
        Ok(Some(name))
    }

    async fn append(&self, round: u32, code: &str) -> Result<(), RunnerError> {
        let suite = self.read_round(round)?;
        self.write_round(round, &suite, code)
    }

    async fn keep(&self, rounds: Vec<u32>) -> Result<(Vec<String>, Vec<String>), RunnerError> {
        let p = &self.placement;
        // `session-<uuid>`'s first eight hex digits tell one run's files from another's.
        let session = p
            .dir
            .parent()
            .and_then(|d| d.file_name())
            .map(|n| {
                n.to_string_lossy()
                    .trim_start_matches("session-")
                    .chars()
                    .take(8)
                    .collect()
            })
            .unwrap_or_else(|| "ralph".to_string());
        // Asked of the project only when a kept file uses the library.
        let mut has_library = None;
        let (mut kept, mut warnings) = (Vec::new(), Vec::new());
        for round in rounds {
            let Ok(suite) = std::fs::read_to_string(p.file(round)) else {
                warnings.push(format!("Chaos's round {round} file is missing; not kept"));
                continue;
            };
            let name =
                p.file_name(round)
                    .replacen("chaos_round", &format!("chaos_{session}_round"), 1);
            let to = self.test_dir.join(&name);
            let shown = to
                .strip_prefix(&self.root)
                .unwrap_or(&to)
                .to_string_lossy()
                .into_owned();
            if to.exists() {
                warnings.push(format!(
                    "{shown} exists; Chaos's round {round} file was not kept"
                ));
                continue;
            }
            let text = p.rehome(&suite, &self.test_dir);
            std::fs::create_dir_all(&self.test_dir)
                .and_then(|()| crate::fsutil::write_atomic(&to, text.as_bytes()))
                .and_then(|()| match interleave::uses_harness(p.language, &suite) {
                    // Beside the kept file, unless the project has a file of its name.
                    true => interleave::write_harness(&self.test_dir),
                    false => Ok(()),
                })
                .map_err(file_error("write", &to))?;
            if property::uses_library(p.language, &suite)
                && !*has_library.get_or_insert(property::project_has(p.language, &p.cwd).await)
            {
                let library = property::library(p.language).map_or("its property library", |l| l.0);
                warnings.push(format!(
                    "{shown} uses {library}, which the project does not have: add it to its test dependencies"
                ));
            }
            kept.push(shown);
        }
        Ok((kept, warnings))
    }

    async fn cover(
        &self,
        rounds: Vec<u32>,
        cancel: CancellationToken,
    ) -> Result<Covered, RunnerError> {
        let mut options = self.options.clone();
        options.coverage = true;
        // Apart from the unit tests' coverage files, which the last unit run's numbers were
        // read from.
        options.report_dir = options.report_dir.join("chaos-coverage");
        // A Rust file runs in the harness crate: the user's crate is its dependency.
        options.coverage_of = self.placement.krate.as_ref().map(|k| DependencyCoverage {
            package: k.package.clone(),
            manifest: self.placement.dir.join(cargo::HARNESS_MANIFEST),
        });
        let mut hits: Option<LineHits> = None;
        let mut duration_ms = 0;
        for round in rounds {
            let suite = self.suite(round).await.unwrap_or_default();
            // The harness crate names one round's file at a time.
            self.ready(round, &suite)?;
            let env = self.property_env(&suite, &cancel).await;
            let plan = self.plan(&self.placement.file(round), env);
            let runner = ProjectRunner::new(vec![plan], &options, self.placement.target.clone())
                .with_groups(self.groups.clone());
            let run = runner.run_all(cancel.clone()).await?;
            duration_ms += run.duration_ms;
            if let Some(more) = run.coverage.and_then(|c| c.target) {
                hits = Some(match hits {
                    Some(h) => h.union(&more),
                    None => more,
                });
            }
            if cancel.is_cancelled() {
                break;
            }
        }
        Ok(Covered { hits, duration_ms })
    }

    async fn mutate(
        &self,
        request: MutationRequest,
        cancel: CancellationToken,
    ) -> Result<MutationRun, RunnerError> {
        let p = &self.placement;
        let suites: Vec<PathBuf> = request.rounds.iter().map(|r| p.file(*r)).collect();
        let mut texts = String::new();
        for suite in &suites {
            texts.push_str(&std::fs::read_to_string(suite).unwrap_or_default());
        }
        let env = self.property_env(&texts, &cancel).await;
        let unit = |cwd: &Path| -> String {
            self.unit_command.clone().unwrap_or_else(|| {
                detect::framework_plan(
                    p.framework,
                    Some(p.language),
                    cwd,
                    &cwd.join(".ralph-reports"),
                )
                .command
            })
        };
        let suite_command = |file: &Path, cwd: &Path| -> String {
            self.plan_in(file, Vec::new(), cwd, &cwd.join(".ralph-reports"))
                .command
        };
        let job = mutation::Job {
            language: p.language,
            root: &self.root,
            cwd: &p.cwd,
            target: &p.target,
            unit_command: &unit,
            suites,
            suite_command: &suite_command,
            env,
            request: &request,
            krate: p.krate.as_ref(),
            memory_limit_mb: self.options.limits.memory_limit_mb,
            groups: &self.groups,
        };
        mutation::run(job, cancel).await
    }
}
