//! Small file-system helpers shared by the session store, the workspace and the caches.

use std::io::Write;
use std::path::Path;

/// Writes `bytes` to `path` atomically: a temporary file in the same directory, fsynced, then
/// renamed over the target, so a reader (or a crash) sees the old content or the new, never part.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    replace(path, bytes, true)
}

/// [`write_atomic`] without the fsync, for a file rewritten many times a minute whose last
/// version matters only while its process runs (the agent loop's state file): a reader or a
/// killed process still sees the old content or the new, never part; after a power loss the
/// rename may be lost, and the file is the one before. The fsync is most of the write's cost
/// (0.5 of 0.9 ms here, docs/performance.md).
pub fn replace_unsynced(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    replace(path, bytes, false)
}

fn replace(path: &Path, bytes: &[u8], sync: bool) -> std::io::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut tmp = tempfile::Builder::new()
        .prefix(".ralph-tmp-")
        .tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    if sync {
        tmp.as_file().sync_all()?;
    }
    // Keep the permissions of the file being replaced (an executable script stays executable).
    if let Ok(meta) = std::fs::metadata(path) {
        std::fs::set_permissions(tmp.path(), meta.permissions())?;
    }
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// The first file named `name` in the directories of `path` (a `PATH` value) that is
/// executable.
pub fn which(name: &str, path: Option<&std::ffi::OsStr>) -> Option<std::path::PathBuf> {
    std::env::split_paths(path?)
        .map(|dir| dir.join(name))
        .find(|file| is_executable(file))
}

/// Whether `file` is a regular file someone may execute.
pub fn is_executable(file: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(file).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// ralph-loop's cache folder: `$XDG_CACHE_HOME/ralph-loop` (an absolute one), else
/// `~/.cache/ralph-loop`, else one in the temporary directory.
pub fn cache_home() -> std::path::PathBuf {
    std::env::var_os("XDG_CACHE_HOME")
        .map(std::path::PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| std::path::PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir)
        .join("ralph-loop")
}

/// A stable id for the project: a hash of its canonical root, so the vault's attempts say where
/// they came from without naming the path, and the agent's worktrees get a folder of their own.
pub fn project_id(project: &Path) -> String {
    // The agent's worktrees link the project's `.ralph/`: their attempts are the project's.
    let root = std::fs::canonicalize(project.join(".ralph"))
        .ok()
        .and_then(|ralph| ralph.parent().map(Path::to_path_buf))
        .or_else(|| std::fs::canonicalize(project).ok())
        .unwrap_or_else(|| project.to_path_buf());
    format!(
        "{:016x}",
        xxhash_rust::xxh3::xxh3_64(root.to_string_lossy().as_bytes())
    )
}
