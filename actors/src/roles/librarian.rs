//! The Librarian: reads the project fresh from disk for each iteration and, when the last test
//! run failed, asks its model for a short analysis for the Artisan.

use std::sync::Arc;

use actix::{Actor, Context, Handler, ResponseFuture};
use serde::{Deserialize, Serialize};

use super::{guarded, Caller, Role};
use crate::error::{Error, Result};
use crate::messages::GatherContext;
use crate::runner::TestRun;
use crate::settings::RunSettings;
use crate::workspace::{SessionStore, SourceFile, Workspace};

/// The target as the prompts show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TargetView {
    pub path: String,
    pub content: String,
    pub language: String,
}

/// The last test run as the prompts show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResultsView {
    pub summary: String,
    pub passed: bool,
    pub failing: Vec<String>,
    /// The tail of the output, within the configured size.
    pub output: String,
}

/// Everything an iteration knows, read from disk at its start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContextBundle {
    pub iteration: u32,
    pub target: TargetView,
    pub test_file: Option<SourceFile>,
    pub instructions: Option<String>,
    pub manifest: Option<SourceFile>,
    pub test_command: String,
    pub last_results: Option<ResultsView>,
    pub analysis: Option<String>,
}

pub struct Librarian {
    workspace: Arc<dyn Workspace>,
    store: Arc<dyn SessionStore>,
    caller: Arc<Caller>,
    settings: Arc<RunSettings>,
    test_command: String,
}

impl Librarian {
    pub fn new(
        workspace: Arc<dyn Workspace>,
        store: Arc<dyn SessionStore>,
        caller: Arc<Caller>,
        settings: Arc<RunSettings>,
        test_command: String,
    ) -> Self {
        Self {
            workspace,
            store,
            caller,
            settings,
            test_command,
        }
    }
}

impl Actor for Librarian {
    type Context = Context<Self>;
}

impl Handler<GatherContext> for Librarian {
    type Result = ResponseFuture<Result<ContextBundle>>;

    fn handle(&mut self, msg: GatherContext, _: &mut Context<Self>) -> Self::Result {
        let (ws, store, caller, settings) = (
            self.workspace.clone(),
            self.store.clone(),
            self.caller.clone(),
            self.settings.clone(),
        );
        let test_command = self.test_command.clone();
        Box::pin(guarded(Role::Librarian, async move {
            let ws_err = Error::Workspace;
            let target = ws.target().await.map_err(ws_err)?;
            let last = store.last_test_results().await.map_err(ws_err)?;
            let mut bundle = ContextBundle {
                iteration: msg.iteration,
                target: TargetView {
                    language: language_of(&target.path).to_string(),
                    path: target.path,
                    content: target.content,
                },
                test_file: ws.test_file().await.map_err(ws_err)?,
                instructions: ws.prompt().await.map_err(ws_err)?.map(|p| p.content),
                manifest: ws.manifest().await.map_err(ws_err)?,
                test_command,
                last_results: last
                    .as_ref()
                    .map(|r| view(r, settings.max_test_output_bytes)),
                analysis: None,
            };
            let failed = bundle.last_results.as_ref().is_some_and(|r| !r.passed);
            if settings.librarian_analyze && failed {
                let messages = settings
                    .templates
                    .render(Role::Librarian, &bundle)
                    .map_err(Error::Workspace)?;
                let reply = caller
                    .call(
                        msg.iteration,
                        Role::Librarian,
                        settings.model(Role::Librarian),
                        messages.into(),
                        &msg.cancel,
                    )
                    .await?;
                bundle.analysis = Some(reply.text.trim().to_string()).filter(|a| !a.is_empty());
            }
            Ok(bundle)
        }))
    }
}

/// The last `max_bytes` of a run's output, cut on a line boundary.
fn view(run: &TestRun, max_bytes: usize) -> ResultsView {
    let out = &run.output;
    let mut start = out.len().saturating_sub(max_bytes);
    while !out.is_char_boundary(start) {
        start += 1;
    }
    // Start on a whole line: at `start` if a line begins there, else after the next newline.
    if start > 0 && out.as_bytes()[start - 1] != b'\n' {
        start = out[start..].find('\n').map_or(start, |i| start + i + 1);
    }
    let mut output = out[start..].to_string();
    if start > 0 {
        output.insert_str(
            0,
            &format!("[... {start} earlier bytes of output cut ...]\n"),
        );
    }
    ResultsView {
        summary: run.summary(),
        passed: run.passed(),
        failing: run.failing_ids().into_iter().map(String::from).collect(),
        output,
    }
}

/// The language name a fenced block and a prompt use for a file.
pub fn language_of(path: &str) -> &'static str {
    let ext = path.rsplit_once('.').map(|(_, e)| e).unwrap_or("");
    match ext {
        "ts" | "mts" | "cts" => "typescript",
        "tsx" => "tsx",
        "js" | "mjs" | "cjs" => "javascript",
        "jsx" => "jsx",
        "py" => "python",
        "rs" => "rust",
        "go" => "go",
        "rb" => "ruby",
        "java" => "java",
        "kt" => "kotlin",
        "c" | "h" => "c",
        "cc" | "cpp" | "hpp" => "cpp",
        "cs" => "csharp",
        "php" => "php",
        "swift" => "swift",
        "sh" => "bash",
        _ => "text",
    }
}
