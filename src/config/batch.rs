//! The `batch:` section: the entries `ralph-loop batch` runs when given none, each a spec or a
//! file, with settings of its own over the spec's and the command line's.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::checks::{opt_at_least_one, opt_language, opt_non_empty, opt_positive};

/// One entry: `spec` or `file`, and what it overrides.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BatchEntry {
    /// A spec (Markdown with front matter), relative to this file.
    #[serde(default)]
    pub spec: Option<PathBuf>,
    /// A file to fix, relative to this file.
    #[serde(default)]
    pub file: Option<PathBuf>,
    /// The test file shown with `file`, relative to this file.
    #[serde(default)]
    pub test_file: Option<PathBuf>,
    #[serde(default, deserialize_with = "opt_non_empty")]
    pub test_command: Option<String>,
    /// Dollars, for each of the entry's runs.
    #[serde(default, deserialize_with = "opt_positive")]
    pub budget: Option<f64>,
    #[serde(default, deserialize_with = "opt_at_least_one")]
    pub max_iterations: Option<u32>,
    /// `librarian=gemini,artisan=claude`, or one model for every role.
    #[serde(default, deserialize_with = "opt_non_empty")]
    pub models: Option<String>,
    #[serde(default, deserialize_with = "opt_language")]
    pub language: Option<String>,
    /// Chaos on or off for this entry.
    #[serde(default)]
    pub adversarial: Option<bool>,
    /// `quick` or `full` for this entry's runs.
    #[serde(default)]
    pub profile: Option<ralph_actors::settings::Profile>,
}
