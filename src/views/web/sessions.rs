//! The project's runs as the dashboard lists them (`.ralph/session-*` and `.ralph/loop-*` with
//! an event log), newest first, and the diff of one iteration: a fix session's checkpoint
//! against the one before it, a loop's commit.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::printers::event_log;
use crate::session::{SessionError, RALPH_DIR};

/// One run in the list.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Listed {
    /// Its folder in `.ralph/`: `session-<uuid>` or `loop-<uuid>`.
    pub id: String,
    /// `fix` or `loop`.
    pub kind: &'static str,
    /// The target, or the loop's prompt file.
    pub title: String,
    /// `running`, the report's status, or `stopped` (ended without a report: killed).
    pub status: String,
    pub started_at: Option<String>,
    /// What it spent, once it has ended.
    pub cost_usd: Option<f64>,
    /// It takes pause, resume and stop from here ([`crate::remote`]).
    pub controls: bool,
}

/// Every run of the project at `root` with events in its log, the most recently active first.
pub fn list(root: &Path) -> Vec<Listed> {
    let ralph = root.join(RALPH_DIR);
    let Ok(entries) = std::fs::read_dir(&ralph) else {
        return Vec::new();
    };
    let holding = crate::lock::holding_sessions(root);
    let mut found: Vec<(std::time::SystemTime, Listed)> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let id = e.file_name().to_string_lossy().to_string();
            let kind = if id.starts_with("session-") {
                "fix"
            } else if id.starts_with("loop-") {
                "loop"
            } else {
                return None;
            };
            let log = e.path().join(event_log::FILE);
            let meta = std::fs::metadata(&log).ok().filter(|m| m.len() > 0)?;
            let modified = meta.modified().ok()?;
            let listed = describe(&e.path(), id, kind, &holding);
            Some((modified, listed))
        })
        .collect();
    found.sort_by_key(|(modified, _)| std::cmp::Reverse(*modified));
    found.into_iter().map(|(_, listed)| listed).collect()
}

fn describe(dir: &Path, id: String, kind: &'static str, holding: &[String]) -> Listed {
    let log = dir.join(event_log::FILE);
    let first = first_line(&log).unwrap_or(serde_json::Value::Null);
    let title = first["target"]
        .as_str()
        .or_else(|| first["prompt_file"].as_str())
        .unwrap_or("")
        .to_string();
    let last = event_log::last_line(&log)
        .and_then(|line| serde_json::from_str::<serde_json::Value>(&line).ok())
        .unwrap_or(serde_json::Value::Null);
    let controls = crate::remote::running(dir).is_some();
    let held = id
        .strip_prefix("session-")
        .is_some_and(|uuid| holding.iter().any(|h| h == uuid));
    let ended = matches!(
        last["type"].as_str(),
        Some("session_finished" | "loop_finished")
    );
    let status = if ended {
        last["report"]["status"].as_str().unwrap_or("ended").into()
    } else if controls || held {
        "running".into()
    } else {
        "stopped".into()
    };
    let cost_usd = ended.then(|| {
        last["report"]["cost_usd"]
            .as_f64()
            .or_else(|| last["report"]["total_cost_usd"].as_f64())
            .unwrap_or(0.0)
    });
    Listed {
        id,
        kind,
        title,
        status,
        started_at: first["time"].as_str().map(str::to_string),
        cost_usd,
        controls,
    }
}

/// The first event of a log that reads (a note may come first in a loop's; the run's start is
/// looked for among the first few).
fn first_line(log: &Path) -> Option<serde_json::Value> {
    let file = std::fs::File::open(log).ok()?;
    let mut first = None;
    for line in BufReader::new(file).lines().take(8) {
        let Ok(value) = serde_json::from_str::<serde_json::Value>(&line.ok()?) else {
            continue;
        };
        if matches!(
            value["type"].as_str(),
            Some("session_started" | "loop_started")
        ) {
            return Some(value);
        }
        first.get_or_insert(value);
    }
    first
}

/// The folder of run `id` under `root`, when `id` names one (and nothing else: no `..`).
pub fn folder(root: &Path, id: &str) -> Option<PathBuf> {
    let valid = (id.starts_with("session-") || id.starts_with("loop-"))
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    let dir = root.join(RALPH_DIR).join(id);
    (valid && dir.is_dir()).then_some(dir)
}

/// Why there is no change to show for an iteration.
#[derive(Debug, thiserror::Error)]
pub enum NoDiff {
    #[error("iteration {0} kept no version of the file")]
    NotKept(u32),
    #[error("iteration {0} made no commit")]
    NoCommit(u32),
    /// The loop's event log, which names its commits, cannot be read.
    #[error("{0}")]
    Log(#[from] std::io::Error),
    #[error(transparent)]
    Git(#[from] crate::git::GitError),
}

impl NoDiff {
    /// There is nothing to show, as opposed to something that failed while looking.
    pub fn is_absent(&self) -> bool {
        matches!(self, NoDiff::NotKept(_) | NoDiff::NoCommit(_))
    }
}

/// The change iteration `n` made: for a fix session, its checkpoint against the last one kept
/// before it (0: the original); for a loop, the commit it made.
pub fn diff(root: &Path, dir: &Path, n: u32) -> Result<String, NoDiff> {
    let id = dir
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    if id.starts_with("loop-") {
        return loop_diff(root, dir, n);
    }
    let checkpoint = |i: u32| dir.join("checkpoints").join(format!("iteration-{i}"));
    let after = std::fs::read_to_string(checkpoint(n)).map_err(|_| NoDiff::NotKept(n))?;
    let before = (0..n)
        .rev()
        .find_map(|i| std::fs::read_to_string(checkpoint(i)).ok())
        .or_else(|| original(dir))
        .unwrap_or_default();
    let text = similar::TextDiff::from_lines(&before, &after)
        .unified_diff()
        .context_radius(3)
        .header("before", &format!("iteration {n}"))
        .to_string();
    Ok(if text.is_empty() {
        format!("iteration {n} changed nothing")
    } else {
        text
    })
}

fn original(dir: &Path) -> Option<String> {
    std::fs::read_to_string(original_path(dir)?).ok()
}

/// Where a fix session keeps its target as it was.
fn original_path(dir: &Path) -> Option<PathBuf> {
    let entry = std::fs::read_dir(dir.join("original"))
        .ok()?
        .flatten()
        .next()?;
    Some(entry.path())
}

/// A fix session's file as its last checkpoint kept it, and as it was: the view's diff.
pub fn fix_files(dir: &Path) -> (Option<PathBuf>, Option<PathBuf>) {
    let original = original_path(dir);
    let last = std::fs::read_dir(dir.join("checkpoints"))
        .ok()
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let n: u32 = e
                .file_name()
                .to_string_lossy()
                .strip_prefix("iteration-")?
                .parse()
                .ok()?;
            Some((n, e.path()))
        })
        .max_by_key(|(n, _)| *n)
        .map(|(_, path)| path);
    match (last, original) {
        (Some(last), Some(original)) => (Some(last), Some(original)),
        _ => (None, None),
    }
}

/// The run `want` names (its folder's name, or the start of its id), or the most recent: its
/// folder's name and path.
pub fn find(root: &Path, want: Option<&str>) -> Result<(String, PathBuf), SessionError> {
    let ralph = root.join(RALPH_DIR);
    let listed = list(root);
    if listed.is_empty() {
        return Err(SessionError::NoSessions(ralph));
    }
    let chosen = match want {
        None => listed[0].id.clone(),
        Some(want) => {
            let mut matching = listed.iter().filter(|l| {
                l.id == want
                    || l.id.starts_with(want)
                    || l.id
                        .split_once('-')
                        .is_some_and(|(_, uuid)| uuid.starts_with(want))
            });
            match (matching.next(), matching.count()) {
                (None, _) => {
                    return Err(SessionError::NoMatch {
                        want: want.to_string(),
                        dir: ralph,
                    })
                }
                (Some(one), 0) => one.id.clone(),
                (Some(_), more) => {
                    return Err(SessionError::Ambiguous {
                        want: want.to_string(),
                        count: more + 1,
                    })
                }
            }
        }
    };
    let dir = ralph.join(&chosen);
    Ok((chosen, dir))
}

/// A loop's iteration `n`: its commit, as `git show` prints it.
fn loop_diff(root: &Path, dir: &Path, n: u32) -> Result<String, NoDiff> {
    let (events, _) = event_log::read(&dir.join(event_log::FILE))?;
    let commit = events.iter().find_map(|e| match &e.event {
        ralph_actors::events::event::Event::Regent {
            iteration,
            action: ralph_actors::schema::regent::RegentAction::Committed,
            message,
        } if *iteration == n => message
            .strip_prefix("committed ")?
            .split(':')
            .next()
            .map(str::to_string),
        _ => None,
    });
    let commit = commit
        .filter(|c| !c.is_empty() && c.chars().all(|c| c.is_ascii_hexdigit()))
        .ok_or(NoDiff::NoCommit(n))?;
    Ok(crate::git::Repo::new(root.to_path_buf()).show(&commit)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }

    #[test]
    fn a_fix_session_s_iteration_is_its_checkpoint_against_the_last_before_it() {
        let root = tempfile::tempdir().expect("temp dir");
        let dir = root.path().join(".ralph/session-1");
        write(&dir.join("original/median.js"), "a\n");
        write(&dir.join("checkpoints/iteration-2"), "b\n");
        let text = diff(root.path(), &dir, 2).expect("a diff");
        assert!(text.contains("-a") && text.contains("+b"), "{text}");
        let none = diff(root.path(), &dir, 1).expect_err("no checkpoint 1");
        assert!(none.is_absent());
        assert_eq!(none.to_string(), "iteration 1 kept no version of the file");
    }

    #[test]
    fn a_loop_without_a_commit_or_a_log_says_which() {
        let root = tempfile::tempdir().expect("temp dir");
        let dir = root.path().join(".ralph/loop-1");
        write(&dir.join(event_log::FILE), "");
        let none = diff(root.path(), &dir, 1).expect_err("no commit");
        assert!(none.is_absent());
        assert_eq!(none.to_string(), "iteration 1 made no commit");
        std::fs::remove_file(dir.join(event_log::FILE)).expect("remove");
        let failed = diff(root.path(), &dir, 1).expect_err("no log");
        assert!(!failed.is_absent(), "{failed}");
    }
}
