//! Finding a target's project root, manifest, test command and test file from the files around
//! it, for runs without `-t` / `-f` (see `docs/test-runners.md`).

use std::path::{Path, PathBuf};

/// A test command found from a manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Detected {
    pub command: String,
    /// The manifest that decided it.
    pub manifest: PathBuf,
    /// Where to run the command: the manifest's directory.
    pub cwd: PathBuf,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stack {
    Node,
    Python,
    Rust,
}

const NODE_MANIFESTS: &[&str] = &["package.json"];
const PYTHON_MANIFESTS: &[&str] = &[
    "pyproject.toml",
    "pytest.ini",
    "setup.cfg",
    "tox.ini",
    "requirements.txt",
    "setup.py",
];
const RUST_MANIFESTS: &[&str] = &["Cargo.toml"];

/// `-rfE` asks for the short summary of failures and errors (pytest's default, restated in case
/// the project's `addopts` turned it off): the runner's parser reads it.
pub const PYTEST_COMMAND: &str = "python3 -m pytest -rfE";
/// `--no-fail-fast`: every test binary runs, so the totals cover the whole crate.
pub const CARGO_COMMAND: &str = "cargo test --no-fail-fast";
pub const NPM_COMMAND: &str = "npm test";

impl Stack {
    fn manifests(self) -> &'static [&'static str] {
        match self {
            Stack::Node => NODE_MANIFESTS,
            Stack::Python => PYTHON_MANIFESTS,
            Stack::Rust => RUST_MANIFESTS,
        }
    }

    /// The order stacks are tried in a directory: the target's own language first, so a Python
    /// file in a folder that also has a `package.json` gets pytest.
    fn order_for(target: &Path) -> [Stack; 3] {
        match target.extension().and_then(|e| e.to_str()).unwrap_or("") {
            "py" | "pyi" => [Stack::Python, Stack::Node, Stack::Rust],
            "rs" => [Stack::Rust, Stack::Node, Stack::Python],
            _ => [Stack::Node, Stack::Python, Stack::Rust],
        }
    }
}

/// The nearest ancestor of `start` (or `start` itself) holding `.git`, else `start`'s directory.
pub fn project_root(start: &Path) -> PathBuf {
    let dir = dir_of(start);
    dir.ancestors()
        .find(|d| d.join(".git").exists())
        .map_or_else(|| dir.clone(), Path::to_path_buf)
}

/// The test command for `target`, from the nearest manifest between its directory and the
/// project root: `npm test` for a `package.json` with a real `test` script, pytest for a Python
/// manifest, `cargo test` for `Cargo.toml`.
pub fn detect_test_command(target: &Path) -> Option<Detected> {
    let order = Stack::order_for(target);
    for dir in search_dirs(target) {
        for stack in order {
            for name in stack.manifests() {
                let manifest = dir.join(name);
                if !manifest.is_file() {
                    continue;
                }
                let command = match stack {
                    Stack::Node if !has_real_test_script(&manifest) => continue,
                    Stack::Node => NPM_COMMAND,
                    Stack::Python => PYTEST_COMMAND,
                    Stack::Rust => CARGO_COMMAND,
                };
                return Some(Detected {
                    command: command.to_string(),
                    manifest,
                    cwd: dir,
                });
            }
        }
    }
    None
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

/// A `scripts.test` that is not npm's placeholder (`echo "Error: no test specified" && exit 1`).
fn has_real_test_script(package_json: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(package_json) else {
        return false;
    };
    let Ok(json) = serde_json::from_str::<serde_json::Value>(&text) else {
        return false;
    };
    json.pointer("/scripts/test")
        .and_then(|t| t.as_str())
        .is_some_and(|t| !t.trim().is_empty() && !t.contains("no test specified"))
}

/// The directories searched for manifests, nearest first: from the target's directory up to the
/// project root. Outside a git repository the search stops at the current directory when the
/// target is under it, else at the target's own directory, so a stray `package.json` in a home
/// directory is never picked up.
fn search_dirs(target: &Path) -> Vec<PathBuf> {
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
fn dir_of(path: &Path) -> PathBuf {
    let path = absolute(path);
    if path.is_dir() {
        path
    } else {
        path.parent().map_or(path.clone(), Path::to_path_buf)
    }
}

fn absolute(path: &Path) -> PathBuf {
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
    use std::fs;

    /// A temporary project: `files` are created (with parents), a trailing `/` makes a directory.
    fn project(files: &[&str]) -> tempfile::TempDir {
        let tmp = match tempfile::tempdir() {
            Ok(t) => t,
            Err(e) => panic!("tempdir: {e}"),
        };
        for f in files {
            let path = tmp.path().join(f);
            if f.ends_with('/') {
                fs::create_dir_all(&path).ok();
            } else {
                if let Some(p) = path.parent() {
                    fs::create_dir_all(p).ok();
                }
                fs::write(&path, "").ok();
            }
        }
        tmp
    }

    fn write(dir: &Path, file: &str, text: &str) {
        fs::write(dir.join(file), text).ok();
    }

    fn real(p: &Path) -> PathBuf {
        p.canonicalize().unwrap_or_else(|_| p.to_path_buf())
    }

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
    fn npm_test_needs_a_real_test_script() {
        let tmp = project(&[".git/", "src/app.ts"]);
        let target = tmp.path().join("src/app.ts");
        write(
            tmp.path(),
            "package.json",
            r#"{"scripts":{"test":"echo \"Error: no test specified\" && exit 1"}}"#,
        );
        assert_eq!(detect_test_command(&target), None);
        write(
            tmp.path(),
            "package.json",
            r#"{"scripts":{"test":"vitest run"}}"#,
        );
        let d = detect_test_command(&target);
        assert_eq!(
            d,
            Some(Detected {
                command: "npm test".into(),
                manifest: real(tmp.path()).join("package.json"),
                cwd: real(tmp.path()),
            })
        );
    }

    #[test]
    fn python_and_rust_manifests() {
        for manifest in PYTHON_MANIFESTS {
            let tmp = project(&[".git/", manifest, "pkg/mod.py"]);
            let d = detect_test_command(&tmp.path().join("pkg/mod.py"));
            assert_eq!(
                d.map(|d| d.command),
                Some(PYTEST_COMMAND.to_string()),
                "{manifest}"
            );
        }
        let tmp = project(&[".git/", "Cargo.toml", "src/lib.rs"]);
        let d = detect_test_command(&tmp.path().join("src/lib.rs"));
        assert_eq!(
            d.map(|d| (d.command, d.cwd)),
            Some((CARGO_COMMAND.into(), real(tmp.path())))
        );
    }

    #[test]
    fn the_nearest_manifest_wins_and_sets_cwd() {
        let tmp = project(&[
            ".git/",
            "Cargo.toml",
            "tools/py/pyproject.toml",
            "tools/py/x/y.py",
        ]);
        let d = detect_test_command(&tmp.path().join("tools/py/x/y.py"));
        assert_eq!(
            d.map(|d| (d.command, d.cwd)),
            Some((PYTEST_COMMAND.into(), real(&tmp.path().join("tools/py"))))
        );
    }

    #[test]
    fn the_targets_language_goes_first_in_a_mixed_directory() {
        let tmp = project(&[".git/", "requirements.txt", "app.py", "app.js"]);
        write(tmp.path(), "package.json", r#"{"scripts":{"test":"jest"}}"#);
        let cmd = |f: &str| detect_test_command(&tmp.path().join(f)).map(|d| d.command);
        assert_eq!(cmd("app.py").as_deref(), Some(PYTEST_COMMAND));
        assert_eq!(cmd("app.js").as_deref(), Some(NPM_COMMAND));
    }

    #[test]
    fn the_search_stops_at_the_project_root() {
        let tmp = project(&["pyproject.toml", "proj/.git/", "proj/src/a.py"]);
        assert_eq!(detect_test_command(&tmp.path().join("proj/src/a.py")), None);
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
