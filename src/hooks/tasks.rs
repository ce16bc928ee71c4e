//! The hooks around a batch's tasks: `pre_task` before each starts (it may skip the task, or
//! stop the batch) and `post_task` after each ends. They run as the loop's hooks do (same
//! protocol, exit codes, sandbox and error log); what a failure does differs, as there is no
//! Artisan to tell: `skip_task` skips the task at `pre_task`, `abort_loop` stops the batch, the
//! others are warnings.

use std::sync::Arc;

use super::exec::Failed;
use super::protocol::{Budget, Task};
use super::stages::{Answer, Context, DeclaredHook, Shared};
use crate::config::hooks::{OnFailure, Stage};

/// What to do with a task, once its `pre_task` hooks have run.
#[derive(Debug, Clone, PartialEq)]
pub enum Before {
    Run,
    /// Skip it; the batch goes on.
    Skip(String),
    /// Skip it and start no other.
    Stop(String),
}

/// What `post_task` hooks came to.
#[derive(Debug, Default)]
pub struct After {
    /// Start no other task, and why.
    pub stop: Option<String>,
    pub warnings: Vec<String>,
}

/// The task hooks of a batch, the agent or a loop.
pub struct TaskHooks {
    hooks: Vec<DeclaredHook>,
    session_id: String,
    /// What `abort_loop` stops, as its reason says it: `the batch`, `the agent`, `the loop`.
    whole: &'static str,
}

impl TaskHooks {
    pub(super) fn new(hooks: Vec<DeclaredHook>, session_id: String) -> Self {
        Self {
            hooks,
            session_id,
            whole: "the batch",
        }
    }

    /// The hooks of `whole` (`the agent`, `the loop`) rather than a batch's.
    pub fn of(mut self, whole: &'static str) -> Self {
        self.whole = whole;
        self
    }

    pub(super) fn build(
        declared: Vec<crate::config::hooks::Declared>,
        shared: Arc<Shared>,
        session_id: String,
    ) -> Self {
        let hooks = declared
            .into_iter()
            .filter(|d| d.stages.iter().any(|s| s.of_task()))
            .map(|d| DeclaredHook::new(d, shared.clone()))
            .collect();
        Self::new(hooks, session_id)
    }

    pub fn is_empty(&self) -> bool {
        self.hooks.is_empty()
    }

    fn context(&self, task: &Task, budget: &Budget) -> Context<'static> {
        Context {
            session_id: self.session_id.clone(),
            iteration: task.iterations,
            language: None,
            code: None,
            tests: None,
            budget: budget.clone(),
            task: Some(task.clone()),
            ask: None,
        }
    }

    /// Runs the `pre_task` hooks, in order, until one skips the task or stops the batch; the
    /// warnings of those that failed without either.
    pub async fn before(&self, task: &Task, budget: &Budget) -> (Before, Vec<String>) {
        let mut warnings = Vec::new();
        for hook in self.hooks.iter().filter(|h| h.serves(Stage::PreTask)) {
            let name = &hook.declared().name;
            match hook
                .invoke(Stage::PreTask, self.context(task, budget))
                .await
            {
                Ok(Answer::Veto { reasons, .. }) => {
                    let why = match reasons.is_empty() {
                        true => "without saying why".to_string(),
                        false => reasons.join("; "),
                    };
                    return (
                        Before::Skip(format!("skipped by hook `{name}`: {why}")),
                        warnings,
                    );
                }
                Ok(_) => {}
                Err(Failed::Cancelled) => return (Before::Stop("interrupted".into()), warnings),
                Err(failed) => {
                    hook.log(Stage::PreTask, &failed);
                    let message = format!("hook `{name}` failed at pre_task: {failed}");
                    match hook.declared().on_failure {
                        OnFailure::SkipTask => {
                            return (Before::Skip(format!("skipped: {message}")), warnings)
                        }
                        OnFailure::AbortLoop => {
                            return (
                                Before::Stop(format!("{} stopped: {message}", self.whole)),
                                warnings,
                            )
                        }
                        OnFailure::WarnContinue | OnFailure::AskAgent => warnings.push(message),
                    }
                }
            }
        }
        (Before::Run, warnings)
    }

    /// Runs the `post_task` hooks for a task that ended (`task.status`).
    pub async fn after(&self, task: &Task, budget: &Budget) -> After {
        let mut after = After::default();
        for hook in self.hooks.iter().filter(|h| h.serves(Stage::PostTask)) {
            let name = &hook.declared().name;
            match hook
                .invoke(Stage::PostTask, self.context(task, budget))
                .await
            {
                Ok(Answer::Veto { reasons, .. }) => after.warnings.push(format!(
                    "hook `{name}` blocked at post_task, where there is nothing to stop: {}",
                    reasons.join("; ")
                )),
                Ok(_) | Err(Failed::Cancelled) => {}
                Err(failed) => {
                    hook.log(Stage::PostTask, &failed);
                    let message = format!("hook `{name}` failed at post_task: {failed}");
                    if hook.declared().on_failure == OnFailure::AbortLoop {
                        after
                            .stop
                            .get_or_insert(format!("{} stopped: {message}", self.whole));
                    }
                    after.warnings.push(message);
                }
            }
        }
        after
    }
}
