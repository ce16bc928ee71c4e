//! The MemoryVault's storage and embeddings: `.ralph/memory.db`, an embedded LanceDB database.
//!
//! - [`store`]: [`LanceStore`], attempts and vectors in one table per embedding model;
//! - [`embed`]: the offline hashed n-gram embedder and the provider embedders;
//! - this module: opening the vault for a run ([`open`]), the housekeeping after it
//!   ([`housekeep`]), and the JSON Lines form used by `vault export` / `vault import`.
//!
//! The actor that recalls and records is `ralph_actors::roles::vault::MemoryVault`; it sees these
//! only through the `VectorStore` and `Embedder` traits.

pub mod command;
pub mod embed;
pub mod store;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use ralph_actors::ports::memory::{Embedder, MemoryError};
use ralph_actors::roles::vault::VaultSettings;
use ralph_actors::schema::attempt::FixAttempt;
use ralph_actors::supervisor::run::MemoryDeps;

pub use store::LanceStore;

use crate::config::{Config, EmbedderKind};
use embed::{EmbedProvider, EmbedderSpec};

/// The table prefix of this project's attempts.
pub const PROJECT_TABLE: &str = "attempts";
/// The table prefix of the shared, anonymised attempts.
pub const SHARED_TABLE: &str = "shared";

/// Compaction runs after a run once the table has this many data files (each write adds one).
const COMPACT_FRAGMENTS: usize = 16;

#[derive(Debug, thiserror::Error)]
pub enum VaultError {
    #[error("cannot open the memory vault at {uri}: {source}")]
    Open {
        uri: String,
        #[source]
        source: lancedb::Error,
    },
    #[error("memory vault: {0}")]
    Lance(#[from] lancedb::Error),
    #[error("memory vault data: {0}")]
    Arrow(#[from] arrow::error::ArrowError),
    #[error("memory vault: {0}")]
    Schema(String),
    #[error(transparent)]
    Embed(#[from] embed::EmbedError),
    #[error("embedding: {0}")]
    Embedding(#[from] MemoryError),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}:{line}: not an exported attempt: {source}")]
    Import {
        path: PathBuf,
        line: usize,
        #[source]
        source: serde_json::Error,
    },
}

impl VaultError {
    /// This error as the core's memory port sees it: a store failure, and whether it may pass.
    pub fn into_port(self) -> MemoryError {
        match self {
            VaultError::Embedding(e) => e,
            other => {
                let transient = match &other {
                    VaultError::Lance(e) | VaultError::Open { source: e, .. } => {
                        crate::http::retry::Attempted::is_transient(e)
                    }
                    VaultError::Io { source, .. } => {
                        ralph_actors::ports::workspace::is_transient_io(source)
                    }
                    _ => false,
                };
                MemoryError::Store {
                    message: other.to_string(),
                    transient,
                }
            }
        }
    }
}

pub type Result<T, E = VaultError> = std::result::Result<T, E>;

/// `<project>/.ralph/memory.db`.
pub fn vault_path(project: &Path) -> PathBuf {
    project.join(".ralph").join("memory.db")
}

/// A stable id for the project: a hash of its canonical root, so attempts say where they came
/// from without naming the path.
pub fn project_id(project: &Path) -> String {
    let root = std::fs::canonicalize(project).unwrap_or_else(|_| project.to_path_buf());
    format!(
        "{:016x}",
        xxhash_rust::xxh3::xxh3_64(root.to_string_lossy().as_bytes())
    )
}

/// The embedder the config asks for; a provider's base URL and key variable default to those
/// under `providers:`.
pub fn embedder(config: &Config) -> Result<Arc<dyn Embedder>> {
    let e = &config.memory.embedder;
    let (provider, name) = match e.provider {
        EmbedderKind::Hashed => (EmbedProvider::Hashed, None),
        EmbedderKind::Openai => (EmbedProvider::OpenAi, Some("openai")),
        EmbedderKind::Ollama => (EmbedProvider::Ollama, Some("ollama")),
        EmbedderKind::Gemini => (EmbedProvider::Gemini, Some("gemini")),
    };
    let section = name.and_then(|n| config.providers.get(n));
    let spec = EmbedderSpec {
        provider,
        model: e.model.clone().unwrap_or_default(),
        base_url: e
            .base_url
            .clone()
            .or_else(|| section.and_then(|p| p.base_url.clone())),
        api_key_env: e
            .api_key_env
            .clone()
            .or_else(|| section.and_then(|p| p.api_key_env.clone())),
        dims: e.dims,
        timeout: Duration::from_secs(e.timeout_seconds),
    };
    Ok(embed::build(&spec)?)
}

/// Opens everything the MemoryVault actor needs for a run in `project`.
pub async fn open(project: &Path, config: &Config) -> Result<(MemoryDeps, Arc<LanceStore>)> {
    let embedder = embedder(config)?;
    let path = vault_path(project);
    std::fs::create_dir_all(&path).map_err(|source| VaultError::Io {
        path: path.clone(),
        source,
    })?;
    let uri = path.to_string_lossy().into_owned();
    let store =
        Arc::new(LanceStore::open(&uri, PROJECT_TABLE, &embedder.id(), embedder.dims()).await?);
    let shared = match (
        config.memory.global_sharing,
        config.memory.global_uri.as_deref(),
    ) {
        (true, Some(dir)) => {
            std::fs::create_dir_all(dir).map_err(|source| VaultError::Io {
                path: PathBuf::from(dir),
                source,
            })?;
            let shared =
                LanceStore::open(dir, SHARED_TABLE, &embedder.id(), embedder.dims()).await?;
            Some(Arc::new(shared) as Arc<dyn ralph_actors::ports::memory::VectorStore>)
        }
        _ => None,
    };
    let deps = MemoryDeps {
        embedder,
        store: store.clone(),
        shared,
        settings: VaultSettings {
            min_similarity: config.memory.similarity_threshold,
            max_recall: config.memory.max_recall,
        },
        project_id: project_id(project),
    };
    Ok((deps, store))
}

/// What [`housekeep`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Housekeeping {
    pub pruned: usize,
    pub compacted: bool,
}

/// After a run: prune to `max_patterns`, and compact once writes have left many small files.
pub async fn housekeep(store: &LanceStore, max_patterns: usize) -> Result<Housekeeping> {
    let pruned = store.prune(max_patterns).await?;
    let compacted = pruned > 0 || store.fragments().await? >= COMPACT_FRAGMENTS;
    if compacted {
        store.compact().await?;
    }
    Ok(Housekeeping { pruned, compacted })
}

/// Writes every attempt as one JSON object per line (no vectors: an import re-embeds with its
/// own model, so an export moves between embedders).
pub fn write_jsonl(path: &Path, attempts: &[FixAttempt]) -> Result<()> {
    let mut text = String::new();
    for a in attempts {
        let line = serde_json::to_string(a).map_err(|e| VaultError::Schema(e.to_string()))?;
        text.push_str(&line);
        text.push('\n');
    }
    crate::fsutil::write_atomic(path, text.as_bytes()).map_err(|source| VaultError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// Reads an export; a bad line is an error naming the file and line.
pub fn read_jsonl(path: &Path) -> Result<Vec<FixAttempt>> {
    let text = std::fs::read_to_string(path).map_err(|source| VaultError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l).map_err(|source| VaultError::Import {
                path: path.to_path_buf(),
                line: i + 1,
                source,
            })
        })
        .collect()
}

/// Adds `attempts` not already in `store` (by id), embedding their signatures. Returns how
/// many were added.
pub async fn import(
    store: &LanceStore,
    embedder: &dyn Embedder,
    attempts: Vec<FixAttempt>,
) -> Result<usize> {
    let known: std::collections::HashSet<String> =
        store.all().await?.into_iter().map(|a| a.id).collect();
    let fresh: Vec<FixAttempt> = attempts
        .into_iter()
        .filter(|a| !known.contains(&a.id))
        .collect();
    let mut added = 0;
    // Embedders take batches; LanceDB prefers a few large writes to many small ones.
    for chunk in fresh.chunks(256) {
        let vectors = embedder
            .embed(chunk.iter().map(|a| a.signature.clone()).collect())
            .await?;
        let rows: Vec<_> = chunk.iter().cloned().zip(vectors).collect();
        added += rows.len();
        store.add(rows).await?;
    }
    Ok(added)
}
