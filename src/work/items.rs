//! A batch's entries, each resolved to a spec: a spec named on the command line or in the
//! config's `batch:` section, or a file as a spec of one target. The command line's settings
//! are the defaults under each entry's own.

use std::path::{Path, PathBuf};

use crate::cli::BatchArgs;
use crate::config::{BatchEntry, Config};
use crate::error::{Error, Result, UsageError};
use crate::spec::{FrontMatter, Spec, Target};

/// An entry, resolved to a spec.
pub(crate) struct Item {
    pub(crate) name: String,
    pub(crate) kind: &'static str,
    pub(crate) spec: Spec,
}

/// The entries named on the command line, else the config's `batch:` section.
pub(crate) fn items(
    args: &BatchArgs,
    config: &Config,
    cwd: &Path,
    root: &Path,
) -> Result<Vec<Item>> {
    if !args.entries.is_empty() {
        return args
            .entries
            .iter()
            .map(|p| from_path(p, cwd, root, args))
            .collect();
    }
    if config.batch.is_empty() {
        return Err(UsageError::flag(
            "batch",
            "nothing to run: name specs or files, or list them under `batch:` in ralph.config.yaml",
        )
        .into());
    }
    config
        .batch
        .iter()
        .map(|e| from_config(e, root, args))
        .collect()
}

/// A spec or a file named on the command line (relative to `cwd`), with the flags as defaults.
fn from_path(path: &Path, cwd: &Path, root: &Path, args: &BatchArgs) -> Result<Item> {
    let full = cwd.join(path);
    let name = relative(&full, root);
    let mut item = if path.extension().is_some_and(|e| e == "md") {
        Item {
            name,
            kind: "spec",
            spec: Spec::load(&full)?,
        }
    } else {
        file_item(&full, None, root)?
    };
    defaults(&mut item.spec.front, args);
    Ok(item)
}

/// An entry of the config's `batch:` section: its settings over the spec's, the flags as
/// defaults under both.
fn from_config(entry: &BatchEntry, root: &Path, args: &BatchArgs) -> Result<Item> {
    let mut item = match (&entry.spec, &entry.file) {
        (Some(spec), _) => Item {
            name: relative(spec, root),
            kind: "spec",
            spec: Spec::load(spec)?,
        },
        (None, Some(file)) => file_item(file, entry.test_file.as_deref(), root)?,
        (None, None) => return Err(Error::Internal("a batch entry names nothing".into())),
    };
    let f = &mut item.spec.front;
    let over = |mine: &mut Option<String>, theirs: &Option<String>| {
        if theirs.is_some() {
            mine.clone_from(theirs);
        }
    };
    over(&mut f.test_command, &entry.test_command);
    over(&mut f.language, &entry.language);
    if let Some(models) = &entry.models {
        f.models = Some(crate::models::RoleModels(models.clone()));
    }
    f.budget = entry.budget.or(f.budget);
    f.max_iterations = entry.max_iterations.or(f.max_iterations);
    f.adversarial = entry.adversarial.or(f.adversarial);
    f.profile = entry.profile.or(f.profile);
    defaults(f, args);
    Ok(item)
}

/// A file as a spec of one target, without a task of its own (its `<file>.prompt.md` is read
/// as for a single run).
fn file_item(full: &Path, test_file: Option<&Path>, root: &Path) -> Result<Item> {
    if !full.is_file() {
        return Err(UsageError::TargetNotFound(full.to_path_buf()).into());
    }
    let name = relative(full, root);
    Ok(Item {
        kind: "file",
        spec: Spec {
            path: full.to_path_buf(),
            name: full
                .file_name()
                .map(|n| n.to_string_lossy().to_string())
                .unwrap_or_default(),
            front: FrontMatter {
                targets: vec![Target {
                    file: PathBuf::from(&name),
                    test_file: test_file.map(|t| PathBuf::from(relative(t, root))),
                }],
                ..FrontMatter::default()
            },
            body: String::new(),
        },
        name,
    })
}

/// The command line's settings, where the entry has none of its own.
fn defaults(f: &mut FrontMatter, args: &BatchArgs) {
    f.budget = f.budget.or(args.budget);
    f.max_iterations = f.max_iterations.or(args.max_iterations);
    if f.models.is_none() {
        f.models = args.models.clone().map(crate::models::RoleModels);
    }
    if f.test_command.is_none() {
        f.test_command.clone_from(&args.test_command);
    }
    if args.no_adversarial && f.adversarial.is_none() {
        f.adversarial = Some(false);
    }
}

fn relative(path: &Path, root: &Path) -> String {
    let full = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    full.strip_prefix(&root)
        .unwrap_or(&full)
        .display()
        .to_string()
}
