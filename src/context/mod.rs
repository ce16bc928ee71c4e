//! The project's import graph, the first half of the Librarian's context engine.
//!
//! Layout:
//! - [`imports`]: the languages, tree-sitter extraction of import specifiers, and the exported
//!   signatures used to list files left out of a prompt.
//! - [`resolve`]: turning a specifier into a project file (relative paths, `tsconfig` aliases,
//!   Python packages, Rust module paths).
//! - [`cache`]: the per-file data saved under `.ralph/graph-cache.json`, so an unchanged tree is
//!   not parsed again.
//! - [`graph`]: [`ImportGraph`], the walk, the build and the distance queries.
//!
//! `docs/context.md` describes the rules and the limits.

pub mod cache;
pub(crate) mod graph;
pub(crate) mod imports;
pub(crate) mod pack;
pub(crate) mod resolve;

pub use graph::{BuildOptions, Distance, GraphError, GraphMemory, ImportGraph, Relation};
pub use imports::{exported_signatures, Language};
