//! The files the view opens or writes: the run's log in the user's editor, the working tree's
//! git diff (a loop's change since its last commit), an export of the view's buffers.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};

use chrono::Utc;

use crate::views::state::ViewState;

/// Opens `path` in `$VISUAL` or `$EDITOR` (else `vi`), waiting for it off the run's thread.
pub(super) async fn open_editor(path: PathBuf) -> String {
    let editor = std::env::var("VISUAL")
        .or_else(|_| std::env::var("EDITOR"))
        .unwrap_or_else(|_| "vi".into());
    let shown = path.display().to_string();
    let waited = tokio::task::spawn_blocking(move || {
        // The editor may be a command with flags (`code --wait`): the shell splits it.
        std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("{editor} \"$1\""))
            .arg("sh")
            .arg(&path)
            .status()
    })
    .await;
    match waited {
        Ok(Ok(status)) if status.success() => format!("the log is {shown}"),
        Ok(Ok(status)) => format!("the editor ended with {status}; the log is {shown}"),
        Ok(Err(e)) => format!("cannot start the editor ({e}); the log is {shown}"),
        Err(e) => format!("the editor failed ({e}); the log is {shown}"),
    }
}

/// The working tree's change against git's index and last commit (an agent loop's work since
/// its last commit), from the repository `dir` is in.
pub(super) fn git_diff(dir: &Path) -> Vec<String> {
    let mut git = std::process::Command::new("git");
    git.args(["diff", "--no-color", "HEAD"]).current_dir(dir);
    // The view waits for it: a git that hangs (a lock, a slow filesystem) is given up on.
    let out = crate::process::probe::output(git, crate::process::probe::LIMIT);
    match out {
        Ok(out) if out.status.success() && out.stdout.is_empty() => {
            vec!["no change since the last commit".into()]
        }
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(crate::views::state::clean)
            .collect(),
        Ok(out) => vec![format!(
            "git diff failed: {}",
            crate::views::state::clean(&String::from_utf8_lossy(&out.stderr))
        )],
        Err(e) => vec![format!("cannot run git: {e}")],
    }
}

/// Writes the thought stream and the log to a file in the session's folder (ralph-orchestrator
/// #189: a view's buffers can be taken away); says where, or why not.
pub(super) fn export(dir: &Path, view: &ViewState) -> String {
    let name = format!("view-export-{}.txt", Utc::now().format("%Y%m%d-%H%M%S"));
    let path = dir.join(name);
    let text = format!(
        "# Thought stream\n\n{}\n\n# Log\n\n{}\n",
        join(&view.thought),
        join(&view.log)
    );
    match std::fs::write(&path, text) {
        Ok(()) => format!("exported to {}", path.display()),
        Err(e) => format!("cannot export to {}: {e}", path.display()),
    }
}

/// The lines of a buffer as one text.
pub(super) fn join(lines: &VecDeque<String>) -> String {
    let mut text = String::new();
    for line in lines {
        text.push_str(line);
        text.push('\n');
    }
    text
}
