//! Building an [`ImportGraph`]: the walk's files, each read and parsed again only when it
//! changed, their imports resolved again only when something resolution reads changed, and the
//! per-file data and edges saved for the next build (see [`crate::context::cache`]).

use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicUsize;

use petgraph::graph::{DiGraph, NodeIndex};
use rayon::prelude::*;
use xxhash_rust::xxh3::Xxh3;

use super::analyse::analyse;
use super::import_graph::{ImportGraph, Node};
use super::memory::GraphMemory;
use super::walk::{walk, Found, Walker};
use crate::context::cache::{cache_path, CacheFile, Entry, EntryKind, Resolved};
use crate::context::imports::Language;
use crate::context::resolve::{Layout, Resolver};

/// A file with more lines than this stays in the graph but is reported: it will crowd a prompt.
pub const LONG_FILE_LINES: usize = 10_000;

/// Below this many files (as the last build saw them) the walk, the parsing and the
/// resolution stay on the calling thread: starting and joining threads cost more than the
/// work (a two-file project's build took 2.1 ms with them, docs/performance.md).
const PARALLEL_FROM: usize = 256;

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

impl ImportGraph {
    /// Builds the graph of the project at `root` with the cache on.
    pub fn build(root: &Path) -> Result<ImportGraph, GraphError> {
        ImportGraph::build_with(root, &BuildOptions::default())
    }

    /// Builds the graph of the project at `root`.
    pub fn build_with(root: &Path, options: &BuildOptions) -> Result<ImportGraph, GraphError> {
        ImportGraph::build_from(root, options, None)
    }

    /// Builds the graph of the project at `root` with the cache `memory` kept from the last
    /// build of the run; the cache file under `.ralph/` is read only when `memory` is empty,
    /// and written only by [`GraphMemory::persist`].
    pub fn build_kept(root: &Path, memory: &GraphMemory) -> Result<ImportGraph, GraphError> {
        ImportGraph::build_from(root, &BuildOptions::default(), Some(memory))
    }

    fn build_from(
        root: &Path,
        options: &BuildOptions,
        memory: Option<&GraphMemory>,
    ) -> Result<ImportGraph, GraphError> {
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
        let cache_file = cache_path(&root);
        let mut old = match memory.and_then(|m| m.take(&root)) {
            Some(kept) => Some(kept),
            None if options.use_cache => CacheFile::load(&cache_file),
            None => None,
        };
        // A project seen small last time is walked on this thread; one never seen, in parallel.
        let small = old
            .as_ref()
            .is_some_and(|c| c.entries.len() < PARALLEL_FROM);
        let mut walked = walk(
            &root,
            if small {
                Walker::Serial
            } else {
                Walker::Parallel
            },
        );
        let mut warnings = std::mem::take(&mut walked.warnings);

        // Only files whose size or time changed are read; the rest keep their entries, moved
        // out of the old cache rather than cloned.
        let parsed = AtomicUsize::new(0);
        let (fresh, stale): (Vec<&Found>, Vec<&Found>) = walked.sources.iter().partition(|f| {
            old.as_ref()
                .and_then(|c| c.fresh(&f.rel, f.size, f.mtime_ns))
                .is_some()
        });
        let analyse_one = |found: &Found| {
            let cached = old.as_ref().and_then(|c| c.entries.get(&found.rel));
            analyse(found, cached, &parsed)
        };
        let analysed: Vec<(&str, Result<Entry, String>)> = if stale.len() < PARALLEL_FROM {
            stale
                .iter()
                .map(|f| (f.rel.as_str(), analyse_one(f)))
                .collect()
        } else {
            stale
                .par_iter()
                .map(|f| (f.rel.as_str(), analyse_one(f)))
                .collect()
        };
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

        let save = options.use_cache && (old.is_none() || changed || resolved.is_some());
        match memory {
            Some(memory) => {
                let previous = resolved.unwrap_or_else(|| graph.resolved_snapshot());
                let cache = CacheFile::new(entries, Some(previous));
                memory.keep(graph.root.clone(), cache, save.then_some(cache_file));
            }
            None if save => {
                let previous = resolved.unwrap_or_else(|| graph.resolved_snapshot());
                if let Err(e) = CacheFile::new(entries, Some(previous)).save(&cache_file) {
                    warnings.push(format!(
                        "could not save the graph cache {}: {e}",
                        cache_file.display()
                    ));
                }
            }
            None => {}
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
                let resolve =
                    |(rel, _, language, imports): &(&String, &Entry, Language, &Vec<String>)| {
                        let path = Path::new(rel.as_str());
                        imports
                            .iter()
                            .filter_map(|spec| resolver.resolve(path, *language, spec))
                            .collect::<Vec<PathBuf>>()
                    };
                let resolved: Vec<Vec<PathBuf>> = if sources.len() < PARALLEL_FROM {
                    sources.iter().map(resolve).collect()
                } else {
                    sources.par_iter().map(resolve).collect()
                };
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
}
