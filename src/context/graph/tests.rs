//! The import graph built from fixtures and temporary trees, then queried: the tests cover the
//! walk, the reading, the cache and the queries together.

use std::path::{Path, PathBuf};

use super::build::LONG_FILE_LINES;
use super::*;

fn fixture(name: &str) -> ImportGraph {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/graph")
        .join(name);
    // The fixtures are checked in: no cache may be written into them.
    ImportGraph::build_with(&root, &BuildOptions { use_cache: false }).unwrap()
}

fn paths(list: &[&str]) -> Vec<PathBuf> {
    list.iter().map(PathBuf::from).collect()
}

fn edges(graph: &ImportGraph) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for file in graph.files() {
        for target in graph.imports_of(&file) {
            out.push((file.display().to_string(), target.display().to_string()));
        }
    }
    out
}

fn write(root: &Path, rel: &str, content: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

#[test]
fn typescript_aliases_reexports_dynamic_and_require() {
    let graph = fixture("ts");
    assert_eq!(graph.len(), 10);
    assert_eq!(
        edges(&graph),
        pairs(&[
            ("src/components/Card.tsx", "src/util.ts"),
            ("src/components/index.ts", "src/components/Button.tsx"),
            ("src/components/index.ts", "src/components/Card.tsx"),
            ("src/lazy.tsx", "src/components/index.ts"),
            ("src/main.test.ts", "src/main.ts"),
            ("src/main.ts", "lib/config.js"),
            ("src/main.ts", "src/components/index.ts"),
            ("src/main.ts", "src/lazy.tsx"),
            ("src/main.ts", "src/polyfill.js"),
            ("src/main.ts", "src/util.ts"),
            ("src/util.ts", "lib/helper.ts"),
        ])
    );
    assert!(graph.warnings().is_empty(), "{:?}", graph.warnings());
}

#[test]
fn python_relative_packages_and_submodules() {
    let graph = fixture("python");
    assert_eq!(
        edges(&graph),
        pairs(&[
            ("app/main.py", "app/config.py"),
            ("app/main.py", "app/models.py"),
            ("app/main.py", "app/services/billing.py"),
            ("app/main.py", "app/util.py"),
            ("app/models.py", "app/util.py"),
            ("app/services/__init__.py", "app/services/billing.py"),
            ("app/services/billing.py", "app/models.py"),
            ("app/services/billing.py", "app/util.py"),
            ("tests/test_main.py", "app/main.py"),
        ])
    );
}

#[test]
fn rust_mod_crate_super_self_and_a_cycle() {
    let graph = fixture("rust");
    assert_eq!(
        edges(&graph),
        pairs(&[
            ("src/a.rs", "src/b/c.rs"),
            ("src/b/c.rs", "src/a.rs"),
            ("src/b/mod.rs", "src/b/c.rs"),
            ("src/lib.rs", "src/a.rs"),
            ("src/lib.rs", "src/b/c.rs"),
            ("src/lib.rs", "src/b/mod.rs"),
            ("src/main.rs", "src/cli.rs"),
        ])
    );
    // The cycle a ↔ c is walked once each way, and queries still terminate.
    assert_eq!(
        graph.importers_of(Path::new("src/a.rs")),
        paths(&["src/b/c.rs", "src/lib.rs"])
    );
    let from_a = graph.distances(Path::new("src/a.rs"));
    assert_eq!(from_a.len(), 3);
}

#[test]
fn distances_rank_imports_importers_and_transitive_files() {
    let graph = fixture("ts");
    let abs = graph.root().join("src/main.ts");
    let got: Vec<(String, u32, Relation)> = graph
        .distances(&abs)
        .into_iter()
        .map(|d| (d.path.display().to_string(), d.distance, d.relation))
        .collect();
    let want = [
        ("lib/config.js", 1, Relation::Imports),
        ("src/components/index.ts", 1, Relation::Imports),
        ("src/lazy.tsx", 1, Relation::Imports),
        ("src/polyfill.js", 1, Relation::Imports),
        ("src/util.ts", 1, Relation::Imports),
        ("src/main.test.ts", 1, Relation::ImportedBy),
        ("lib/helper.ts", 2, Relation::Imports),
        ("src/components/Button.tsx", 2, Relation::Imports),
        ("src/components/Card.tsx", 2, Relation::Imports),
    ];
    let want: Vec<(String, u32, Relation)> = want
        .iter()
        .map(|(p, d, r)| (p.to_string(), *d, *r))
        .collect();
    assert_eq!(got, want);
    // From a leaf, everything comes back through importers, and a sibling is Related.
    let from_helper = graph.distances(Path::new("lib/helper.ts"));
    let util = from_helper
        .iter()
        .find(|d| d.path == Path::new("src/util.ts"))
        .unwrap();
    assert_eq!((util.distance, util.relation), (1, Relation::ImportedBy));
    let card = from_helper
        .iter()
        .find(|d| d.path == Path::new("src/components/Card.tsx"))
        .unwrap();
    assert_eq!((card.distance, card.relation), (2, Relation::ImportedBy));
    let config = from_helper
        .iter()
        .find(|d| d.path == Path::new("lib/config.js"))
        .unwrap();
    assert_eq!((config.distance, config.relation), (3, Relation::Related));
    assert!(graph.distances(Path::new("not/there.ts")).is_empty());
}

#[test]
fn ignored_binary_generated_and_hidden_files_stay_out() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, ".gitignore", "out/\n");
    write(
        root,
        "main.ts",
        "import './out/gen';\nimport './blob';\nimport './gen2';\n",
    );
    write(root, "out/gen.ts", "export const x = 1;\n");
    write(root, "node_modules/react/index.js", "module.exports = 1;\n");
    write(root, ".hidden/h.ts", "export {};\n");
    write(
        root,
        "gen2.ts",
        "// Code generated by protoc. DO NOT EDIT.\nexport {};\n",
    );
    write(root, "app.min.js", "var a=1;\n");
    std::fs::write(root.join("blob.js"), b"\x00\x01binary").unwrap();
    let graph = ImportGraph::build_with(root, &BuildOptions { use_cache: false }).unwrap();
    assert_eq!(graph.files(), paths(&["main.ts"]));
    assert_eq!(graph.edge_count(), 0);
}

#[test]
fn a_long_file_is_kept_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let long = "x = 1\n".repeat(LONG_FILE_LINES + 1);
    write(dir.path(), "big.py", &long);
    write(dir.path(), "small.py", "import big\n");
    let graph = ImportGraph::build_with(dir.path(), &BuildOptions { use_cache: false }).unwrap();
    assert_eq!(graph.files(), paths(&["big.py", "small.py"]));
    assert_eq!(graph.imports_of(Path::new("small.py")), paths(&["big.py"]));
    assert_eq!(graph.warnings().len(), 1);
    assert!(
        graph.warnings()[0].contains("big.py has 10001 lines"),
        "{:?}",
        graph.warnings()
    );

    // A warm build warns again (the Librarian shows it once per run), and the pack carries
    // it to the Librarian.
    ImportGraph::build(dir.path()).unwrap();
    let warm = ImportGraph::build(dir.path()).unwrap();
    assert!(warm.edges_cached());
    assert_eq!(warm.warnings(), graph.warnings());
    let request = crate::context::pack::PackRequest {
        target: &dir.path().join("small.py"),
        test_file: None,
        budget: 100_000,
    };
    let pack = crate::context::pack::pack(&warm, &request, &|t| t.len() as u64);
    assert_eq!(pack.warnings, graph.warnings());
}

#[test]
fn the_cache_skips_unchanged_files_and_follows_changes() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "a.ts",
        "import { b } from './b';\nimport { c } from './c';\n",
    );
    write(root, "b.ts", "export const b = 1;\n");
    write(
        root,
        "c.ts",
        "import { b } from './b';\nexport const c = b;\n",
    );

    let cold = ImportGraph::build(root).unwrap();
    assert_eq!(cold.parsed_files(), 3);
    assert!(root.join(".ralph/graph-cache.bin").is_file());

    let warm = ImportGraph::build(root).unwrap();
    assert_eq!(warm.parsed_files(), 0);
    assert!(!cold.edges_cached());
    assert!(warm.edges_cached());
    assert_eq!(edges(&warm), edges(&cold));

    // One edited file is the only one parsed again.
    write(root, "b.ts", "import './d';\nexport const b = 2;\n");
    let edited = ImportGraph::build(root).unwrap();
    assert_eq!(edited.parsed_files(), 1);
    assert!(!edited.edges_cached());
    assert!(edited.imports_of(Path::new("b.ts")).is_empty());

    // A new file is parsed alone, and an existing specifier now resolves to it.
    write(root, "d.ts", "export {};\n");
    let added = ImportGraph::build(root).unwrap();
    assert_eq!(added.parsed_files(), 1);
    assert_eq!(added.imports_of(Path::new("b.ts")), paths(&["d.ts"]));

    // A deleted file drops out with its edges.
    std::fs::remove_file(root.join("c.ts")).unwrap();
    let deleted = ImportGraph::build(root).unwrap();
    assert_eq!(deleted.parsed_files(), 0);
    assert_eq!(deleted.files(), paths(&["a.ts", "b.ts", "d.ts"]));
    assert_eq!(deleted.imports_of(Path::new("a.ts")), paths(&["b.ts"]));

    // A corrupt cache is rebuilt without an error.
    std::fs::write(root.join(".ralph/graph-cache.bin"), "{ truncated").unwrap();
    let rebuilt = ImportGraph::build(root).unwrap();
    assert_eq!(rebuilt.parsed_files(), 3);
    assert!(rebuilt.warnings().is_empty(), "{:?}", rebuilt.warnings());
    assert_eq!(ImportGraph::build(root).unwrap().parsed_files(), 0);
}

#[test]
fn a_tsconfig_edit_alone_resolves_again() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "tsconfig.base.json",
        r#"{ "compilerOptions": { "baseUrl": ".", "paths": { "@/*": ["src/*"] } } }"#,
    );
    write(
        root,
        "tsconfig.json",
        r#"{ "extends": "./tsconfig.base.json" }"#,
    );
    write(root, "src/a.ts", "import { b } from '@/b';\n");
    write(root, "src/b.ts", "export const b = 1;\n");
    write(root, "lib/b.ts", "export const b = 2;\n");

    let first = ImportGraph::build(root).unwrap();
    assert_eq!(
        first.imports_of(Path::new("src/a.ts")),
        paths(&["src/b.ts"])
    );
    assert!(ImportGraph::build(root).unwrap().edges_cached());

    // Only the extended config changes: no source is parsed, yet the alias moves.
    write(
        root,
        "tsconfig.base.json",
        r#"{ "compilerOptions": { "baseUrl": ".", "paths": { "@/*": ["lib/*"] } } }"#,
    );
    let moved = ImportGraph::build(root).unwrap();
    assert_eq!(moved.parsed_files(), 0);
    assert!(!moved.edges_cached());
    assert_eq!(
        moved.imports_of(Path::new("src/a.ts")),
        paths(&["lib/b.ts"])
    );
    let again = ImportGraph::build(root).unwrap();
    assert!(again.edges_cached());
    assert_eq!(edges(&again), edges(&moved));
}

#[test]
fn a_missing_root_is_an_error() {
    let err = ImportGraph::build(Path::new("/definitely/not/here")).unwrap_err();
    assert!(err.to_string().contains("/definitely/not/here"));
}

/// A run's builds share the cache in memory: the file under `.ralph/` is neither read again
/// nor written until `persist`, and a build still sees every change on disk.
#[test]
fn builds_kept_in_memory_read_changes_and_save_only_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "app.py", "import util\n");
    write(root, "util.py", "X = 1\n");
    let memory = GraphMemory::new();
    let cache = crate::context::cache::cache_path(root);

    let first = ImportGraph::build_kept(root, &memory).unwrap();
    assert_eq!(first.parsed_files(), 2);
    assert!(!cache.exists(), "saved before persist");
    memory.persist();
    assert!(cache.is_file());

    // The memory, not the file, serves the next build.
    std::fs::remove_file(&cache).unwrap();
    let again = ImportGraph::build_kept(root, &memory).unwrap();
    assert_eq!(again.parsed_files(), 0);
    assert_eq!(edges(&again), pairs(&[("app.py", "util.py")]));

    // A change on disk is seen, and owed to the file until persist.
    write(root, "util.py", "import app\nX = 2\n");
    let changed = ImportGraph::build_kept(root, &memory).unwrap();
    assert_eq!(changed.parsed_files(), 1);
    assert_eq!(
        edges(&changed),
        pairs(&[("app.py", "util.py"), ("util.py", "app.py")])
    );
    memory.persist();
    let on_disk = ImportGraph::build_with(root, &BuildOptions { use_cache: true }).unwrap();
    assert_eq!(on_disk.parsed_files(), 0);
    assert_eq!(edges(&on_disk), edges(&changed));
}

/// The walk on one thread finds what the parallel walk does, ignore files included.
#[test]
fn serial_and_parallel_walks_find_the_same_files() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, ".gitignore", "gen/\n");
    write(root, "a.py", "");
    write(root, "pkg/b.ts", "");
    write(root, "pkg/deep/c.rs", "");
    write(root, "gen/skip.py", "");
    write(root, "node_modules/x/index.js", "");
    write(root, "web/tsconfig.json", "{}");
    let found = |walker| {
        let walked = walk::walk(root, walker);
        let mut rels: Vec<String> = walked.sources.iter().map(|f| f.rel.clone()).collect();
        rels.sort();
        (rels, walked.tsconfigs)
    };
    let serial = found(walk::Walker::Serial);
    assert_eq!(serial.0, ["a.py", "pkg/b.ts", "pkg/deep/c.rs"]);
    assert_eq!(serial.1, paths(&["web/tsconfig.json"]));
    assert_eq!(serial, found(walk::Walker::Parallel));
}
