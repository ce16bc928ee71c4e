//! The tests of the agent loop: found afresh each time (a project may gain tests as it goes),
//! skipped while the project is bootstrapping ([`super::bootstrap`]), run, and judged by
//! `testing.mode`: `gate` (every test passes), `tdd` (no regression against the baseline,
//! [`super::baseline`]) or `report` (nothing judged). A task marked `Tests: Not required` is
//! not held to them.

use chrono::Utc;
use ralph_actors::events::event::Event;
use ralph_actors::schema::report::TestsSnapshot;
use ralph_actors::schema::test_run::TestRun;

use super::baseline::Baseline;
use super::bootstrap::{self, Phase};
use super::run::LoopRun;
use super::tasks::Task;
use crate::config::{BaselineScope, BootstrapDetection, TestMode};
use crate::runner::project::ProjectRunner;

impl LoopRun {
    /// The project's tests, run; `None` while it is bootstrapping, or when none can be found
    /// (`tests_missing` then says why).
    pub(super) async fn run_tests(&mut self, iteration: u32) -> Option<TestRun> {
        let root = self.deps.root.clone();
        let runner = ProjectRunner::build(&self.deps.prompt_file, &root, &self.deps.testing);
        let phase = match self.deps.settings.bootstrap {
            BootstrapDetection::Auto => {
                let found = runner.as_ref().map(drop).map_err(ToString::to_string);
                bootstrap::auto(&root, found, self.deps.testing.command.is_none())
            }
            BootstrapDetection::Manual => {
                let check = self
                    .deps
                    .settings
                    .bootstrap_check
                    .clone()
                    .unwrap_or_default();
                let (phase, warning) =
                    bootstrap::manual(&root, &check, self.deps.env.clone(), &self.deps.groups)
                        .await;
                if let Some(warning) = warning {
                    self.warn(warning);
                }
                phase
            }
            BootstrapDetection::Disabled => Phase::Ready,
        };
        match phase {
            Phase::Bootstrapping(why) => {
                if self.bootstrapping != Some(true) {
                    self.emit(Event::Note {
                        message: format!(
                            "bootstrap phase: {why}; the test gate is skipped until the project has tests"
                        ),
                    });
                }
                self.bootstrapping = Some(true);
                self.tests_missing = None;
                return None;
            }
            Phase::Ready if self.bootstrapping == Some(true) => {
                self.emit(Event::Note {
                    message: "Bootstrap complete, verification gates now active".into(),
                });
                self.bootstrap_completed_at = Some(Utc::now());
                self.bootstrapping = Some(false);
            }
            Phase::Ready => self.bootstrapping = Some(false),
        }
        let runner = match runner {
            Ok(runner) => runner.with_groups(self.deps.groups.clone()),
            Err(e) => {
                let why = e.to_string();
                if self.tests_missing.as_deref() != Some(why.as_str()) {
                    self.warn(format!("no tests can run: {why}"));
                }
                self.tests_missing = Some(why);
                return None;
            }
        };
        self.tests_missing = None;
        let run = match runner.run_all(self.deps.quit.clone()).await {
            Ok(run) => run,
            Err(e) => {
                let why = format!("the tests could not run: {e}");
                self.warn(why.clone());
                self.tests_missing = Some(why);
                return None;
            }
        };
        let snapshot = TestsSnapshot::from(&run);
        self.emit(Event::TestsFinished {
            iteration,
            tests: snapshot.clone(),
        });
        self.state.last_tests = Some(snapshot);
        if self.deps.settings.mode == TestMode::Tdd && self.baseline.is_none() {
            // The first tests the loop sees: iteration 0's, or those of the iteration that
            // ended the bootstrap, which then has nothing to regress against.
            self.capture_baseline(iteration, &run);
            self.baseline_fresh = iteration > 0;
        }
        Some(run)
    }

    /// `tdd`, before the first iteration: the baseline of the file (`global`, when there is
    /// one) or of the tests as they are now.
    pub(super) fn load_baseline(&mut self) {
        if self.deps.settings.mode != TestMode::Tdd
            || self.deps.settings.baseline_scope != BaselineScope::Global
        {
            return;
        }
        match Baseline::load(&self.deps.settings.baseline_file) {
            Ok(found) => self.baseline = found,
            Err(why) => self.warn(format!("{why}: a new baseline is captured")),
        }
        if let Some(b) = &self.baseline {
            self.emit(Event::Note {
                message: format!(
                    "TDD baseline of {} (global): {} passing, {} failing",
                    b.captured_at.format("%Y-%m-%d %H:%M"),
                    b.passing.len(),
                    b.failing.len()
                ),
            });
        }
    }

    /// Captures `run` as the baseline and saves it.
    fn capture_baseline(&mut self, iteration: u32, run: &TestRun) {
        let mut baseline = Baseline::of(run, self.deps.settings.baseline_scope);
        baseline.bootstrap_completed_at = self.bootstrap_completed_at;
        let path = self.deps.settings.baseline_file.clone();
        if let Err(e) = baseline.save(&path) {
            self.warn(format!("cannot write {}: {e}", path.display()));
        }
        self.emit(Event::Note {
            message: format!(
                "TDD baseline captured{}: {} passing, {} failing ({})",
                if iteration == 0 {
                    String::new()
                } else {
                    format!(" after iteration {iteration}")
                },
                baseline.passing.len(),
                baseline.failing.len(),
                path.display()
            ),
        });
        self.baseline = Some(baseline);
    }

    /// `baseline_scope: task`: a task checked off with no regression; its tests become the
    /// baseline of the next.
    pub(super) fn after_task(&mut self, iteration: u32, run: Option<&TestRun>) {
        if self.deps.settings.mode == TestMode::Tdd
            && self.deps.settings.baseline_scope == BaselineScope::Task
        {
            if let Some(run) = run {
                self.capture_baseline(iteration, run);
            }
        }
    }

    /// Whether the iteration's tests let it through, by `testing.mode`; what fails is told to
    /// the agent in the next prompt.
    pub(super) fn tests_verdict(
        &mut self,
        iteration: u32,
        run: Option<&TestRun>,
        task: Option<&Task>,
    ) -> bool {
        let mode = self.deps.settings.mode;
        if mode == TestMode::Report {
            return true;
        }
        if let Some(task) = task.filter(|t| !t.tests_required()) {
            self.emit(Event::Note {
                message: format!(
                    "{} says its tests are not required: the test gate is skipped for it",
                    task.label()
                ),
            });
            return true;
        }
        let Some(run) = run else {
            return match &self.tests_missing {
                Some(why) => {
                    self.notes
                        .push(format!("The tests cannot run: {why}. Make them runnable."));
                    false
                }
                // Bootstrapping.
                None => true,
            };
        };
        match mode {
            TestMode::Tdd => {
                if std::mem::take(&mut self.baseline_fresh) {
                    // Captured from this very run: nothing to regress against yet.
                    return true;
                }
                let regressions = self
                    .baseline
                    .as_ref()
                    .map(|b| b.regressions(run))
                    .unwrap_or_default();
                if regressions.is_empty() {
                    return true;
                }
                self.emit(Event::Warning {
                    message: format!(
                        "iteration {iteration}: {} test(s) that passed in the baseline fail now: {}",
                        regressions.len(),
                        regressions.join(", ")
                    ),
                });
                self.notes.push(format!(
                    "These tests passed before and fail now (regressions): {}. Fix them first.",
                    regressions.join(", ")
                ));
                false
            }
            _ => run.passed(),
        }
    }
}
