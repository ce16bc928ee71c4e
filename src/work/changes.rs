//! The files a spec changed: those its sessions may write (its targets, Chaos's kept tests)
//! whose content differs from what the tree held before the spec began; and the check that the
//! tree holds no other uncommitted work at start.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use crate::agent::AgentError;
use crate::error::Result;
use crate::git::{GitError, Repo, Snapshot};
use crate::work::entry::{agent_dir, Progress};

/// Refuses a tree whose tracked files have changes the agent did not make (those of the specs
/// an interrupted agent was on are its own).
pub(crate) fn check_clean(repo: &Repo, root: &Path, ours: &[String]) -> Result<()> {
    let mut dirty = repo.dirty_tracked()?;
    for id in ours {
        let progress = Progress::load(&agent_dir(root, id))?;
        match (&progress.worktree, &progress.before) {
            // Ran apart: only a landing cut short touched the tree, with the spec's files.
            (Some(_), _) => {
                let written: Vec<PathBuf> = progress.written().iter().map(|p| normal(p)).collect();
                dirty.retain(|p| !written.contains(p));
            }
            (None, Some(before)) => {
                let own = own_changes(repo, before, &progress)?;
                dirty.retain(|p| !own.contains(p));
            }
            (None, None) => {}
        }
    }
    if dirty.is_empty() {
        return Ok(());
    }
    let mut named: Vec<String> = dirty
        .iter()
        .take(5)
        .map(|p| p.display().to_string())
        .collect();
    if dirty.len() > 5 {
        named.push(format!("and {} more", dirty.len() - 5));
    }
    Err(AgentError::Dirty(named.join(", ")).into())
}

/// `path` without `.` components, as git names files.
fn normal(path: &Path) -> PathBuf {
    path.components()
        .filter(|c| !matches!(c, Component::CurDir))
        .collect()
}

/// The files the spec changed: those its sessions may write whose content differs from what
/// they held before the spec began.
pub(crate) fn own_changes(
    repo: &Repo,
    before: &BTreeMap<PathBuf, Option<String>>,
    progress: &Progress,
) -> Result<Vec<PathBuf>, GitError> {
    let before: Snapshot = before
        .iter()
        .map(|(p, h)| (p.clone(), h.as_deref().and_then(unhex)))
        .collect();
    let written: Vec<PathBuf> = progress.written().iter().map(|p| normal(p)).collect();
    Ok(repo
        .changed_since(&before)?
        .into_iter()
        .filter(|p| written.contains(p))
        .collect())
}

pub(crate) fn hex(hash: &[u8; 32]) -> String {
    hash.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<[u8; 32]> {
    let mut out = [0u8; 32];
    if text.len() != 64 {
        return None;
    }
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(text.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::Digest;

    #[test]
    fn hashes_round_trip_through_hex() {
        let hash: [u8; 32] = sha2::Sha256::digest(b"median").into();
        assert_eq!(unhex(&hex(&hash)), Some(hash));
        assert_eq!(unhex("zz"), None);
    }

    #[test]
    fn paths_compare_as_git_names_them() {
        assert_eq!(normal(Path::new("./src/a.py")), PathBuf::from("src/a.py"));
    }
}
