//! The `pre_task` and `post_task` hooks around the tasks of a loop's list (`--tasks`), as they
//! run around a batch's entries and the agent's specs (same protocol, sandbox and error log).
//!
//! The agent picks its work from the list; the loop knows which task is next (the first one
//! unchecked) and which were checked off. So:
//! - `pre_task` runs before the first iteration whose next task it is (once per task). A skip
//!   (exit 2, a `veto`, `skip_task`) leaves it unchecked, tells the agent to leave it, and asks
//!   about the task after it; `abort_loop` stops the loop (status `error`).
//! - `post_task` runs for each task checked off in an iteration (status `completed`), and, when
//!   the loop stops, for the task it was on (status: the loop's, with its reason).
//!
//! A task the agent checks off without having been next (two in one iteration) gets its
//! `post_task` and no `pre_task`: the loop did not see it start.

use ralph_actors::events::event::Event;
use ralph_actors::schema::regent::LoopStatus;

use super::run::LoopRun;
use super::tasks::{Task, TaskList};
use crate::hooks::protocol::{Budget, Task as HookTask};
use crate::hooks::tasks::Before;

impl LoopRun {
    /// Before the iteration: `pre_task` for the next task of the list, if it is new to the
    /// hooks. `Some` stops the loop.
    pub(super) async fn before_task(&mut self) -> Option<(LoopStatus, String)> {
        if self.deps.task_hooks.is_empty() {
            return None;
        }
        let (_, list) = self.read_tasks()?;
        loop {
            let next = list
                .tasks
                .iter()
                .find(|t| !t.done && !self.around.skipped.contains(t.key()))?
                .clone();
            if let Some((current, ..)) = &self.around.current {
                if current.key() == next.key() {
                    return None;
                }
            }
            let asked = self.hook_task(&next, None, None);
            let (before, warnings) = self
                .deps
                .task_hooks
                .before(&asked, &self.hook_budget())
                .await;
            for warning in warnings {
                self.warn(warning);
            }
            match before {
                Before::Run => {
                    let began = (self.state.iteration, self.state.total_cost_usd);
                    self.around.current = Some((next, began.0, began.1));
                    return None;
                }
                Before::Skip(why) => {
                    let label = next.label();
                    self.emit(Event::Note {
                        message: format!("task {label}: {why}"),
                    });
                    self.notes.push(format!(
                        "A hook skipped the task {label} ({why}): leave it unchecked and go on with the next task."
                    ));
                    self.around.skipped.insert(next.key().to_string());
                }
                Before::Stop(why) => return Some((LoopStatus::Error, why)),
            }
        }
    }

    /// After the iteration: `post_task` for each task of the list now checked that was not in
    /// `before`. `Some` stops the loop.
    pub(super) async fn after_tasks(&mut self, before: &TaskList) -> Option<(LoopStatus, String)> {
        if self.deps.task_hooks.is_empty() {
            return None;
        }
        let (_, now) = self.read_tasks()?;
        let was_open = |t: &Task| before.tasks.iter().any(|b| b.key() == t.key() && !b.done);
        let checked: Vec<Task> = now
            .tasks
            .into_iter()
            .filter(|t| t.done && was_open(t))
            .collect();
        let mut stop = None;
        for task in checked {
            let ended = self.hook_task(&task, Some("completed"), None);
            if self
                .around
                .current
                .as_ref()
                .is_some_and(|(c, ..)| c.key() == task.key())
            {
                self.around.current = None;
            }
            stop = stop.or(self.run_after(&ended).await);
        }
        stop.map(|why| (LoopStatus::Error, why))
    }

    /// The loop stops: `post_task` for the task it was on, with the loop's `status` and
    /// `reason`.
    pub(super) async fn end_task(&mut self, status: LoopStatus, reason: &str) {
        let Some((task, ..)) = self.around.current.clone() else {
            return;
        };
        let ended = self.hook_task(&task, Some(status.as_str()), Some(reason));
        self.around.current = None;
        // The loop is stopping already: an `abort_loop` has nothing left to stop.
        let _ = self.run_after(&ended).await;
    }

    /// Runs the `post_task` hooks for `task`; why they stop the loop, if they do.
    async fn run_after(&mut self, task: &HookTask) -> Option<String> {
        let after = self.deps.task_hooks.after(task, &self.hook_budget()).await;
        for warning in after.warnings {
            self.warn(warning);
        }
        after.stop
    }

    /// `task` as its hooks are told it.
    fn hook_task(&self, task: &Task, status: Option<&str>, reason: Option<&str>) -> HookTask {
        let (iterations, cost_usd) = match &self.around.current {
            Some((current, iteration, cost)) if current.key() == task.key() => (
                self.state.iteration.saturating_sub(*iteration),
                self.state.total_cost_usd - cost,
            ),
            _ => (0, 0.0),
        };
        let description = std::iter::once(task.label())
            .chain(task.notes.iter().cloned())
            .collect::<Vec<_>>()
            .join("\n");
        HookTask {
            id: task.key().to_string(),
            name: task.name.clone(),
            kind: "task".into(),
            description,
            targets: Vec::new(),
            status: status.map(str::to_string),
            reason: reason.filter(|r| !r.is_empty()).map(str::to_string),
            iterations,
            cost_usd,
        }
    }

    fn hook_budget(&self) -> Budget {
        Budget {
            spent_usd: self.state.total_cost_usd,
            max_cost_usd: self.deps.settings.max_cost_usd,
        }
    }
}
