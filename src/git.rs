//! The git a batch, the agent and the agent loop need: what changed in the tree, a commit of
//! exactly those files, a failed spec's work kept in a stash and under a private ref, a
//! checkpoint of the tree, a revert of an iteration's commits, a push.
//!
//! Every call is the `git` binary, run to its end in its own process group with stdin closed:
//! the user's git, with its hooks and config.

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, OnceLock};

use sha2::{Digest, Sha256};

/// Why a git command failed.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error("cannot run git: {0}")]
    Spawn(std::io::Error),
    #[error("cannot remove {}: {source}", path.display())]
    Remove {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("`git {args}` failed: {stderr}")]
    Failed { args: String, stderr: String },
}

type Result<T, E = GitError> = std::result::Result<T, E>;

/// A repository's work tree.
#[derive(Debug, Clone)]
pub struct Repo {
    pub root: PathBuf,
    /// Where the pid of the git command under way is kept, when it must be findable after this
    /// process dies (the agent's, `.ralph/agent.git`): `kill -9` of the agent does not stop its
    /// git, which a restarted agent then waits for.
    pub pid_file: Option<PathBuf>,
    /// The `-c user.…` flags [`Repo::identity`] found, asked once per repository (and shared by
    /// its clones): a loop commits every iteration, and each question is a git process.
    identity: Arc<OnceLock<Vec<String>>>,
}

/// The content of each path git lists as changed or untracked: `None` for a deleted file.
pub type Snapshot = BTreeMap<PathBuf, Option<[u8; 32]>>;

/// One look at the tree: `HEAD` and what each changed path holds.
#[derive(Debug, Clone, PartialEq)]
pub struct Look {
    /// `None` before the first commit.
    pub head: Option<String>,
    pub snapshot: Snapshot,
    /// The paths of `snapshot` git does not track yet: a commit of them must add them first.
    pub untracked: BTreeSet<PathBuf>,
}

/// Turns git's automatic maintenance off for one command: a commit would otherwise start
/// `git maintenance run --auto` (or `gc --auto`) after itself, detached, a process that outlives
/// the run, once per iteration. [`Repo::maintain`] runs it once when a loop ends.
const NO_AUTO_MAINTENANCE: [&str; 4] = ["-c", "maintenance.auto=false", "-c", "gc.auto=0"];

impl Repo {
    /// The work tree at `root`.
    pub fn new(root: PathBuf) -> Repo {
        Repo {
            root,
            pid_file: None,
            identity: Arc::default(),
        }
    }

    /// This repository, keeping the pid of each git command in `pid_file` while it runs.
    pub fn with_pid_file(self, pid_file: Option<PathBuf>) -> Repo {
        Repo { pid_file, ..self }
    }

    /// The repository whose work tree holds `dir`, if any.
    pub fn at(dir: &Path) -> Option<Repo> {
        let out = git_in(dir, &["rev-parse", "--show-toplevel"], None).ok()?;
        let root = PathBuf::from(out.trim());
        root.is_dir().then(|| Repo::new(root))
    }

    fn git(&self, args: &[&str]) -> Result<String> {
        git_in(&self.root, args, self.pid_file.as_deref())
    }

    /// Waits (up to 30 s) for the git command a killed process left running, as `pid_file`
    /// names it, then for git's index lock: what it was doing (a commit, a stash) must be
    /// finished and seen before deciding whether to do it again.
    pub fn wait_for_orphan(&self) {
        if let Some(pid) = self
            .pid_file
            .as_ref()
            .and_then(|f| std::fs::read_to_string(f).ok())
            .and_then(|t| t.trim().parse::<i32>().ok())
        {
            let start = std::time::Instant::now();
            while is_git(pid) && start.elapsed() < std::time::Duration::from_secs(30) {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
        }
        self.wait_unlocked();
    }

    /// Waits (up to 10 s) for git's index lock to go: a git command of an agent that was killed
    /// (`kill -9` reaches the agent, not its child) may still be finishing a commit or a stash,
    /// which must be seen before deciding whether to make it again.
    pub fn wait_unlocked(&self) {
        let Ok(dir) = self.git(&["rev-parse", "--absolute-git-dir"]) else {
            return;
        };
        let lock = PathBuf::from(dir.trim()).join("index.lock");
        let start = std::time::Instant::now();
        while lock.exists() && start.elapsed() < std::time::Duration::from_secs(10) {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    /// Whether the repository has a commit to stash and commit on.
    pub fn has_commit(&self) -> bool {
        self.git(&["rev-parse", "--verify", "-q", "HEAD"]).is_ok()
    }

    /// Tracked paths with changes, staged or not (untracked files left out).
    pub fn dirty_tracked(&self) -> Result<Vec<PathBuf>> {
        let out = self.git(&["status", "--porcelain=v1", "-z", "--untracked-files=no"])?;
        Ok(parse_status(&out))
    }

    /// Changed and untracked paths (relative to the root), ignored ones left out.
    pub fn dirty(&self) -> Result<Vec<PathBuf>> {
        let out = self.git(&["status", "--porcelain=v1", "-z", "--untracked-files=all"])?;
        Ok(parse_status(&out))
    }

    /// Puts `path` back as `HEAD` has it; an error when `HEAD` does not have it.
    pub fn restore(&self, path: &Path) -> Result<()> {
        let path = path.to_string_lossy();
        self.git(&["checkout", "HEAD", "--", &path]).map(drop)
    }

    /// What each dirty path holds now.
    pub fn snapshot(&self) -> Result<Snapshot> {
        Ok(self.hashed(self.dirty()?))
    }

    fn hashed(&self, paths: Vec<PathBuf>) -> Snapshot {
        paths
            .into_iter()
            .map(|p| {
                let hash = std::fs::read(self.root.join(&p))
                    .ok()
                    .map(|bytes| Sha256::digest(bytes).into());
                (p, hash)
            })
            .collect()
    }

    /// `HEAD` and what each dirty path holds, from one `git status`: a loop's look at the tree
    /// before and after each iteration costs one process, not two.
    pub fn state(&self) -> Result<Look> {
        let out = self.git(&[
            "status",
            "--porcelain=v2",
            "--branch",
            "-z",
            "--untracked-files=all",
        ])?;
        let (head, paths, untracked) = parse_status_v2(&out);
        Ok(Look {
            head,
            snapshot: self.hashed(paths),
            untracked,
        })
    }

    /// The paths whose content differs from `before`: what was changed since.
    pub fn changed_since(&self, before: &Snapshot) -> Result<Vec<PathBuf>> {
        Ok(changed_between(before, &self.snapshot()?))
    }

    /// Commits exactly `paths` (whatever else is staged or changed stays as it was) with
    /// `subject` and `body`; returns the commit's short hash.
    pub fn commit(&self, paths: &[PathBuf], subject: &str, body: &str) -> Result<String> {
        // With no path `git add -A` would add the whole tree.
        if !paths.is_empty() {
            let mut add = vec!["add", "-A", "--"];
            add.extend(paths.iter().filter_map(|p| p.to_str()));
            self.git(&add)?;
        }
        self.commit_tracked(paths, subject, body)
    }

    /// [`Repo::commit`] of paths git tracks already (changed or deleted, none new), which
    /// `git commit --only` takes without a `git add` first: one process.
    pub fn commit_tracked(&self, paths: &[PathBuf], subject: &str, body: &str) -> Result<String> {
        let mut commit = self.identity().clone();
        commit.extend(NO_AUTO_MAINTENANCE.map(String::from));
        // `--only`: the paths alone, whatever else is staged; with none, an empty commit. Not
        // `-q`: git's summary line names the new commit, which saves asking for it.
        commit.extend(
            [
                "commit",
                "--only",
                "--allow-empty",
                "-m",
                subject,
                "-m",
                body,
                "--",
            ]
            .map(String::from),
        );
        commit.extend(paths.iter().filter_map(|p| p.to_str()).map(String::from));
        let args: Vec<&str> = commit.iter().map(String::as_str).collect();
        let summary = self.git(&args)?;
        match committed_hash(&summary) {
            Some(hash) => Ok(hash.to_string()),
            None => Ok(self
                .git(&["rev-parse", "--short", "HEAD"])?
                .trim()
                .to_string()),
        }
    }

    /// Runs the automatic maintenance the commits made with it off left undone (`git
    /// maintenance run --auto`, in the foreground): once, when a loop ends, so nothing is left
    /// running after it. Quick when there is nothing to do.
    pub fn maintain(&self) -> Result<()> {
        self.git(&[
            "-c",
            "maintenance.autoDetach=false",
            "-c",
            "gc.autoDetach=false",
            "maintenance",
            "run",
            "--auto",
            "--quiet",
        ])
        .map(drop)
    }

    /// The short hash of the newest commit since `since` (RFC 3339) whose message holds
    /// `line`, if any: a commit made by an agent killed before it could say so.
    pub fn find_commit(&self, line: &str, since: &str) -> Result<Option<String>> {
        let grep = format!("--grep={line}");
        let since = format!("--since={since}");
        let out = self.git(&["log", "-n", "1", "-F", "--format=%h", &since, &grep])?;
        Ok(Some(out.trim().to_string()).filter(|h| !h.is_empty()))
    }

    /// Whether `reference` exists.
    pub fn has_ref(&self, reference: &str) -> bool {
        self.git(&["rev-parse", "--verify", "-q", reference])
            .is_ok()
    }

    /// Saves `paths`' changes in a stash named `message` and under `reference`, and puts the
    /// files back as committed; with `keep_stash` false the stash entry is dropped (the ref
    /// still holds the work). Returns the stash commit's hash.
    pub fn stash(
        &self,
        paths: &[PathBuf],
        message: &str,
        reference: &str,
        keep_stash: bool,
    ) -> Result<String> {
        let mut stash = self.identity().clone();
        stash.extend(
            ["stash", "push", "--include-untracked", "-m", message, "--"].map(String::from),
        );
        stash.extend(paths.iter().filter_map(|p| p.to_str()).map(String::from));
        let args: Vec<&str> = stash.iter().map(String::as_str).collect();
        self.git(&args)?;
        let sha = self.git(&["rev-parse", "stash@{0}"])?.trim().to_string();
        self.git(&["update-ref", "-m", message, reference, &sha])?;
        if !keep_stash {
            self.git(&["stash", "drop", "-q", "stash@{0}"])?;
        }
        Ok(sha)
    }

    /// The commit `HEAD` names, in full.
    /// A commit as `git show` prints it: its message, the files it changed, its patch.
    pub fn show(&self, commit: &str) -> Result<String> {
        self.git(&["show", "--stat", "--patch", "--format=medium", commit, "--"])
    }

    pub fn head(&self) -> Result<String> {
        Ok(self.git(&["rev-parse", "HEAD"])?.trim().to_string())
    }

    /// Points `reference` at a commit of the tree as it is now, uncommitted changes included
    /// (`git stash create`, which touches neither the tree nor the stash list), or at `HEAD`
    /// when nothing is changed: what `git checkout <reference> -- .` brings back.
    pub fn checkpoint(&self, reference: &str, message: &str) -> Result<String> {
        let mut create = self.identity().clone();
        create.extend(["stash", "create", message].map(String::from));
        let args: Vec<&str> = create.iter().map(String::as_str).collect();
        let sha = match self.git(&args)?.trim() {
            "" => self.head()?,
            sha => sha.to_string(),
        };
        self.git(&["update-ref", "-m", message, reference, &sha])?;
        Ok(sha)
    }

    /// Points `reference` at `commit`.
    pub fn point(&self, reference: &str, commit: &str, message: &str) -> Result<()> {
        self.git(&["update-ref", "-m", message, reference, commit])
            .map(drop)
    }

    /// The commits after `base` up to `HEAD`, newest first (short hashes); every commit when
    /// `base` is empty.
    pub fn commits_since(&self, base: &str) -> Result<Vec<String>> {
        let range = if base.is_empty() {
            "HEAD".to_string()
        } else {
            format!("{base}..HEAD")
        };
        let out = self.git(&["rev-list", "--abbrev-commit", &range])?;
        Ok(out.lines().map(str::to_string).collect())
    }

    /// Reverts every commit after `base`, newest first, in one revert each (`git revert
    /// --no-edit base..HEAD`); returns the new `HEAD`'s short hash. When git cannot (a
    /// conflict, a merge commit), the revert is aborted so the tree is as it was, never half
    /// reverted, and the error says why.
    pub fn revert_since(&self, base: &str) -> Result<String> {
        let range = format!("{base}..HEAD");
        let mut revert = self.identity().clone();
        revert.extend(NO_AUTO_MAINTENANCE.map(String::from));
        revert.extend(["revert", "--no-edit", &range].map(String::from));
        let args: Vec<&str> = revert.iter().map(String::as_str).collect();
        if let Err(e) = self.git(&args) {
            // Nothing to abort when git refused before it began (a merge commit).
            let _ = self.git(&["revert", "--abort"]);
            return Err(e);
        }
        Ok(self
            .git(&["rev-parse", "--short", "HEAD"])?
            .trim()
            .to_string())
    }

    /// `git push` to the branch's upstream.
    pub fn push(&self) -> Result<()> {
        self.git(&["push", "-q"]).map(drop)
    }

    /// A new work tree at `path` on `commit`, detached (no branch is made or moved).
    pub fn worktree_add(&self, path: &Path, commit: &str) -> Result<()> {
        let path = path.to_string_lossy();
        self.git(&["worktree", "add", "-q", "--detach", &path, commit])
            .map(drop)
    }

    /// Removes the work tree at `path` (whatever it holds) and forgets it.
    pub fn worktree_remove(&self, path: &Path) -> Result<()> {
        let shown = path.to_string_lossy();
        // Its failure is not the end: the folder may be one git no longer knows as a work tree
        // (half made when a process was killed), which goes below all the same.
        let _ = self.git(&["worktree", "remove", "--force", "--force", &shown]);
        if path.exists() {
            std::fs::remove_dir_all(path).map_err(|source| GitError::Remove {
                path: path.to_path_buf(),
                source,
            })?;
        }
        self.git(&["worktree", "prune"]).map(drop)
    }

    /// The blob `path` (relative to the root) has in `commit`; `None` where it has none.
    pub fn blob_at(&self, commit: &str, path: &Path) -> Result<Option<String>> {
        let spec = format!("{commit}:{}", path.to_string_lossy());
        match self.git(&["rev-parse", "-q", "--verify", &spec]) {
            Ok(out) => Ok(Some(out.trim().to_string())),
            Err(GitError::Failed { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The blob the file at `path` (relative to the root) would be if added now; `None` when
    /// there is no such file.
    pub fn blob_of_file(&self, path: &Path) -> Result<Option<String>> {
        if std::fs::symlink_metadata(self.root.join(path)).is_err() {
            return Ok(None);
        }
        let shown = path.to_string_lossy();
        Ok(Some(
            self.git(&["hash-object", "--", &shown])?.trim().to_string(),
        ))
    }

    /// `-c user.name=… -c user.email=…` when the repository has no identity to commit with.
    fn identity(&self) -> &Vec<String> {
        self.identity.get_or_init(|| self.find_identity())
    }

    fn find_identity(&self) -> Vec<String> {
        // Both keys in one process; none set is git's exit 1, read as neither known.
        let set = self
            .git(&["config", "--get-regexp", r"^user\.(name|email)$"])
            .unwrap_or_default();
        let known = |key: &str| {
            set.lines().any(|l| {
                l.split_once(' ')
                    .is_some_and(|(k, v)| k == key && !v.trim().is_empty())
            })
        };
        let env = |key: &str| std::env::var(key).is_ok_and(|v| !v.is_empty());
        let mut flags = Vec::new();
        if !known("user.name") && !env("GIT_AUTHOR_NAME") {
            flags.extend(["-c".into(), "user.name=ralph-loop".into()]);
        }
        if !known("user.email") && !env("GIT_AUTHOR_EMAIL") {
            flags.extend(["-c".into(), "user.email=ralph-loop@localhost".into()]);
        }
        flags
    }
}

/// The paths of `git status --porcelain=v1 -z`.
fn parse_status(out: &str) -> Vec<PathBuf> {
    let mut paths = Vec::new();
    let mut fields = out.split('\0').filter(|f| !f.is_empty());
    while let Some(entry) = fields.next() {
        let (code, path) = entry.split_at(entry.len().min(3));
        paths.push(PathBuf::from(path));
        // A rename lists its source next.
        if code.starts_with('R') || code.starts_with('C') {
            if let Some(from) = fields.next() {
                paths.push(PathBuf::from(from));
            }
        }
    }
    paths
}

/// The paths whose content differs between two snapshots of one tree.
pub fn changed_between(before: &Snapshot, now: &Snapshot) -> Vec<PathBuf> {
    let mut changed: Vec<PathBuf> = now
        .iter()
        .filter(|(p, h)| before.get(*p) != Some(h))
        .map(|(p, _)| p.clone())
        .collect();
    // Dirty before and clean now: put back as committed, a change too.
    changed.extend(before.keys().filter(|p| !now.contains_key(*p)).cloned());
    changed.sort();
    changed.dedup();
    changed
}

/// The short hash in the summary `git commit` prints first: `[main 1a2b3c4] subject`, `[main
/// (root-commit) 1a2b3c4] …`, `[detached HEAD 1a2b3c4] …`. A ref name holds no space, so the
/// first `"] "` closes the brackets.
fn committed_hash(summary: &str) -> Option<&str> {
    let line = summary.lines().next()?.strip_prefix('[')?;
    let (inside, _) = line.split_once("] ")?;
    let hash = inside.rsplit(' ').next()?;
    (hash.len() >= 4 && hash.bytes().all(|b| b.is_ascii_hexdigit())).then_some(hash)
}

/// `HEAD`, the paths and the untracked paths of `git status --porcelain=v2 --branch -z`:
/// ordinary (`1`), renamed or copied (`2`, its source next), unmerged (`u`) and untracked (`?`)
/// entries, each path the last of its fields.
fn parse_status_v2(out: &str) -> (Option<String>, Vec<PathBuf>, BTreeSet<PathBuf>) {
    let mut head = None;
    let mut paths = Vec::new();
    let mut untracked = BTreeSet::new();
    let mut fields = out.split('\0').filter(|f| !f.is_empty());
    while let Some(entry) = fields.next() {
        if let Some(oid) = entry.strip_prefix("# branch.oid ") {
            head = (oid != "(initial)").then(|| oid.to_string());
            continue;
        }
        let path = match entry.as_bytes().first() {
            Some(b'1') => entry.splitn(9, ' ').nth(8),
            Some(b'2') => entry.splitn(10, ' ').nth(9),
            Some(b'u') => entry.splitn(11, ' ').nth(10),
            Some(b'?') => entry.get(2..),
            _ => None,
        };
        if entry.starts_with('?') {
            untracked.extend(path.map(PathBuf::from));
        }
        paths.extend(path.map(PathBuf::from));
        if entry.starts_with('2') {
            paths.extend(fields.next().map(PathBuf::from));
        }
    }
    (head, paths, untracked)
}

/// Whether process `pid` is alive and a git.
fn is_git(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == "git")
}

/// Runs `git args` in `dir` to its end; its stdout, or its stderr as the error. Its pid is in
/// `pid_file` while it runs, when one is given.
fn git_in(dir: &Path, args: &[&str], pid_file: Option<&Path>) -> Result<String> {
    let child = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(GitError::Spawn)?;
    if let Some(file) = pid_file {
        let _ = std::fs::write(file, child.id().to_string());
    }
    let out = child.wait_with_output().map_err(GitError::Spawn);
    if let Some(file) = pid_file {
        let _ = std::fs::remove_file(file);
    }
    let out = out?;
    if !out.status.success() {
        return Err(GitError::Failed {
            args: args.join(" "),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::projects::git;

    /// A new repository (branch `main`, no commit yet) in a temporary folder, and the folder.
    fn new_repo() -> (tempfile::TempDir, Repo) {
        let dir = tempfile::tempdir().expect("tempdir");
        git(dir.path(), &["init", "-q", "-b", "main"]);
        let repo = Repo::new(dir.path().to_path_buf());
        (dir, repo)
    }

    #[test]
    fn one_status_says_head_and_every_kind_of_change() {
        let (dir, repo) = new_repo();
        let root = dir.path();
        std::fs::write(root.join("new file.txt"), "x").expect("write");
        let look = repo.state().expect("state");
        assert_eq!(look.head, None, "no commit yet");
        let new = [Path::new("new file.txt")];
        assert_eq!(look.snapshot.keys().collect::<Vec<_>>(), new);
        assert_eq!(look.untracked.iter().collect::<Vec<_>>(), new);

        for name in ["a.txt", "b.txt", "c.txt"] {
            std::fs::write(root.join(name), name).expect("write");
        }
        git(root, &["add", "-A"]);
        git(root, &["commit", "-q", "-m", "one"]);
        let head = repo.head().expect("head");
        std::fs::write(root.join("a.txt"), "changed").expect("write");
        git(root, &["mv", "b.txt", "b moved.txt"]);
        std::fs::remove_file(root.join("c.txt")).expect("remove");
        std::fs::create_dir(root.join("d")).expect("dir");
        std::fs::write(root.join("d/e.txt"), "e").expect("write");
        let Look {
            head: now,
            snapshot: snap,
            untracked,
        } = repo.state().expect("state");
        assert_eq!(now.as_deref(), Some(head.as_str()));
        assert_eq!(untracked.iter().collect::<Vec<_>>(), [Path::new("d/e.txt")]);
        let paths: Vec<&Path> = snap.keys().map(PathBuf::as_path).collect();
        assert_eq!(
            paths,
            ["a.txt", "b moved.txt", "b.txt", "c.txt", "d/e.txt"].map(Path::new),
            "{snap:?}"
        );
        assert_eq!(snap[Path::new("c.txt")], None, "deleted");
        // The same as the two older calls (HEAD, then the v1 status).
        assert_eq!(snap, repo.snapshot().expect("snapshot"));
        assert_eq!(changed_between(&BTreeMap::new(), &snap).len(), 5, "all new");
    }

    #[test]
    fn a_commit_names_itself_and_commits_only_its_paths() {
        let (dir, repo) = new_repo();
        let root = dir.path();
        std::fs::write(root.join("a.txt"), "a").expect("write");
        // The first commit: a new file, so `git add` first; git says "(root-commit)".
        let first = repo
            .commit(&[PathBuf::from("a.txt")], "one", "body")
            .expect("commit");
        assert_eq!(first, repo.head().expect("head")[..first.len()]);
        std::fs::write(root.join("a.txt"), "changed").expect("write");
        std::fs::write(root.join("staged.txt"), "s").expect("write");
        git(root, &["add", "staged.txt"]);
        let second = repo
            .commit_tracked(&[PathBuf::from("a.txt")], "two", "body")
            .expect("commit");
        assert_ne!(first, second);
        assert_eq!(second, repo.head().expect("head")[..second.len()]);
        // Only the path asked for: what else was staged stays staged.
        let look = repo.state().expect("state");
        assert_eq!(
            look.snapshot.keys().collect::<Vec<_>>(),
            [Path::new("staged.txt")]
        );
    }

    #[test]
    fn maintenance_waits_for_the_end_of_the_commits() {
        let (dir, repo) = new_repo();
        let root = dir.path();
        // One loose object is enough for the loose-objects task, which packs them.
        for (key, value) in [
            ("maintenance.gc.enabled", "false"),
            ("maintenance.loose-objects.enabled", "true"),
            ("maintenance.loose-objects.auto", "1"),
        ] {
            git(root, &["config", key, value]);
        }
        let packs = || {
            std::fs::read_dir(root.join(".git/objects/pack"))
                .map(|d| d.count())
                .unwrap_or(0)
        };
        for n in 0..3 {
            std::fs::write(root.join("a.txt"), n.to_string()).expect("write");
            repo.commit(&[PathBuf::from("a.txt")], "n", "")
                .expect("commit");
        }
        // A commit's own maintenance would run detached: give it time to show.
        std::thread::sleep(std::time::Duration::from_millis(300));
        assert_eq!(packs(), 0, "no maintenance after a commit");
        repo.maintain().expect("maintenance");
        assert!(packs() > 0, "the loose objects are packed when it runs");
    }

    #[test]
    fn the_summary_line_gives_the_hash() {
        for (summary, hash) in [
            ("[main 1a2b3c4] subject\n 1 file changed", Some("1a2b3c4")),
            ("[main (root-commit) 0123abcd] one", Some("0123abcd")),
            ("[detached HEAD 1a2b3c4] x [y] z", Some("1a2b3c4")),
            ("[feature/a]b 1a2b3c4] x", Some("1a2b3c4")),
            ("hook says hello\n[main 1a2b3c4] x", None),
            ("", None),
        ] {
            assert_eq!(committed_hash(summary), hash, "{summary}");
        }
    }
}
