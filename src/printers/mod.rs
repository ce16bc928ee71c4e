//! Renderings of the one event stream, each a [`Printer`]: a live [`human`] view on stderr,
//! [`jsonl`] (every event, one JSON line each, on stdout) and [`json`] (the final report alone);
//! [`loop_lines`] are the human view's lines for the agent loop; [`summary`] the human summary of
//! a finished session; [`event_log`] is the session's `events.jsonl`, written beside the others.
//! A printer is a subscriber of the session's event bus; any number can watch one run.
//!
//! Adding a printer is one type that implements [`Printer`] (in a module of its own) and one
//! arm in [`for_format`].

pub(crate) mod event_log;
pub(crate) mod summary;
pub(crate) mod human;
pub(crate) mod json;
pub(crate) mod jsonl;
pub(crate) mod loop_lines;
pub(crate) mod printer;

pub use printer::{drive, Printer};

use crate::cli::OutputFormat;

/// The printer of `--output`, writing where that format belongs.
pub fn for_format(format: OutputFormat) -> Box<dyn Printer> {
    match format {
        OutputFormat::Human => Box::new(human::Human::new(std::io::stderr())),
        OutputFormat::Jsonl => Box::new(jsonl::JsonLines::new(std::io::stdout())),
        OutputFormat::Json => Box::new(json::JsonReport::new(std::io::stdout())),
    }
}
