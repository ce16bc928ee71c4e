//! The layout of the three crates, checked on their sources: no module cycles at any level, each
//! top-level module using only those its `lib.rs` declares before it (the layer order; rustfmt's
//! `reorder_modules` is off so the order stays as written), no file over 600 lines of non-test
//! code, and crate docs that name every top-level module.
//!
//! Why a test of our own rather than `cargo-modules --acyclic`: that tool builds rust-analyzer
//! (tens of minutes on a cold machine, within CI's budget only with a cache) and follows macro
//! expansions we do not need. This reads the sources with `syn`, which the build has anyway.
//!
//! The rule, for every module: among its child modules (each with its whole subtree) and the
//! module's own code, the graph of uses must be acyclic. A path in code or a private `use` is a
//! use of the module where the item is defined; `pub use` re-exports are followed to the
//! defining module and are not uses of the module that re-exports. So a `mod.rs` is either a
//! facade (declarations, docs, re-exports) or its own items are not used by its children.
//! Paths inside macro invocations (`format!`, `matches!`) are not seen; test modules
//! (`#[cfg(test)]`) are left out.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

mod graph;
use graph::*;

const MAX_LINES: usize = 600;

pub(super) fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The `src` folders of the workspace's three crates.
fn crate_sources() -> [PathBuf; 3] {
    ["src", "actors/src", "guard/src"].map(|src| root().join(src))
}

#[test]
fn no_crate_has_a_module_cycle() {
    for src in crate_sources() {
        let krate = Crate::load(&src);
        assert!(
            krate.modules.len() > 20,
            "{}: too few modules read",
            src.display()
        );
        let found = cycles(&krate);
        assert!(
            found.is_empty(),
            "module cycles in {}:\n{}",
            src.display(),
            found.join("\n")
        );
    }
}

/// The documented layer order: each crate's `lib.rs` lists its top-level modules so that a module
/// uses only those before it.
#[test]
fn each_top_level_module_uses_only_those_before_it() {
    let mut found = Vec::new();
    for src in crate_sources() {
        let krate = Crate::load(&src);
        found.extend(
            layer_breaks(&krate, &lib_order(&src))
                .into_iter()
                .map(|b| format!("{}: {b}", src.display())),
        );
    }
    assert!(
        found.is_empty(),
        "uses against the layer order:\n{}",
        found.join("\n")
    );
}

/// The top-level modules `lib.rs` declares, in its order (test-only ones left out).
fn lib_order(src: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(src.join("lib.rs")).unwrap();
    syn::parse_file(&text)
        .unwrap()
        .items
        .into_iter()
        .filter_map(|item| match item {
            syn::Item::Mod(m) if !is_test_cfg(&m.attrs) => Some(m.ident.to_string()),
            _ => None,
        })
        .collect()
}

/// Each use of a top-level module by one declared before it in `order`.
fn layer_breaks(krate: &Crate, order: &[String]) -> Vec<String> {
    let place = |p: &ModPath| {
        p.first()
            .and_then(|top| order.iter().position(|m| m == top))
    };
    let mut breaks = BTreeSet::new();
    for (from, tos) in krate.edges() {
        for to in tos {
            if let (Some(a), Some(b)) = (place(&from), place(&to)) {
                if a < b {
                    breaks.insert(format!(
                        "{} (layer {}) uses {} (layer {})",
                        name(&from),
                        order[a],
                        name(&to),
                        order[b]
                    ));
                }
            }
        }
    }
    breaks.into_iter().collect()
}

#[test]
fn the_layer_check_finds_a_module_using_one_declared_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| std::fs::write(dir.path().join(name), text).unwrap();
    // `leaf` uses nothing; `top` uses `leaf` (fine) and `mid` (declared after it: a break).
    write("lib.rs", "pub mod leaf;\npub mod top;\npub mod mid;\n");
    write("leaf.rs", "pub struct L;\n");
    write("mid.rs", "pub struct M(pub crate::leaf::L);\n");
    write(
        "top.rs",
        "pub fn f(_: crate::leaf::L) -> Option<crate::mid::M> { None }\n",
    );
    let krate = Crate::load(dir.path());
    let order = lib_order(dir.path());
    assert_eq!(order, ["leaf", "top", "mid"]);
    assert_eq!(
        layer_breaks(&krate, &order),
        ["top (layer top) uses mid (layer mid)"]
    );
    let fixed = ["leaf", "mid", "top"].map(String::from);
    assert!(layer_breaks(&krate, &fixed).is_empty());
}

#[test]
fn the_check_finds_a_planted_cycle_and_accepts_a_facade() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    // `a` uses `b` through its parent's re-export, `b` uses `a`: a cycle. `c/mod.rs` is a
    // facade its children reach through: no cycle.
    write(
        "lib.rs",
        "pub mod a;\npub mod b;\npub mod c;\npub use b::B;\n",
    );
    write(
        "a.rs",
        "pub struct A;\npub fn f() -> crate::B { crate::B }\n",
    );
    write(
        "b.rs",
        "pub struct B;\nuse crate::a::A;\npub fn g(_: A) {}\n",
    );
    write(
        "c/mod.rs",
        "//! A facade.\npub mod x;\npub mod y;\npub use x::X;\n",
    );
    write("c/x.rs", "pub struct X;\n");
    write("c/y.rs", "pub fn h() -> super::X { super::X }\n");
    let found = cycles(&Crate::load(dir.path()));
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].starts_with("in crate: a, b"), "{}", found[0]);
    assert!(found[0].contains("a -> b  (a uses b)"), "{}", found[0]);
}

/// `build.rs` links the binaries without PIE on Linux, so the loader relocates nothing at start
/// (docs/performance.md): the ELF header's type is `ET_EXEC` (2), not `ET_DYN` (3).
#[test]
#[cfg(target_os = "linux")]
fn the_binaries_are_linked_position_dependent() {
    for bin in [
        env!("CARGO_BIN_EXE_ralph-loop"),
        env!("CARGO_BIN_EXE_micro-agent"),
    ] {
        let header = std::fs::read(bin).unwrap();
        assert_eq!(&header[..4], b"\x7fELF", "{bin}");
        let e_type = u16::from_le_bytes([header[16], header[17]]);
        assert_eq!(e_type, 2, "{bin} is not ET_EXEC");
    }
}

#[test]
fn no_file_has_over_600_lines_of_non_test_code() {
    let mut over = Vec::new();
    for src in crate_sources() {
        for file in rust_files(&src) {
            // Test-only files: the actors' test suite and `mod tests;` files.
            let text = std::fs::read_to_string(&file).unwrap();
            if file.components().any(|c| c.as_os_str() == "tests") || is_test_file(&file) {
                continue;
            }
            let lines = non_test_lines(&text);
            if lines > MAX_LINES {
                over.push(format!("{}: {lines}", file.display()));
            }
        }
    }
    assert!(
        over.is_empty(),
        "files over {MAX_LINES} lines of non-test code:\n{}",
        over.join("\n")
    );
}

#[test]
fn the_crate_docs_name_every_top_level_module() {
    for src in crate_sources() {
        let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap();
        let docs: String = lib
            .lines()
            .filter(|l| l.starts_with("//!"))
            .collect::<Vec<_>>()
            .join("\n");
        let parsed = syn::parse_file(&lib).unwrap();
        for item in parsed.items {
            if let syn::Item::Mod(m) = item {
                if is_test_cfg(&m.attrs) {
                    continue;
                }
                let name = m.ident.to_string();
                assert!(
                    docs.contains(&format!("[`{name}`]")),
                    "{}/lib.rs: the crate docs do not list module `{name}`",
                    src.display()
                );
            }
        }
    }
}

/// A `#[cfg(test)] mod tests;` file: declared test-only by its parent.
pub(super) fn is_test_file(file: &Path) -> bool {
    let Some(stem) = file.file_stem().and_then(|s| s.to_str()) else {
        return false;
    };
    let Some(dir) = file.parent() else {
        return false;
    };
    let parent = if stem == "mod" {
        return false;
    } else if dir.join("mod.rs").exists() {
        dir.join("mod.rs")
    } else {
        dir.with_extension("rs")
    };
    let Ok(text) = std::fs::read_to_string(parent) else {
        return false;
    };
    text.contains(&format!("#[cfg(test)]\nmod {stem};"))
        || text.contains(&format!("#[cfg(test)]\npub(crate) mod {stem};"))
}

/// Every `.rs` file under `dir` (which must be there), sorted.
pub(super) fn rust_files(dir: &Path) -> Vec<PathBuf> {
    assert!(dir.is_dir(), "{} is not a folder", dir.display());
    super::support::files_below(dir)
        .into_iter()
        .filter(|path| path.extension().is_some_and(|e| e == "rs"))
        .collect()
}

/// Lines of `text` outside `#[cfg(test)] mod ... { }` blocks, every line counted.
fn non_test_lines(text: &str) -> usize {
    let lines: Vec<&str> = text.lines().collect();
    let mut count = 0;
    let mut i = 0;
    while i < lines.len() {
        let next_is_mod = lines.get(i + 1).is_some_and(|l| {
            let l = l.trim_start();
            l.starts_with("mod ") || l.starts_with("pub(crate) mod ") || l.starts_with("pub mod ")
        });
        if lines[i].trim() == "#[cfg(test)]" && next_is_mod {
            if lines[i + 1].trim_end().ends_with(';') {
                i += 2;
                continue;
            }
            let mut depth = 0i64;
            let mut j = i + 1;
            let mut opened = false;
            while j < lines.len() {
                depth += lines[j].matches('{').count() as i64;
                depth -= lines[j].matches('}').count() as i64;
                opened |= lines[j].contains('{');
                j += 1;
                if opened && depth <= 0 {
                    break;
                }
            }
            i = j;
            continue;
        }
        count += 1;
        i += 1;
    }
    count
}
