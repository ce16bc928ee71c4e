//! `ralph-loop vault stats | search | export | import | prune`.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ralph_actors::ports::memory::{Embedder, GuardedTexts};
use ralph_guard::Guard;
use serde::Serialize;

use crate::cli::{VaultAction, VaultArgs};
use crate::config::{self, Config};
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

/// The vault a command works on, and what it needs beside it.
struct Opened {
    store: LanceStore,
    embedder: Arc<dyn Embedder>,
    path: PathBuf,
    config: Config,
    /// What reaches an embedder (a provider's, perhaps) passes LocalGuard first.
    guard: Guard,
}

pub fn run(args: VaultArgs) -> Result<i32> {
    let cwd =
        std::env::current_dir().map_err(|e| Error::io("cannot read the current directory", e))?;
    let (config, _) = config::load_discovered(args.config.as_deref(), &cwd)?;
    let root = detect::project_root(&cwd);
    let runtime = tokio::runtime::Runtime::new()
        .map_err(|e| Error::io("cannot start the async runtime", e))?;
    let guard = crate::guard::build(&config.local_guard)?;
    runtime.block_on(async move {
        let creates = matches!(args.action, VaultAction::Import { .. });
        let vault = open(&root, config, guard, creates).await?;
        let json = args.json;
        let text = match args.action {
            VaultAction::Stats => vault.stats(json).await?,
            VaultAction::Search { text, limit } => vault.search(text, limit, json).await?,
            VaultAction::Export { file } => {
                let all = vault.store.all().await?;
                write_jsonl(&file, &all)?;
                format!("exported {} attempts to {}\n", all.len(), file.display())
            }
            VaultAction::Import { file } => vault.import(&file).await?,
            VaultAction::Prune { max } => {
                let max = max.unwrap_or(vault.config.memory.max_patterns);
                let pruned = vault.store.prune(max).await?;
                let stats = vault.store.compact().await?;
                format!(
                    "pruned {pruned} attempts (keeping at most {max}); compacted {} data files into {}\n",
                    stats.fragments_before, stats.fragments_after
                )
            }
        };
        let _ = std::io::stdout().lock().write_all(text.as_bytes());
        Ok(0)
    })
}

/// The project's vault; only `import` (`creates`) may make one where there is none.
async fn open(root: &Path, config: Config, guard: Guard, creates: bool) -> Result<Opened> {
    let embedder = embedder(&config)?;
    let path = vault_path(root);
    if !path.is_dir() && !creates {
        return Err(Error::Usage(UsageError::Vault(format!(
            "no memory vault at {} yet: a run records its attempts there",
            path.display()
        ))));
    }
    std::fs::create_dir_all(&path)
        .map_err(|e| Error::io(format!("cannot create {}", path.display()), e))?;
    let uri = path.to_string_lossy().into_owned();
    let store = LanceStore::open(&uri, PROJECT_TABLE, &embedder.id(), embedder.dims()).await?;
    Ok(Opened {
        store,
        embedder,
        path,
        config,
        guard,
    })
}

/// `value` as pretty JSON and a newline.
fn json_text(value: &impl Serialize) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default() + "\n"
}

impl Opened {
    async fn stats(&self, json: bool) -> Result<String> {
        let all = self.store.all().await?;
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
            path: self.path.display().to_string(),
            table: self.store.location().1.to_string(),
            embedder: self.embedder.id(),
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
            fragments: self.store.fragments().await?,
            unwritten: self.store.backlog().await?.0,
            bytes: self.store.bytes().await?,
            max_patterns: self.config.memory.max_patterns,
        };
        Ok(match json {
            true => json_text(&stats),
            false => stats.lines(),
        })
    }

    async fn search(&self, text: String, limit: usize, json: bool) -> Result<String> {
        let texts = GuardedTexts::seal(&self.guard, vec![text])
            .map_err(|e| VaultError::Guard(e.to_string()))?;
        let vector = self
            .embedder
            .embed(texts)
            .await
            .map_err(VaultError::Embedding)?
            .pop()
            .ok_or_else(|| Error::Internal("the embedder returned no vector".into()))?;
        let found = self.store.search(&vector, limit, -1.0).await?;
        if json {
            return Ok(json_text(&found));
        }
        if found.is_empty() {
            return Ok("the vault is empty\n".into());
        }
        Ok(found
            .iter()
            .map(|s| {
                let a = &s.attempt;
                format!(
                    "{:.3}  {}  {}  {}  {}\n",
                    s.similarity,
                    if a.success { "worked " } else { "failed " },
                    date(a.timestamp_ms).unwrap_or_default(),
                    a.model,
                    a.signature.lines().next().unwrap_or_default()
                )
            })
            .collect())
    }

    async fn import(&self, file: &Path) -> Result<String> {
        let attempts =
            read_jsonl(file).map_err(|e| Error::Usage(UsageError::Vault(e.to_string())))?;
        let total = attempts.len();
        let added = import(&self.store, self.embedder.as_ref(), attempts, &self.guard).await?;
        Ok(format!(
            "imported {added} attempts from {} ({} already there)\n",
            file.display(),
            total - added
        ))
    }
}

impl Stats {
    /// `vault stats` for a person.
    fn lines(&self) -> String {
        let list = |m: &BTreeMap<String, usize>| {
            m.iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut out = format!(
            "vault      {} (table {})\nembedder   {}\n\
             attempts   {} of at most {} ({} worked, {:.0}%), {} distinct failures\n\
             languages  {}\nmodels     {}\n",
            self.path,
            self.table,
            self.embedder,
            self.attempts,
            self.max_patterns,
            self.successful,
            self.success_rate * 100.0,
            self.signatures,
            list(&self.by_language),
            list(&self.by_model),
        );
        if let (Some(o), Some(n)) = (&self.oldest, &self.newest) {
            out += &format!("recorded   {o} .. {n}\n");
        }
        out + &format!(
            "storage    {} bytes in {} data files, {} attempts in the log\n",
            self.bytes, self.fragments, self.unwritten
        )
    }
}
