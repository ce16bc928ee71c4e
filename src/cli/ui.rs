//! `--ui`, which the run, batch and agent commands share.

use clap::ValueEnum;
use serde::{Deserialize, Serialize};

/// `--ui`: how a run is shown while it goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Ui {
    /// The TUI on an interactive terminal, else lines.
    #[default]
    Auto,
    /// The full-screen terminal view.
    Tui,
    /// One line per step on stderr (the view of a log or a CI job).
    Lines,
    /// Lines, and the web dashboard of the run at the URL printed (see `--ui-bind`).
    Web,
}
