//! The Librarian: reads the project fresh from disk for each iteration and, when the last test
//! run failed, asks its model for a short analysis for the Artisan.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use actix::{Actor, Context, Handler, ResponseFuture};
use serde::{Deserialize, Serialize};

use super::{guarded, Caller, Role};
use crate::error::{Error, Result};
use crate::events::Event;
use crate::messages::GatherContext;
use crate::runner::{Category, TestCase, TestRun};
use crate::settings::RunSettings;
use crate::workspace::{
    ContextChoice, ContextPack, ContextRelation, ContextSummary, ExcludedFile, RelatedFile,
    SessionStore, SourceFile, Workspace,
};

/// The Artisan's context window assumed when the price table does not know its model: small
/// enough for any current code model, so the packed files fit wherever the run goes.
pub const FALLBACK_WINDOW: u32 = 32_000;

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
    /// The failing tests, most relevant first, within the configured size.
    #[serde(default)]
    pub failures: Vec<FailureView>,
    /// Failing tests left out of `failures` for size.
    #[serde(default)]
    pub omitted: usize,
    /// Success criteria not met (coverage, linter), when the tests passed.
    #[serde(default)]
    pub unmet: Option<String>,
    /// The tail of the output, within what the failures left of the configured size.
    pub output: String,
}

/// One failing test as the prompts show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailureView {
    pub id: String,
    pub category: Option<String>,
    pub error_type: Option<String>,
    /// `file:line` where the failure was raised.
    pub location: Option<String>,
    pub message: Option<String>,
    pub stack: Option<String>,
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
    /// Project files near the target in its import graph, nearest first.
    #[serde(default)]
    pub related: Vec<RelatedFile>,
    /// Nearby files that did not fit, with their exported signatures where those fitted.
    #[serde(default)]
    pub excluded: Vec<ExcludedFile>,
    /// Nearby files left out beyond those listed in `excluded`.
    #[serde(default)]
    pub unlisted: u32,
    /// What was included and why, for the event and `iterations.log`.
    #[serde(default)]
    pub context: ContextSummary,
    /// Attempts at similar failures the MemoryVault recalled (filled by the Supervisor).
    #[serde(default)]
    pub memory: Vec<crate::memory::MemoryView>,
}

/// Tokens the project's files may take in a prompt: the configured share of the Artisan's
/// context window, or of the Librarian's when it analyses the failures (it then reads the same
/// files) and its window is the smaller.
pub fn context_budget(settings: &RunSettings) -> u32 {
    let window_of = |role| {
        settings
            .context_windows
            .get(&role)
            .copied()
            .unwrap_or(FALLBACK_WINDOW)
    };
    let mut window = window_of(Role::Artisan);
    if settings.librarian_analyze {
        window = window.min(window_of(Role::Librarian));
    }
    (f64::from(window) * settings.context_share).floor() as u32
}

/// At most this many of the graph's own warnings (unreadable or over-long files) are shown in a
/// run; each is shown once, not every iteration.
const GRAPH_WARNINGS_SHOWN: usize = 10;

/// The warnings of `warnings` not shown before in this run, recorded as shown; at most
/// [`GRAPH_WARNINGS_SHOWN`] in all, the last one saying that more were held back.
fn first_seen(warned: &Mutex<HashSet<String>>, warnings: &[String]) -> Vec<String> {
    let mut warned = warned.lock().unwrap_or_else(|e| e.into_inner());
    let mut out = Vec::new();
    for warning in warnings {
        if warned.len() > GRAPH_WARNINGS_SHOWN {
            break;
        }
        if !warned.insert(warning.clone()) {
            continue;
        }
        if warned.len() > GRAPH_WARNINGS_SHOWN {
            out.push(format!(
                "import graph: more warnings held back (the first {GRAPH_WARNINGS_SHOWN} are shown)"
            ));
        } else {
            out.push(format!("import graph: {warning}"));
        }
    }
    out
}

pub struct Librarian {
    workspace: Arc<dyn Workspace>,
    store: Arc<dyn SessionStore>,
    caller: Arc<Caller>,
    settings: Arc<RunSettings>,
    test_command: String,
    /// Graph warnings already shown in this run.
    warned: Arc<Mutex<HashSet<String>>>,
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
            warned: Arc::default(),
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
        let warned = self.warned.clone();
        Box::pin(guarded(Role::Librarian, async move {
            let ws_err = Error::Workspace;
            let target = ws.target().await.map_err(ws_err)?;
            let last = store.last_test_results().await.map_err(ws_err)?;
            let test_file = ws.test_file().await.map_err(ws_err)?;
            let test_file_path = test_file.as_ref().map(|f| f.path.clone());
            let target_path = target.path.clone();
            let budget = context_budget(&settings);
            // The neighbourhood is an aid: without it the Artisan still has the target and its
            // tests, so a graph that cannot be built is a warning, not a failed run.
            let pack = match ws
                .related(&settings.model(Role::Artisan).model, budget)
                .await
            {
                Ok(pack) => pack,
                Err(e) => {
                    caller.events.emit(Event::Warning {
                        message: format!(
                            "iteration {}: the import graph is unavailable ({e}); the prompt has only the target and its tests",
                            msg.iteration
                        ),
                    });
                    ContextPack {
                        placed: vec![ContextChoice {
                            path: target_path.clone(),
                            distance: 0,
                            relation: ContextRelation::Target,
                            reason: "target".into(),
                        }],
                        budget,
                        ..ContextPack::default()
                    }
                }
            };
            for message in first_seen(&warned, &pack.warnings) {
                caller.events.emit(Event::Warning { message });
            }
            let summary = pack.summary();
            caller.events.emit(Event::ContextGathered {
                iteration: msg.iteration,
                included: summary.included.clone(),
                excluded: summary.excluded,
                tokens: summary.tokens,
                budget: summary.budget,
            });
            let unlisted = pack
                .excluded_count
                .saturating_sub(pack.excluded.len() as u32);
            let mut bundle = ContextBundle {
                iteration: msg.iteration,
                target: TargetView {
                    language: language_of(&target.path).to_string(),
                    path: target.path,
                    content: target.content,
                },
                test_file,
                instructions: ws.prompt().await.map_err(ws_err)?.map(|p| p.content),
                manifest: ws.manifest().await.map_err(ws_err)?,
                test_command,
                last_results: last.as_ref().map(|r| {
                    view(
                        r,
                        settings.max_test_output_bytes,
                        &[Some(target_path.as_str()), test_file_path.as_deref()],
                    )
                }),
                analysis: None,
                related: pack.related,
                excluded: pack.excluded,
                unlisted,
                context: summary,
                memory: Vec::new(),
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

/// A failure's message and stack are each cut to this much, so one long diff does not crowd out
/// the other failures.
const MESSAGE_MAX: usize = 2000;
const STACK_MAX: usize = 1200;

/// The run as the Artisan sees it: its failures, most relevant first, then the tail of its
/// output, all within `max_bytes`. Most relevant: failures that stop everything (SYNTAX, then
/// ENVIRONMENT) before wrong answers (LOGIC) and limits (PERFORMANCE); within a category, those
/// raised in the target or its test file (`relevant` paths) first; then the tool's order.
fn view(run: &TestRun, max_bytes: usize, relevant: &[Option<&str>]) -> ResultsView {
    let rank = |c: Option<Category>| match c {
        Some(Category::Syntax) => 0,
        Some(Category::Environment) => 1,
        Some(Category::Logic) => 2,
        Some(Category::Performance) => 3,
        Some(Category::Flaky) | None => 4,
    };
    let names: Vec<&str> = relevant
        .iter()
        .flatten()
        .map(|p| p.rsplit('/').next().unwrap_or(p))
        .collect();
    let mentions = |t: &TestCase| {
        let text = [
            t.location.as_ref().map(|l| l.file.as_str()),
            t.file.as_deref(),
            t.stack.as_deref(),
            Some(t.id.as_str()),
        ];
        names
            .iter()
            .any(|n| text.iter().flatten().any(|s| s.contains(n)))
    };
    let mut failing: Vec<(usize, &TestCase)> = run.failures().enumerate().collect();
    failing.sort_by_key(|(i, t)| (rank(t.category), !mentions(t), *i));

    let mut budget = max_bytes;
    let mut failures = Vec::new();
    let mut omitted = 0;
    for (_, t) in failing {
        let message = t.message.as_deref().map(|m| cut(m, MESSAGE_MAX));
        let stack = t.stack.as_deref().map(|m| cut(m, STACK_MAX));
        let size = t.id.len()
            + message.as_ref().map_or(0, String::len)
            + stack.as_ref().map_or(0, String::len)
            + 64;
        if size > budget && !failures.is_empty() {
            omitted += 1;
            continue;
        }
        budget = budget.saturating_sub(size);
        failures.push(FailureView {
            id: t.id.clone(),
            category: t.category.map(|c| c.as_str().to_string()),
            error_type: t.error_type.clone(),
            location: t.location.as_ref().map(|l| match l.line {
                Some(line) => format!("{}:{line}", l.file),
                None => l.file.clone(),
            }),
            message,
            stack,
        });
    }
    // With the failures read from a report, the output adds little: it gets what is left, at
    // most a quarter of the allowance.
    let output_bytes = if failures.is_empty() {
        max_bytes
    } else {
        budget.min(max_bytes / 4)
    };
    ResultsView {
        summary: run.summary(),
        passed: run.passed(),
        failing: run.failing_ids().into_iter().map(String::from).collect(),
        failures,
        omitted,
        unmet: crate::criteria::unmet(run),
        output: tail(&run.output, output_bytes),
    }
}

/// `text` cut to about `max` bytes on a char boundary, marked when cut.
fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}\n[... {} more bytes]", &text[..end], text.len() - end)
}

/// The last `max_bytes` of a run's output, cut on a line boundary.
fn tail(out: &str, max_bytes: usize) -> String {
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
    output
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
