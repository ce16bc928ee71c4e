//! Finding the project's files: the walk that respects ignore files and skips dependencies and
//! build output, and what it collects ([`Walked`]): the source files to graph, and the
//! `tsconfig.json` and `Cargo.toml` files that resolution reads.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use ignore::{WalkBuilder, WalkState};

use crate::context::cache::mtime_ns;
use crate::context::imports::Language;

/// Directories never walked, whatever the ignore files say: dependencies, build output, caches
/// and ralph-loop's own store.
const ALWAYS_SKIPPED: &[&str] = &[
    "node_modules",
    "target",
    ".git",
    ".ralph",
    "dist",
    "build",
    "__pycache__",
    ".venv",
];

/// A source file the walk found, before reading.
pub(super) struct Found {
    pub(super) rel: String,
    pub(super) abs: PathBuf,
    pub(super) size: u64,
    pub(super) mtime_ns: u64,
    pub(super) language: Language,
}

/// What the walk found.
#[derive(Default)]
pub(super) struct Walked {
    pub(super) sources: Vec<Found>,
    pub(super) tsconfigs: Vec<PathBuf>,
    pub(super) manifests: Vec<PathBuf>,
    pub(super) warnings: Vec<String>,
}

/// How to walk: a small project on the calling thread, a large one on the `ignore` crate's
/// parallel walker (which starts its threads anew on each walk).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Walker {
    Serial,
    Parallel,
}

/// Walks the project as the ignore files say: `.gitignore` (even outside a git repository,
/// since a fixture or a fresh project may have none), `.ignore`, hidden files.
pub(super) fn walk(root: &Path, walker: Walker) -> Walked {
    let mut builder = WalkBuilder::new(root);
    builder
        .hidden(true)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(false)
        .ignore(true)
        .require_git(false)
        .filter_entry(|entry| {
            let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
            !(is_dir
                && entry
                    .file_name()
                    .to_str()
                    .is_some_and(|n| ALWAYS_SKIPPED.contains(&n)))
        });
    if walker == Walker::Serial {
        let mut walked = Walked::default();
        for result in builder.build() {
            visit(root, result, &mut walked);
        }
        return walked;
    }
    let walked = Mutex::new(Walked::default());
    builder.build_parallel().run(|| {
        // Each thread fills its own lists and merges them once, when the walker drops
        // this closure, instead of taking the lock per file.
        let mut guard = MergeOnDrop {
            into: &walked,
            local: Some(Walked::default()),
        };
        Box::new(move |result| {
            if let Some(local) = guard.local.as_mut() {
                visit(root, result, local);
            }
            WalkState::Continue
        })
    });
    walked.into_inner().unwrap_or_else(|e| e.into_inner())
}

struct MergeOnDrop<'a> {
    into: &'a Mutex<Walked>,
    local: Option<Walked>,
}

impl Drop for MergeOnDrop<'_> {
    fn drop(&mut self) {
        if let Some(local) = self.local.take() {
            let mut all = self.into.lock().unwrap_or_else(|e| e.into_inner());
            all.sources.extend(local.sources);
            all.tsconfigs.extend(local.tsconfigs);
            all.manifests.extend(local.manifests);
            all.warnings.extend(local.warnings);
        }
    }
}

fn visit(root: &Path, result: Result<ignore::DirEntry, ignore::Error>, out: &mut Walked) {
    let entry = match result {
        Ok(entry) => entry,
        Err(e) => {
            out.warnings.push(format!("walking the project: {e}"));
            return;
        }
    };
    if !entry.file_type().is_some_and(|t| t.is_file()) {
        return;
    }
    let abs = entry.path();
    let Ok(rel) = abs.strip_prefix(root) else {
        return;
    };
    let name = entry.file_name().to_str().unwrap_or_default();
    match name {
        "tsconfig.json" | "jsconfig.json" => {
            out.tsconfigs.push(rel.to_path_buf());
            return;
        }
        "Cargo.toml" => {
            out.manifests.push(rel.to_path_buf());
            return;
        }
        _ => {}
    }
    let Some(language) = Language::from_path(abs) else {
        return;
    };
    // Minified bundles are build output even when committed.
    if name.contains(".min.") {
        return;
    }
    let Some(rel_str) = rel.to_str() else {
        out.warnings.push(format!(
            "{} has a name that is not UTF-8; left out of the graph",
            rel.display()
        ));
        return;
    };
    let meta = match entry.metadata() {
        Ok(meta) => meta,
        Err(e) => {
            out.warnings.push(format!("{rel_str}: {e}"));
            return;
        }
    };
    out.sources.push(Found {
        rel: rel_str.to_string(),
        abs: abs.to_path_buf(),
        size: meta.len(),
        mtime_ns: mtime_ns(&meta),
        language,
    });
}
