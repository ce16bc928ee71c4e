//! [`ImportGraph`]: the project's source files and which imports which.
//!
//! - `import_graph`: the graph itself and its queries (imports, importers, distances);
//! - `build`: [`ImportGraph::build`], with the cache and the resolution of every specifier;
//! - `memory`: [`GraphMemory`], the cache kept in memory between the builds of a run;
//! - `walk`: finding the files, as the ignore files allow;
//! - `analyse`: reading one changed file (binary, generated or source, and its imports).

mod analyse;
mod build;
mod import_graph;
mod memory;
#[cfg(test)]
mod tests;
mod walk;

pub use build::{BuildOptions, GraphError};
pub use import_graph::{Distance, ImportGraph, Relation};
pub use memory::GraphMemory;
