//! The target's neighbourhood as the Librarian packs it into a prompt: which files, why, and
//! at what cost in tokens.

use serde::{Deserialize, Serialize};

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
