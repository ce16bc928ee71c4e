//! `ralph-loop hooks validate | trust | import`: the project's hooks checked and listed with
//! their trust, trusted as they are now, or carried over from Claude Code or Codex.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::cli::{HooksAction, HooksArgs, ImportFrom};
use crate::config;
use crate::error::{Error, Result, UsageError};
use crate::hooks::import::{self, Agent, Found};
use crate::hooks::trust::{self, Status, Store};
use crate::hooks::{Declared, HooksError};
use crate::runner::detect;

pub fn run(args: HooksArgs) -> Result<i32> {
    let cwd =
        std::env::current_dir().map_err(|e| Error::io("cannot read the current directory", e))?;
    let root = detect::project_root(&cwd);
    match args.action {
        HooksAction::Validate => validate(args.config.as_deref(), &cwd, &root),
        HooksAction::Trust { names } => trust(args.config.as_deref(), &cwd, &root, &names),
        HooksAction::Import { from, settings } => import(from, settings.as_deref(), &cwd, &root),
    }
}

/// The project's hooks as a run would find them, and where they were declared.
fn load(config: Option<&Path>, cwd: &Path, root: &Path) -> Result<(Vec<Declared>, Vec<PathBuf>)> {
    let (config, config_path) = config::load_discovered(config, cwd)?;
    let declared = crate::hooks::load(&config, config_path.as_deref(), root)?;
    let plugins = config::hooks::plugins_path(config_path.as_deref(), root);
    let files = config_path
        .into_iter()
        .chain(Some(plugins).filter(|p| p.is_file()))
        .collect();
    Ok((declared, files))
}

fn store() -> Result<(PathBuf, Store)> {
    let path = trust::store_path().map_err(HooksError::from)?;
    let store = Store::load(&path).map_err(HooksError::from)?;
    Ok((path, store))
}

/// A value's name as its config file spells it (`warn_continue`).
fn spelled<T: Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => "?".into(),
    }
}

fn shown(path: &Path, root: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .display()
        .to_string()
}

/// `hooks validate`: both files checked (an invalid one is an error, exit 2), then each hook
/// with its stages, kind, on_failure and trust; warnings for a program that cannot be found.
fn validate(config: Option<&Path>, cwd: &Path, root: &Path) -> Result<i32> {
    let (declared, files) = load(config, cwd, root)?;
    let mut out = std::io::stdout().lock();
    if declared.is_empty() {
        let _ = writeln!(
            out,
            "no hooks are declared (`hooks:` in ralph.config.yaml, or ralph-plugins.yaml)"
        );
        return Ok(0);
    }
    let (_, store) = store()?;
    let checked = trust::check_all(&store, &declared, root);
    let status_of = |name: &str| {
        checked
            .iter()
            .find(|c| c.group.name == name)
            .map_or(Status::New, |c| c.status)
    };
    let rows: Vec<[String; 5]> = declared
        .iter()
        .map(|d| {
            [
                d.name.clone(),
                d.stages
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(","),
                spelled(&d.kind),
                spelled(&d.on_failure),
                status_of(&d.name).as_str().to_string(),
            ]
        })
        .collect();
    let shown_files: Vec<String> = files.iter().map(|f| shown(f, root)).collect();
    let _ = writeln!(out, "valid: {}", shown_files.join(", "));
    let widths: Vec<usize> = (0..4)
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    for r in &rows {
        let mut line = String::from(" ");
        for (i, cell) in r.iter().enumerate() {
            line.push(' ');
            line.push_str(cell);
            if let Some(w) = widths.get(i) {
                line.push_str(&" ".repeat(w.saturating_sub(cell.chars().count()) + 1));
            }
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
    for d in &declared {
        if let Some(program) = crate::hooks::exec::missing_program(&d.command, root) {
            eprintln!(
                "warning: hook `{}`: `{program}` is neither on PATH nor a file",
                d.name
            );
        }
    }
    let untrusted = checked
        .iter()
        .filter(|c| c.status != Status::Trusted)
        .count();
    let hooks = checked.len();
    if untrusted == 0 {
        let _ = writeln!(
            out,
            "{}, and trusted",
            if hooks == 1 {
                "the hook is valid".to_string()
            } else {
                format!("all {hooks} hooks are valid")
            }
        );
    } else {
        let (which, it) = match (untrusted, hooks) {
            (1, 1) => ("the hook is".to_string(), "it"),
            (1, _) => (format!("1 of {hooks} hooks is"), "it"),
            (n, _) => (format!("{n} of {hooks} hooks are"), "them"),
        };
        let _ = writeln!(
            out,
            "{which} not trusted: a run refuses {it} until you review {it} and run `ralph-loop hooks trust`"
        );
    }
    Ok(0)
}

/// `hooks trust [NAME...]`: the current hash of each hook (or of the named ones) recorded.
fn trust(config: Option<&Path>, cwd: &Path, root: &Path, names: &[String]) -> Result<i32> {
    let (declared, _) = load(config, cwd, root)?;
    let (path, mut store) = store()?;
    let checked = trust::check_all(&store, &declared, root);
    for name in names {
        if !checked.iter().any(|c| c.group.name == name.as_str()) {
            let known: Vec<String> = checked
                .iter()
                .map(|c| format!("`{}`", c.group.name))
                .collect();
            return Err(UsageError::flag(
                "NAME",
                format!(
                    "no hook is named `{name}`; {}",
                    if known.is_empty() {
                        "the project declares none".to_string()
                    } else {
                        format!("the hooks are: {}", known.join(", "))
                    }
                ),
            )
            .into());
        }
    }
    let mut out = std::io::stdout().lock();
    if checked.is_empty() {
        let _ = writeln!(out, "no hooks are declared: nothing to trust");
        return Ok(0);
    }
    let key = trust::project_key(root);
    let chosen: Vec<_> = checked
        .iter()
        .filter(|c| names.is_empty() || names.iter().any(|n| n == c.group.name))
        .collect();
    for c in &chosen {
        store.trust(&key, c.group.name, c.hash.clone());
    }
    store.save(&path).map_err(HooksError::from)?;
    for c in &chosen {
        let _ = writeln!(
            out,
            "trusted {c} {}{}",
            c.hash.get(..12).unwrap_or(&c.hash),
            match c.status {
                Status::Trusted => " (unchanged)",
                Status::New => "",
                Status::Changed => " (changed)",
            }
        );
    }
    let _ = writeln!(out, "in {} for {key}", path.display());
    Ok(0)
}

/// `hooks import --from claude|codex [--settings FILE]`: the YAML on stdout; nothing found,
/// a message on stderr and exit 1.
fn import(from: ImportFrom, settings: Option<&Path>, cwd: &Path, root: &Path) -> Result<i32> {
    let agent = match from {
        ImportFrom::Claude => Agent::Claude,
        ImportFrom::Codex => Agent::Codex,
    };
    let candidates = match settings {
        Some(file) => {
            let file = cwd.join(file);
            if !file.is_file() {
                return Err(UsageError::FileNotFound {
                    what: "settings file",
                    path: file,
                }
                .into());
            }
            vec![file]
        }
        None => import::default_settings(agent, root),
    };
    let mut files = Vec::new();
    let mut found: Vec<Found> = Vec::new();
    for file in candidates.iter().filter(|f| f.is_file()) {
        let text = std::fs::read_to_string(file)
            .map_err(|e| Error::io(format!("cannot read {}", file.display()), e))?;
        let name = shown(file, root);
        let toml = agent == Agent::Codex && file.extension().is_some_and(|e| e == "toml");
        let parsed = if toml {
            import::from_codex_toml(&text, &name)
        } else {
            import::from_json(&text, &name)
        };
        found.extend(parsed.map_err(|e| UsageError::flag("--settings", e))?);
        files.push(name);
    }
    if files.is_empty() {
        let looked: Vec<String> = candidates.iter().map(|f| shown(f, root)).collect();
        eprintln!(
            "no settings of {} found (looked for {}); name one with --settings FILE",
            agent.title(),
            looked.join(", ")
        );
        return Ok(1);
    }
    let imported = import::render(agent, &files, &found);
    if imported.imported == 0 {
        eprint!("{}", imported.yaml);
        eprintln!(
            "nothing to import: {} has no hook that maps to a stage of ralph-loop ({} skipped)",
            files.join(", "),
            imported.skipped
        );
        return Ok(1);
    }
    print!("{}", imported.yaml);
    Ok(0)
}
