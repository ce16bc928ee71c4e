//! A declared hook as one of the run's [`Hook`]s: which transition is which stage, the request
//! it is sent, and what its answer or its failure does (the entry's `on_failure`).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ralph_actors::machine::hooks::{AskError, Asker, Gate, Hook, HookError, Transition};
use ralph_actors::machine::state::StateKind;
use ralph_actors::prompt::reply::Proposal;
use ralph_actors::schema::report::Status;
use ralph_actors::schema::test_run::TestRun;
use tokio_util::sync::CancellationToken;

use super::exec::{self, cut, Failed, Invocation, Ran};
use super::log::ErrorLog;
use super::protocol::{self, Action, Request, Response, PROTOCOL_VERSION};
use crate::config::hooks::{Declared, HookType, OnFailure, Stage};
use crate::process::groups::ProcessGroups;
use crate::process::sandbox::Policy;

/// What every hook of a run shares.
pub struct Shared {
    /// The project's root: where hooks run.
    pub root: PathBuf,
    /// The target, relative to the root.
    pub target: String,
    pub groups: ProcessGroups,
    pub cancel: CancellationToken,
    pub log: ErrorLog,
    /// The hooks' temporary folder (their `TMPDIR`, and where a proposal's file is made).
    pub tmp: PathBuf,
    /// The plugin SDK, written in `tmp`.
    pub sdk: super::sdk::Installed,
    /// The sandbox's binary (ralph-loop's own) when hooks run in the sandbox.
    pub sandbox: Option<PathBuf>,
    /// What the sandbox lets every hook read of what is installed ([`tools`]), found once.
    pub tools: Vec<PathBuf>,
    /// Removes the temporary folder when the last hook is dropped.
    pub _tmp: tempfile::TempDir,
}

/// One declared hook, serving its stages.
pub struct DeclaredHook {
    hook: Declared,
    shared: Arc<Shared>,
    /// For the Artisan's next prompt.
    notes: Mutex<Vec<String>>,
}

/// What a hook's run came to.
pub(crate) enum Answer {
    Pass {
        notes: Vec<String>,
    },
    Change {
        code: String,
        notes: Vec<String>,
    },
    Veto {
        reasons: Vec<String>,
        notes: Vec<String>,
    },
}

/// What a hook is told besides its stage: from a transition of the loop, or about a task.
pub(super) struct Context<'a> {
    pub session_id: String,
    pub iteration: u32,
    pub language: Option<String>,
    /// The proposal (at `on_after_gen`); otherwise the target is read from disk.
    pub code: Option<String>,
    pub tests: Option<protocol::Tests>,
    pub budget: protocol::Budget,
    pub task: Option<protocol::Task>,
    /// The run's models, for an `agent` hook (inside the loop only).
    pub ask: Option<Asker<'a>>,
}

impl<'a> Context<'a> {
    fn of(at: &Transition<'a>, code: Option<String>) -> Self {
        Self {
            session_id: at.session.to_string(),
            iteration: at.iteration,
            language: at
                .context
                .map(|c| c.target.language.clone())
                .or_else(|| at.last_run.and_then(|r| r.language.clone())),
            code,
            tests: at.last_run.map(tests),
            budget: protocol::Budget {
                spent_usd: at.spent_usd,
                max_cost_usd: at.max_cost_usd,
            },
            task: None,
            ask: at.ask,
        }
    }
}

impl DeclaredHook {
    pub fn new(hook: Declared, shared: Arc<Shared>) -> Self {
        Self {
            hook,
            shared,
            notes: Mutex::new(Vec::new()),
        }
    }

    pub(super) fn declared(&self) -> &Declared {
        &self.hook
    }

    /// Writes a failure to the error log.
    pub(super) fn log(&self, stage: Stage, failed: &Failed) {
        self.shared.log.write(&self.hook.name, stage, failed);
    }

    pub(super) fn serves(&self, stage: Stage) -> bool {
        self.hook.stages.contains(&stage)
    }

    fn note(&self, note: String) {
        if let Ok(mut notes) = self.notes.lock() {
            notes.push(note);
        }
    }

    fn request(&self, stage: Stage, at: Context<'_>) -> Request {
        let target = at
            .task
            .as_ref()
            .and_then(|t| t.targets.first().cloned())
            .unwrap_or_else(|| self.shared.target.clone());
        let code = at.code.or_else(|| match stage.of_task() {
            true => None,
            false => std::fs::read_to_string(self.shared.root.join(&target)).ok(),
        });
        Request {
            protocol: PROTOCOL_VERSION,
            stage,
            hook: self.hook.name.clone(),
            session_id: at.session_id,
            iteration: at.iteration,
            project_dir: self.shared.root.display().to_string(),
            target,
            language: at.language,
            code,
            tests: at.tests,
            budget: at.budget,
            config: self.hook.config.clone(),
            task: at.task,
        }
    }

    /// Runs the hook at `stage`; `Err` is its failure, already logged and turned into what its
    /// `on_failure` says.
    async fn call(
        &self,
        stage: Stage,
        at: &Transition<'_>,
        code: Option<String>,
    ) -> Result<Answer, HookError> {
        self.invoke(stage, Context::of(at, code))
            .await
            .map_err(|failed| self.failed(stage, &failed))
    }

    /// Runs the hook at `stage` with `at`; `Err` is its failure, not yet logged.
    pub(super) async fn invoke(&self, stage: Stage, at: Context<'_>) -> Result<Answer, Failed> {
        let ask = at.ask;
        let request = self.request(stage, at);
        if self.hook.kind == HookType::Agent {
            return self.ask(&request, ask).await;
        }
        let stdin = serde_json::to_vec(&request).unwrap_or_default();
        // A shell hook changes the proposal by editing this file (named as the target, so a
        // formatter knows the language); it lives in a folder of its own, removed after.
        let scratch = match (stage, self.hook.kind) {
            (Stage::OnAfterGen, HookType::Shell) => Some(
                self.scratch(&request)
                    .map_err(|e| Failed::Spawn(format!("cannot write the proposal for it: {e}")))?,
            ),
            _ => None,
        };
        let mut vars = vec![
            ("RALPH_STAGE".to_string(), stage.as_str().to_string()),
            ("RALPH_HOOK".to_string(), self.hook.name.clone()),
            ("RALPH_SESSION_ID".to_string(), request.session_id.clone()),
            ("ITERATION".to_string(), request.iteration.to_string()),
            ("PROJECT_DIR".to_string(), request.project_dir.clone()),
            (
                "TASK_ID".to_string(),
                request
                    .task
                    .as_ref()
                    .map_or_else(|| request.session_id.clone(), |t| t.id.clone()),
            ),
            (
                "TASK_NAME".to_string(),
                request
                    .task
                    .as_ref()
                    .map_or_else(|| request.target.clone(), |t| t.name.clone()),
            ),
            (
                "TASK_DESCRIPTION".to_string(),
                request
                    .task
                    .as_ref()
                    .map(|t| t.description.clone())
                    .unwrap_or_default(),
            ),
            (
                "TASK_STATUS".to_string(),
                request.task.as_ref().map_or_else(
                    || "running".to_string(),
                    |t| t.status.clone().unwrap_or_else(|| "pending".into()),
                ),
            ),
            ("RALPH_TARGET".to_string(), request.target.clone()),
            (
                "RALPH_SPENT_USD".to_string(),
                format!("{:.6}", request.budget.spent_usd),
            ),
            (
                "RALPH_MAX_COST_USD".to_string(),
                format!("{:.6}", request.budget.max_cost_usd),
            ),
        ];
        if let Some(tests) = &request.tests {
            vars.push(("RALPH_TESTS_SUMMARY".to_string(), tests.summary.clone()));
        }
        vars.push(("TMPDIR".to_string(), self.shared.tmp.display().to_string()));
        vars.extend(self.shared.sdk.vars());
        if let Some((_, file)) = &scratch {
            vars.push((
                "RALPH_PROPOSAL_FILE".to_string(),
                file.display().to_string(),
            ));
        }
        let ran = exec::run(
            Invocation {
                command: &self.hook.command,
                dir: &self.shared.root,
                vars,
                allow_env: &self.hook.allow_env,
                stdin,
                timeout: Duration::from_secs_f64(self.hook.timeout_seconds),
                sandbox: self
                    .shared
                    .sandbox
                    .clone()
                    .map(|binary| (binary, self.policy())),
            },
            &self.shared.groups,
            self.shared.cancel.child_token(),
        )
        .await;
        let answer = match (ran, self.hook.kind) {
            (Ok(Ran::Blocked { reason }), _) => Ok(Answer::Veto {
                reasons: vec![if reason.is_empty() {
                    format!("{} blocked (exit 2) without saying why", self.hook.name)
                } else {
                    reason
                }],
                notes: Vec::new(),
            }),
            (Ok(Ran::Passed { .. }), HookType::Shell) => match &scratch {
                Some((_, file)) => match std::fs::read_to_string(file) {
                    Ok(code) if Some(&code) != request.code.as_ref() => Ok(Answer::Change {
                        code,
                        notes: Vec::new(),
                    }),
                    _ => Ok(Answer::Pass { notes: Vec::new() }),
                },
                None => Ok(Answer::Pass { notes: Vec::new() }),
            },
            // An `agent` hook returned before any process ran.
            (Ok(Ran::Passed { stdout }), HookType::Plugin | HookType::Agent) => {
                read_response(&stdout, stage)
            }
            (Err(e), _) => Err(e),
        };
        if let Some((dir, _)) = scratch {
            let _ = std::fs::remove_dir_all(dir);
        }
        answer
    }

    /// An `agent` hook: its prompt, filled from `request`, to its model; the reply is a note
    /// for the Artisan.
    async fn ask(&self, request: &Request, ask: Option<Asker<'_>>) -> Result<Answer, Failed> {
        let Some(Asker(ask)) = ask else {
            return Err(Failed::Model(AskError::NoModel(
                "there is no model to ask at this stage",
            )));
        };
        let prompt = super::prompt::fill(self.hook.prompt.as_deref().unwrap_or_default(), request);
        let seconds = self.hook.timeout_seconds;
        let asked = ask.ask(
            request.iteration,
            self.hook.model.as_deref(),
            super::prompt::AGENT_SYSTEM,
            &prompt,
        );
        let reply = tokio::select! {
            r = tokio::time::timeout(Duration::from_secs_f64(seconds), asked) => r,
            _ = self.shared.cancel.cancelled() => return Err(Failed::Cancelled),
        };
        let text = reply
            .map_err(|_| Failed::TimedOut(seconds))?
            .map_err(Failed::Model)?;
        Ok(Answer::Pass {
            notes: vec![format!(
                "The hook `{}` says: {}",
                self.hook.name,
                text.trim()
            )],
        })
    }

    /// What the hook may reach in the sandbox: the system, the project and its temporary folder,
    /// what is installed on `PATH`, and what its entry adds.
    fn policy(&self) -> Policy {
        let root = &self.shared.root;
        let resolve = |p: &PathBuf| root.join(p);
        let mut read: Vec<PathBuf> = self.hook.reach.read_paths.iter().map(resolve).collect();
        read.extend(self.shared.tools.iter().cloned());
        let mut write = vec![root.clone(), self.shared.tmp.clone()];
        write.extend(self.hook.reach.write_paths.iter().map(resolve));
        Policy {
            read,
            write,
            network: self.hook.reach.network,
        }
    }

    /// A folder for the proposal's file, and the file (holding the proposal).
    fn scratch(&self, request: &Request) -> std::io::Result<(PathBuf, PathBuf)> {
        let name = std::path::Path::new(&request.target)
            .file_name()
            .map(|n| n.to_os_string())
            .unwrap_or_else(|| "proposal".into());
        let dir = self
            .shared
            .tmp
            .join(format!("proposal-{}", uuid::Uuid::new_v4()));
        let file = dir.join(name);
        std::fs::create_dir_all(&dir)
            .and_then(|()| std::fs::write(&file, request.code.as_deref().unwrap_or_default()))?;
        Ok((dir, file))
    }

    /// Logs a failure and makes it what the hook's `on_failure` says.
    fn failed(&self, stage: Stage, failed: &Failed) -> HookError {
        let message = format!("failed at {}: {failed}", stage.as_str());
        // A run being stopped (Ctrl+C) is not the hook's failure: not logged, and not for its
        // `on_failure` to turn into an error or a note.
        if matches!(failed, Failed::Cancelled) {
            return HookError::new(
                &self.hook.name,
                format!("stopped at {}: the run was interrupted", stage.as_str()),
            );
        }
        self.shared.log.write(&self.hook.name, stage, failed);
        match self.hook.on_failure {
            OnFailure::WarnContinue => HookError::new(&self.hook.name, message),
            OnFailure::AskAgent => {
                self.note(format!(
                    "The hook `{}` {message}. Take it into account.",
                    self.hook.name
                ));
                HookError::new(&self.hook.name, format!("{message} (told to the Artisan)"))
            }
            OnFailure::AbortLoop | OnFailure::SkipTask => {
                HookError::stopping(&self.hook.name, message)
            }
        }
    }
}

/// The folders a hook reads to run what is on this process's `PATH` ([`installed`]).
pub fn tools() -> Vec<PathBuf> {
    let path: Vec<PathBuf> = std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .collect();
    installed(&path, &homes())
}

/// The folders a hook reads to run what is on `path`: each entry, and for a `bin` or `shims`
/// folder the tool's folder above it (`~/.pyenv` for `~/.pyenv/shims`, whose shims run
/// `~/.pyenv/libexec`; `~/.cargo`, and `~/.rustup` whose toolchains its proxies run), but never
/// a home folder (`homes`) or `/`.
fn installed(path: &[PathBuf], homes: &[PathBuf]) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for entry in path {
        dirs.push(entry.clone());
        let tool = entry
            .file_name()
            .filter(|n| *n == "bin" || *n == "shims")
            .and_then(|_| entry.parent())
            .filter(|p| p.components().count() > 1 && !homes.iter().any(|h| h == p));
        if let Some(tool) = tool {
            if tool.file_name().is_some_and(|n| n == ".cargo") {
                dirs.extend(tool.parent().map(|p| p.join(".rustup")));
            }
            dirs.push(tool.to_path_buf());
        }
    }
    dirs.sort();
    dirs.dedup();
    dirs
}

/// The user's home folders: `$HOME` and the account's, which differ when `HOME` is set.
fn homes() -> Vec<PathBuf> {
    let mut homes: Vec<PathBuf> = std::env::var_os("HOME")
        .map(PathBuf::from)
        .into_iter()
        .collect();
    // SAFETY: getuid has no preconditions and cannot fail.
    let uid = unsafe { libc::getuid() }.to_string();
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
    // name:password:uid:gid:gecos:home:shell
    homes.extend(
        passwd
            .lines()
            .map(|l| l.split(':').collect::<Vec<_>>())
            .find(|f| f.get(2) == Some(&uid.as_str()))
            .and_then(|f| f.get(5).map(PathBuf::from)),
    );
    homes
}

/// A plugin's answer read from its stdout.
pub(crate) fn read_response(stdout: &str, stage: Stage) -> Result<Answer, Failed> {
    let response: Response = serde_json::from_str(stdout.trim())
        .map_err(|e| Failed::Garbage(format!("{e}; it printed {:?}", cut(stdout.trim(), 200))))?;
    if response.protocol != PROTOCOL_VERSION {
        return Err(Failed::Garbage(format!(
            "protocol {} (this ralph-loop speaks {PROTOCOL_VERSION})",
            response.protocol
        )));
    }
    match response.action {
        Action::Pass => Ok(Answer::Pass {
            notes: response.notes,
        }),
        Action::Change => match (stage, response.code) {
            (Stage::OnAfterGen, Some(code)) => Ok(Answer::Change {
                code,
                notes: response.notes,
            }),
            (Stage::OnAfterGen, None) => Err(Failed::Garbage("`change` without `code`".into())),
            (other, _) => Err(Failed::Garbage(format!(
                "`change` at {}, where there is nothing to change",
                other.as_str()
            ))),
        },
        Action::Veto => Ok(Answer::Veto {
            reasons: response.reasons,
            notes: response.notes,
        }),
    }
}

fn tests(run: &TestRun) -> protocol::Tests {
    protocol::Tests {
        command: run.command.clone(),
        passed: run.totals.passed,
        failed: run.totals.failed,
        skipped: run.totals.skipped,
        criteria_met: run.criteria_met(),
        summary: run.summary(),
        failures: run
            .failures()
            .take(20)
            .map(|t| protocol::Failure {
                id: t.id.clone(),
                message: t.message.clone(),
            })
            .collect(),
    }
}

/// The stage a transition is, if any: of a fix run's states, or of an agent loop's (the agent's
/// turn is its generation, `Verify` its tests).
fn stage_of(at: &Transition<'_>) -> Option<Stage> {
    match (at.from, at.to, at.ended) {
        (_, StateKind::Generate | StateKind::Turn, _) => Some(Stage::OnBeforeGen),
        (StateKind::Test, StateKind::Decide, _) | (StateKind::Verify, StateKind::Judge, _)
            if at.last_run.is_some_and(|r| !r.criteria_met()) =>
        {
            Some(Stage::OnTestFail)
        }
        (_, StateKind::Done, Some(Status::Success)) => Some(Stage::OnSuccess),
        _ => None,
    }
}

#[async_trait::async_trait]
impl Hook for DeclaredHook {
    fn name(&self) -> &str {
        &self.hook.name
    }

    async fn on_transition(&self, at: &Transition<'_>) -> Result<(), HookError> {
        let Some(stage) = stage_of(at).filter(|s| self.serves(*s)) else {
            return Ok(());
        };
        match self.call(stage, at, None).await? {
            Answer::Pass { notes } | Answer::Change { notes, .. } => {
                notes.into_iter().for_each(|n| self.note(n))
            }
            Answer::Veto { reasons, notes } => {
                reasons.into_iter().chain(notes).for_each(|n| self.note(n));
            }
        }
        Ok(())
    }

    async fn amend(&self, at: &Transition<'_>, proposal: &mut Proposal) -> Result<(), HookError> {
        if !self.serves(Stage::OnAfterGen) || proposal.code.is_none() {
            return Ok(());
        }
        match self
            .call(Stage::OnAfterGen, at, proposal.code.clone())
            .await?
        {
            Answer::Pass { notes } => notes.into_iter().for_each(|n| self.note(n)),
            Answer::Change { code, notes } => {
                proposal.code = Some(code);
                notes.into_iter().for_each(|n| self.note(n));
            }
            Answer::Veto { reasons, notes } => {
                reasons.into_iter().chain(notes).for_each(|n| self.note(n));
            }
        }
        Ok(())
    }

    async fn before_success(&self, at: &Transition<'_>, _run: &TestRun) -> Result<Gate, HookError> {
        if !self.serves(Stage::OnBeforeSuccess) {
            return Ok(Gate::Pass);
        }
        match self.call(Stage::OnBeforeSuccess, at, None).await? {
            Answer::Pass { notes } | Answer::Change { notes, .. } => {
                notes.into_iter().for_each(|n| self.note(n));
                Ok(Gate::Pass)
            }
            Answer::Veto { reasons, notes } => {
                notes.into_iter().for_each(|n| self.note(n));
                let reasons = if reasons.is_empty() {
                    vec![format!(
                        "{} vetoed the success without saying why",
                        self.hook.name
                    )]
                } else {
                    reasons
                };
                Ok(Gate::Veto { reasons })
            }
        }
    }

    fn take_notes(&self) -> Vec<String> {
        self.notes
            .lock()
            .map(|mut n| std::mem::take(&mut *n))
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_installed_in_the_home_is_readable_whole_but_the_home_is_not() {
        let path: Vec<PathBuf> = [
            "/usr/bin",
            "/bin",
            "/home/u/.pyenv/shims",
            "/home/u/.cargo/bin",
            "/home/u/bin",
        ]
        .iter()
        .map(PathBuf::from)
        .collect();
        let dirs = installed(&path, &[PathBuf::from("/home/u")]);
        let shown: Vec<&str> = dirs.iter().filter_map(|d| d.to_str()).collect();
        assert_eq!(
            shown,
            [
                "/bin",
                "/home/u/.cargo",
                "/home/u/.cargo/bin",
                "/home/u/.pyenv",
                "/home/u/.pyenv/shims",
                "/home/u/.rustup",
                "/home/u/bin",
                "/usr",
                "/usr/bin"
            ]
        );
    }
}
