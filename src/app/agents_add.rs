//! `ralph-loop agents add`: a user definition of a coding agent, written to the config file's
//! `agents:` list. On a terminal, what the flags do not give is asked for; otherwise a missing
//! field is an error that names its flag. The definition is checked like any in the file, and
//! the file is written only when the whole of it still loads: its other keys and its comments
//! are left as they were.

use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;

use crate::agents::definition::{AgentDef, Auth, ModelSource, PromptVia};
use crate::agents::output::Format;
use crate::cli::AgentAddArgs;
use crate::config::{self, FILE_NAME};
use crate::error::{Error, Result, UsageError};

pub fn run(args: AgentAddArgs, config_flag: Option<&Path>) -> Result<i32> {
    let cwd =
        std::env::current_dir().map_err(|e| Error::io("cannot read the current directory", e))?;
    let file = config::discover(config_flag, &cwd)?.unwrap_or_else(|| cwd.join(FILE_NAME));
    let interactive = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    let def = if interactive {
        ask(args, &mut std::io::stdin().lock(), &mut std::io::stderr())?
    } else {
        from_flags(args)?
    };
    def.validate()
        .map_err(|why| UsageError::flag("agents add", why))?;
    let text = match std::fs::read_to_string(&file) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(Error::io(format!("cannot read {}", file.display()), e)),
    };
    let before = config::parse(&text, &file)?;
    if before.agents.iter().any(|a| a.name == def.name) {
        return Err(UsageError::flag(
            "agents add",
            format!(
                "{} already defines an agent {:?}; edit it there",
                file.display(),
                def.name
            ),
        )
        .into());
    }
    let entry = config::edit::list_entry(&def)
        .map_err(|e| Error::Internal(format!("cannot write the definition: {e}")))?;
    let new = config::edit::append_to_list(&text, "agents", &entry);
    // The file as it will be must load, or nothing is written.
    config::parse(&new, &file)?;
    crate::fsutil::write_atomic(&file, new.as_bytes())
        .map_err(|e| Error::io(format!("cannot write {}", file.display()), e))?;
    let replaces = crate::agents::builtin::builtins()
        .iter()
        .any(|b| b.name == def.name);
    println!(
        "agent {:?} added to {}{}",
        def.name,
        shown(&file, &cwd),
        if replaces {
            " (it replaces the built-in of that name)"
        } else {
            ""
        }
    );
    Ok(0)
}

fn shown(file: &Path, cwd: &Path) -> String {
    file.strip_prefix(cwd).unwrap_or(file).display().to_string()
}

/// The definition the flags give; each missing field named by its flag.
fn from_flags(args: AgentAddArgs) -> Result<AgentDef> {
    let missing: Vec<&str> = [
        (args.name.is_none(), "NAME"),
        (args.binaries.is_empty(), "--binary"),
        (args.args.is_empty(), "--arg"),
        (args.format.is_none(), "--format"),
    ]
    .iter()
    .filter(|(m, _)| *m)
    .map(|(_, flag)| *flag)
    .collect();
    if !missing.is_empty() {
        return Err(UsageError::flag(
            "agents add",
            format!(
                "not a terminal, so nothing is asked: give {} (ralph-loop agents add --help)",
                missing.join(", ")
            ),
        )
        .into());
    }
    build(args)
}

fn build(args: AgentAddArgs) -> Result<AgentDef> {
    let prompt = match args.prompt.as_deref().unwrap_or("stdin") {
        "stdin" => PromptVia::Stdin,
        "argument" => PromptVia::Argument,
        other => {
            return Err(UsageError::flag(
                "--prompt",
                format!("--prompt is stdin or argument, not {other:?}"),
            )
            .into())
        }
    };
    let format = parse_format(args.format.as_deref().unwrap_or_default())?;
    Ok(AgentDef {
        name: args.name.unwrap_or_default(),
        title: args.title.unwrap_or_default(),
        binaries: args.binaries,
        auth: Auth {
            env: args.auth_env,
            files: args.auth_files,
        },
        models: if args.models_args.is_empty() {
            ModelSource::None
        } else {
            ModelSource::Command {
                args: args.models_args,
            }
        },
        args: args.args,
        prompt,
        format,
        reports_cost: args.reports_cost,
        gateway: None,
    })
}

fn parse_format(name: &str) -> Result<Format> {
    [
        Format::Plain,
        Format::Aider,
        Format::ClaudeStreamJson,
        Format::CodexJson,
        Format::OpenCodeJson,
        Format::GeminiStreamJson,
        Format::Acp,
    ]
    .into_iter()
    .find(|f| f.as_str() == name)
    .ok_or_else(|| {
        UsageError::flag(
            "--format",
            format!(
                "--format is plain, aider, claude-stream-json, codex-json, opencode-json, gemini-stream-json or acp, not {name:?}"
            ),
        )
        .into()
    })
}

/// Asks at the terminal for each field the flags left out.
fn ask(mut args: AgentAddArgs, input: &mut impl BufRead, out: &mut impl Write) -> Result<AgentDef> {
    let mut line = |question: &str, default: &str| -> Result<String> {
        let shown = if default.is_empty() {
            String::new()
        } else {
            format!(" [{default}]")
        };
        let _ = write!(out, "{question}{shown}: ");
        let _ = out.flush();
        let mut answer = String::new();
        if input.read_line(&mut answer).unwrap_or(0) == 0 {
            return Err(UsageError::flag("agents add", "no answer: nothing was added").into());
        }
        let answer = answer.trim();
        Ok(if answer.is_empty() { default } else { answer }.to_string())
    };
    let words =
        |text: String| -> Vec<String> { text.split_whitespace().map(str::to_string).collect() };
    if args.name.is_none() {
        args.name = Some(line("name (letters, digits, - and _)", "")?);
    }
    if args.title.is_none() {
        args.title = Some(line("title", "")?);
    }
    if args.binaries.is_empty() {
        args.binaries = words(line("executables, by preference (space-separated)", "")?);
    }
    if args.args.is_empty() {
        args.args = words(line(
            "arguments of a headless run, {model} and {prompt} filled in (space-separated)",
            "",
        )?);
    }
    if args.prompt.is_none() {
        args.prompt = Some(line(
            "prompt on stdin or as an argument (stdin/argument)",
            "stdin",
        )?);
    }
    if args.format.is_none() {
        args.format = Some(line(
            "output format (plain/aider/claude-stream-json/codex-json/acp)",
            "plain",
        )?);
    }
    if args.auth_env.is_empty() && args.auth_files.is_empty() {
        args.auth_env = words(line(
            "environment variables that mean signed in (optional)",
            "",
        )?);
    }
    if args.models_args.is_empty() {
        args.models_args = words(line("arguments that list its models (optional)", "")?);
    }
    build(args)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def() -> AgentDef {
        from_flags(AgentAddArgs {
            name: Some("mine".into()),
            binaries: vec!["my-agent".into()],
            args: vec!["run".into(), "{prompt}".into()],
            prompt: Some("argument".into()),
            format: Some("plain".into()),
            ..AgentAddArgs::default()
        })
        .unwrap()
    }

    #[test]
    fn the_flags_give_a_definition_that_goes_into_the_file() {
        let def = def();
        assert_eq!(def.name, "mine");
        assert_eq!(def.args, ["run", "{prompt}"]);
        assert_eq!(def.prompt, PromptVia::Argument);
        assert_eq!(def.format, Format::Plain);
        let entry = config::edit::list_entry(&def).unwrap();
        let text = config::edit::append_to_list("output: json\n", "agents", &entry);
        let parsed = config::parse(&text, Path::new("ralph.config.yaml")).unwrap();
        assert_eq!(parsed.agents[0].name, "mine");
    }

    #[test]
    fn the_terminal_asks_for_what_the_flags_left_out() {
        let mut input = std::io::Cursor::new(
            "mine\nMy agent\nmy-agent\nrun --model {model}\n\nclaude-stream-json\nMY_KEY\n\n",
        );
        let mut out = Vec::new();
        let def = ask(AgentAddArgs::default(), &mut input, &mut out).unwrap();
        assert_eq!(def.name, "mine");
        assert_eq!(def.args, ["run", "--model", "{model}"]);
        assert_eq!(def.prompt, PromptVia::Stdin);
        assert_eq!(def.format, Format::ClaudeStreamJson);
        assert_eq!(def.auth.env, ["MY_KEY"]);
        assert_eq!(def.models, ModelSource::None);
        assert!(String::from_utf8(out).unwrap().contains("output format"));
        let missing = from_flags(AgentAddArgs::default()).unwrap_err().to_string();
        assert!(
            missing.contains("NAME, --binary, --arg, --format"),
            "{missing}"
        );
    }
}
