//! Trust by content hash: a hook runs only once the user has approved it as it is now.
//!
//! A cloned repository can ship hooks, so a new or changed hook is refused until the user
//! reviews it and runs `ralph-loop hooks trust`. What is approved is a sha-256 of the hook's
//! whole declaration (every field of [`Declared`], as JSON) and of every file its command
//! names (`python3 plugins/fmt.py` hashes `plugins/fmt.py`; a folder is never hashed, only
//! the files named). The store lives outside the project, so a repository cannot trust itself:
//! `$XDG_CONFIG_HOME/ralph-loop/trusted-hooks.json`, else
//! `~/.config/ralph-loop/trusted-hooks.json`, keyed by the project's canonical root (a linked
//! git worktree counts as its main checkout), then by hook name.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::Declared;

/// The store's file name, in ralph-loop's config folder.
pub const STORE_FILE: &str = "trusted-hooks.json";

/// Why the hooks cannot be checked, or are refused.
#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    /// Hooks that are new or changed since they were trusted: nothing runs.
    #[error("{}", refusal(.0))]
    Untrusted(Vec<Untrusted>),
    #[error(
        "cannot tell where to keep the trusted hooks: neither XDG_CONFIG_HOME (absolute) nor \
         HOME is set"
    )]
    NoHome,
    #[error("the trust store {} cannot be read ({message}); fix or delete it, then run `ralph-loop hooks trust` again", path.display())]
    Damaged { path: PathBuf, message: String },
    #[error("cannot {what} the trust store {}: {source}", path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Whether a hook, as declared now, is trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Trusted,
    /// Never trusted in this project.
    New,
    /// Trusted once, with another hash.
    Changed,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Trusted => "trusted",
            Status::New => "new",
            Status::Changed => "changed since you trusted it",
        }
    }
}

/// A hook refused, with its stages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Untrusted {
    pub name: String,
    pub stages: String,
    pub status: Status,
}

fn refusal(hooks: &[Untrusted]) -> String {
    let n = hooks.len();
    let mut text = format!(
        "{n} hook{} not trusted, so nothing ran (a hook runs only once you trust it as it is):",
        if n == 1 { " is" } else { "s are" }
    );
    for h in hooks {
        text.push_str(&format!(
            "\n  {} ({}): {}",
            h.name,
            h.stages,
            h.status.as_str()
        ));
    }
    let (them, their) = if n == 1 {
        ("it", "its")
    } else {
        ("them", "their")
    };
    text.push_str(&format!(
        "\nReview {them} ({their} entries in ralph.config.yaml or ralph-plugins.yaml, and the \
         files {their} commands run), then run `ralph-loop hooks trust` (or `ralph-loop hooks \
         trust NAME`)"
    ));
    text
}

/// The hooks of one name (a name declared at two stages is one hook to trust), in the order
/// first declared.
#[derive(Debug, Clone)]
pub struct Group<'a> {
    pub name: &'a str,
    pub hooks: Vec<&'a Declared>,
}

impl Group<'_> {
    /// Its stages, comma-separated, in the stages' order.
    pub fn stages(&self) -> String {
        let mut stages: Vec<_> = self.hooks.iter().flat_map(|d| d.stages.iter()).collect();
        stages.sort();
        stages.dedup();
        stages
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// `declared` by name, in the order each name first appears.
pub fn groups(declared: &[Declared]) -> Vec<Group<'_>> {
    let mut out: Vec<Group<'_>> = Vec::new();
    for d in declared {
        match out.iter_mut().find(|g| g.name == d.name) {
            Some(g) => g.hooks.push(d),
            None => out.push(Group {
                name: &d.name,
                hooks: vec![d],
            }),
        }
    }
    out
}

/// The files a command names: each word that, with quotes removed and `$PROJECT_DIR`
/// replaced by `root`, is a regular file, absolute or relative to `root`. Left out: words with
/// any other variable, a glob or a command substitution; folders; the targets of redirections
/// (`> out.txt`, `2>err.log`, `< in.json`: what the hook writes or reads, not what it runs);
/// and the kernel's files under `/proc`, `/sys` and `/dev`, which change by themselves.
pub fn files_named(command: &str, root: &Path) -> Vec<PathBuf> {
    let root_text = root.to_string_lossy();
    let mut files: Vec<PathBuf> = Vec::new();
    let mut redirected = false;
    for word in command.split_whitespace() {
        let word: String = word.chars().filter(|c| !matches!(c, '"' | '\'')).collect();
        let word = word.trim_start_matches('(');
        if std::mem::take(&mut redirected) {
            continue;
        }
        // `>`, `2>>`, `&>`, `<`: the next word is the target; `>out.txt`: this one is.
        let operator = word.trim_start_matches(|c: char| c.is_ascii_digit() || c == '&');
        if operator.starts_with(['>', '<']) {
            redirected = operator.trim_start_matches(['>', '<', '&', '|']).is_empty();
            continue;
        }
        let word = word
            .replace("${PROJECT_DIR}", &root_text)
            .replace("$PROJECT_DIR", &root_text);
        let word = word.trim_end_matches([';', '&', '|', ')']);
        if word.is_empty() || word.contains(['$', '`', '*', '?', '[', '>', '<']) {
            continue;
        }
        let path = Path::new(word);
        let path = if path.is_absolute() {
            path.to_path_buf()
        } else {
            root.join(path)
        };
        let kernels = ["/proc", "/sys", "/dev"];
        if kernels.iter().any(|k| path.starts_with(k)) {
            continue;
        }
        if path.is_file() && !files.contains(&path) {
            files.push(path);
        }
    }
    files
}

/// The trust hash of the hooks of one name run in `root`: the sha-256 (hex) of each
/// declaration as JSON and of the files its command names.
pub fn hash(group: &Group<'_>, root: &Path) -> String {
    let mut h = Sha256::new();
    for d in &group.hooks {
        // `Declared` holds nothing serde_json cannot write; an error would still change the
        // hash, never let a hook through unhashed.
        match serde_json::to_vec(d) {
            Ok(json) => h.update(&json),
            Err(e) => h.update(format!("unserializable: {e}").as_bytes()),
        }
        h.update(b"\n");
        for file in files_named(&d.command, root) {
            let shown = file.strip_prefix(root).unwrap_or(&file);
            h.update(format!("file {}\n", shown.display()).as_bytes());
            match std::fs::File::open(&file) {
                Ok(mut f) => {
                    if let Err(e) = std::io::copy(&mut f, &mut h) {
                        h.update(format!("unreadable: {e}").as_bytes());
                    }
                }
                Err(e) => h.update(format!("unreadable: {e}").as_bytes()),
            }
            h.update(b"\n");
        }
    }
    format!("{:x}", h.finalize())
}

/// The store's file: `$XDG_CONFIG_HOME/ralph-loop/trusted-hooks.json` (an absolute one), else
/// `$HOME/.config/ralph-loop/trusted-hooks.json`.
pub fn store_path() -> Result<PathBuf, TrustError> {
    let non_empty = |var: &str| std::env::var_os(var).filter(|v| !v.is_empty());
    non_empty("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| non_empty("HOME").map(|h| PathBuf::from(h).join(".config")))
        .map(|dir| dir.join("ralph-loop").join(STORE_FILE))
        .ok_or(TrustError::NoHome)
}

/// The project's key in the store: its canonical root; for a linked git worktree (the
/// agent's `--parallel` runs), the main checkout's, so they share its trust.
pub fn project_key(root: &Path) -> String {
    let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    main_checkout(&root)
        .unwrap_or(root)
        .to_string_lossy()
        .into_owned()
}

/// The main checkout of the linked worktree at `root`: its `.git` file names the worktree's
/// git folder, whose `commondir` is the main `.git`.
fn main_checkout(root: &Path) -> Option<PathBuf> {
    let dot_git = root.join(".git");
    if !dot_git.is_file() {
        return None;
    }
    let text = std::fs::read_to_string(&dot_git).ok()?;
    let gitdir = root.join(text.trim().strip_prefix("gitdir:")?.trim());
    let common = std::fs::read_to_string(gitdir.join("commondir")).ok()?;
    let common = std::fs::canonicalize(gitdir.join(common.trim())).ok()?;
    (common.file_name()? == ".git")
        .then(|| common.parent().map(Path::to_path_buf))
        .flatten()
}

/// Every project's trusted hooks: project key → hook name → hash.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Store {
    #[serde(default)]
    pub projects: BTreeMap<String, BTreeMap<String, String>>,
}

impl Store {
    /// The store at `path`; empty when there is none yet.
    pub fn load(path: &Path) -> Result<Store, TrustError> {
        match std::fs::read(path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| TrustError::Damaged {
                path: path.to_path_buf(),
                message: e.to_string(),
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Store::default()),
            Err(source) => Err(TrustError::Io {
                what: "read",
                path: path.to_path_buf(),
                source,
            }),
        }
    }

    /// Writes the store to `path` atomically (other projects' entries kept as read).
    pub fn save(&self, path: &Path) -> Result<(), TrustError> {
        let io = |source| TrustError::Io {
            what: "write",
            path: path.to_path_buf(),
            source,
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        let mut bytes = serde_json::to_vec_pretty(self).map_err(|e| io(e.into()))?;
        bytes.push(b'\n');
        crate::fsutil::write_atomic(path, &bytes).map_err(io)
    }

    /// The status of a hook named `name` of project `key` whose hash is now `hash`.
    pub fn status(&self, key: &str, name: &str, hash: &str) -> Status {
        match self.projects.get(key).and_then(|p| p.get(name)) {
            None => Status::New,
            Some(h) if h == hash => Status::Trusted,
            Some(_) => Status::Changed,
        }
    }

    pub fn trust(&mut self, key: &str, name: &str, hash: String) {
        self.projects
            .entry(key.to_string())
            .or_default()
            .insert(name.to_string(), hash);
    }
}

/// One hook's name, stages, hash and status.
#[derive(Debug, Clone)]
pub struct Checked<'a> {
    pub group: Group<'a>,
    pub hash: String,
    pub status: Status,
}

impl fmt::Display for Checked<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.group.name, self.group.stages())
    }
}

/// Each hook of `declared` (run in `root`) with its status in `store`.
pub fn check_all<'a>(store: &Store, declared: &'a [Declared], root: &Path) -> Vec<Checked<'a>> {
    let key = project_key(root);
    groups(declared)
        .into_iter()
        .map(|group| {
            let hash = hash(&group, root);
            let status = store.status(&key, group.name, &hash);
            Checked {
                group,
                hash,
                status,
            }
        })
        .collect()
}

/// Refuses `declared` (run in `root`) unless every hook is trusted as it is now.
pub fn enforce(declared: &[Declared], root: &Path) -> Result<(), TrustError> {
    if declared.is_empty() {
        return Ok(());
    }
    let store = Store::load(&store_path()?)?;
    let refused: Vec<Untrusted> = check_all(&store, declared, root)
        .into_iter()
        .filter(|c| c.status != Status::Trusted)
        .map(|c| Untrusted {
            name: c.group.name.to_string(),
            stages: c.group.stages(),
            status: c.status,
        })
        .collect();
    if refused.is_empty() {
        Ok(())
    } else {
        Err(TrustError::Untrusted(refused))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::config::hooks::Stage;

    /// A shell hook at `on_after_gen`, as the config declares it.
    fn hook(name: &str, command: &str) -> Declared {
        let yaml = format!(
            "on_after_gen:\n  - type: shell\n    name: {name}\n    command: {command:?}\n    on_failure: warn_continue\n"
        );
        let section = serde_yaml::from_str(&yaml).unwrap();
        crate::config::hooks::declared(&section, &[]).remove(0)
    }

    #[test]
    fn the_files_a_command_names_are_found_and_hashed() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("plugins")).unwrap();
        std::fs::write(dir.path().join("plugins/fmt.py"), "print(1)\n").unwrap();
        std::fs::write(dir.path().join("check.sh"), "exit 0\n").unwrap();
        std::fs::write(dir.path().join("out.txt"), "").unwrap();
        let files = files_named(
            "python3 \"plugins/fmt.py\" plugins ./check.sh; $X/other \"$PROJECT_DIR\"/check.sh \
             > out.txt 2>out.txt < check.sh; cat /proc/self/status",
            dir.path(),
        );
        assert_eq!(
            files,
            [
                dir.path().join("plugins/fmt.py"),
                dir.path().join("check.sh")
            ],
            "each once; no folder, redirection, other variable or kernel file"
        );
        let declared = [hook("fmt", "python3 plugins/fmt.py")];
        let before = hash(&groups(&declared)[0], dir.path());
        assert_eq!(before.len(), 64);
        std::fs::write(dir.path().join("plugins/fmt.py"), "print(2)\n").unwrap();
        assert_ne!(before, hash(&groups(&declared)[0], dir.path()));
        let mut other = declared.clone();
        other[0].timeout_seconds = 5.0;
        assert_ne!(
            hash(&groups(&declared)[0], dir.path()),
            hash(&groups(&other)[0], dir.path()),
            "any field of the declaration"
        );
    }

    #[test]
    fn a_name_at_two_stages_is_one_hook_and_the_store_tells_new_from_changed() {
        let mut twice = hook("fmt", "true");
        twice.stages = BTreeSet::from([Stage::OnSuccess]);
        let declared = [hook("fmt", "true"), hook("lint", "true"), twice];
        let g = groups(&declared);
        assert_eq!(g.len(), 2);
        assert_eq!(g[0].stages(), "on_after_gen,on_success");
        let mut store = Store::default();
        assert_eq!(store.status("/p", "fmt", "a"), Status::New);
        store.trust("/p", "fmt", "a".into());
        assert_eq!(store.status("/p", "fmt", "a"), Status::Trusted);
        assert_eq!(store.status("/p", "fmt", "b"), Status::Changed);
        assert_eq!(store.status("/q", "fmt", "a"), Status::New);
    }
}
