//! [`ImportGraph`] itself and its queries: which files it holds, who imports whom, and how far
//! each file is from a target ([`ImportGraph::distances`]). It is built in [`super::build`].

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};

use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::Direction;

use crate::context::imports::Language;
use crate::context::resolve::normalize;

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

/// A file in the graph.
#[derive(Debug, Clone)]
pub(super) struct Node {
    pub(super) path: PathBuf,
    pub(super) language: Language,
}

/// The project's import graph: nodes are source files (TS/TSX/JS, Python, Rust), an edge A → B
/// means A imports B. Cycles are kept as they are. Paths are relative to the root.
#[derive(Debug)]
pub struct ImportGraph {
    pub(super) root: PathBuf,
    pub(super) graph: DiGraph<Node, ()>,
    pub(super) index: HashMap<PathBuf, NodeIndex>,
    /// The fingerprint of the resolution inputs (see [`crate::context::cache`]).
    pub(super) key: u64,
    /// Whether the edges came from the cache instead of being resolved.
    pub(super) edges_cached: bool,
    pub(super) warnings: Vec<String>,
    pub(super) parsed: usize,
}

impl ImportGraph {
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
        let rel = normalize(rel)?;
        self.index.get(&rel).copied()
    }
}
