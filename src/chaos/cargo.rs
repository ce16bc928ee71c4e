//! Rust targets: the crate a target belongs to, as `cargo metadata` describes it, and the
//! harness that runs Chaos's files against it. Chaos's file is an integration test of the
//! crate's library; it cannot live in the crate's `tests/` (the project is never written to), so
//! the session's `chaos/` folder holds a small crate of its own, `Cargo.toml` beside the round
//! files, depending on the user's crate by path and on proptest when a file uses it: the user's
//! manifest never changes. It builds into the user's own target directory, so their
//! dependencies are not compiled twice; cargo keeps the two workspaces' artifacts apart.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Deserialize;

/// The manifest of the crate that holds Chaos's files.
pub const HARNESS_MANIFEST: &str = "Cargo.toml";
/// The proptest requirement used when the project has none.
const PROPTEST: &str = "1";

/// The library crate a Rust target belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RustCrate {
    /// The package's name, as a dependency names it.
    pub package: String,
    /// The library's name, as code names it (`use stats::median`).
    pub lib: String,
    pub edition: String,
    /// The directory of the package's `Cargo.toml`.
    pub dir: PathBuf,
    /// The workspace's root, where its `Cargo.lock` is.
    pub workspace_root: PathBuf,
    /// Where cargo builds it (`target/`, `CARGO_TARGET_DIR` or `build.target-dir`).
    pub target_dir: PathBuf,
    /// The project's own proptest requirement, when it has one.
    pub proptest: Option<String>,
    /// The interleaving checkers (shuttle, loom) the package depends on: a harness whose file
    /// uses one depends on it as the package does.
    pub checkers: Vec<Checker>,
}

/// An interleaving checker the package depends on, as it names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checker {
    pub name: String,
    pub req: String,
    /// Where it is, for a path dependency.
    pub path: Option<PathBuf>,
}

/// The checkers of a package that a harness can depend on too.
const CHECKERS: [&str; 2] = ["shuttle", "loom"];

#[derive(Deserialize)]
struct Metadata {
    packages: Vec<Package>,
    workspace_root: PathBuf,
    target_directory: PathBuf,
}

#[derive(Deserialize)]
struct Package {
    name: String,
    manifest_path: PathBuf,
    edition: String,
    targets: Vec<Target>,
    dependencies: Vec<Dependency>,
}

#[derive(Deserialize)]
struct Target {
    name: String,
    kind: Vec<String>,
}

#[derive(Deserialize)]
struct Dependency {
    name: String,
    req: String,
    #[serde(default)]
    path: Option<PathBuf>,
}

/// Why a Rust target's crate cannot be attacked.
#[derive(Debug, thiserror::Error)]
pub enum CrateError {
    #[error("no Cargo.toml holds {}", .0.display())]
    NoManifest(PathBuf),
    #[error("cannot run cargo metadata: {0}")]
    Spawn(#[from] std::io::Error),
    #[error("cargo metadata failed for {}: {last_line}", manifest.display())]
    Metadata {
        manifest: PathBuf,
        last_line: String,
    },
    #[error("cargo metadata's output cannot be read: {0}")]
    Unreadable(#[from] serde_json::Error),
    #[error("no package of the workspace holds {}", .0.display())]
    NoPackage(PathBuf),
    #[error(
        "the package `{0}` has no library target: Chaos tests a Rust crate through its library's \
         public interface"
    )]
    NoLibrary(String),
}

impl RustCrate {
    /// The crate whose package holds `target`, read with `cargo metadata --no-deps` (no network,
    /// no build). `Err` says why Chaos cannot test it: no manifest, or no library to import.
    pub fn of(target: &Path) -> Result<Self, CrateError> {
        let manifest = target
            .ancestors()
            .skip(1)
            .map(|d| d.join("Cargo.toml"))
            .find(|m| m.is_file())
            .ok_or_else(|| CrateError::NoManifest(target.to_path_buf()))?;
        let mut metadata = Command::new("cargo");
        metadata
            .args([
                "metadata",
                "--no-deps",
                "--format-version",
                "1",
                "--manifest-path",
            ])
            .arg(&manifest);
        let output = crate::process::probe::output(metadata, crate::process::probe::LIMIT)?;
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr);
            return Err(CrateError::Metadata {
                manifest,
                last_line: stderr.lines().last().unwrap_or("no output").to_string(),
            });
        }
        let metadata: Metadata = serde_json::from_slice(&output.stdout)?;
        Self::from_metadata(metadata, target)
    }

    fn from_metadata(metadata: Metadata, target: &Path) -> Result<Self, CrateError> {
        // The package whose directory is the nearest above the target.
        let package = metadata
            .packages
            .into_iter()
            .filter(|p| {
                p.manifest_path
                    .parent()
                    .is_some_and(|d| target.starts_with(d))
            })
            .max_by_key(|p| p.manifest_path.components().count())
            .ok_or_else(|| CrateError::NoPackage(target.to_path_buf()))?;
        let lib = package
            .targets
            .iter()
            .find(|t| {
                t.kind
                    .iter()
                    .any(|k| matches!(k.as_str(), "lib" | "rlib" | "proc-macro"))
            })
            .map(|t| t.name.replace('-', "_"))
            .ok_or_else(|| CrateError::NoLibrary(package.name.clone()))?;
        let proptest = package
            .dependencies
            .iter()
            .find(|d| d.name == "proptest")
            .map(|d| d.req.clone());
        let checkers = package
            .dependencies
            .iter()
            .filter(|d| CHECKERS.contains(&d.name.as_str()))
            .map(|d| Checker {
                name: d.name.clone(),
                req: d.req.clone(),
                path: d.path.clone(),
            })
            .collect();
        Ok(Self {
            lib,
            edition: package.edition,
            dir: package
                .manifest_path
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_default(),
            package: package.name,
            workspace_root: metadata.workspace_root,
            target_dir: metadata.target_directory,
            proptest,
            checkers,
        })
    }

    /// The proptest requirement a harness or a mutation copy adds: the project's own, else 1.
    pub fn proptest_requirement(&self) -> &str {
        self.proptest.as_deref().unwrap_or(PROPTEST)
    }

    /// Writes the harness crate in `dir` (the session's `chaos/` folder) with `files` as its
    /// test targets (`chaos_round_1.rs` is the target `chaos_round_1`), depending on proptest
    /// when their text `suite` uses it, and on each checker of the package's it names
    /// (`shuttle::`, `loom::`). Its lock starts as a copy of the project's, so the user's crate
    /// is built with the versions it is locked to.
    pub fn write_harness(&self, dir: &Path, files: &[String], suite: &str) -> std::io::Result<()> {
        use toml_edit::{value, ArrayOfTables, DocumentMut, InlineTable, Item, Table};
        let mut doc = DocumentMut::new();
        // Named for its session: cargo hashes a path package by its name and its path within
        // its workspace, which is the same for every session's harness; two sessions building
        // at once into the same target directory would otherwise overwrite each other's tests.
        let session: String = dir
            .parent()
            .and_then(|d| d.file_name())
            .map(|n| {
                n.to_string_lossy()
                    .trim_start_matches("session-")
                    .to_string()
            })
            .unwrap_or_default()
            .chars()
            .filter(char::is_ascii_alphanumeric)
            .take(8)
            .collect();
        let mut package = Table::new();
        package["name"] = value(format!("ralph-chaos-{session}").trim_end_matches('-'));
        package["version"] = value("0.0.0");
        package["edition"] = value(self.edition.as_str());
        package["publish"] = value(false);
        for auto in ["autobins", "autoexamples", "autotests", "autobenches"] {
            package[auto] = value(false);
        }
        doc["package"] = Item::Table(package);
        // A package needs a library or a binary; an empty one costs nothing.
        let mut lib = Table::new();
        lib["path"] = value("harness.rs");
        doc["lib"] = Item::Table(lib);
        let mut user = InlineTable::new();
        user.insert("path", self.dir.to_string_lossy().as_ref().into());
        let mut dependencies = Table::new();
        dependencies[self.package.as_str()] = value(user);
        doc["dependencies"] = Item::Table(dependencies);
        let mut dev = Table::new();
        if crate::chaos::property::uses_library(crate::runner::language::Language::Rust, suite) {
            dev["proptest"] = value(self.proptest_requirement());
        }
        for checker in &self.checkers {
            if !suite.contains(&format!("{}::", checker.name)) {
                continue;
            }
            dev[checker.name.as_str()] = match &checker.path {
                Some(path) => {
                    let mut at = InlineTable::new();
                    at.insert("path", path.to_string_lossy().as_ref().into());
                    value(at)
                }
                None => value(checker.req.as_str()),
            };
        }
        if !dev.is_empty() {
            doc["dev-dependencies"] = Item::Table(dev);
        }
        let mut tests = ArrayOfTables::new();
        for file in files {
            let mut test = Table::new();
            test["name"] = value(file.trim_end_matches(".rs"));
            test["path"] = value(file.as_str());
            tests.push(test);
        }
        doc["test"] = Item::ArrayOfTables(tests);
        // Its own workspace: cargo stops looking upwards for one (the user's may be above).
        doc["workspace"] = Item::Table(Table::new());
        let text = format!(
            "# Written by ralph-loop: runs Chaos's test files against `{}` without touching its manifest.\n{doc}",
            self.package
        );
        std::fs::create_dir_all(dir)?;
        crate::fsutil::write_atomic(&dir.join(HARNESS_MANIFEST), text.as_bytes())?;
        let harness = dir.join("harness.rs");
        if !harness.exists() {
            std::fs::write(harness, "")?;
        }
        let lock = dir.join("Cargo.lock");
        let theirs = self.workspace_root.join("Cargo.lock");
        if !lock.exists() && theirs.is_file() {
            std::fs::copy(theirs, lock)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metadata(lib_kind: &str) -> Metadata {
        serde_json::from_value(serde_json::json!({
            "packages": [
                {
                    "name": "my-stats",
                    "manifest_path": "/w/crates/stats/Cargo.toml",
                    "edition": "2021",
                    "targets": [{ "name": "my-stats", "kind": [lib_kind] }],
                    "dependencies": [
                        { "name": "proptest", "req": "^1.4", "kind": "dev" },
                        { "name": "shuttle", "req": "^0.8", "kind": "dev" }
                    ]
                },
                {
                    "name": "app",
                    "manifest_path": "/w/Cargo.toml",
                    "edition": "2024",
                    "targets": [{ "name": "app", "kind": ["bin"] }],
                    "dependencies": []
                }
            ],
            "workspace_root": "/w",
            "target_directory": "/w/target"
        }))
        .expect("metadata")
    }

    #[test]
    fn the_nearest_package_with_a_library_is_the_crate() {
        let krate =
            RustCrate::from_metadata(metadata("lib"), Path::new("/w/crates/stats/src/median.rs"))
                .expect("a crate");
        assert_eq!(krate.package, "my-stats");
        assert_eq!(krate.lib, "my_stats");
        assert_eq!(krate.dir, Path::new("/w/crates/stats"));
        assert_eq!(krate.target_dir, Path::new("/w/target"));
        assert_eq!(krate.proptest_requirement(), "^1.4");
        let binary = RustCrate::from_metadata(metadata("lib"), Path::new("/w/src/main.rs"));
        let err = binary.expect_err("no library");
        assert!(
            matches!(&err, CrateError::NoLibrary(name) if name == "app"),
            "{err}"
        );
        assert!(err.to_string().contains("`app` has no library target"));
    }

    /// The manifest of the harness `krate` writes in `dir` for the one file `file`, whose
    /// tests are `suite`.
    fn harness(krate: &RustCrate, dir: &Path, file: &str, suite: &str) -> String {
        krate
            .write_harness(dir, &[file.into()], suite)
            .expect("written");
        std::fs::read_to_string(dir.join("Cargo.toml")).expect("manifest")
    }

    #[test]
    fn the_harness_depends_on_the_crate_and_names_each_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("w");
        std::fs::create_dir_all(&root).expect("mkdir");
        std::fs::write(root.join("Cargo.lock"), "# lock\n").expect("lock");
        let mut krate =
            RustCrate::from_metadata(metadata("lib"), Path::new("/w/crates/stats/src/median.rs"))
                .expect("a crate");
        krate.workspace_root = root;
        let chaos = dir.path().join("chaos");
        let text = harness(
            &krate,
            &chaos,
            "chaos_round_1.rs",
            "use proptest::prelude::*;",
        );
        let doc: toml_edit::DocumentMut = text.parse().expect("valid TOML");
        assert_eq!(
            doc["dependencies"]["my-stats"]["path"].as_str(),
            Some("/w/crates/stats")
        );
        assert_eq!(doc["dev-dependencies"]["proptest"].as_str(), Some("^1.4"));
        assert!(
            doc["dev-dependencies"].get("shuttle").is_none(),
            "a checker only for a file that uses it"
        );
        assert_eq!(doc["test"][0]["name"].as_str(), Some("chaos_round_1"));
        assert!(doc["workspace"].is_table());
        assert_eq!(
            std::fs::read_to_string(chaos.join("Cargo.lock")).expect("lock"),
            "# lock\n"
        );
        let text = harness(
            &krate,
            &chaos,
            "chaos_round_2.rs",
            "shuttle::check_random(|| {}, 100);",
        );
        assert!(!text.contains("proptest"));
        let doc: toml_edit::DocumentMut = text.parse().expect("valid TOML");
        assert_eq!(
            doc["dev-dependencies"]["shuttle"].as_str(),
            Some("^0.8"),
            "the package's own requirement"
        );
    }
}
