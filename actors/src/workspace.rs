//! The project files an iteration reads and writes, and the session store under `.ralph/`.

use serde::{Deserialize, Serialize};

use crate::runner::TestRun;

/// A file of the project, with its path as the user gave it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceFile {
    pub path: String,
    pub content: String,
}

/// The project as an iteration sees it, read fresh from disk each time.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait::async_trait]
pub trait Workspace: Send + Sync {
    async fn target(&self) -> Result<SourceFile, String>;
    /// Replaces the target's content atomically: a reader sees the old or the new file, never part.
    async fn write_target(&self, content: String) -> Result<(), String>;
    async fn test_file(&self) -> Result<Option<SourceFile>, String>;
    /// The user's instructions: `-p FILE` or `<target>.prompt.md`.
    async fn prompt(&self) -> Result<Option<SourceFile>, String>;
    /// The project manifest (`package.json`, `pyproject.toml`, `Cargo.toml`, ...).
    async fn manifest(&self) -> Result<Option<SourceFile>, String>;
    /// The project files nearest the target in its import graph, packed so that they, the
    /// target and its test file take at most `budget_tokens` tokens as `model` counts them.
    /// The target and its test file have their own places in a prompt and are not repeated.
    async fn related(&self, model: &str, budget_tokens: u32) -> Result<ContextPack, String>;
}

/// How a related file is linked to the target, for the reason shown beside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ContextRelation {
    /// The target itself.
    Target,
    /// Reached by following imports from the target only (its imports, their imports, ...).
    Imported,
    /// Reached by following imports into the target only (files importing it, such as its tests).
    Importer,
    /// Reached through both directions (a sibling that imports one of the target's imports).
    Neighbour,
}

/// One file the Librarian put in (or left out of) the prompt, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContextChoice {
    pub path: String,
    /// Import edges between the file and the target (0 for the target).
    pub distance: u32,
    pub relation: ContextRelation,
    /// As shown to the models: `imported by target`, `distance 2 via src/util.ts`, ...
    pub reason: String,
}

/// A file of the project shown to the Artisan beside the target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RelatedFile {
    #[serde(flatten)]
    pub choice: ContextChoice,
    pub content: String,
    /// The language name its fenced block uses.
    pub language: String,
    /// Tokens its block takes in the prompt.
    pub tokens: u32,
}

/// A file near the target that did not fit: named, with its exported signatures when those fit
/// the listing's own small allowance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExcludedFile {
    pub path: String,
    pub distance: u32,
    /// Empty when only the name fitted.
    #[serde(default)]
    pub signatures: Vec<String>,
}

/// The target's neighbourhood as it fits the prompt: included files nearest first.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContextPack {
    /// Included files that have their own place in a prompt (the target, its test file).
    pub placed: Vec<ContextChoice>,
    pub related: Vec<RelatedFile>,
    /// Files left out, nearest first, as far as the listing's allowance goes.
    pub excluded: Vec<ExcludedFile>,
    /// Every file left out, including those too far down to be listed.
    pub excluded_count: u32,
    /// Tokens of the target, its test file and the related files.
    pub tokens: u32,
    pub budget: u32,
    /// What the graph could not read or warns about (an over-long file), for the user.
    #[serde(default)]
    pub warnings: Vec<String>,
}

/// What the Librarian put in an iteration's prompt, for `iterations.log` and the event.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContextSummary {
    pub included: Vec<ContextChoice>,
    pub excluded: u32,
    pub tokens: u32,
    pub budget: u32,
}

impl ContextPack {
    pub fn summary(&self) -> ContextSummary {
        ContextSummary {
            included: self
                .placed
                .iter()
                .chain(self.related.iter().map(|f| &f.choice))
                .cloned()
                .collect(),
            excluded: self.excluded_count,
            tokens: self.tokens,
            budget: self.budget,
        }
    }
}

/// What one iteration did, one JSON object per line of `iterations.log`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IterationRecord {
    pub iteration: u32,
    pub started_at: String,
    pub duration_ms: u64,
    pub critic_rejections: u32,
    pub critic_approved: bool,
    pub tests: String,
    pub passed: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
    pub cost_usd: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
    /// The project files the Librarian added to the prompt, and why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<ContextSummary>,
}

/// The session folder `.ralph/session-<uuid>/`: everything needed to report and resume.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait::async_trait]
pub trait SessionStore: Send + Sync {
    async fn last_test_results(&self) -> Result<Option<TestRun>, String>;
    async fn save_test_results(&self, iteration: u32, run: &TestRun) -> Result<(), String>;
    async fn append_iteration(&self, record: &IterationRecord) -> Result<(), String>;
    async fn save_state(&self, state: &crate::supervisor::SessionState) -> Result<(), String>;
    async fn save_report(&self, report: &crate::report::Report) -> Result<(), String>;
}
