//! The best state stays on disk. Every proposal written is a checkpoint with its tests'
//! outcome; one that does worse than the best so far (more failing tests, or a new SYNTAX or
//! ENVIRONMENT failure, or a run killed at a limit) is undone before the next iteration, and the
//! Artisan is told what was tried and why it was undone. A run that ends without success leaves
//! the state `on_failure` names: the best (the default), the original, or the last.

use std::cmp::Reverse;
use std::sync::Arc;

use crate::error::Error;
use crate::events::event::Event;
use crate::machine::state::Outcome;
use crate::policy::entropy::headline;
use crate::ports::workspace::WorkspaceError;
use crate::roles::caller::watched;
use crate::schema::report::{Checkpoint, FileLeft, OnFailure, Status, TestsSnapshot};
use crate::schema::test_run::{Category, RunStatus, TestRun};
use crate::supervisor::run::Run;

/// How good a state is by its tests, lower being better: first how far the tests got (all
/// passing; some failing; killed at a time or memory limit; not running at all for a syntax or
/// environment error), then the failing tests, then the passing ones (more is better).
pub(crate) fn rank(t: &TestsSnapshot) -> (u8, u32, Reverse<u32>) {
    let tier = match (t.status, t.category) {
        (RunStatus::Passed, _) => 0,
        (_, Some(Category::Syntax | Category::Environment)) | (RunStatus::Error, _) => 3,
        (RunStatus::Timeout | RunStatus::MemoryLimit, _) | (_, Some(Category::Performance)) => 2,
        _ => 1,
    };
    (tier, t.failed, Reverse(t.passed))
}

/// Why `now` is worse than `best`, in words.
fn worse_because(now: &TestsSnapshot, best: &TestsSnapshot) -> String {
    let (tier_now, tier_best) = (rank(now).0, rank(best).0);
    if tier_now > tier_best {
        match (now.status, now.category) {
            (_, Some(c @ (Category::Syntax | Category::Environment))) => {
                format!("it brought a new {c} failure")
            }
            (RunStatus::Timeout, _) => "the tests ran past their time limit".into(),
            (RunStatus::MemoryLimit, _) => "the tests ran past their memory limit".into(),
            (RunStatus::Error, _) => "the tests could not run".into(),
            _ => format!("its tests did worse: {}", now.summary),
        }
    } else if now.failed > best.failed {
        format!(
            "{} tests failed where {} failed before it",
            now.failed, best.failed
        )
    } else {
        format!(
            "{} tests passed where {} passed before it",
            now.passed, best.passed
        )
    }
}

/// A checkpoint in words: "the original" or "iteration 3's version".
fn version(iteration: u32) -> String {
    match iteration {
        0 => "the original".into(),
        n => format!("iteration {n}'s version"),
    }
}

impl Run {
    /// After the baseline run: the target as it was is checkpoint 0, the best state so far.
    pub(super) async fn keep_original(&mut self, run: &Arc<TestRun>) -> Result<(), Outcome> {
        let read = self.workspace.target();
        let original = watched(&self.steps, read).await.map_err(|e| self.fail(e))?;
        let save = self.store.save_checkpoint(0, &original.content);
        watched(&self.steps, save).await.map_err(|e| self.fail(e))?;
        self.state.best = Some(Checkpoint {
            iteration: 0,
            tests: TestsSnapshot::from(&**run),
        });
        self.state.on_disk = Some(0);
        self.best_content = Some(original.content);
        self.best_run = Some(run.clone());
        Ok(())
    }

    /// After an iteration's tests: the proposal written is kept as a checkpoint; one that did
    /// worse than the best is undone, and the next iteration works from the best state again.
    pub(super) async fn judge_proposal(
        &mut self,
        n: u32,
        written: Option<&str>,
        run: &Arc<TestRun>,
    ) -> Result<(), Outcome> {
        let Some(code) = written else {
            return Ok(());
        };
        let save = self.store.save_checkpoint(n, code);
        watched(&self.steps, save).await.map_err(|e| self.fail(e))?;
        self.state.on_disk = Some(n);
        let tests = TestsSnapshot::from(&**run);
        let best = match &self.state.best {
            Some(best) if rank(&tests) > rank(&best.tests) => best.clone(),
            _ => {
                self.state.best = Some(Checkpoint {
                    iteration: n,
                    tests,
                });
                self.best_content = Some(code.to_string());
                self.best_run = Some(run.clone());
                return Ok(());
            }
        };
        let content = self.best_content(best.iteration).await?;
        self.last_run = self.best_run.clone();
        let why = worse_because(&tests, &best.tests);
        self.undo(n, best.iteration, content, &why, &headline(run))
            .await
    }

    /// Puts checkpoint `back_to`'s `content` back in the target in place of iteration `n`'s
    /// proposal, which made things worse (`why`; its first failure `first`), and tells the
    /// Artisan what was tried and why it was undone.
    pub(super) async fn undo(
        &mut self,
        n: u32,
        back_to: u32,
        content: String,
        why: &str,
        first: &str,
    ) -> Result<(), Outcome> {
        let write = self.workspace.write_target(content);
        match watched(&self.steps, write).await {
            Ok(()) => {}
            // A checkpoint of a stopped run (before a resume) holds placeholders of that
            // run's: its values are gone, so the proposal stays.
            Err(Error::Workspace(WorkspaceError::Unrestorable(why))) => {
                self.warn(format!(
                    "iteration {n}: the change made things worse, but the state before it cannot be put back ({why}); the file keeps the change"
                ));
                return Ok(());
            }
            Err(e) => return Err(self.fail(e)),
        }
        self.state.on_disk = Some(back_to);
        self.state.reverts += 1;
        let back = version(back_to);
        self.state.undone = Some(format!(
            "Your change in iteration {n} made things worse ({why}), so it was undone: the file \
             is back to {back}, shown above. Its first failure was: {first}. Do not make that \
             change again; take another approach."
        ));
        self.events.emit(Event::Note {
            message: format!(
                "iteration {n}: the proposal made things worse ({why}); undone, the file is back to {back}"
            ),
        });
        Ok(())
    }

    /// Checkpoint `iteration`'s content, from the session folder.
    pub(super) async fn checkpoint_content(&mut self, iteration: u32) -> Result<String, Outcome> {
        let load = self.store.load_checkpoint(iteration);
        match watched(&self.steps, load).await.map_err(|e| self.fail(e))? {
            Some(content) => Ok(content),
            None => Err(Outcome::new(
                Status::Error,
                format!("checkpoint {iteration} is missing from the session folder"),
            )),
        }
    }

    /// The content of checkpoint `iteration`: in memory, else from the session folder.
    async fn best_content(&mut self, iteration: u32) -> Result<String, Outcome> {
        if let Some(content) = &self.best_content {
            return Ok(content.clone());
        }
        self.checkpoint_content(iteration).await
    }

    /// A resumed session: the best state's content and tests, and the tests of the state on
    /// disk, read back once.
    pub(super) async fn resume_checkpoints(&mut self) -> Result<(), Outcome> {
        self.state.file_left = None;
        let Some(best) = self.state.best.clone() else {
            return Ok(());
        };
        let load = self.store.load_checkpoint(best.iteration);
        self.best_content = watched(&self.steps, load).await.map_err(|e| self.fail(e))?;
        let read = self.store.test_results(best.iteration);
        self.best_run = watched(&self.steps, read)
            .await
            .map_err(|e| self.fail(e))?
            .map(Arc::new);
        if self.state.on_disk == Some(best.iteration) {
            self.last_run = self.best_run.clone().or(self.last_run.take());
        }
        Ok(())
    }

    /// At the end of a run that did not succeed: leaves in the target the state `on_failure`
    /// names, and records which. Bounded in time like the final writes: the report comes first.
    pub(super) async fn leave_file(&mut self, status: Status) -> Option<String> {
        if status == Status::Success {
            return None;
        }
        let policy = self.settings.on_failure;
        let best = self.state.best.clone()?;
        let (iteration, tests) = match policy {
            OnFailure::Best => (Some(best.iteration), Some(best.tests.clone())),
            OnFailure::Original => (Some(0), self.state.tests_before.clone()),
            OnFailure::Last => {
                let on_disk = self.state.on_disk;
                let tests = if on_disk == Some(best.iteration) {
                    Some(best.tests.clone())
                } else {
                    on_disk.and(self.state.tests_after.clone())
                };
                (on_disk, tests)
            }
        };
        let mut problem = None;
        if let Some(k) = iteration.filter(|k| self.state.on_disk != Some(*k)) {
            let content = if k == best.iteration {
                self.best_content.clone()
            } else {
                None
            };
            let restored = async {
                let content = match content {
                    Some(c) => Some(c),
                    None => self.store.load_checkpoint(k).await.ok().flatten(),
                };
                match content {
                    Some(c) => self
                        .workspace
                        .write_target(c)
                        .await
                        .map_err(|e| e.to_string()),
                    None => Err(format!("checkpoint {k} is missing")),
                }
            };
            match tokio::time::timeout(super::finish::FINAL_WRITE, restored).await {
                Ok(Ok(())) => self.state.on_disk = Some(k),
                Ok(Err(e)) => problem = Some(e),
                Err(_) => problem = Some("no answer in time".into()),
            }
        }
        if let Some(why) = &problem {
            // The file keeps what it had; the report says so rather than claim the policy.
            self.state.file_left = Some(FileLeft {
                policy,
                iteration: self.state.on_disk,
                tests: None,
            });
            return Some(format!(
                "could not restore {} ({why}); the file is left as the run last wrote it",
                version(iteration.unwrap_or(0))
            ));
        }
        self.state.file_left = Some(FileLeft {
            policy,
            iteration,
            tests,
        });
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(
        status: RunStatus,
        category: Option<Category>,
        passed: u32,
        failed: u32,
    ) -> TestsSnapshot {
        TestsSnapshot {
            status,
            passed,
            failed,
            skipped: 0,
            flaky: 0,
            category,
            coverage_pct: None,
            lint_errors: None,
            criteria_met: false,
            summary: String::new(),
            first_failure: None,
        }
    }

    #[test]
    fn states_rank_by_how_far_the_tests_got_then_by_failures() {
        let passing = snap(RunStatus::Passed, None, 3, 0);
        let one_failing = snap(RunStatus::Failed, Some(Category::Logic), 2, 1);
        let nine_failing = snap(RunStatus::Failed, Some(Category::Logic), 3, 9);
        let twelve_failing = snap(RunStatus::Failed, Some(Category::Logic), 0, 12);
        let memory_bomb = snap(RunStatus::MemoryLimit, Some(Category::Performance), 0, 0);
        let syntax = snap(RunStatus::Failed, Some(Category::Syntax), 0, 1);
        let missing_module = snap(RunStatus::Failed, Some(Category::Environment), 0, 0);
        let order = [
            &passing,
            &one_failing,
            &nine_failing,
            &twelve_failing,
            &memory_bomb,
            &syntax,
        ];
        for pair in order.windows(2) {
            assert!(rank(pair[0]) < rank(pair[1]), "{pair:?}");
        }
        assert_eq!(rank(&syntax).0, rank(&missing_module).0);
        // Equal failures: more passing tests is better.
        assert!(
            rank(&snap(RunStatus::Failed, None, 5, 1)) < rank(&snap(RunStatus::Failed, None, 4, 1))
        );
    }

    #[test]
    fn why_a_state_is_worse_is_said_plainly() {
        let nine = snap(RunStatus::Failed, Some(Category::Logic), 3, 9);
        let twelve = snap(RunStatus::Failed, Some(Category::Logic), 0, 12);
        assert_eq!(
            worse_because(&twelve, &nine),
            "12 tests failed where 9 failed before it"
        );
        let syntax = snap(RunStatus::Failed, Some(Category::Syntax), 0, 1);
        assert_eq!(
            worse_because(&syntax, &nine),
            "it brought a new SYNTAX failure"
        );
        let bomb = snap(RunStatus::MemoryLimit, Some(Category::Performance), 0, 0);
        assert_eq!(
            worse_because(&bomb, &nine),
            "the tests ran past their memory limit"
        );
    }
}
