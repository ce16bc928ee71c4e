//! micro-agent's interactive mode, for `micro-agent` run without a file: it asks what to build,
//! suggests the file to create or edit, writes a test with the user's feedback, suggests the
//! test command, then runs the loop on what was agreed. Only at a terminal: without one it says
//! what is missing (exit 2).
//!
//! The set-up's model calls go through the same metered path as a run's (the Artisan's model,
//! its fallbacks, the budget); what they cost is taken from the run's budget.

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};

use ralph_actors::events::event::Event;
use ralph_actors::ports::llm::ChatMessage;
use ralph_actors::prompt::reply::extract_code;
use ralph_actors::role::Role;
use tokio_util::sync::CancellationToken;

use super::ask::Asker;
use super::ini::{config_command, ConfigAction};
use crate::app::{self, Overrides};
use crate::cli::RunArgs;
use crate::error::{Error, Result, UsageError};
use crate::run::plan::{assistant, Assistant};

/// The most project files shown to the model when it suggests where the code goes.
const TREE_FILES: usize = 200;

/// Whether a person can answer here.
pub(crate) fn at_a_terminal() -> bool {
    std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
}

/// Asks what to build, sets the run up with the user, then runs it.
pub(crate) fn run(base: RunArgs, overrides: Overrides) -> Result<i32> {
    if !at_a_terminal() {
        let missing = if base.file.is_none() {
            "no file path given"
        } else {
            "no test command given (-t)"
        };
        return Err(Error::Usage(UsageError::MicroAgent(format!(
            "{missing}, and micro-agent's interactive mode needs a terminal to ask for it: \
             give both, e.g. `micro-agent ./src/add.ts -t \"npm test\"`"
        ))));
    }
    let cwd =
        std::env::current_dir().map_err(|e| Error::io("cannot read the current directory", e))?;
    let stdin = std::io::stdin();
    let mut asker = Asker {
        input: stdin.lock(),
        out: std::io::stderr(),
    };
    asker.say("\n🦾 Micro Agent (ralph-loop)")?;
    let mut overrides = overrides;
    ask_for_a_key(&mut asker, &base, &mut overrides)?;
    // An actor system: the set-up's calls pass LocalGuard's actor, as a run's do.
    let set_up = actix::System::new().block_on(set_up(&mut asker, &cwd, &base, &overrides))?;
    let mut run = base;
    run.file = Some(set_up.file);
    run.test_file = Some(set_up.test_file);
    run.test_command = Some(set_up.test_command);
    run.prompt = Some(set_up.prompt_file);
    if set_up.spent > 0.0 {
        overrides.notes.push(format!(
            "micro-agent: the interactive set-up spent ${:.4}, counted in the budget",
            set_up.spent
        ));
    }
    run.limits.budget = set_up.budget_left;
    asker.say("Agent running...")?;
    app::run(run, overrides)
}

/// As micro-agent welcomes a newcomer: with an OpenAI model and no OpenAI key anywhere, asks
/// for one and keeps it in `~/.micro-agent`.
fn ask_for_a_key<I: BufRead, O: Write>(
    asker: &mut Asker<I, O>,
    base: &RunArgs,
    overrides: &mut Overrides,
) -> Result<()> {
    let on_openai = base
        .models
        .as_deref()
        .and_then(|m| crate::models::ModelName::parse(m).ok())
        .is_none_or(|m| m.provider == "openai");
    let has_key = overrides.keys.contains_key("openai")
        || std::env::var("OPENAI_API_KEY").is_ok_and(|k| !k.is_empty());
    if !on_openai || has_key {
        return Ok(());
    }
    let key = asker.ask(
        "Welcome newcomer! What is your OpenAI key? (kept in ~/.micro-agent)",
        None,
        |k| k.trim().is_empty().then(|| "The key, please".to_string()),
    )?;
    config_command(ConfigAction::Set {
        pairs: vec![format!("OPENAI_KEY={key}")],
    })?;
    overrides.keys.insert("openai".into(), key);
    overrides
        .key_envs
        .insert("openai".into(), "OPENAI_KEY".into());
    Ok(())
}

/// What the user agreed to.
struct SetUp {
    file: PathBuf,
    test_file: PathBuf,
    test_command: String,
    prompt_file: PathBuf,
    spent: f64,
    budget_left: Option<f64>,
}

async fn set_up<I: BufRead, O: Write>(
    asker: &mut Asker<I, O>,
    cwd: &Path,
    base: &RunArgs,
    overrides: &Overrides,
) -> Result<SetUp> {
    let task = asker.ask("What would you like to do?", None, |a| {
        (a.trim().len() < 10).then(|| "Please describe it in a sentence or more".to_string())
    })?;
    let model = assistant(base, cwd, overrides)?;
    let mut events = model.events.subscribe();
    let file = match &base.file {
        Some(file) => file.clone(),
        None => {
            let suggested = suggest_file(&model, cwd, &task).await?;
            PathBuf::from(asker.ask(
                "What file would you like to create or edit?",
                Some(&suggested),
                |a| {
                    a.trim()
                        .is_empty()
                        .then(|| "A file path, please".to_string())
                },
            )?)
        }
    };
    let target = cwd.join(&file);
    if !target.exists() {
        if let Some(dir) = target.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| Error::io(format!("cannot create {}", dir.display()), e))?;
        }
        std::fs::write(&target, "")
            .map_err(|e| Error::io(format!("cannot create {}", target.display()), e))?;
    }
    let test_file = match existing_test(&target) {
        Some(found) => {
            asker.say(&format!("Using the tests in {}", found.display()))?;
            found
        }
        None => write_test(asker, &model, cwd, &task, &target).await?,
    };
    let suggested = test_command(cwd, &test_file);
    let test_command = asker.ask(
        "What command should I run to test the code?",
        Some(&suggested),
        |a| a.trim().is_empty().then(|| "A command, please".to_string()),
    )?;
    // The task becomes the run's instructions, as micro-agent's `<file>.prompt.md`.
    let mut prompt_file = target.clone().into_os_string();
    prompt_file.push(".prompt.md");
    let prompt_file = PathBuf::from(prompt_file);
    if !prompt_file.exists() {
        std::fs::write(&prompt_file, format!("{task}\n"))
            .map_err(|e| Error::io(format!("cannot write {}", prompt_file.display()), e))?;
    }
    while let Some(e) = events.try_recv() {
        if let Event::Warning { message } = &e.event {
            asker.say(&format!("warning: {message}"))?;
        }
    }
    let ledger = &model.caller.ledger;
    let spent = ledger.spent();
    Ok(SetUp {
        file,
        test_file,
        test_command,
        prompt_file,
        spent,
        budget_left: (spent > 0.0).then(|| (ledger.cap() - spent).max(0.0)),
    })
}

/// One call on the set-up's model.
async fn complete(model: &Assistant, role: Role, system: &str, user: String) -> Result<String> {
    let messages = vec![ChatMessage::system(system), ChatMessage::user(user)];
    let reply = model
        .caller
        .call(0, role, &model.spec, messages, &CancellationToken::new())
        .await
        .map_err(|e| Error::Internal(format!("the set-up's model call failed: {e}")))?;
    // The reply is shown and written: with the values it stands for.
    model
        .guard
        .unmask(&reply.text)
        .map_err(|e| Error::Internal(format!("the set-up's model reply cannot be used: {e}")))
}

/// The model's suggestion of where the code goes, from the task and the project's files.
async fn suggest_file(model: &Assistant, cwd: &Path, task: &str) -> Result<String> {
    let files = project_files(cwd, TREE_FILES);
    let reply = complete(
        model,
        Role::Librarian,
        "You pick where new code goes in a project. Reply with one relative file path and nothing else.",
        format!(
            "The task:\n{task}\n\nThe project's files:\n{}\n\nWhich file should be created or edited for this task? \
             Follow the project's layout and language.",
            files.join("\n")
        ),
    )
    .await?;
    Ok(first_path(&reply))
}

/// The first line of a reply that looks like a path, without quotes or backticks.
fn first_path(reply: &str) -> String {
    reply
        .lines()
        .map(|l| l.trim().trim_matches(['`', '"', '\'', '*']).trim())
        .find(|l| !l.is_empty() && !l.starts_with("```"))
        .unwrap_or_default()
        .trim_start_matches("./")
        .to_string()
}

/// Writes a test for the task with the model, shown to the user until they call it good.
async fn write_test<I: BufRead, O: Write>(
    asker: &mut Asker<I, O>,
    model: &Assistant,
    cwd: &Path,
    task: &str,
    target: &Path,
) -> Result<PathBuf> {
    let test_file = test_path_for(target);
    let shown = |p: &Path| p.strip_prefix(cwd).unwrap_or(p).display().to_string();
    asker.say("Generating a test...")?;
    let mut request = format!(
        "Write a unit test file for this task:\n{task}\n\nThe code will be in `{}` and the test in `{}`.\n{}\n\
         Start with the simplest case, then edge cases and invalid inputs. Test behaviour, not \
         implementation. Reply with the whole test file in one fenced code block.",
        shown(target),
        shown(&test_file),
        project_hints(cwd)
    );
    loop {
        let reply = complete(
            model,
            Role::Artisan,
            "You write unit tests in the project's own test framework.",
            request.clone(),
        )
        .await?;
        let test = extract_code(&reply).unwrap_or_else(|| reply.trim().to_string());
        asker.say(&format!("\n{test}\n"))?;
        let feedback = asker.ask(
            "How does the generated test look? Reply \"good\", or give feedback",
            Some("good"),
            |_| None,
        )?;
        if feedback.trim().eq_ignore_ascii_case("good") {
            write_file(&test_file, &test)?;
            asker.say(&format!("Test file written: {}", shown(&test_file)))?;
            return Ok(test_file);
        }
        request = format!(
            "{request}\n\nYour last test was:\n```\n{test}\n```\n\nThe user's feedback on it: {feedback}\n\
             Reply with the whole revised test file in one fenced code block."
        );
    }
}

fn write_file(path: &Path, content: &str) -> Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::io(format!("cannot create {}", dir.display()), e))?;
    }
    let mut text = content.to_string();
    if !text.ends_with('\n') {
        text.push('\n');
    }
    std::fs::write(path, text).map_err(|e| Error::io(format!("cannot write {}", path.display()), e))
}

/// The test beside a target, by the conventions of its language, if one is there.
fn existing_test(target: &Path) -> Option<PathBuf> {
    crate::runner::detect::find_test_file(target).filter(|t| t.is_file())
}

/// Where a new test for `target` goes: `x.test.ts` beside `x.ts`, `test_x.py` beside `x.py`,
/// `tests/x.rs` for a Rust file.
fn test_path_for(target: &Path) -> PathBuf {
    let stem = target
        .file_stem()
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_default();
    let ext = target
        .extension()
        .map(|e| e.to_string_lossy().to_string())
        .unwrap_or_default();
    let dir = target.parent().unwrap_or(Path::new("."));
    match ext.as_str() {
        "py" => dir.join(format!("test_{stem}.py")),
        "rs" => crate::runner::detect::project_root(dir)
            .join("tests")
            .join(format!("{stem}.rs")),
        "" => dir.join(format!("{stem}.test")),
        _ => dir.join(format!("{stem}.test.{ext}")),
    }
}

/// What the model is shown to pick the test framework: the manifest, when there is one.
fn project_hints(cwd: &Path) -> String {
    for manifest in [
        "package.json",
        "pyproject.toml",
        "Cargo.toml",
        "requirements.txt",
    ] {
        if let Ok(text) = std::fs::read_to_string(cwd.join(manifest)) {
            let text: String = text.chars().take(4000).collect();
            return format!("The project's {manifest}:\n```\n{text}\n```\n");
        }
    }
    String::new()
}

/// The command micro-agent would suggest for a test file, by the project's kind.
fn test_command(cwd: &Path, test_file: &Path) -> String {
    let shown = test_file
        .strip_prefix(cwd)
        .unwrap_or(test_file)
        .display()
        .to_string();
    match test_file.extension().and_then(|e| e.to_str()) {
        Some("py") => format!("python3 -m pytest -q {shown}"),
        Some("rs") => format!(
            "cargo test --test {}",
            test_file
                .file_stem()
                .map(|s| s.to_string_lossy().to_string())
                .unwrap_or_default()
        ),
        _ if cwd.join("package.json").is_file() => format!("npm test -- {shown}"),
        _ => format!("npx vitest run {shown}"),
    }
}

/// Up to `limit` files of the project, relative, skipping what no one edits.
fn project_files(root: &Path, limit: usize) -> Vec<String> {
    let walker = ignore::WalkBuilder::new(root)
        .max_depth(Some(4))
        .hidden(true)
        .filter_entry(|e| {
            !matches!(
                e.file_name().to_str(),
                Some("node_modules" | "target" | ".ralph" | ".git" | "__pycache__" | "dist")
            )
        })
        .build();
    walker
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
        .filter_map(|e| {
            e.path()
                .strip_prefix(root)
                .ok()
                .map(|p| p.display().to_string())
        })
        .take(limit)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_suggested_path_is_taken_from_a_chatty_reply() {
        assert_eq!(first_path("`src/median.py`"), "src/median.py");
        assert_eq!(first_path("\n./lib/add.ts\nbecause ..."), "lib/add.ts");
        assert_eq!(first_path("```\nmedian.py\n```"), "median.py");
    }

    #[test]
    fn tests_go_where_each_language_looks_for_them() {
        assert_eq!(
            test_path_for(Path::new("/p/src/add.ts")),
            Path::new("/p/src/add.test.ts")
        );
        assert_eq!(
            test_path_for(Path::new("/p/median.py")),
            Path::new("/p/test_median.py")
        );
        let dir = tempfile::tempdir().expect("tempdir");
        assert_eq!(
            test_command(dir.path(), &dir.path().join("test_median.py")),
            "python3 -m pytest -q test_median.py"
        );
        std::fs::write(dir.path().join("package.json"), "{}").expect("write");
        assert_eq!(
            test_command(dir.path(), &dir.path().join("src/add.test.ts")),
            "npm test -- src/add.test.ts"
        );
    }
}
