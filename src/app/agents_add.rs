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
    let new = insert(&text, &entry(&def)?);
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
    })
}

fn parse_format(name: &str) -> Result<Format> {
    [
        Format::Plain,
        Format::Aider,
        Format::ClaudeStreamJson,
        Format::CodexJson,
        Format::Acp,
    ]
    .into_iter()
    .find(|f| f.as_str() == name)
    .ok_or_else(|| {
        UsageError::flag(
            "--format",
            format!(
                "--format is plain, aider, claude-stream-json, codex-json or acp, not {name:?}"
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

/// The definition as an entry of the `agents:` list, indented under it.
fn entry(def: &AgentDef) -> Result<String> {
    let yaml = serde_yaml::to_string(&vec![def])
        .map_err(|e| Error::Internal(format!("cannot write the definition: {e}")))?;
    Ok(yaml.lines().map(|l| format!("  {l}\n")).collect::<String>())
}

/// `text` with `entry` added to its top-level `agents:` list: after the list's last entry, in
/// place of an empty `[]`, or in a new `agents:` at the end.
fn insert(text: &str, entry: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let Some(at) = lines.iter().position(|l| is_key(l, "agents")) else {
        let mut out = text.to_string();
        if !out.is_empty() && !out.ends_with('\n') {
            out.push('\n');
        }
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str("agents:\n");
        out.push_str(entry);
        return out;
    };
    let head = lines[at];
    let value = head["agents:".len()..].trim_start();
    let mut out: Vec<String> = lines[..at].iter().map(|l| l.to_string()).collect();
    if let Some(rest) = value.strip_prefix("[]") {
        // `agents: []  # comment`: the list starts here, the comment stays.
        let comment = rest.trim_start();
        out.push(format!(
            "agents:{}{comment}",
            if comment.is_empty() { "" } else { " " }
        ));
        out.extend(entry.lines().map(str::to_string));
        out.extend(lines[at + 1..].iter().map(|l| l.to_string()));
    } else {
        // The block runs while lines are indented, blank or comments; the entry goes after
        // its last entry line, indented as its entries are.
        out.push(head.to_string());
        let mut last_item = at;
        let mut indent = "  ";
        for (i, l) in lines.iter().enumerate().skip(at + 1) {
            if !l.is_empty() && !l.starts_with([' ', '\t', '#', '-']) {
                break;
            }
            let body = l.trim_start();
            if body.is_empty() || body.starts_with('#') {
                continue;
            }
            if last_item == at && body.starts_with('-') {
                indent = &l[..l.len() - body.len()];
            }
            last_item = i;
        }
        out.extend(lines[at + 1..=last_item].iter().map(|l| l.to_string()));
        out.extend(
            entry
                .lines()
                .map(|l| format!("{indent}{}", l.strip_prefix("  ").unwrap_or(l))),
        );
        out.extend(lines[last_item + 1..].iter().map(|l| l.to_string()));
    }
    let mut joined = out.join("\n");
    joined.push('\n');
    joined
}

fn is_key(line: &str, key: &str) -> bool {
    line.strip_prefix(key)
        .is_some_and(|rest| rest.starts_with(':'))
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
    fn an_entry_goes_into_an_empty_list_a_block_or_a_new_key() {
        let e = entry(&def()).unwrap();
        let empty = insert(
            "budgets:\n  max_iterations: 3\nagents: []   # yours\noutput: json\n",
            &e,
        );
        assert!(
            empty.contains("agents: # yours\n  - name: mine\n"),
            "{empty}"
        );
        assert!(empty.ends_with("output: json\n"), "{empty}");
        let parsed = config::parse(&empty, Path::new("ralph.config.yaml")).unwrap();
        assert_eq!(parsed.agents[0].name, "mine");
        assert_eq!(parsed.output.as_str(), "json");

        let block = "agents:\n  - name: first\n    binaries: [a]\n    args: [x]\n    format: plain\n  # a comment\n\noutput: json\n";
        let two = insert(block, &e);
        let parsed = config::parse(&two, Path::new("ralph.config.yaml")).unwrap();
        let names: Vec<&str> = parsed.agents.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, ["first", "mine"]);
        assert!(two.contains("# a comment"), "{two}");

        let flush = insert(
            "agents:\n- name: first\n  binaries: [a]\n  args: [x]\n  format: plain\n",
            &e,
        );
        let parsed = config::parse(&flush, Path::new("ralph.config.yaml")).unwrap();
        assert_eq!(parsed.agents.len(), 2, "{flush}");

        let none = insert("output: json", &e);
        let parsed = config::parse(&none, Path::new("ralph.config.yaml")).unwrap();
        assert_eq!(parsed.agents.len(), 1);
        assert_eq!(insert("", &e), format!("agents:\n{e}"));
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
