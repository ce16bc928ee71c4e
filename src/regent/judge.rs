//! What an iteration did, measured rather than believed, and what follows from it: the tests
//! run; the files git sees changed, the tasks checked off and the tests newly passing (progress);
//! the commit of the iteration's changes (and its push); the rollback of its commits when the
//! tests fail after them; the breaker; and the exit gate, which ends the loop only when the
//! agent's status, its completion indicators and the tests agree.

use std::collections::{BTreeSet, HashSet};
use std::path::PathBuf;

use chrono::Utc;
use ralph_actors::events::event::Event;
use ralph_actors::machine::hooks::Gate;
use ralph_actors::machine::state::Next;
use ralph_actors::policy::entropy::fingerprint;
use ralph_actors::schema::regent::{IterationRecord, LoopStatus, RegentAction, TaskCounts};
use ralph_actors::schema::report::TestsSnapshot;
use ralph_actors::schema::test_run::{CaseStatus, TestRun};
use ralph_actors::tracker::circuit::Observed;
use ralph_actors::tracker::gate::{GateVerdict, Said};
use ralph_actors::tracker::status::Found;

use super::machine::{Checkpoint, LoopState, Step, Work};
use super::outcome::TurnEnd;
use super::run::LoopRun;
use crate::git::Look;

/// The ref the checkpoint before each iteration is kept under.
pub const CHECKPOINT_REF: &str = "refs/ralph/checkpoint";

impl LoopRun {
    /// Notes the tree before an iteration, and keeps it (changes included) under
    /// [`CHECKPOINT_REF`].
    pub(super) fn checkpoint(&mut self, iteration: u32) -> Option<Checkpoint> {
        let repo = self.repo.clone()?;
        // Each git command is a process: the last iteration's closing look serves when nothing
        // was committed or reverted since, else one `status` says HEAD and the tree's changes;
        // the ref moves only when the tree differs from what it holds, and a stash commit is
        // made only when there are changes to keep.
        let look = match self.last_look.take() {
            Some(look) => Ok(look),
            None => repo.state(),
        };
        let Look {
            head,
            snapshot,
            untracked,
        } = match look {
            Ok(look) => look,
            Err(e) => {
                self.warn(format!("cannot read the tree's state: {e}"));
                return None;
            }
        };
        if let Some(head) = &head {
            let held = self.checkpointed.as_ref();
            if !held.is_some_and(|(h, s)| h == head && *s == snapshot) {
                let message = format!("ralph-loop: before iteration {iteration}");
                let kept = match snapshot.is_empty() {
                    true => repo.point(CHECKPOINT_REF, head, &message),
                    false => repo.checkpoint(CHECKPOINT_REF, &message).map(drop),
                };
                self.checkpointed = match kept {
                    Ok(()) => Some((head.clone(), snapshot.clone())),
                    Err(e) => {
                        self.warn(format!("cannot keep a checkpoint: {e}"));
                        None
                    }
                };
            }
        }
        Some(Checkpoint {
            head,
            snapshot,
            untracked,
        })
    }

    /// Judges what the turn did: the tasks checked off, the files and commits it made and the
    /// tests newly passing (progress); the status block; the tests' verdict by `testing.mode`;
    /// the iteration's record. A SIGQUIT while the tests ran closes the iteration and stops.
    pub(super) async fn judge(&mut self, mut work: Box<Work>) -> Step {
        let iteration = work.n;
        let quit = self.deps.quit.is_cancelled().then(|| {
            (
                LoopStatus::Quit,
                format!("SIGQUIT while iteration {iteration}'s tests ran: nothing was committed"),
            )
        });
        let tasks_after = self.read_tasks().map(|(_, list)| list);
        let checked: Vec<String> = tasks_after
            .as_ref()
            .map(|after| {
                after
                    .checked_since(&work.tasks_before)
                    .into_iter()
                    .map(|t| t.label())
                    .collect()
            })
            .unwrap_or_default();
        if let Some(after) = &tasks_after {
            self.state.tasks = Some(TaskCounts {
                done: after.done(),
                total: after.total(),
            });
        }
        let (changed, agent_commits) = self.changes(work.checkpoint.as_ref());
        let newly_passing = newly_passing(self.last_tests.as_ref(), work.tests.as_ref());
        let progress = !changed.is_empty()
            || !agent_commits.is_empty()
            || !checked.is_empty()
            || newly_passing > 0;
        self.emit(Event::ProgressMeasured {
            iteration,
            files_changed: changed.len() as u32,
            tasks_checked: checked.clone(),
            newly_passing,
            progress,
        });
        let turn = &work.turn;
        let block = turn.found.iter().rev().find_map(|f| match f {
            Found::Block(b) => Some(b.clone()),
            _ => None,
        });
        let malformed: Vec<String> = turn
            .found
            .iter()
            .filter_map(|f| match f {
                Found::Malformed(why) => Some(why.clone()),
                _ => None,
            })
            .collect();
        let said = Said::from_found(&turn.found);
        self.emit(Event::StatusRead {
            iteration,
            block: block.clone(),
            indicators: said.indicators,
            malformed,
        });
        let tests_ok = self.tests_verdict(iteration, work.tests.as_ref(), work.tasks_before.next());
        work.record = Some(IterationRecord {
            iteration,
            runs: turn.runs,
            ending: turn.ending.clone(),
            exit_code: turn.exit_code,
            duration_ms: turn.duration.as_millis() as u64,
            cost_usd: turn.cost_usd,
            cost_estimated: turn.cost_estimated,
            tokens: turn.tokens,
            tokens_estimated: turn.tokens_estimated,
            files_changed: changed.len() as u32,
            tasks_checked: checked.clone(),
            tests: work.tests.as_ref().map(TestsSnapshot::from),
            newly_passing,
            progress,
            status_block: block,
            commit: None,
            reverted: None,
        });
        self.notes.extend(turn.notes.iter().cloned());
        work.changed = changed;
        work.checked = checked;
        work.progress = progress;
        work.tests_ok = tests_ok;
        work.said = said;
        match quit {
            Some(quit) => self.close(work, Some(quit)).await,
            None => Next::Continue(LoopState::Commit(work)),
        }
    }

    /// A task checked off with the tests passing moves `tdd`'s baseline on; the iteration's
    /// changes are committed when the agent finished its turn (`git.auto_commit`).
    pub(super) fn commit_step(&mut self, mut work: Box<Work>) -> Step {
        let iteration = work.n;
        if work.tests_ok && !work.checked.is_empty() {
            self.after_task(iteration, work.tests.as_ref());
        }
        let finished = matches!(work.turn.end, TurnEnd::Finished);
        if finished && self.deps.settings.git.auto_commit && !work.changed.is_empty() {
            // The look `changes` took says which paths are new to git; the commit moves HEAD,
            // so the next checkpoint looks again.
            let look = self.last_look.take();
            // A file git never tracked that the iteration deleted is nothing git can commit.
            let committable: Vec<PathBuf> = work
                .changed
                .iter()
                .filter(|p| {
                    let untracked_then = work
                        .checkpoint
                        .as_ref()
                        .is_some_and(|c| c.untracked.contains(*p));
                    let gone = look.as_ref().is_some_and(|l| !l.snapshot.contains_key(*p));
                    !(untracked_then && gone)
                })
                .cloned()
                .collect();
            let new = look.map(|look| look.untracked);
            if !committable.is_empty() {
                let commit = self.commit(
                    iteration,
                    &committable,
                    new,
                    &work.checked,
                    work.tests.as_ref(),
                );
                if let Some(record) = work.record.as_mut() {
                    record.commit = commit;
                }
            }
        }
        Next::Continue(LoopState::Revert(work))
    }

    /// The iteration's commits reverted when its tests fail (`rollback_on_test_failure`); a
    /// revert that fails closes the iteration and stops the loop.
    pub(super) async fn revert_step(&mut self, mut work: Box<Work>) -> Step {
        if self.deps.settings.rollback_on_test_failure && !work.tests_ok {
            self.last_look = None;
            let Work {
                n,
                checkpoint,
                tests,
                record,
                ..
            } = &mut *work;
            let stop = record
                .as_mut()
                .and_then(|record| self.rollback(*n, checkpoint.as_ref(), tests.as_ref(), record));
            if let Some(stop) = stop {
                return self.close(work, Some(stop)).await;
            }
        }
        Next::Continue(LoopState::Gate(work))
    }

    /// The breaker told what the iteration did, and the exit gate: the agent's status, its
    /// completion indicators and the tests must agree for the loop to end complete (and the
    /// hooks' `before_success` let it).
    pub(super) async fn gate_step(&mut self, mut work: Box<Work>) -> Step {
        let iteration = work.n;
        let tests_ok = work.tests_ok;
        let error = work.tests.as_ref().filter(|t| !t.passed()).map(fingerprint);
        let observed = Observed {
            iteration,
            progress: work.progress,
            error,
            tests_failing: !tests_ok,
        };
        let now = Utc::now().timestamp_millis();
        let moved = self
            .state
            .breaker
            .record(&observed, &self.deps.settings.thresholds, now);
        self.breaker_moved(iteration, moved);
        if !work.progress {
            self.notes.push(
                "The last iteration changed no file, checked off no task and made no test pass. Try another way.".into(),
            );
        }
        let verdict = self
            .state
            .gate
            .judge(work.said, tests_ok, &self.deps.settings.gate);
        let vetoed = match (&verdict, work.tests.as_ref()) {
            (GateVerdict::Exit, Some(tests)) => {
                let tests = tests.clone();
                matches!(self.hooks_gate(iteration, &tests).await, Gate::Veto { .. })
            }
            _ => false,
        };
        if let Some(tests) = work.tests.take() {
            self.last_tests = Some(tests);
        }
        let stop = match verdict {
            GateVerdict::Continue => None,
            GateVerdict::Exit if vetoed => None,
            GateVerdict::Exit => Some((
                LoopStatus::Complete,
                format!(
                    "the agent signalled completion ({} indicators over the loop) and the tests agree",
                    self.state.gate.completion_indicators
                ),
            )),
            GateVerdict::Disagree => {
                let summary = self
                    .last_tests
                    .as_ref()
                    .map_or_else(String::new, TestRun::summary);
                self.notes.push(format!(
                    "You set EXIT_SIGNAL: true, but the tests do not pass ({summary}). The loop goes on until they do."
                ));
                None
            }
            GateVerdict::Stop => Some((
                LoopStatus::GateDisagreement,
                format!(
                    "the agent asked to stop while the tests failed, {} iterations in a row",
                    self.state.gate.consecutive_disagreements
                ),
            )),
        };
        self.close(work, stop).await
    }

    /// The paths the iteration changed (uncommitted, `.ralph/` left out) and the commits made
    /// since the checkpoint (the agent's own), from one look at the tree; the commits are
    /// listed only when `HEAD` moved.
    fn changes(&mut self, checkpoint: Option<&Checkpoint>) -> (Vec<PathBuf>, Vec<String>) {
        let (Some(repo), Some(cp)) = (self.repo.clone(), checkpoint) else {
            return (Vec::new(), Vec::new());
        };
        let look = match repo.state() {
            Ok(look) => look,
            Err(e) => {
                self.warn(format!("cannot read what changed: {e}"));
                return (Vec::new(), Vec::new());
            }
        };
        let changed = crate::git::changed_between(&cp.snapshot, &look.snapshot)
            .into_iter()
            .filter(|p| !p.starts_with(crate::session::RALPH_DIR))
            .collect();
        let commits = match (&cp.head, &look.head) {
            (before, now) if before == now => Vec::new(),
            // No commit before: every commit now is the iteration's.
            (Some(before), _) => repo.commits_since(before).unwrap_or_default(),
            (None, _) => repo.commits_since("").unwrap_or_default(),
        };
        // The next checkpoint's look, unless a commit or a revert changes the tree first.
        self.last_look = Some(look);
        (changed, commits)
    }

    /// Commits `changed` with a message naming the task; pushes when asked. `untracked`: which
    /// paths git does not track yet, when known (they are added first; none, no `git add`).
    fn commit(
        &mut self,
        iteration: u32,
        changed: &[PathBuf],
        untracked: Option<BTreeSet<PathBuf>>,
        checked: &[String],
        tests: Option<&TestRun>,
    ) -> Option<String> {
        let repo = self.repo.clone()?;
        let prefix = self.deps.settings.git.commit_prefix.trim().to_string();
        let next = self
            .read_tasks()
            .and_then(|(_, list)| list.next().map(|t| t.label()));
        let subject = match (checked, next) {
            ([one], _) => format!("{prefix} Complete {one}"),
            ([first, rest @ ..], _) => {
                format!("{prefix} Complete {first} (and {} more)", rest.len())
            }
            ([], Some(next)) => format!("{prefix} Work on {next} (iteration {iteration})"),
            ([], None) => format!("{prefix} Iteration {iteration}"),
        };
        let model = self
            .deps
            .model
            .as_deref()
            .map(|m| format!(" ({m})"))
            .unwrap_or_default();
        let tests_line = tests.map_or_else(|| "no tests run".to_string(), TestRun::summary);
        let body = format!(
            "Agent: {}{model}\nTests: {tests_line}\n\nMade by ralph-loop loop, iteration {iteration}.",
            self.deps.agent.name
        );
        let adds = untracked.is_none_or(|new| changed.iter().any(|p| new.contains(p)));
        let committed = match adds {
            true => repo.commit(changed, subject.trim(), &body),
            false => repo.commit_tracked(changed, subject.trim(), &body),
        };
        match committed {
            Ok(hash) => {
                self.regent(
                    iteration,
                    RegentAction::Committed,
                    format!("committed {hash}: {}", subject.trim()),
                );
                self.commits.push(hash.clone());
                self.state.last_commit = Some(hash.clone());
                self.push(iteration, &repo);
                Some(hash)
            }
            Err(e) => {
                self.warn(format!("cannot commit iteration {iteration}: {e}"));
                None
            }
        }
    }

    fn push(&mut self, iteration: u32, repo: &crate::git::Repo) {
        if !self.deps.settings.git.push {
            return;
        }
        match repo.push() {
            Ok(()) => self.regent(iteration, RegentAction::Pushed, "pushed".into()),
            Err(e) => self.warn(format!("cannot push: {e}")),
        }
    }

    /// Reverts the iteration's commits after failing tests; `Some` when the revert failed and
    /// the loop must stop.
    fn rollback(
        &mut self,
        iteration: u32,
        checkpoint: Option<&Checkpoint>,
        tests: Option<&TestRun>,
        record: &mut IterationRecord,
    ) -> Option<(LoopStatus, String)> {
        let repo = self.repo.clone()?;
        let base = checkpoint?.head.clone()?;
        let commits = repo.commits_since(&base).unwrap_or_default();
        if commits.is_empty() {
            return None;
        }
        let summary = tests.map_or_else(String::new, TestRun::summary);
        match repo.revert_since(&base) {
            Ok(hash) => {
                self.regent(
                    iteration,
                    RegentAction::Reverted,
                    format!(
                        "the tests fail after iteration {iteration}'s commit(s) {} ({summary}): reverted by {hash}",
                        commits.join(", ")
                    ),
                );
                self.reverts.push(hash.clone());
                self.state.last_commit = Some(hash.clone());
                record.reverted = Some(hash);
                self.notes.push(format!(
                    "The commits of iteration {iteration} were reverted: the tests failed after them ({summary})."
                ));
                self.push(iteration, &repo);
                None
            }
            Err(e) => {
                let why = format!(
                    "reverting {} failed, so the tree was left as it was: {e}",
                    commits.join(", ")
                );
                self.regent(iteration, RegentAction::RevertFailed, why.clone());
                Some((LoopStatus::RevertFailed, why))
            }
        }
    }
}

/// Tests that pass in `after` and did not in `before` (failed, or did not exist). Where the
/// runs name no tests, the growth of the passed count.
fn newly_passing(before: Option<&TestRun>, after: Option<&TestRun>) -> u32 {
    let Some(after) = after else {
        return 0;
    };
    let passing = |run: &TestRun| -> HashSet<String> {
        run.tests
            .iter()
            .filter(|t| t.status == CaseStatus::Pass)
            .map(|t| t.id.clone())
            .collect()
    };
    match before {
        None => 0,
        Some(before) if after.tests.is_empty() || before.tests.is_empty() => {
            let grown = after.totals.passed.saturating_sub(before.totals.passed);
            grown.max(u32::from(after.passed() && !before.passed()))
        }
        Some(before) => {
            let was = passing(before);
            passing(after).difference(&was).count() as u32
        }
    }
}
