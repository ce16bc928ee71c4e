//! The vault's attempts moved in and out: the JSON Lines form used by `vault export` and
//! `vault import` ([`write_jsonl`], [`read_jsonl`]), and [`import`], which adds what is new.

use std::path::Path;

use ralph_actors::ports::memory::{Embedder, GuardedTexts};
use ralph_actors::schema::attempt::FixAttempt;
use ralph_guard::Guard;

use super::error::{Result, VaultError};
use super::store::LanceStore;

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
/// many were added. Each attempt passes `guard` first, as text from outside does in a run: the
/// vault holds masked text only, and the embedder is given nothing else.
pub async fn import(
    store: &LanceStore,
    embedder: &dyn Embedder,
    attempts: Vec<FixAttempt>,
    guard: &Guard,
) -> Result<usize> {
    let known: std::collections::HashSet<String> =
        store.all().await?.into_iter().map(|a| a.id).collect();
    let fresh: Vec<FixAttempt> = attempts
        .into_iter()
        .filter(|a| !known.contains(&a.id))
        .map(|a| {
            ralph_actors::guard::seal_strings(guard, a)
                .map_err(|e| VaultError::Guard(format!("an attempt could not be masked: {e}")))
        })
        .collect::<Result<_>>()?;
    let mut added = 0;
    // Embedders take batches; LanceDB prefers a few large writes to many small ones.
    for chunk in fresh.chunks(256) {
        let texts = chunk.iter().map(|a| a.signature.clone()).collect();
        let texts =
            GuardedTexts::seal(guard, texts).map_err(|e| VaultError::Guard(e.to_string()))?;
        let vectors = embedder.embed(texts).await?;
        let rows: Vec<_> = chunk.iter().cloned().zip(vectors).collect();
        added += rows.len();
        store.add(rows).await?;
    }
    // An import is many attempts at once: into the table with them, not into the log.
    store.flush().await?;
    Ok(added)
}
