//! What an iteration's prompts show: the [`ContextBundle`] the Librarian gathers and every role's
//! template renders.

use serde::{Deserialize, Serialize};

use crate::memory::view::MemoryView;
use crate::policy::adversarial::Candidate;
use crate::ports::workspace::SourceFile;
use crate::prompt::results::ResultsView;
use crate::schema::context::{ContextSummary, ExcludedFile, RelatedFile};

/// The target as the prompts show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TargetView {
    pub path: String,
    pub content: String,
    pub language: String,
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
    /// How many proposals ago the failure the analysis explains was seen: 0 for the failure the
    /// Artisan is shown; 1 when it was asked beside the Artisan's last call and came in after it.
    #[serde(default)]
    pub analysis_age: u32,
    /// Why the Librarian's analysis ran (`librarian.analyze`); `None`: it did not.
    #[serde(default)]
    pub analysis_reason: Option<String>,
    /// The Critic's review of the last proposal, which ran beside its tests (`critic.mode:
    /// parallel`) and came in before this prompt: its reasons when it rejected.
    #[serde(default)]
    pub late_review: Option<String>,
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
    pub memory: Vec<MemoryView>,
    /// What hooks asked the Artisan to address: the reasons a success was vetoed (a plugin, the
    /// Chaos role), notes a hook attached. Empty unless a hook spoke.
    #[serde(default)]
    pub notes: Vec<String>,
    /// The last iteration's proposal made things worse and was undone: what was tried and why
    /// it was undone, for the Artisan.
    #[serde(default)]
    pub undone: Option<String>,
    /// What the user told the Artisan (`resume --guidance`, or typed when the breaker asked).
    #[serde(default)]
    pub guidance: Option<String>,
    /// Chaos's findings the fix does not pass yet, with their test files (filled by the
    /// Supervisor).
    #[serde(default)]
    pub adversarial: Option<AdversarialView>,
}

/// What the Artisan is shown of Chaos's open findings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdversarialView {
    pub failures: Vec<Candidate>,
    /// The files that hold them.
    pub suites: Vec<SuiteView>,
}

/// One of Chaos's test files, as a prompt shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SuiteView {
    pub path: String,
    pub content: String,
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
