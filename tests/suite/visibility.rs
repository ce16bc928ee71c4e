//! The root crate is `pub(crate)` by default: a module is `pub` only when something outside the
//! library reaches it (the binaries, the integration tests, the benchmarks, or a path the docs
//! give), so the compiler reports what nothing uses everywhere else. Read as text: each
//! `pub mod NAME;` of `src/` must be named as `ralph_loop::PATH::NAME` outside the library.

use std::path::{Path, PathBuf};

use super::architecture::root;

/// Every `.rs` (or `.md`) file under `dir`.
fn files(dir: &Path, ext: &str) -> Vec<PathBuf> {
    super::support::files_below(dir)
        .into_iter()
        .filter(|path| path.extension().is_some_and(|e| e == ext))
        .collect()
}

/// The module path of a source file of `src/` (`views/tui/mod.rs`: `views::tui`); `None` for
/// the crate root and the binaries.
fn module_of(rel: &Path) -> Option<String> {
    let rel = rel.to_string_lossy();
    let rel = rel.strip_suffix(".rs")?;
    if matches!(rel, "lib" | "main") || rel.starts_with("bin/") {
        return Some(String::new()).filter(|_| rel == "lib");
    }
    let rel = rel.strip_suffix("/mod").unwrap_or(rel);
    Some(rel.replace('/', "::"))
}

/// The `pub mod` declarations of `sources` (module path, text) that `outside` never names.
fn unreached(sources: &[(String, String)], outside: &str) -> Vec<String> {
    let mut unreached = Vec::new();
    for (module, text) in sources {
        for line in text.lines() {
            let Some(name) = line
                .trim()
                .strip_prefix("pub mod ")
                .and_then(|rest| rest.strip_suffix(';'))
            else {
                continue;
            };
            let path = match module.is_empty() {
                true => format!("ralph_loop::{name}"),
                false => format!("ralph_loop::{module}::{name}"),
            };
            if !outside.contains(&path) {
                unreached.push(path);
            }
        }
    }
    unreached
}

#[test]
fn a_pub_module_is_one_reached_from_outside_the_library() {
    let root = root();
    let src = root.join("src");
    let sources: Vec<(String, String)> = files(&src, "rs")
        .into_iter()
        .filter_map(|path| {
            let module = module_of(path.strip_prefix(&src).ok()?)?;
            Some((module, std::fs::read_to_string(&path).ok()?))
        })
        .collect();
    let mut outside = String::new();
    let reach = [
        files(&root.join("tests"), "rs"),
        files(&root.join("benches"), "rs"),
        files(&src.join("bin"), "rs"),
        vec![src.join("main.rs"), root.join("README.md")],
        files(&root.join("docs"), "md"),
    ];
    for path in reach.iter().flatten() {
        // This file names no module it checks: it would reach them all.
        if !path.ends_with("tests/suite/visibility.rs") {
            outside.push_str(&std::fs::read_to_string(path).unwrap_or_default());
        }
    }
    let unreached = unreached(&sources, &outside);
    assert!(
        unreached.is_empty(),
        "pub modules nothing outside the library reaches (make them pub(crate), so the \
         compiler finds their dead code): {unreached:#?}"
    );
}

#[test]
fn the_check_finds_a_pub_module_nothing_outside_names() {
    let sources = vec![
        (
            String::new(),
            "pub mod app;\npub(crate) mod git;\n".to_string(),
        ),
        (
            "app".to_string(),
            "pub mod run;\npub mod hidden;\n".to_string(),
        ),
    ];
    let outside = "use ralph_loop::app::run;";
    assert_eq!(unreached(&sources, outside), ["ralph_loop::app::hidden"]);
    assert_eq!(
        module_of(Path::new("views/tui/mod.rs")).as_deref(),
        Some("views::tui")
    );
    assert_eq!(module_of(Path::new("lib.rs")).as_deref(), Some(""));
    assert_eq!(module_of(Path::new("bin/micro-agent.rs")), None);
}
