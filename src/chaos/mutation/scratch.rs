//! The scratch copy a mutation tool works in: the project's files as git sees them (ignored
//! files, hidden directories, `node_modules`, virtual environments and build output left out),
//! the nearest `node_modules` linked in, and the Chaos files asked for at their own relative
//! paths, so that their imports of the target resolve. Removed when dropped; a run killed
//! outright leaves it in the system's temporary directory, never in the project.

use std::path::{Path, PathBuf};

/// Directories never copied: dependencies and build output, linked or rebuilt instead.
const SKIPPED: [&str; 5] = ["node_modules", "target", "__pycache__", "venv", "mutants"];

pub struct Scratch {
    dir: tempfile::TempDir,
    root: PathBuf,
}

impl Scratch {
    /// Copies `root` (and `suites`, which may be hidden) into a new temporary directory and
    /// links the `node_modules` that `cwd` resolves.
    pub fn create(root: &Path, cwd: &Path, suites: &[PathBuf]) -> std::io::Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix("ralph-mutation-")
            .tempdir()?;
        let scratch = Self {
            root: std::path::absolute(root)?,
            dir,
        };
        let walk = ignore::WalkBuilder::new(&scratch.root)
            .hidden(true)
            .git_ignore(true)
            .git_exclude(true)
            .require_git(false)
            .filter_entry(|e| {
                !(e.file_type().is_some_and(|t| t.is_dir())
                    && SKIPPED.contains(&e.file_name().to_string_lossy().as_ref()))
            })
            .build();
        for entry in walk {
            let entry = entry.map_err(std::io::Error::other)?;
            if entry.file_type().is_some_and(|t| t.is_file()) {
                scratch.copy(entry.path())?;
            }
        }
        for suite in suites {
            scratch.copy(suite)?;
            // fast-check installed aside is linked beside Chaos's files.
            if let Some(dir) = suite.parent() {
                let modules = dir.join("node_modules");
                let there = scratch.map(&modules);
                if modules.exists() && !there.exists() {
                    std::os::unix::fs::symlink(std::fs::canonicalize(&modules)?, there)?;
                }
            }
        }
        let cwd = std::path::absolute(cwd)?;
        if let Some(modules) = cwd
            .ancestors()
            .map(|d| d.join("node_modules"))
            .find(|d| d.is_dir())
        {
            let link = scratch.map(&cwd).join("node_modules");
            if !link.exists() {
                std::fs::create_dir_all(scratch.map(&cwd))?;
                std::os::unix::fs::symlink(std::fs::canonicalize(&modules)?, link)?;
            }
        }
        Ok(scratch)
    }

    /// Where `path` (absolute, under the project root) is in the copy.
    pub fn map(&self, path: &Path) -> PathBuf {
        let relative = path.strip_prefix(&self.root).unwrap_or(path);
        self.dir.path().join("project").join(relative)
    }

    /// A directory beside the copy for the tool's own files (reports, configuration).
    pub fn aside(&self) -> PathBuf {
        self.dir.path().to_path_buf()
    }

    fn copy(&self, file: &Path) -> std::io::Result<()> {
        let to = self.map(file);
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::copy(file, &to).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_copy_leaves_out_ignored_and_hidden_files_and_links_node_modules() {
        let project = tempfile::tempdir().expect("tempdir");
        let root = project.path();
        for (path, text) in [
            ("src/median.js", "x"),
            (".gitignore", "dist/\n"),
            ("dist/bundle.js", "y"),
            ("node_modules/jest/index.js", "z"),
            (".ralph/session-1/chaos/chaos_round_1.test.js", "t"),
            (".ralph/session-1/state.json", "{}"),
        ] {
            let p = root.join(path);
            std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
            std::fs::write(p, text).expect("write");
        }
        let suite = root.join(".ralph/session-1/chaos/chaos_round_1.test.js");
        let scratch = Scratch::create(root, root, std::slice::from_ref(&suite)).expect("copied");
        assert!(scratch.map(&root.join("src/median.js")).is_file());
        assert!(!scratch.map(&root.join("dist/bundle.js")).exists());
        assert!(scratch.map(&suite).is_file());
        assert!(!scratch
            .map(&root.join(".ralph/session-1/state.json"))
            .exists());
        let modules = scratch.map(&root.join("node_modules"));
        assert!(modules.is_symlink(), "node_modules is linked, not copied");
        let dir = scratch.aside();
        drop(scratch);
        assert!(!dir.exists(), "the copy is removed when dropped");
    }
}
