//! `micro-agent`: a drop-in for BuilderIO's micro-agent on top of ralph-loop.
//!
//! The same flags `-t -f -p -m` (`--thread` accepted and ignored, `-v` refused: both said on
//! stderr), same environment (`OPENAI_KEY`, `ANTHROPIC_KEY`, `MODEL`, `ANTHROPIC_MODEL`,
//! `OPENAI_API_ENDPOINT`) and the same INI file `~/.micro-agent`, where the environment wins
//! over the file as in micro-agent. micro-agent has one model, so `MODEL` runs every role.
//!
//! - `interactive`: `micro-agent` without a file asks what to build, then runs;
//! - `ask`: questions at the terminal; `micro-agent config` without arguments edits the file
//!   through them;
//! - `ini`: `~/.micro-agent` itself, and `config set` / `config get`.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::app::{self, Overrides};
use crate::cli::{LimitArgs, RunArgs, ViewArgs};
use crate::error::{Error, Result, UsageError};

mod ask;
mod ini;
mod interactive;

use ini::{config_command, config_path, load_ini, ConfigAction};
pub use ini::{settings, KEYS};

/// micro-agent's default for `--maxRuns`.
pub const DEFAULT_MAX_RUNS: u32 = 20;

#[derive(Debug, Parser)]
#[command(
    name = "micro-agent",
    version,
    about = "An AI agent that writes code until the tests pass (ralph-loop inside)."
)]
struct MicroArgs {
    #[command(subcommand)]
    command: Option<MicroCommand>,
    /// The file to write or fix.
    file_path: Option<PathBuf>,
    /// A prompt file of instructions.
    #[arg(short = 'p', long)]
    prompt: Option<PathBuf>,
    /// The test script to run.
    #[arg(short = 't', long)]
    test: Option<String>,
    /// The test file to show the model.
    #[arg(short = 'f', long = "testFile", alias = "test-file")]
    test_file: Option<PathBuf>,
    /// The maximum number of runs to attempt.
    #[arg(short = 'm', long = "maxRuns", alias = "max-runs")]
    max_runs: Option<u32>,
    /// Thread ID to resume (OpenAI Assistants; not supported, see stderr).
    #[arg(long)]
    thread: Option<String>,
    /// Visual matching against a URL (not supported, see stderr).
    #[arg(short = 'v', long)]
    visual: Option<String>,
}

#[derive(Debug, Subcommand)]
enum MicroCommand {
    /// Read or write ~/.micro-agent (without arguments, at a terminal: edit it key by key).
    Config {
        #[command(subcommand)]
        action: Option<ConfigAction>,
    },
}

pub fn main(argv: impl IntoIterator<Item = OsString>) -> Result<i32> {
    let args = match MicroArgs::try_parse_from(argv) {
        Ok(a) => a,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return Ok(code);
        }
    };
    if let Some(MicroCommand::Config { action }) = args.command {
        return match action {
            Some(action) => config_command(action),
            None => edit_config(),
        };
    }
    if args.visual.is_some() {
        return Err(Error::Usage(UsageError::Unsupported(
            "visual matching (-v/--visual) is not supported by ralph-loop; run with -t and a test file instead",
        )));
    }
    let thread_note = args.thread.as_ref().map(|thread| {
        format!(
            "--thread {thread} is ignored: ralph-loop starts every iteration from a fresh context and keeps no OpenAI thread; \
             `ralph-loop resume` continues an interrupted session"
        )
    });
    let values = settings(|k| std::env::var(k).ok())?;
    let interactive = args.file_path.is_none() || args.test.is_none();
    let (run, mut overrides) = translate(
        &values,
        RunArgs {
            file: args.file_path,
            test_command: args.test,
            test_file: args.test_file,
            prompt: args.prompt,
            limits: LimitArgs {
                max_iterations: Some(args.max_runs.unwrap_or(DEFAULT_MAX_RUNS)),
                ..LimitArgs::default()
            },
            // micro-agent stops at green tests: no Chaos round, whatever the config says.
            no_adversarial: true,
            // It prints its progress as lines, as BuilderIO's does.
            view: ViewArgs {
                ui: Some(crate::views::Ui::Lines),
                ui_bind: None,
            },
            ..RunArgs::default()
        },
    );
    // What micro-agent offers and ralph-loop does not: notes on the run's event stream (and in
    // its report), or on stderr when the run cannot start.
    overrides.notes = thread_note
        .into_iter()
        .chain(overrides.notes)
        .map(|note| format!("micro-agent: {note}"))
        .collect();
    if interactive {
        // As micro-agent: with no file, or no test command, it asks.
        return interactive::run(run, overrides);
    }
    app::run(run, overrides)
}

/// `micro-agent config` without arguments: each key with its value (keys masked), then the key
/// to set and its value, until an empty answer. Needs a terminal.
fn edit_config() -> Result<i32> {
    if !interactive::at_a_terminal() {
        return Err(Error::Usage(UsageError::MicroAgent(
            "`micro-agent config` without arguments edits ~/.micro-agent at a terminal; \
             here, give `config set KEY=VALUE ...` or `config get [KEY ...]`"
                .into(),
        )));
    }
    let path = config_path()?;
    let mut asker = ask::Asker {
        input: std::io::stdin().lock(),
        out: std::io::stderr(),
    };
    loop {
        let ini = load_ini(&path)?;
        asker.say(&format!("{}:", path.display()))?;
        for key in KEYS {
            let value = ini.general_section().get(*key).map_or_else(
                || "(not set)".to_string(),
                |v| {
                    if key.ends_with("_KEY") {
                        mask(v)
                    } else {
                        v.to_string()
                    }
                },
            );
            asker.say(&format!("  {key} = {value}"))?;
        }
        let key = asker.ask("Which key to set? (empty to finish)", None, |k| {
            (!k.is_empty() && !KEYS.contains(&k)).then(|| format!("one of {}", KEYS.join(", ")))
        })?;
        if key.is_empty() {
            return Ok(0);
        }
        let value = asker.ask(&format!("Value for {key}"), None, |_| None)?;
        config_command(ConfigAction::Set {
            pairs: vec![format!("{key}={value}")],
        })?;
    }
}

/// A secret shown by its last four characters.
fn mask(secret: &str) -> String {
    let tail: String = secret
        .chars()
        .rev()
        .take(4)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    format!("…{tail}")
}

/// Maps micro-agent's settings onto a ralph-loop run.
fn translate(values: &BTreeMap<String, String>, mut run: RunArgs) -> (RunArgs, Overrides) {
    let mut o = Overrides::default();
    let model = values
        .get("MODEL")
        .cloned()
        .unwrap_or_else(|| "gpt-4o".into());
    run.models = Some(model);
    for (provider, var) in [("openai", "OPENAI_KEY"), ("anthropic", "ANTHROPIC_KEY")] {
        if let Some(key) = values.get(var) {
            o.keys.insert(provider.into(), key.clone());
            o.key_envs.insert(provider.into(), var.into());
        }
    }
    if let Some(url) = values.get("OPENAI_API_ENDPOINT") {
        o.base_urls.insert("openai".into(), url.clone());
    }
    if values.contains_key("ANTHROPIC_MODEL") {
        o.notes.push("ANTHROPIC_MODEL is ignored: it picks micro-agent's visual-mode model, and visual mode is not supported".into());
    }
    if let Some(lang) = values
        .get("LANGUAGE")
        .filter(|l| !l.eq_ignore_ascii_case("en"))
    {
        o.notes.push(format!(
            "LANGUAGE={lang} is ignored: ralph-loop speaks English"
        ));
    }
    if let Some(file) = values.get("MOCK_LLM_RECORD_FILE") {
        if values.get("USE_MOCK_LLM").is_some_and(|v| v == "true") {
            run.tape.replay = Some(PathBuf::from(file));
        } else {
            run.tape.record = Some(PathBuf::from(file));
        }
        o.notes.push(format!(
            "MOCK_LLM_RECORD_FILE={file}: recorded in ralph-loop's format (see docs/providers.md), not micro-agent's"
        ));
    }
    (run, o)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_runs_every_role_and_endpoint_and_key_carry_over() {
        let values = BTreeMap::from([
            ("MODEL".to_string(), "gpt-4o-mini".to_string()),
            ("OPENAI_KEY".to_string(), "sk-test".to_string()),
            (
                "OPENAI_API_ENDPOINT".to_string(),
                "http://127.0.0.1:9/v1".to_string(),
            ),
        ]);
        let (run, o) = translate(&values, RunArgs::default());
        assert_eq!(run.models.as_deref(), Some("gpt-4o-mini"));
        assert_eq!(o.keys["openai"], "sk-test");
        assert_eq!(o.key_envs["openai"], "OPENAI_KEY");
        assert_eq!(o.base_urls["openai"], "http://127.0.0.1:9/v1");
        assert!(o.notes.is_empty());
    }

    #[test]
    fn unsupported_settings_are_said_plainly() {
        let values = BTreeMap::from([
            ("ANTHROPIC_MODEL".to_string(), "x".to_string()),
            ("LANGUAGE".to_string(), "fr".to_string()),
        ]);
        let (_, o) = translate(&values, RunArgs::default());
        assert_eq!(o.notes.len(), 2, "{:?}", o.notes);
    }

    #[test]
    fn a_claude_model_runs_on_anthropic_with_anthropic_key() {
        let values = BTreeMap::from([
            (
                "MODEL".to_string(),
                "claude-3-5-sonnet-20240620".to_string(),
            ),
            ("ANTHROPIC_KEY".to_string(), "sk-ant".to_string()),
        ]);
        let (run, o) = translate(&values, RunArgs::default());
        assert_eq!(run.models.as_deref(), Some("claude-3-5-sonnet-20240620"));
        assert_eq!(o.keys["anthropic"], "sk-ant");
        assert_eq!(o.key_envs["anthropic"], "ANTHROPIC_KEY");
        assert!(o.notes.is_empty(), "{:?}", o.notes);
    }

    #[test]
    fn mock_llm_settings_map_to_record_and_replay() {
        let mut values =
            BTreeMap::from([("MOCK_LLM_RECORD_FILE".to_string(), "r.jsonl".to_string())]);
        let (run, _) = translate(&values, RunArgs::default());
        assert_eq!(run.tape.record, Some(PathBuf::from("r.jsonl")));
        values.insert("USE_MOCK_LLM".into(), "true".into());
        let (run, _) = translate(&values, RunArgs::default());
        assert_eq!(run.tape.replay, Some(PathBuf::from("r.jsonl")));
    }
}
