//! `ralph-loop hooks import`: the hooks of Claude Code and Codex, carried over as a `hooks:`
//! section of `ralph.config.yaml`, with a comment on each mapping and on each thing skipped.
//!
//! Both agents declare hooks the same way, by event, then matcher group, then handler
//! (`{"hooks": {"PostToolUse": [{"matcher": "Edit|Write", "hooks": [{"type": "command",
//! "command": "...", "timeout": 30}]}]}}`): Claude Code in `.claude/settings.json`, Codex in
//! `hooks.json` or the `[hooks]` tables of `config.toml`. Codex's `config.toml` may also have
//! `notify = ["prog", "arg"]`, run when a turn completes. The mapping:
//! - `PostToolUse` whose matcher covers a file edit (`Edit`, `Write`, `MultiEdit`,
//!   `apply_patch`, or every tool) → `on_after_gen`;
//! - `Stop` → `on_before_success` (its exit 2 blocks stopping, as ours vetoes the success);
//! - `UserPromptSubmit` → `on_before_gen`;
//! - Codex's `notify` → `on_success`;
//! - everything else is skipped, and a comment says why.
//!
//! Here the settings' text is parsed and the YAML written; finding and reading the files is
//! the command's.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::config::hooks::Stage;

/// Whose hooks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Agent {
    Claude,
    Codex,
}

impl Agent {
    pub fn title(self) -> &'static str {
        match self {
            Agent::Claude => "Claude Code",
            Agent::Codex => "Codex",
        }
    }

    pub fn slug(self) -> &'static str {
        match self {
            Agent::Claude => "claude",
            Agent::Codex => "codex",
        }
    }
}

/// One handler found in a settings file.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    /// The event (`PostToolUse`), or `notify` for Codex's `notify`.
    pub event: String,
    pub matcher: Option<String>,
    /// The handler's `type` (`command`, `prompt`, ...).
    pub kind: String,
    pub command: String,
    pub timeout: Option<f64>,
    /// The file it was found in, as shown.
    pub file: String,
}

/// The handlers of a settings file in the shared JSON shape (`{"hooks": {...}}`); `file`
/// names it.
pub fn from_json(text: &str, file: &str) -> Result<Vec<Found>, String> {
    let value: Value = serde_json::from_str(text).map_err(|e| format!("{file}: {e}"))?;
    from_value(&value, file)
}

/// The handlers of a Codex `config.toml`: its `notify` and its `[hooks]` tables.
pub fn from_codex_toml(text: &str, file: &str) -> Result<Vec<Found>, String> {
    let doc: toml_edit::DocumentMut = text.parse().map_err(|e| format!("{file}: {e}"))?;
    let value = table_json(doc.as_table());
    let mut found = Vec::new();
    if let Some(argv) = value.get("notify").and_then(Value::as_array) {
        let words: Vec<String> = argv
            .iter()
            .map(|w| w.as_str().map_or_else(|| w.to_string(), str::to_string))
            .collect();
        if !words.is_empty() {
            found.push(Found {
                event: "notify".into(),
                matcher: None,
                kind: "command".into(),
                command: words
                    .iter()
                    .map(|w| shell_quote(w))
                    .collect::<Vec<_>>()
                    .join(" "),
                timeout: None,
                file: file.to_string(),
            });
        }
    }
    found.extend(from_value(&value, file)?);
    Ok(found)
}

fn from_value(value: &Value, file: &str) -> Result<Vec<Found>, String> {
    let Some(events) = value.get("hooks") else {
        return Ok(Vec::new());
    };
    let events = events
        .as_object()
        .ok_or_else(|| format!("{file}: `hooks` is not an object"))?;
    let mut found = Vec::new();
    for (event, groups) in events {
        // Codex keeps each hook's enablement there; it is not an event.
        if event == "state" {
            continue;
        }
        let groups = groups
            .as_array()
            .ok_or_else(|| format!("{file}: hooks.{event} is not a list"))?;
        for group in groups {
            let matcher = group
                .get("matcher")
                .and_then(Value::as_str)
                .map(str::to_string);
            let handlers = group.get("hooks").and_then(Value::as_array);
            for handler in handlers.into_iter().flatten() {
                let kind = handler
                    .get("type")
                    .and_then(Value::as_str)
                    .unwrap_or("command");
                let command = handler
                    .get("command")
                    .and_then(Value::as_str)
                    .or_else(|| handler.get("prompt").and_then(Value::as_str))
                    .unwrap_or("");
                let timeout = ["timeout", "timeout_sec", "timeoutSec"]
                    .iter()
                    .find_map(|k| handler.get(*k).and_then(Value::as_f64))
                    .filter(|t| t.is_finite() && *t > 0.0);
                found.push(Found {
                    event: event.clone(),
                    matcher: matcher.clone(),
                    kind: kind.to_string(),
                    command: command.to_string(),
                    timeout,
                    file: file.to_string(),
                });
            }
        }
    }
    Ok(found)
}

/// A TOML table as JSON (dates as their text).
fn table_json(table: &toml_edit::Table) -> Value {
    Value::Object(
        table
            .iter()
            .map(|(k, item)| (k.to_string(), item_json(item)))
            .collect(),
    )
}

fn item_json(item: &toml_edit::Item) -> Value {
    match item {
        toml_edit::Item::None => Value::Null,
        toml_edit::Item::Value(v) => value_json(v),
        toml_edit::Item::Table(t) => table_json(t),
        toml_edit::Item::ArrayOfTables(a) => Value::Array(a.iter().map(table_json).collect()),
    }
}

fn value_json(value: &toml_edit::Value) -> Value {
    use toml_edit::Value as T;
    match value {
        T::String(s) => Value::String(s.value().clone()),
        T::Integer(i) => Value::from(*i.value()),
        T::Float(f) => Value::from(*f.value()),
        T::Boolean(b) => Value::Bool(*b.value()),
        T::Datetime(d) => Value::String(d.value().to_string()),
        T::Array(a) => Value::Array(a.iter().map(value_json).collect()),
        T::InlineTable(t) => Value::Object(
            t.iter()
                .map(|(k, v)| (k.to_string(), value_json(v)))
                .collect(),
        ),
    }
}

/// `word` as one word of `sh`: as is when plain, else in single quotes.
pub fn shell_quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_@%+=:,./-".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// Where a handler goes: a stage and what the mapping means, or why it is skipped.
enum Mapping {
    To(Stage, String),
    Skip(String),
}

/// The tool names of a file edit, Claude Code's and Codex's.
const EDIT_TOOLS: [&str; 4] = ["Edit", "Write", "MultiEdit", "apply_patch"];

/// Whether `matcher` (absent, empty or `*`: every tool; `A|B`: exact names; else a regular
/// expression) matches a file-editing tool.
fn covers_edits(matcher: Option<&str>) -> bool {
    let Some(m) = matcher
        .map(str::trim)
        .filter(|m| !m.is_empty() && *m != "*")
    else {
        return true;
    };
    if m.chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '|')
    {
        return m.split('|').any(|t| EDIT_TOOLS.contains(&t));
    }
    regex::Regex::new(&format!("^(?:{m})$"))
        .is_ok_and(|re| EDIT_TOOLS.iter().any(|t| re.is_match(t)))
}

fn map(agent: Agent, f: &Found) -> Mapping {
    let who = agent.title();
    if f.kind != "command" {
        return Mapping::Skip(format!(
            "a `{}` handler, which {who} runs itself (a model's judgement, not a command); only commands carry over",
            f.kind
        ));
    }
    if f.command.trim().is_empty() {
        return Mapping::Skip("no command".into());
    }
    match f.event.as_str() {
        "PostToolUse" if covers_edits(f.matcher.as_deref()) => Mapping::To(
            Stage::OnAfterGen,
            format!("{who} runs it after the agent edits a file; here it runs on each proposal, before it is checked, reviewed and written"),
        ),
        "PostToolUse" => Mapping::Skip(
            "it runs after tool calls that edit no file; ralph-loop has no such moment".into(),
        ),
        "Stop" => Mapping::To(
            Stage::OnBeforeSuccess,
            format!("{who} runs it when the agent would stop, and its exit 2 keeps it working; here it runs when the tests pass, and its exit 2 vetoes the success (stderr goes to the Artisan)"),
        ),
        "UserPromptSubmit" => Mapping::To(
            Stage::OnBeforeGen,
            format!("{who} runs it before each prompt, and its exit 2 blocks the prompt; here it runs before each of the Artisan's proposals, and its exit 2 leaves its stderr as a note for the Artisan"),
        ),
        "notify" => Mapping::To(
            Stage::OnSuccess,
            "Codex runs `notify` when a turn completes and passes it one JSON argument; ralph-loop's hooks get no argument (their context is on stdin and in $RALPH_* variables), and this runs once, when the run succeeds".into(),
        ),
        "PreToolUse" => Mapping::Skip(
            "it runs before each of the agent's tool calls and may block one; ralph-loop's Artisan calls no tools (the nearest stage, on_after_gen, sees the proposal before it is written: add it there by hand if the script can judge a file)".into(),
        ),
        "PermissionRequest" => Mapping::Skip("ralph-loop asks for no permission".into()),
        "SessionStart" | "SubagentStart" => Mapping::Skip(
            "ralph-loop has no stage at the start of a session (on_before_gen runs before every iteration: add it there by hand if that fits)".into(),
        ),
        "SessionEnd" => Mapping::Skip(
            "it runs however a session ends; on_success runs only after a success".into(),
        ),
        "Notification" => Mapping::Skip("it tells that the agent waits for the user; ralph-loop never waits for input".into()),
        "SubagentStop" => Mapping::Skip("ralph-loop has no subagents".into()),
        "PreCompact" | "PostCompact" => Mapping::Skip(
            "ralph-loop starts every iteration from a fresh context and compacts none".into(),
        ),
        _ => Mapping::Skip("no stage of ralph-loop matches this event".into()),
    }
}

/// What an import came to.
#[derive(Debug, Clone, PartialEq)]
pub struct Imported {
    /// The YAML: a `hooks:` section and its comments; only comments when nothing carried over.
    pub yaml: String,
    pub imported: usize,
    pub skipped: usize,
}

/// Writes the `hooks:` section for `found`, read from `files` of `agent`'s settings.
pub fn render(agent: Agent, files: &[String], found: &[Found]) -> Imported {
    let mut by_stage: Vec<(Stage, Vec<String>)> = Vec::new();
    let mut skipped: Vec<String> = Vec::new();
    let mut counts: std::collections::BTreeMap<String, usize> = Default::default();
    for f in found {
        match map(agent, f) {
            Mapping::To(stage, why) => {
                let n = counts.entry(f.event.clone()).or_insert(0);
                *n += 1;
                let name = format!("{}-{}-{n}", agent.slug(), kebab(&f.event));
                let entry = entry(agent, f, &name, &why);
                match by_stage.iter_mut().find(|(s, _)| *s == stage) {
                    Some((_, entries)) => entries.push(entry),
                    None => by_stage.push((stage, vec![entry])),
                }
            }
            Mapping::Skip(why) => skipped.push(format!(
                "{}: `{}`: {why}.",
                origin(f),
                one_line(&f.command, 80)
            )),
        }
    }
    by_stage.sort_by_key(|(s, _)| *s);
    let imported: usize = by_stage.iter().map(|(_, e)| e.len()).sum();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# Hooks of {} carried over by `ralph-loop hooks import --from {}`, from:",
        agent.title(),
        agent.slug()
    );
    for file in files {
        let _ = writeln!(out, "#   {file}");
    }
    out.push_str(
        "# Put this section in ralph.config.yaml, read each hook, then run `ralph-loop hooks trust`:\n\
         # a hook runs only once trusted. Each gets ralph-loop's context (docs/plugins.md, \"Context\").\n",
    );
    if imported > 0 {
        out.push_str("hooks:\n");
        for (stage, entries) in &by_stage {
            let _ = writeln!(out, "  {}:", stage.as_str());
            for e in entries {
                out.push_str(e);
            }
        }
    }
    if !skipped.is_empty() {
        out.push_str("# Skipped:\n");
        for s in &skipped {
            comment(&mut out, "", &format!("- {s}"));
        }
    }
    Imported {
        yaml: out,
        imported,
        skipped: skipped.len(),
    }
}

/// One entry of a stage's list, with its comments.
fn entry(agent: Agent, f: &Found, name: &str, why: &str) -> String {
    let mut out = String::new();
    comment(&mut out, "    ", &format!("From {}. {why}.", origin(f)));
    let mut command = f.command.clone();
    if command.contains("CLAUDE_PROJECT_DIR") {
        command = command.replace("CLAUDE_PROJECT_DIR", "PROJECT_DIR");
        comment(
            &mut out,
            "    ",
            "$CLAUDE_PROJECT_DIR became $PROJECT_DIR, the project's root, which ralph-loop's hooks get.",
        );
    }
    if ["tool_input", "tool_name", "jq"]
        .iter()
        .any(|w| command.contains(w))
    {
        comment(
            &mut out,
            "    ",
            &format!(
                "It reads {}'s input JSON: ralph-loop's differs (docs/plugins.md, \"Context\"). \
                 The file is in $RALPH_TARGET (`.target` in the JSON), relative to $PROJECT_DIR; \
                 at on_after_gen the proposal to check or change is in $RALPH_PROPOSAL_FILE.",
                agent.title()
            ),
        );
    }
    let home = std::env::var("HOME").ok().filter(|h| h.len() > 1);
    let in_home = |w: &str| {
        let w = w.trim_matches(['"', '\'']);
        w.starts_with("~/")
            || w.contains("$HOME")
            || home
                .as_deref()
                .is_some_and(|h| w.starts_with(&format!("{}/", h.trim_end_matches('/'))))
    };
    if command.split_whitespace().any(in_home) {
        comment(
            &mut out,
            "    ",
            "It names a file in your home, which the sandbox hides from hooks: add that folder to read_paths (docs/plugins.md, \"Isolation\").",
        );
    }
    let quoted = |s: &str| serde_json::to_string(s).unwrap_or_else(|_| format!("{s:?}"));
    out.push_str("    - type: shell\n");
    let _ = writeln!(out, "      name: {}", quoted(name));
    let _ = writeln!(out, "      command: {}", quoted(&command));
    if let Some(t) = f.timeout {
        let _ = writeln!(out, "      timeout_seconds: {t}");
    }
    let failure = if f.event == "notify" {
        "Codex ignores how `notify` exits; warn_continue only warns. Change it to abort_loop to make this hook a guard.".to_string()
    } else {
        format!(
            "warn_continue does what {} does on an exit code other than 0 and 2: it warns and goes on. Change it to abort_loop to make this hook a guard.",
            agent.title()
        )
    };
    comment(&mut out, "      ", &failure);
    out.push_str("      on_failure: warn_continue\n");
    out
}

/// Where a handler was found: `PostToolUse (matcher "Edit|Write") in .claude/settings.json`.
fn origin(f: &Found) -> String {
    let event = if f.event == "notify" {
        "`notify`".to_string()
    } else {
        f.event.clone()
    };
    match f.matcher.as_deref().filter(|m| !m.is_empty()) {
        Some(m) => format!("{event} (matcher {m:?}) in {}", f.file),
        None => format!("{event} in {}", f.file),
    }
}

/// `text` as `#` comment lines of at most 100 columns at `indent`.
fn comment(out: &mut String, indent: &str, text: &str) {
    let width = 100usize.saturating_sub(indent.len() + 2).max(40);
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.len() + 1 + word.len() > width {
            let _ = writeln!(out, "{indent}# {line}");
            line.clear();
            // A continued list item lines up under its text.
            if text.starts_with("- ") {
                line.push_str("  ");
            }
        }
        if !line.is_empty() && !line.ends_with(' ') {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.trim().is_empty() {
        let _ = writeln!(out, "{indent}# {line}");
    }
}

/// `text` on one line, cut at `max` characters.
fn one_line(text: &str, max: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max {
        flat
    } else {
        format!("{}…", flat.chars().take(max).collect::<String>())
    }
}

/// `PostToolUse` → `post-tool-use`.
fn kebab(event: &str) -> String {
    let mut out = String::new();
    for (i, c) in event.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('-');
        }
        out.push(if c == '_' {
            '-'
        } else {
            c.to_ascii_lowercase()
        });
    }
    out
}

/// Where each agent keeps its hooks, in the order read: the project's first.
pub(crate) fn default_settings(agent: Agent, root: &Path) -> Vec<PathBuf> {
    match agent {
        Agent::Claude => vec![
            root.join(".claude/settings.json"),
            root.join(".claude/settings.local.json"),
        ],
        Agent::Codex => {
            let home = std::env::var_os("CODEX_HOME")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
                .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".codex")));
            let mut files = vec![
                root.join(".codex/config.toml"),
                root.join(".codex/hooks.json"),
            ];
            if let Some(home) = home {
                for file in [home.join("config.toml"), home.join("hooks.json")] {
                    // The same file twice (a project in the home folder) is read once.
                    let same = files.iter().any(|f| {
                        std::fs::canonicalize(f).ok().is_some()
                            && std::fs::canonicalize(f).ok() == std::fs::canonicalize(&file).ok()
                    });
                    if !same {
                        files.push(file);
                    }
                }
            }
            files
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matchers_that_cover_a_file_edit() {
        for m in [
            None,
            Some(""),
            Some("*"),
            Some("Edit|Write"),
            Some("MultiEdit"),
            Some("Edit.*"),
            Some("apply_patch"),
        ] {
            assert!(covers_edits(m), "{m:?}");
        }
        for m in [Some("Bash"), Some("Read|Grep"), Some("mcp__.*"), Some("[")] {
            assert!(!covers_edits(m), "{m:?}");
        }
    }

    #[test]
    fn a_codex_config_gives_its_notify_and_its_hooks_tables() {
        let toml = "model = \"o3\"\nnotify = [\"python3\", \"/home/me/notify it.py\"]\n\n[[hooks.Stop]]\n[[hooks.Stop.hooks]]\ntype = \"command\"\ncommand = \"./done.sh\"\ntimeout = 10\n\n[hooks.state]\nx = 1\n";
        let found = from_codex_toml(toml, "config.toml").unwrap();
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(found[0].event, "notify");
        assert_eq!(found[0].command, "python3 '/home/me/notify it.py'");
        assert_eq!(found[1].event, "Stop");
        assert_eq!(found[1].timeout, Some(10.0));
        let out = render(Agent::Codex, &["config.toml".into()], &found);
        assert_eq!((out.imported, out.skipped), (2, 0));
        assert!(out.yaml.contains("  on_success:\n"), "{}", out.yaml);
        assert!(out.yaml.contains("  on_before_success:\n"), "{}", out.yaml);
    }

    #[test]
    fn shell_quoting() {
        assert_eq!(shell_quote("a/b.py"), "a/b.py");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
        assert_eq!(kebab("UserPromptSubmit"), "user-prompt-submit");
    }
}
