//! The files around a target: its project root (the nearest `.git`), the directories searched
//! for manifests (up to that root, and never past the current directory outside a repository),
//! the nearest manifest, and the target's test file by the usual naming conventions.

use std::path::{Path, PathBuf};

use super::stack::Stack;

/// The nearest ancestor of `start` (or `start` itself) holding `.git`, else `start`'s directory.
pub fn project_root(start: &Path) -> PathBuf {
    let dir = dir_of(start);
    dir.ancestors()
        .find(|d| d.join(".git").exists())
        .map_or_else(|| dir.clone(), Path::to_path_buf)
}

/// The nearest manifest of any kind between the target's directory and the project root.
pub fn find_manifest(target: &Path) -> Option<PathBuf> {
    let order = Stack::order_for(target);
    search_dirs(target).into_iter().find_map(|dir| {
        order
            .iter()
            .flat_map(|s| s.manifests())
            .map(|name| dir.join(name))
            .find(|m| m.is_file())
    })
}

/// The target's test file by the usual conventions (micro-agent's `name.test.ext` first); the
/// first that exists wins. In the target's directory: `name.test.ext`, `name.spec.ext` (for
/// TypeScript also `.tsx`), `test_name.py`, `name_test.py`, `name_test.go`; then
/// `__tests__/`, and `tests/` or `test/` beside the target, in its parent and at the project
/// root, where `name.ext` itself also counts (mocha's `test/name.js`, Rust's `tests/name.rs`).
pub fn find_test_file(target: &Path) -> Option<PathBuf> {
    let stem = target.file_stem()?.to_str()?;
    let ext = target.extension()?.to_str()?;
    let dir = dir_of(target);
    let names = test_names(stem, ext);

    let mut candidates: Vec<PathBuf> = names.iter().map(|n| dir.join(n)).collect();
    candidates.extend(names.iter().map(|n| dir.join("__tests__").join(n)));
    let root = project_root(target);
    let mut test_dirs: Vec<PathBuf> = Vec::new();
    for base in [Some(dir.as_path()), dir.parent(), Some(root.as_path())]
        .into_iter()
        .flatten()
    {
        for sub in ["tests", "test"] {
            let d = base.join(sub);
            if !test_dirs.contains(&d) {
                test_dirs.push(d);
            }
        }
    }
    for d in &test_dirs {
        candidates.extend(names.iter().map(|n| d.join(n)));
        if ext != "py" {
            candidates.push(d.join(format!("{stem}.{ext}")));
        }
    }
    let target = absolute(target);
    candidates.into_iter().find(|c| c.is_file() && *c != target)
}

/// Test file names for `stem.ext`, most likely first.
fn test_names(stem: &str, ext: &str) -> Vec<String> {
    match ext {
        "py" => vec![format!("test_{stem}.py"), format!("{stem}_test.py")],
        "go" => vec![format!("{stem}_test.go")],
        _ => {
            let exts: &[&str] = match ext {
                "ts" => &["ts", "tsx"],
                "tsx" => &["tsx", "ts"],
                "jsx" => &["jsx", "js"],
                other => &[other][..],
            };
            let mut names = Vec::new();
            for kind in ["test", "spec"] {
                names.extend(exts.iter().map(|e| format!("{stem}.{kind}.{e}")));
            }
            names.push(format!("{stem}_test.{ext}"));
            names
        }
    }
}

/// The directories searched for manifests, nearest first: from the target's directory up to the
/// project root. Outside a git repository the search stops at the current directory when the
/// target is under it, else at the target's own directory, so a stray `package.json` in a home
/// directory is never picked up.
pub(super) fn search_dirs(target: &Path) -> Vec<PathBuf> {
    let dir = dir_of(target);
    let root = project_root(&dir);
    let bound = if root.join(".git").exists() {
        root
    } else {
        std::env::current_dir()
            .ok()
            .and_then(|cwd| cwd.canonicalize().ok())
            .filter(|cwd| dir.starts_with(cwd))
            .unwrap_or_else(|| dir.clone())
    };
    let mut dirs = Vec::new();
    for d in dir.ancestors() {
        dirs.push(d.to_path_buf());
        if d == bound {
            break;
        }
    }
    dirs
}

/// The directory of `path` (itself when it is one), absolute and with symlinks resolved where
/// it exists, so that walks upward see the real parents.
pub(super) fn dir_of(path: &Path) -> PathBuf {
    let path = absolute(path);
    if path.is_dir() {
        path
    } else {
        path.parent().map_or(path.clone(), Path::to_path_buf)
    }
}

pub(super) fn absolute(path: &Path) -> PathBuf {
    if let Ok(p) = path.canonicalize() {
        return p;
    }
    // A file that does not exist yet: resolve its directory.
    if let (Some(parent), Some(name)) = (path.parent(), path.file_name()) {
        let parent = if parent.as_os_str().is_empty() {
            Path::new(".")
        } else {
            parent
        };
        if let Ok(p) = parent.canonicalize() {
            return p.join(name);
        }
    }
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::plans::{found, project, real};

    #[test]
    fn project_root_is_the_nearest_git_ancestor() {
        let tmp = project(&[".git/", "a/b/c.py"]);
        let root = real(tmp.path());
        assert_eq!(project_root(&tmp.path().join("a/b/c.py")), root);
        assert_eq!(project_root(&tmp.path().join("a/b")), root);
        // A file not written yet still finds its project.
        assert_eq!(project_root(&tmp.path().join("a/b/new.py")), root);
    }

    #[test]
    fn without_git_the_root_is_the_start_dir() {
        let tmp = project(&["a/b/c.py"]);
        assert_eq!(
            project_root(&tmp.path().join("a/b/c.py")),
            real(&tmp.path().join("a/b"))
        );
    }

    #[test]
    fn the_search_stops_at_the_project_root() {
        let tmp = project(&["pyproject.toml", "proj/.git/", "proj/src/a.py"]);
        assert_eq!(found(&tmp.path().join("proj/src/a.py")), []);
        assert_eq!(find_manifest(&tmp.path().join("proj/src/a.py")), None);
    }

    #[test]
    fn find_manifest_takes_any_manifest() {
        let tmp = project(&[".git/", "package.json", "src/a.js"]);
        assert_eq!(
            find_manifest(&tmp.path().join("src/a.js")),
            Some(real(tmp.path()).join("package.json"))
        );
    }

    #[test]
    fn test_files_beside_the_target() {
        let cases: &[(&str, &str)] = &[
            ("src/sum.ts", "src/sum.test.ts"),
            ("src/sum.ts", "src/sum.spec.ts"),
            ("src/sum.ts", "src/sum.test.tsx"),
            ("src/sum.js", "src/sum.test.js"),
            ("app/calc.py", "app/test_calc.py"),
            ("app/calc.py", "app/calc_test.py"),
            ("pkg/calc.go", "pkg/calc_test.go"),
            ("src/sum.js", "src/__tests__/sum.test.js"),
            ("src/calc.py", "src/tests/test_calc.py"),
            ("pkg/src/calc.py", "pkg/tests/test_calc.py"),
            ("pkg/src/deep/calc.py", "tests/test_calc.py"),
            ("lib/util.js", "test/util.js"),
            ("src/parser.rs", "tests/parser.rs"),
        ];
        for (target, test) in cases {
            let tmp = project(&[".git/", target, test]);
            let found = find_test_file(&tmp.path().join(target));
            assert_eq!(
                found,
                Some(real(&tmp.path().join(test))),
                "{target} -> {test}"
            );
        }
    }

    #[test]
    fn the_first_convention_wins_and_none_is_none() {
        let tmp = project(&[
            ".git/",
            "src/sum.ts",
            "src/sum.spec.ts",
            "src/sum.test.ts",
            "tests/sum.test.ts",
        ]);
        assert_eq!(
            find_test_file(&tmp.path().join("src/sum.ts")),
            Some(real(&tmp.path().join("src/sum.test.ts")))
        );
        let tmp = project(&[".git/", "src/lonely.py"]);
        assert_eq!(find_test_file(&tmp.path().join("src/lonely.py")), None);
    }
}
