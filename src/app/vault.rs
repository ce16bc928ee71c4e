//! `ralph-loop vault stats | search | export | import | prune`.

use std::collections::BTreeMap;
use std::io::Write;

use ralph_actors::ports::memory::GuardedTexts;
use serde::Serialize;

use crate::cli::{VaultAction, VaultArgs};
use crate::config;
use crate::error::{Error, Result, UsageError};
use crate::runner::detect;
use crate::vault::{
    embedder, import, read_jsonl, vault_path, write_jsonl, LanceStore, VaultError, PROJECT_TABLE,
};

/// What `vault stats` prints.
#[derive(Debug, Serialize)]
pub struct Stats {
    pub path: String,
    pub table: String,
    pub embedder: String,
    pub attempts: usize,
    pub successful: usize,
    pub success_rate: f64,
    /// Distinct failure signatures.
    pub signatures: usize,
    pub by_language: BTreeMap<String, usize>,
    pub by_model: BTreeMap<String, usize>,
    pub oldest: Option<String>,
    pub newest: Option<String>,
    /// Data files (each flush of the log adds one until compaction).
    pub fragments: usize,
    /// Attempts recorded in the log beside the table, not yet written into it.
    pub unwritten: usize,
    pub bytes: usize,
    pub max_patterns: usize,
}

fn date(ms: i64) -> Option<String> {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
}

pub fn run(args: VaultArgs) -> Result<i32> {
    let cwd =
        std::env::current_dir().map_err(|e| Error::io("cannot read the current directory", e))?;
    let (config, _) = config::load_discovered(args.config.as_deref(), &cwd)?;
    let root = detect::project_root(&cwd);
    let runtime = tokio::runtime::Runtime::new()
        .map_err(|e| Error::io("cannot start the async runtime", e))?;
    // What reaches an embedder (a provider's, perhaps) passes LocalGuard first.
    let guard = crate::guard::build(&config.local_guard)?;
    runtime.block_on(async move {
        let embedder = embedder(&config)?;
        let path = vault_path(&root);
        let exists = path.is_dir();
        if !exists && !matches!(args.action, VaultAction::Import { .. }) {
            return Err(Error::Usage(UsageError::Vault(format!(
                "no memory vault at {} yet: a run records its attempts there",
                path.display()
            ))));
        }
        std::fs::create_dir_all(&path)
            .map_err(|e| Error::io(format!("cannot create {}", path.display()), e))?;
        let uri = path.to_string_lossy().into_owned();
        let store = LanceStore::open(&uri, PROJECT_TABLE, &embedder.id(), embedder.dims())
            .await
            ?;
        let mut out = std::io::stdout().lock();
        let print = |out: &mut std::io::StdoutLock, text: String| {
            let _ = writeln!(out, "{text}");
        };
        match args.action {
            VaultAction::Stats => {
                let all = store.all().await?;
                let successful = all.iter().filter(|a| a.success).count();
                let mut by_language = BTreeMap::new();
                let mut by_model = BTreeMap::new();
                for a in &all {
                    *by_language.entry(a.language.clone()).or_insert(0) += 1;
                    *by_model.entry(a.model.clone()).or_insert(0) += 1;
                }
                let signatures = all
                    .iter()
                    .map(|a| a.signature.as_str())
                    .collect::<std::collections::HashSet<_>>()
                    .len();
                let stats = Stats {
                    path: path.display().to_string(),
                    table: store.location().1.to_string(),
                    embedder: embedder.id(),
                    attempts: all.len(),
                    successful,
                    success_rate: if all.is_empty() {
                        0.0
                    } else {
                        successful as f64 / all.len() as f64
                    },
                    signatures,
                    by_language,
                    by_model,
                    oldest: all.iter().map(|a| a.timestamp_ms).min().and_then(date),
                    newest: all.iter().map(|a| a.timestamp_ms).max().and_then(date),
                    fragments: store.fragments().await?,
                    unwritten: store.backlog().await?.0,
                    bytes: store.bytes().await?,
                    max_patterns: config.memory.max_patterns,
                };
                if args.json {
                    let _ = serde_json::to_writer_pretty(&mut out, &stats);
                    let _ = writeln!(out);
                } else {
                    print(&mut out, format!("vault      {} (table {})", stats.path, stats.table));
                    print(&mut out, format!("embedder   {}", stats.embedder));
                    print(
                        &mut out,
                        format!(
                            "attempts   {} of at most {} ({} worked, {:.0}%), {} distinct failures",
                            stats.attempts,
                            stats.max_patterns,
                            stats.successful,
                            stats.success_rate * 100.0,
                            stats.signatures
                        ),
                    );
                    let list = |m: &BTreeMap<String, usize>| {
                        m.iter().map(|(k, v)| format!("{k} {v}")).collect::<Vec<_>>().join(", ")
                    };
                    print(&mut out, format!("languages  {}", list(&stats.by_language)));
                    print(&mut out, format!("models     {}", list(&stats.by_model)));
                    if let (Some(o), Some(n)) = (&stats.oldest, &stats.newest) {
                        print(&mut out, format!("recorded   {o} .. {n}"));
                    }
                    print(
                        &mut out,
                        format!(
                            "storage    {} bytes in {} data files, {} attempts in the log",
                            stats.bytes, stats.fragments, stats.unwritten
                        ),
                    );
                }
            }
            VaultAction::Search { text, limit } => {
                let texts = GuardedTexts::seal(&guard, vec![text])
                    .map_err(|e| VaultError::Guard(e.to_string()))?;
                let vector = embedder
                    .embed(texts)
                    .await
                    .map_err(VaultError::Embedding)?
                    .pop()
                    .ok_or_else(|| Error::Internal("the embedder returned no vector".into()))?;
                let found = store.search(&vector, limit, -1.0).await?;
                if args.json {
                    let _ = serde_json::to_writer_pretty(&mut out, &found);
                    let _ = writeln!(out);
                } else if found.is_empty() {
                    print(&mut out, "the vault is empty".into());
                } else {
                    for s in found {
                        let a = &s.attempt;
                        print(
                            &mut out,
                            format!(
                                "{:.3}  {}  {}  {}  {}",
                                s.similarity,
                                if a.success { "worked " } else { "failed " },
                                date(a.timestamp_ms).unwrap_or_default(),
                                a.model,
                                a.signature.lines().next().unwrap_or_default()
                            ),
                        );
                    }
                }
            }
            VaultAction::Export { file } => {
                let all = store.all().await?;
                write_jsonl(&file, &all)?;
                print(&mut out, format!("exported {} attempts to {}", all.len(), file.display()));
            }
            VaultAction::Import { file } => {
                let attempts = read_jsonl(&file)
                    .map_err(|e| Error::Usage(UsageError::Vault(e.to_string())))?;
                let total = attempts.len();
                let added = import(&store, embedder.as_ref(), attempts, &guard)
                    .await
                    ?;
                print(
                    &mut out,
                    format!(
                        "imported {added} attempts from {} ({} already there)",
                        file.display(),
                        total - added
                    ),
                );
            }
            VaultAction::Prune { max } => {
                let max = max.unwrap_or(config.memory.max_patterns);
                let pruned = store.prune(max).await?;
                let stats = store.compact().await?;
                print(
                    &mut out,
                    format!(
                        "pruned {pruned} attempts (keeping at most {max}); compacted {} data files into {}",
                        stats.fragments_before, stats.fragments_after
                    ),
                );
            }
        }
        Ok(0)
    })
}
