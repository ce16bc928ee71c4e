//! `agent --parallel`: each spec in a git worktree of its own, so specs running at once never
//! see each other's half-done files or test runs, and its finished work brought into the tree
//! when its turn in the queue comes.
//!
//! A worktree lives outside the project (`agent.worktrees`, by default the user's cache folder):
//! inside it, a tool that walks the project (jest, a cargo workspace) would find it. It links
//! the project's `.ralph/` (sessions, the MemoryVault, locks are the project's) and the
//! installed dependencies the project has and git does not hold (`agent.worktree_links`).
//! Its base commit and path are in the spec's progress, so a restarted agent goes on in it.

use std::path::{Path, PathBuf};

use crate::agent::AgentError;
use crate::error::Result;
use crate::git::Repo;
use crate::inbox::{Record, Status};
use crate::session::RALPH_DIR;
use crate::work::entry::{Progress, Worktree};

/// The folder of this project's worktrees: `agent.worktrees`, else
/// `$XDG_CACHE_HOME/ralph-loop/worktrees/<name>-<project id>` (`~/.cache` without it).
pub(crate) fn home(configured: Option<&Path>, root: &Path) -> PathBuf {
    if let Some(dir) = configured {
        return dir.to_path_buf();
    }
    let name = root
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "project".into());
    let id = crate::fsutil::project_id(root);
    crate::fsutil::cache_home()
        .join("worktrees")
        .join(format!("{name}-{}", &id[..id.len().min(8)]))
}

/// How a finished spec's files came into the tree.
pub(crate) enum Brought {
    /// Copied (or already there: an agent stopped between the copy and the commit).
    Files,
    /// These files changed in the tree since the spec began: nothing was copied.
    Conflict(Vec<PathBuf>),
}

/// The worktree spec `id` runs in: the one its progress names while it is still there, else a
/// new one on `HEAD` (the progress then forgets what an earlier one held).
pub(crate) fn open(
    main: &Repo,
    home: &Path,
    id: &str,
    progress: &mut Progress,
    links: &[String],
) -> Result<Worktree> {
    if let Some(tree) = progress.worktree.clone() {
        if Repo::at(&tree.path).is_some_and(|r| same(&r.root, &tree.path)) {
            link(&main.root, &tree.path, links)?;
            return Ok(tree);
        }
    }
    let tree = Worktree {
        path: home.join(id),
        base: main.head().map_err(AgentError::from)?,
    };
    if tree.path.exists() {
        main.worktree_remove(&tree.path).map_err(AgentError::from)?;
    }
    std::fs::create_dir_all(home)
        .map_err(AgentError::io(format!("cannot create {}", home.display())))?;
    main.worktree_add(&tree.path, &tree.base)
        .map_err(AgentError::from)?;
    link(&main.root, &tree.path, links)?;
    progress.worktree = Some(tree.clone());
    progress.before = None;
    Ok(tree)
}

fn same(a: &Path, b: &Path) -> bool {
    std::fs::canonicalize(a).ok() == std::fs::canonicalize(b).ok()
}

/// Links the project's `.ralph/` and its untracked `links` into the worktree.
fn link(root: &Path, tree: &Path, links: &[String]) -> Result<()> {
    let names = std::iter::once(RALPH_DIR).chain(links.iter().map(String::as_str));
    for name in names {
        let from = root.join(name);
        let to = tree.join(name);
        if std::fs::symlink_metadata(&from).is_err() || std::fs::symlink_metadata(&to).is_ok() {
            continue;
        }
        std::os::unix::fs::symlink(&from, &to).map_err(AgentError::io(format!(
            "cannot link {} to {}",
            to.display(),
            from.display()
        )))?;
    }
    Ok(())
}

/// Copies `files` (relative paths; deleted ones deleted) from the worktree into the tree,
/// each only where the tree still holds what the worktree began from.
pub(crate) fn bring(main: &Repo, tree: &Worktree, files: &[PathBuf]) -> Result<Brought> {
    let theirs = Repo::new(tree.path.clone());
    let mut copy = Vec::new();
    let mut conflicts = Vec::new();
    for file in files {
        let now = main.blob_of_file(file).map_err(AgentError::from)?;
        let done = theirs.blob_of_file(file).map_err(AgentError::from)?;
        if now == done {
            continue;
        }
        if now == main.blob_at(&tree.base, file).map_err(AgentError::from)? {
            copy.push((file, done.is_some()));
        } else {
            conflicts.push(file.clone());
        }
    }
    if !conflicts.is_empty() {
        return Ok(Brought::Conflict(conflicts));
    }
    for (file, exists) in copy {
        let to = main.root.join(file);
        let result = if exists {
            to.parent()
                .map_or(Ok(()), std::fs::create_dir_all)
                .and_then(|_| std::fs::copy(tree.path.join(file), &to).map(drop))
        } else {
            std::fs::remove_file(&to)
        };
        result.map_err(AgentError::io(format!("cannot write {}", to.display())))?;
    }
    Ok(Brought::Files)
}

/// Removes a spec's worktree (its links first: they are the project's, never followed).
pub(crate) fn remove(main: &Repo, tree: &Worktree, links: &[String]) -> Result<()> {
    let names = std::iter::once(RALPH_DIR).chain(links.iter().map(String::as_str));
    for name in names {
        let at = tree.path.join(name);
        if std::fs::symlink_metadata(&at).is_ok_and(|m| m.file_type().is_symlink()) {
            let _ = std::fs::remove_file(&at);
        }
    }
    Ok(main.worktree_remove(&tree.path).map_err(AgentError::from)?)
}

/// Where the agent's worktrees go and what they link (the config's `agent.worktrees` and
/// `agent.worktree_links`), the worktrees of specs no longer under way removed first.
pub(crate) fn swept(
    repo: &Repo,
    root: &Path,
    config: &crate::config::Config,
) -> (PathBuf, Vec<String>) {
    let worktrees = home(config.agent.worktrees.as_deref(), root);
    let links = config.agent.worktree_links.clone();
    if let Ok(inbox) = crate::inbox::Inbox::at(root).lock() {
        sweep(repo, &worktrees, &inbox.records, &links);
    }
    (worktrees, links)
}

/// Removes the worktrees of records that ended (an agent stopped after marking its record and
/// before removing its worktree) or are no longer in the inbox.
pub(crate) fn sweep(main: &Repo, home: &Path, records: &[Record], links: &[String]) {
    let Ok(entries) = std::fs::read_dir(home) else {
        return;
    };
    for entry in entries.flatten() {
        let id = entry.file_name().to_string_lossy().into_owned();
        // Only what this agent makes there (`agent.worktrees` may name a folder with more):
        // a worktree (its `.git` a file) named for a record.
        let ours = id.len() == 6 && id.starts_with("q-") && entry.path().join(".git").is_file();
        if !ours {
            continue;
        }
        let live = records
            .iter()
            .any(|r| r.id == id && matches!(r.status, Status::Active | Status::Pending));
        if !live {
            let tree = Worktree {
                path: entry.path(),
                base: String::new(),
            };
            let _ = remove(main, &tree, links);
        }
    }
}
