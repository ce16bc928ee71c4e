//! [`ImportGraph`]: the project's source files and which imports which.

use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::{Hash, Hasher};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use ignore::{WalkBuilder, WalkState};
use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::Direction;
use rayon::prelude::*;
use xxhash_rust::xxh3::Xxh3;

use super::cache::{cache_path, mtime_ns, CacheFile, Entry, EntryKind, Resolved};
use super::imports::{extract_imports, Language};
use super::resolve::{Layout, Resolver};

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

/// A file with more lines than this stays in the graph but is reported: it will crowd a prompt.
pub const LONG_FILE_LINES: usize = 10_000;

/// A NUL byte within this many leading bytes marks a file as binary (git's rule).
const BINARY_PROBE_BYTES: usize = 8 * 1024;

/// Generated-file markers looked for in the first lines.
const GENERATED_MARKERS: &[&str] = &[
    "@generated",
    "DO NOT EDIT",
    "auto-generated",
    "Auto-generated",
];
const GENERATED_PROBE_LINES: usize = 5;

/// Errors building the graph. Per-file problems (an unreadable file, a walk error) are not
/// errors: they become [`ImportGraph::warnings`] and the rest of the project is still graphed.
#[derive(Debug, thiserror::Error)]
pub enum GraphError {
    /// The root is not a readable directory.
    #[error("cannot build the import graph of {}: {source}", path.display())]
    Root {
        /// The root as given.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// How to build.
#[derive(Debug, Clone)]
pub struct BuildOptions {
    /// Read and write `<root>/.ralph/graph-cache.bin`. Off, every file is parsed and nothing
    /// is written.
    pub use_cache: bool,
}

impl Default for BuildOptions {
    fn default() -> BuildOptions {
        BuildOptions { use_cache: true }
    }
}

/// How a file found by [`ImportGraph::distances`] relates to the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Relation {
    /// The target imports it, directly or through a chain of imports.
    Imports,
    /// It imports the target, directly or through a chain (a test of the target).
    ImportedBy,
    /// Reachable only through a mix of directions: it imports something the target imports, or
    /// the like.
    Related,
}

/// One file's place relative to a target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Distance {
    /// Root-relative path.
    pub path: PathBuf,
    /// Fewest import edges between the target and this file, in either direction.
    pub distance: u32,
    /// The direction of a shortest path: forward when one exists, else backward, else mixed.
    pub relation: Relation,
}

#[derive(Debug, Clone)]
struct Node {
    path: PathBuf,
    language: Language,
}

/// The project's import graph: nodes are source files (TS/TSX/JS, Python, Rust), an edge A → B
/// means A imports B. Cycles are kept as they are. Paths are relative to the root.
#[derive(Debug)]
pub struct ImportGraph {
    root: PathBuf,
    graph: DiGraph<Node, ()>,
    index: HashMap<PathBuf, NodeIndex>,
    /// The fingerprint of the resolution inputs (see [`super::cache`]).
    key: u64,
    /// Whether the edges came from the cache instead of being resolved.
    edges_cached: bool,
    warnings: Vec<String>,
    parsed: usize,
}

/// A source file the walk found, before reading.
struct Found {
    rel: String,
    abs: PathBuf,
    size: u64,
    mtime_ns: u64,
    language: Language,
}

/// What the walk found.
#[derive(Default)]
struct Walked {
    sources: Vec<Found>,
    tsconfigs: Vec<PathBuf>,
    manifests: Vec<PathBuf>,
    warnings: Vec<String>,
}

impl ImportGraph {
    /// Builds the graph of the project at `root` with the cache on.
    pub fn build(root: &Path) -> Result<ImportGraph, GraphError> {
        ImportGraph::build_with(root, &BuildOptions::default())
    }

    /// Builds the graph of the project at `root`.
    pub fn build_with(root: &Path, options: &BuildOptions) -> Result<ImportGraph, GraphError> {
        let root = std::fs::canonicalize(root).map_err(|source| GraphError::Root {
            path: root.to_path_buf(),
            source,
        })?;
        if !root.is_dir() {
            return Err(GraphError::Root {
                path: root,
                source: std::io::Error::other("not a directory"),
            });
        }
        let mut walked = walk(&root);
        let mut warnings = std::mem::take(&mut walked.warnings);
        let cache_file = cache_path(&root);
        let mut old = if options.use_cache {
            CacheFile::load(&cache_file)
        } else {
            None
        };

        // Only files whose size or time changed are read; the rest keep their entries, moved
        // out of the old cache rather than cloned.
        let parsed = AtomicUsize::new(0);
        let (fresh, stale): (Vec<&Found>, Vec<&Found>) = walked.sources.iter().partition(|f| {
            old.as_ref()
                .and_then(|c| c.fresh(&f.rel, f.size, f.mtime_ns))
                .is_some()
        });
        let analysed: Vec<(&str, Result<Entry, String>)> = stale
            .par_iter()
            .map(|found| {
                let cached = old.as_ref().and_then(|c| c.entries.get(&found.rel));
                (found.rel.as_str(), analyse(found, cached, &parsed))
            })
            .collect();
        let mut changed = false;
        let mut entries = HashMap::with_capacity(walked.sources.len());
        for (rel, result) in analysed {
            match result {
                Ok(entry) => {
                    let same = old
                        .as_ref()
                        .and_then(|c| c.entries.get(rel))
                        .is_some_and(|e| *e == entry);
                    changed |= !same;
                    entries.insert(rel.to_string(), entry);
                }
                Err(warning) => warnings.push(warning),
            }
        }
        let mut previous = None;
        if let Some(old) = old.as_mut() {
            for found in fresh {
                if let Some(entry) = old.entries.remove(&found.rel) {
                    entries.insert(found.rel.clone(), entry);
                }
            }
            // What is left was deleted, or is now unreadable or ignored.
            changed |= old.entries.keys().any(|k| !entries.contains_key(k));
            previous = old.resolved.take();
        }

        let layout = Layout::load(&root, &walked.tsconfigs, &walked.manifests);
        let (graph, resolved) =
            ImportGraph::assemble(root.clone(), &entries, &layout, previous, &mut warnings);

        if options.use_cache && (old.is_none() || changed || resolved.is_some()) {
            let previous = resolved.unwrap_or_else(|| graph.resolved_snapshot());
            if let Err(e) = CacheFile::new(entries, Some(previous)).save(&cache_file) {
                warnings.push(format!(
                    "could not save the graph cache {}: {e}",
                    cache_file.display()
                ));
            }
        }
        Ok(ImportGraph {
            warnings,
            parsed: parsed.into_inner(),
            ..graph
        })
    }

    /// Builds the petgraph from the entries. The edges come from `previous` when its key matches
    /// this build's inputs; otherwise every specifier is resolved and the new edges are returned
    /// for the cache (`None` when `previous` was used as is).
    fn assemble(
        root: PathBuf,
        entries: &HashMap<String, Entry>,
        layout: &Layout,
        previous: Option<Resolved>,
        warnings: &mut Vec<String>,
    ) -> (ImportGraph, Option<Resolved>) {
        let mut sources: Vec<(&String, &Entry, Language, &Vec<String>)> = entries
            .iter()
            .filter_map(|(rel, entry)| match &entry.kind {
                EntryKind::Source { language, imports } => Some((rel, entry, *language, imports)),
                EntryKind::Skipped { .. } => None,
            })
            .collect();
        sources.sort_by(|a, b| a.0.cmp(b.0));

        let mut state = Xxh3::new();
        for (rel, entry, ..) in &sources {
            rel.hash(&mut state);
            entry.hash.hash(&mut state);
        }
        layout.fingerprint(&mut state);
        let key = state.finish();

        let mut graph = DiGraph::with_capacity(sources.len(), sources.len() * 3);
        let mut index = HashMap::with_capacity(sources.len());
        for (rel, entry, language, _) in &sources {
            let path = PathBuf::from(rel);
            if entry.lines > LONG_FILE_LINES {
                warnings.push(format!(
                    "{rel} has {} lines (over {LONG_FILE_LINES}); it is kept in the graph but will crowd a prompt",
                    entry.lines
                ));
            }
            let node = graph.add_node(Node {
                path: path.clone(),
                language: *language,
            });
            index.insert(path, node);
        }

        // A damaged cache that still decodes must not panic petgraph with a bad index.
        let reused = previous.filter(|p| {
            let n = sources.len();
            p.key == key
                && p.nodes.len() == n
                && p.edges
                    .iter()
                    .all(|&(a, b)| (a as usize) < n && (b as usize) < n)
        });
        let fresh = match reused {
            Some(previous) => {
                // Nodes were added in the same sorted order the snapshot was taken in.
                for &(from, to) in &previous.edges {
                    graph.add_edge(
                        NodeIndex::new(from as usize),
                        NodeIndex::new(to as usize),
                        (),
                    );
                }
                None
            }
            None => {
                let files: HashSet<PathBuf> = sources.iter().map(|s| PathBuf::from(s.0)).collect();
                let resolver = Resolver::new(&files, layout);
                // Each file's resolution is independent: resolve in parallel, then add the
                // edges in file order so the graph is the same on every run.
                let resolved: Vec<Vec<PathBuf>> = sources
                    .par_iter()
                    .map(|(rel, _, language, imports)| {
                        let path = Path::new(rel.as_str());
                        imports
                            .iter()
                            .filter_map(|spec| resolver.resolve(path, *language, spec))
                            .collect()
                    })
                    .collect();
                let mut edges = Vec::new();
                for (from, targets) in resolved.into_iter().enumerate() {
                    let from = NodeIndex::new(from);
                    let mut seen = HashSet::new();
                    for target in targets {
                        if let Some(&to) = index.get(&target) {
                            if seen.insert(to) {
                                graph.add_edge(from, to, ());
                                edges.push((from.index() as u32, to.index() as u32));
                            }
                        }
                    }
                }
                Some(Resolved {
                    key,
                    nodes: sources.iter().map(|s| s.0.clone()).collect(),
                    edges,
                })
            }
        };
        let graph = ImportGraph {
            root,
            graph,
            index,
            key,
            edges_cached: fresh.is_none(),
            warnings: Vec::new(),
            parsed: 0,
        };
        (graph, fresh)
    }

    /// The graph's edges in the cache's form, for a cache rewritten when only per-file data
    /// changed (a touched file with the same content).
    fn resolved_snapshot(&self) -> Resolved {
        Resolved {
            key: self.key,
            nodes: self
                .graph
                .node_weights()
                .map(|n| n.path.to_string_lossy().into_owned())
                .collect(),
            edges: self
                .graph
                .raw_edges()
                .iter()
                .map(|e| (e.source().index() as u32, e.target().index() as u32))
                .collect(),
        }
    }

    /// Whether this build took its edges from the cache (nothing that resolution reads had
    /// changed) instead of resolving every specifier.
    pub fn edges_cached(&self) -> bool {
        self.edges_cached
    }

    /// The project root (canonical).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// How many files the graph holds.
    pub fn len(&self) -> usize {
        self.graph.node_count()
    }

    /// Whether the graph holds no file.
    pub fn is_empty(&self) -> bool {
        self.graph.node_count() == 0
    }

    /// How many import edges the graph holds.
    pub fn edge_count(&self) -> usize {
        self.graph.edge_count()
    }

    /// The files in the graph, root-relative, sorted.
    pub fn files(&self) -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = self.graph.node_weights().map(|n| n.path.clone()).collect();
        files.sort();
        files
    }

    /// Whether `file` (root-relative, or absolute under the root) is in the graph.
    pub fn contains(&self, file: &Path) -> bool {
        self.node(file).is_some()
    }

    /// The language of `file`, if it is in the graph.
    pub fn language(&self, file: &Path) -> Option<Language> {
        self.node(file).map(|n| self.graph[n].language)
    }

    /// Warnings from the build: over-long files, unreadable files, walk errors, a cache that
    /// could not be saved.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// How many files this build read and searched for imports (0 on an unchanged tree with a
    /// cache); binary and generated files, and files whose hash was unchanged, are not counted.
    pub fn parsed_files(&self) -> usize {
        self.parsed
    }

    /// The files `file` imports, sorted; empty when it is not in the graph.
    pub fn imports_of(&self, file: &Path) -> Vec<PathBuf> {
        self.neighbours(file, Direction::Outgoing)
    }

    /// The files that import `file`, sorted; empty when it is not in the graph.
    pub fn importers_of(&self, file: &Path) -> Vec<PathBuf> {
        self.neighbours(file, Direction::Incoming)
    }

    /// Every file connected to `target` by imports in either direction, with its distance (the
    /// fewest edges, direction ignored) and the direction of a shortest path. Sorted by
    /// distance, then relation (imports first), then path; the target itself is not listed.
    pub fn distances(&self, target: &Path) -> Vec<Distance> {
        let Some(start) = self.node(target) else {
            return Vec::new();
        };
        let forward = self.bfs(start, &[Direction::Outgoing]);
        let backward = self.bfs(start, &[Direction::Incoming]);
        let any = self.bfs(start, &[Direction::Outgoing, Direction::Incoming]);
        let mut out: Vec<Distance> = any
            .into_iter()
            .filter(|(node, _)| *node != start)
            .map(|(node, distance)| {
                let relation = if forward.get(&node) == Some(&distance) {
                    Relation::Imports
                } else if backward.get(&node) == Some(&distance) {
                    Relation::ImportedBy
                } else {
                    Relation::Related
                };
                Distance {
                    path: self.graph[node].path.clone(),
                    distance,
                    relation,
                }
            })
            .collect();
        out.sort_by(|a, b| {
            (a.distance, a.relation, &a.path).cmp(&(b.distance, b.relation, &b.path))
        });
        out
    }

    fn bfs(&self, start: NodeIndex, directions: &[Direction]) -> HashMap<NodeIndex, u32> {
        let mut seen = HashMap::from([(start, 0u32)]);
        let mut queue = VecDeque::from([start]);
        while let Some(node) = queue.pop_front() {
            let next = seen.get(&node).copied().unwrap_or(0).saturating_add(1);
            for direction in directions {
                for neighbour in self.graph.neighbors_directed(node, *direction) {
                    if let std::collections::hash_map::Entry::Vacant(slot) = seen.entry(neighbour) {
                        slot.insert(next);
                        queue.push_back(neighbour);
                    }
                }
            }
        }
        seen
    }

    fn neighbours(&self, file: &Path, direction: Direction) -> Vec<PathBuf> {
        let Some(node) = self.node(file) else {
            return Vec::new();
        };
        let mut out: Vec<PathBuf> = self
            .graph
            .neighbors_directed(node, direction)
            .map(|n| self.graph[n].path.clone())
            .collect();
        out.sort();
        out
    }

    fn node(&self, file: &Path) -> Option<NodeIndex> {
        let rel = if file.is_absolute() {
            file.strip_prefix(&self.root).ok()?
        } else {
            file
        };
        let rel = super::resolve::normalize(rel)?;
        self.index.get(&rel).copied()
    }
}

/// Walks the project with the `ignore` crate's parallel walker: `.gitignore` (even outside a git
/// repository, since a fixture or a fresh project may have none), `.ignore`, hidden files.
fn walk(root: &Path) -> Walked {
    let walked = Mutex::new(Walked::default());
    WalkBuilder::new(root)
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
        })
        .build_parallel()
        .run(|| {
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

/// Reads a changed (or new) file: an unchanged hash keeps the cached entry; otherwise the file
/// is classified and, if it is source, parsed. `Err` is a warning for an unreadable file.
fn analyse(found: &Found, cached: Option<&Entry>, parsed: &AtomicUsize) -> Result<Entry, String> {
    let mut bytes = Vec::with_capacity(usize::try_from(found.size).unwrap_or(0));
    std::fs::File::open(&found.abs)
        .and_then(|mut f| f.read_to_end(&mut bytes))
        .map_err(|e| format!("{}: {e}; left out of the graph", found.rel))?;
    let hash = xxhash_rust::xxh3::xxh3_64(&bytes);
    let size = bytes.len() as u64;
    if let Some(entry) = cached.filter(|e| e.hash == hash) {
        return Ok(Entry {
            size,
            mtime_ns: found.mtime_ns,
            ..entry.clone()
        });
    }
    let skipped = |reason: &str| Entry {
        size,
        mtime_ns: found.mtime_ns,
        hash,
        lines: 0,
        kind: EntryKind::Skipped {
            reason: reason.to_string(),
        },
    };
    let probe = &bytes[..bytes.len().min(BINARY_PROBE_BYTES)];
    if probe.contains(&0) {
        return Ok(skipped("binary"));
    }
    // Not UTF-8 after the NUL probe: a legacy encoding; read what can be read.
    let text = String::from_utf8_lossy(&bytes);
    let generated = text
        .lines()
        .take(GENERATED_PROBE_LINES)
        .any(|line| GENERATED_MARKERS.iter().any(|m| line.contains(m)));
    if generated {
        return Ok(skipped("generated"));
    }
    let lines = text.lines().count();
    let imports = extract_imports(found.language, &text);
    parsed.fetch_add(1, Ordering::Relaxed);
    Ok(Entry {
        size,
        mtime_ns: found.mtime_ns,
        hash,
        lines,
        kind: EntryKind::Source {
            language: found.language,
            imports,
        },
    })
}

#[cfg(test)]
mod tests {
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
        let graph =
            ImportGraph::build_with(dir.path(), &BuildOptions { use_cache: false }).unwrap();
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
}
