//! The live views of a run, beside the printers: [`state`] (what a view shows, folded from the
//! event stream), [`tui`] (`--ui tui`, the full-screen terminal view) and [`web`] (`--ui web` and
//! `ralph-loop dashboard`, in a browser); [`pace`] the pace of a replay in either; [`board`] the
//! task list of a batch or an agent.
//!
//! [`choose`] resolves `--ui auto` ([`Ui`]): the TUI on an interactive
//! terminal that can hold it, the line printer otherwise, with the reason in a note.

pub(crate) mod board;
pub(crate) mod pace;
pub(crate) mod state;
pub mod tui;
pub(crate) mod web;

pub use crate::cli::Ui;

/// What a run shows: `Tui`, or `Lines` with the reason when the TUI was asked for (or would
/// have been the default) but cannot be drawn here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Chosen {
    Tui,
    Lines {
        why_not_tui: Option<String>,
    },
    /// The run's printer (lines, or JSON on stdout) and the web dashboard.
    Web,
}

/// Resolves `--ui` for a run printed as `human` (`human` false: JSON on stdout, which the TUI
/// would draw over, so the run prints its JSON and `--ui tui` says why there is no TUI).
pub fn choose(asked: Ui, human: bool) -> Chosen {
    match asked {
        Ui::Lines => Chosen::Lines { why_not_tui: None },
        Ui::Web => Chosen::Web,
        Ui::Auto if !human => Chosen::Lines { why_not_tui: None },
        Ui::Tui if !human => Chosen::Lines {
            why_not_tui: Some(
                "--ui tui: the output is JSON on stdout, which the TUI would draw over; no TUI"
                    .into(),
            ),
        },
        Ui::Auto => match tui::usable() {
            Ok(()) => Chosen::Tui,
            Err(_) => Chosen::Lines { why_not_tui: None },
        },
        Ui::Tui => match tui::usable() {
            Ok(()) => Chosen::Tui,
            Err(why) => Chosen::Lines {
                why_not_tui: Some(format!("--ui tui: {why}; showing lines instead")),
            },
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_on_stdout_never_comes_with_the_tui() {
        assert!(matches!(
            choose(Ui::Tui, false),
            Chosen::Lines { why_not_tui: Some(why) } if why.contains("JSON on stdout")
        ));
        assert_eq!(choose(Ui::Auto, false), Chosen::Lines { why_not_tui: None });
        assert_eq!(choose(Ui::Web, false), Chosen::Web);
    }
}
