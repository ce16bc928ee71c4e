//! Opening the vault for a run: where it lives ([`vault_path`]), the project's id, the embedder
//! the config asks for, and the project's (and the shared) store ([`open`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use ralph_actors::ports::memory::Embedder;
use ralph_actors::roles::vault::VaultSettings;
use ralph_actors::supervisor::run::MemoryDeps;

use super::embed::{self, EmbedProvider, EmbedderSpec};
use super::error::{Result, VaultError};
use super::opening::Opening;
use super::store::LanceStore;
use crate::config::{Config, EmbedderKind};
use crate::fsutil::project_id;

/// The table prefix of this project's attempts.
pub const PROJECT_TABLE: &str = "attempts";
/// The table prefix of the shared, anonymised attempts.
pub const SHARED_TABLE: &str = "shared";

/// `<project>/.ralph/memory.db`.
pub fn vault_path(project: &Path) -> PathBuf {
    project.join(".ralph").join("memory.db")
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

/// Opens everything the MemoryVault actor needs for a run in `project`: the embedder at once
/// (a missing key is an error here), the stores in the background ([`Opening`]), so that the
/// run's first steps do not wait for LanceDB. Must be called on a Tokio runtime.
pub fn open(project: &Path, config: &Config) -> Result<(MemoryDeps, Opening)> {
    let embedder = embedder(config)?;
    let path = vault_path(project);
    std::fs::create_dir_all(&path).map_err(|source| VaultError::Io {
        path: path.clone(),
        source,
    })?;
    let uri = path.to_string_lossy().into_owned();
    let (id, dims) = (embedder.id(), embedder.dims());
    let store =
        Opening::start(async move { LanceStore::open(&uri, PROJECT_TABLE, &id, dims).await });
    let shared = match (
        config.memory.global_sharing,
        config.memory.global_uri.as_deref(),
    ) {
        (true, Some(dir)) => {
            std::fs::create_dir_all(dir).map_err(|source| VaultError::Io {
                path: PathBuf::from(dir),
                source,
            })?;
            let (dir, id, dims) = (dir.to_string(), embedder.id(), embedder.dims());
            let shared =
                Opening::start(
                    async move { LanceStore::open(&dir, SHARED_TABLE, &id, dims).await },
                );
            Some(Arc::new(shared) as Arc<dyn ralph_actors::ports::memory::VectorStore>)
        }
        _ => None,
    };
    let deps = MemoryDeps {
        embedder,
        store: Arc::new(store.clone()),
        shared,
        settings: VaultSettings {
            min_similarity: config.memory.similarity_threshold,
            max_recall: config.memory.max_recall,
        },
        project_id: project_id(project),
    };
    Ok((deps, store))
}
