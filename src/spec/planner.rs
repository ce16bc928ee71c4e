//! Planning a spec that names no targets: the Librarian's model reads the task and the
//! repository map (each source file the import graph knows, with what it imports and the
//! signatures it defines) and names the files to fix, each with its test file.
//!
//! The reply must be JSON (`{"targets": [{"file": ..., "test_file": ...}], "reason": ...}`);
//! every file it names must exist in the project, or the plan is refused and the spec fails
//! with the reason, before any run starts.

use std::path::{Path, PathBuf};

use ralph_actors::ports::llm::ChatMessage;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use super::Target;
use crate::context::imports::Language;
use crate::context::ImportGraph;
use ralph_actors::roles::caller::Caller;
use ralph_actors::settings::ModelSpec;
use ralph_guard::Guard;

/// The most characters of repository map a planning prompt holds (about 8,000 tokens).
pub const MAP_CHARS: usize = 32_000;

const SYSTEM: &str = "You plan a task for a code-fixing team. Given the task and a map of the \
repository, name the source files that must change to do it, in the order to change them, each \
with the test file that checks it. Name only files that are in the map. Reply with JSON alone: \
{\"targets\": [{\"file\": \"path/in/map\", \"test_file\": \"path/of/its/test\"}], \
\"reason\": \"one sentence\"}. Leave test_file out when no test file in the map checks it.";

/// A plan, as written to the entry's folder and shown by `--dry-run`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub targets: Vec<Target>,
    /// `spec` (its front matter named them) or `planned` (the model did).
    pub source: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// What planning cost, in dollars.
    #[serde(default)]
    pub cost_usd: f64,
    /// The model that planned, when one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// Why a spec could not be planned.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("cannot map the repository: {0}")]
    Map(String),
    #[error("the planning call failed: {0}")]
    Call(String),
    #[error("the plan is not usable: {0}")]
    Reply(String),
}

/// The repository map the planner is shown: one entry per source file, tests marked, at most
/// `max_chars` long.
pub fn repo_map(root: &Path, max_chars: usize) -> Result<String, PlanError> {
    let graph = ImportGraph::build(root).map_err(|e| PlanError::Map(e.to_string()))?;
    let mut files = graph.files();
    files.sort();
    let rel = |p: &Path| p.strip_prefix(root).unwrap_or(p).display().to_string();
    let mut map = String::new();
    for (i, file) in files.iter().enumerate() {
        let path = rel(file);
        let mut entry = path.clone();
        if let Some(language) = graph.language(file) {
            let name = match language {
                Language::TypeScript | Language::Tsx => "typescript",
                Language::JavaScript => "javascript",
                Language::Python => "python",
                Language::Rust => "rust",
            };
            entry.push_str(&format!(" ({name})"));
        }
        if ralph_actors::policy::integrity::is_test_path(&path) {
            entry.push_str(" [test]");
        }
        entry.push('\n');
        let imports: Vec<String> = graph.imports_of(file).iter().map(|p| rel(p)).collect();
        if !imports.is_empty() {
            entry.push_str(&format!("  imports: {}\n", imports.join(", ")));
        }
        if let (Some(language), Ok(source)) = (
            graph.language(file),
            std::fs::read_to_string(root.join(file)),
        ) {
            for signature in crate::context::imports::exported_signatures(file, &source, language)
                .iter()
                .take(8)
            {
                entry.push_str(&format!("  {signature}\n"));
            }
        }
        if map.len() + entry.len() > max_chars {
            map.push_str(&format!("... and {} more files\n", files.len() - i));
            break;
        }
        map.push_str(&entry);
    }
    Ok(map)
}

/// Asks `model` (through `caller`, its reply unmasked by `guard`) for the targets of `task` in
/// the project at `root`.
pub async fn plan(
    caller: &Caller,
    model: &ModelSpec,
    guard: &Guard,
    root: &Path,
    task: &str,
) -> Result<Plan, PlanError> {
    let map = repo_map(root, MAP_CHARS)?;
    if map.is_empty() {
        return Err(PlanError::Map(format!(
            "no source files found under {}",
            root.display()
        )));
    }
    let user = format!("# Task\n\n{task}\n\n# Repository map\n\n{map}");
    let messages = vec![ChatMessage::system(SYSTEM), ChatMessage::user(user)];
    let before = caller.ledger.spent();
    let reply = caller
        .call(
            0,
            ralph_actors::role::Role::Librarian,
            model,
            messages,
            &CancellationToken::new(),
        )
        .await
        .map_err(|e| PlanError::Call(e.to_string()))?;
    let text = guard
        .unmask(&reply.text)
        .map_err(|e| PlanError::Reply(e.to_string()))?;
    let (targets, reason) = parse_reply(&text, root)?;
    Ok(Plan {
        targets,
        source: "planned".into(),
        reason,
        cost_usd: caller.ledger.spent() - before,
        model: Some(model.model.clone()),
    })
}

/// The targets a reply names, each checked to be a file of the project.
pub(crate) fn parse_reply(text: &str, root: &Path) -> Result<(Vec<Target>, String), PlanError> {
    #[derive(Deserialize)]
    struct Reply {
        targets: Vec<Named>,
        #[serde(default)]
        reason: String,
    }
    #[derive(Deserialize)]
    struct Named {
        file: String,
        #[serde(default)]
        test_file: Option<String>,
    }
    let (start, end) = match (text.find('{'), text.rfind('}')) {
        (Some(s), Some(e)) if s < e => (s, e),
        _ => {
            return Err(PlanError::Reply(format!(
                "no JSON object in the reply: {}",
                preview(text)
            )))
        }
    };
    let reply: Reply = serde_json::from_str(&text[start..=end])
        .map_err(|e| PlanError::Reply(format!("{e}: {}", preview(text))))?;
    if reply.targets.is_empty() {
        return Err(PlanError::Reply("it names no file to change".into()));
    }
    let inside = |name: &str| -> Result<PathBuf, PlanError> {
        let path = PathBuf::from(name.trim());
        let ok = !path.is_absolute()
            && !path
                .components()
                .any(|c| c == std::path::Component::ParentDir)
            && root.join(&path).is_file();
        if ok {
            Ok(path)
        } else {
            Err(PlanError::Reply(format!(
                "{name} is not a file of the project"
            )))
        }
    };
    let mut targets: Vec<Target> = Vec::new();
    for named in reply.targets {
        let file = inside(&named.file)?;
        if targets.iter().any(|t| t.file == file) {
            continue;
        }
        let test_file = named
            .test_file
            .filter(|t| !t.trim().is_empty())
            .map(|t| inside(&t))
            .transpose()?;
        targets.push(Target { file, test_file });
    }
    Ok((targets, reply.reason))
}

fn preview(text: &str) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match one_line.char_indices().nth(120) {
        Some((i, _)) => format!("{}…", &one_line[..i]),
        None => one_line,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn a_reply_names_files_of_the_project_only() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/median.py"), "x = 1\n").unwrap();
        std::fs::write(dir.path().join("test_median.py"), "x = 1\n").unwrap();
        let (targets, reason) = parse_reply(
            "Sure.\n```json\n{\"targets\": [{\"file\": \"src/median.py\", \"test_file\": \"test_median.py\"}], \"reason\": \"the median\"}\n```",
            dir.path(),
        )
        .unwrap();
        assert_eq!(targets[0].file, Path::new("src/median.py"));
        assert_eq!(
            targets[0].test_file.as_deref(),
            Some(Path::new("test_median.py"))
        );
        assert_eq!(reason, "the median");
        for bad in [
            "no json here",
            "{\"targets\": []}",
            "{\"targets\": [{\"file\": \"src/missing.py\"}]}",
            "{\"targets\": [{\"file\": \"../etc/passwd\"}]}",
        ] {
            assert!(parse_reply(bad, dir.path()).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_map_lists_files_with_imports_and_signatures() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("stats.py"),
            "from helpers import mean\n\ndef median(xs):\n    return mean(xs)\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("helpers.py"),
            "def mean(xs):\n    return sum(xs) / len(xs)\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("test_stats.py"),
            "from stats import median\n",
        )
        .unwrap();
        let map = repo_map(dir.path(), MAP_CHARS).unwrap();
        assert!(
            map.contains("stats.py (python)\n  imports: helpers.py\n  def median(xs)"),
            "{map}"
        );
        assert!(map.contains("test_stats.py (python) [test]"), "{map}");
        let short = repo_map(dir.path(), 30).unwrap();
        assert!(short.contains("more files"), "{short}");
    }
}
