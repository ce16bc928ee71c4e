//! The flags several commands share, defined once: `--ui` and `--ui-bind` (a run, `resume`,
//! `batch`, `agent`, `loop`, `replay`), the limits of a run (a run, `resume`, `loop`), and
//! `--record` and `--replay` (a run, `batch`, `agent`).

use clap::{Args, ValueEnum};
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

/// How a command is shown.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Args)]
pub struct ViewArgs {
    /// The live view of human output: `tui` (full screen; a batch's or agent's task list beside
    /// each task's run, `s` to skip one), `lines`, `web` (lines and the dashboard), or `auto`
    /// (the TUI on an interactive terminal, else lines).
    #[arg(long, value_enum, value_name = "VIEW")]
    pub ui: Option<Ui>,
    /// The address `--ui web`'s dashboard listens on (default 127.0.0.1 and a free port).
    #[arg(long, value_name = "ADDR")]
    pub ui_bind: Option<std::net::SocketAddr>,
}

/// When a run stops short of success. Given to `resume`, a limit is the whole session's: what
/// it has done so far counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Args, Serialize, Deserialize)]
pub struct LimitArgs {
    /// Stop after this many iterations (default: the config's `budgets.max_iterations`, 30).
    #[arg(short = 'm', long = "max-iterations", alias = "maxRuns")]
    pub max_iterations: Option<u32>,
    /// Cost cap in US dollars (default: the config's `budgets.max_cost_usd`, 2.00); a fix run
    /// stops before a model call could cross it, a `loop` between iterations (and at
    /// `regent.max_cost_per_iteration` within one).
    #[arg(long, value_name = "USD")]
    pub budget: Option<f64>,
    /// Time cap in minutes, checked between iterations and steps.
    #[arg(long, value_name = "MINUTES")]
    pub max_duration: Option<f64>,
}

impl LimitArgs {
    /// These limits, and `under`'s where these set none.
    pub fn or(self, under: LimitArgs) -> LimitArgs {
        LimitArgs {
            max_iterations: self.max_iterations.or(under.max_iterations),
            budget: self.budget.or(under.budget),
            max_duration: self.max_duration.or(under.max_duration),
        }
    }
}

/// The recording a command's model exchanges are written to, or answered from. A batch's or an
/// agent's runs share one, each run's exchanges named by its spec.
#[derive(Debug, Clone, Default, PartialEq, Eq, Args, Serialize, Deserialize)]
pub struct TapeArgs {
    /// Record every model exchange to FILE, for `--replay`.
    #[arg(long, value_name = "FILE", conflicts_with = "replay")]
    pub record: Option<std::path::PathBuf>,
    /// Answer every model call from a recording made with `--record`; no network, no key.
    #[arg(long, value_name = "FILE")]
    pub replay: Option<std::path::PathBuf>,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use crate::cli::RunArgs;

    /// A session saved before the shared flags were grouped still resumes with its limits and
    /// its recording: the groups are flattened into the same keys.
    #[test]
    fn a_run_s_saved_flags_keep_their_keys() {
        let saved = r#"{"file":"a.ts","max_iterations":4,"budget":0.5,"max_duration":null,
            "record":"r.jsonl","replay":null,"models":null,"allow_test_edits":false}"#;
        let args: RunArgs = serde_json::from_str(saved).unwrap();
        assert_eq!(args.limits.max_iterations, Some(4));
        assert_eq!(args.limits.budget, Some(0.5));
        assert_eq!(args.tape.record.as_deref(), Some("r.jsonl".as_ref()));
        let json = serde_json::to_value(&args).unwrap();
        assert_eq!(json["max_iterations"], 4);
        assert_eq!(json["record"], "r.jsonl");
        assert!(json.get("limits").is_none() && json.get("ui").is_none());
    }
}
