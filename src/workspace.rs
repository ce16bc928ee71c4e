//! The project's files as the actors see them, read fresh from disk on every call.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use ralph_actors::ports::file_io::FromFileIo;
use ralph_actors::ports::workspace::{SourceFile, Workspace, WorkspaceError};
use ralph_actors::schema::context::ContextPack;

use crate::context::pack::{pack_counted, PackRequest};
use crate::context::{GraphMemory, ImportGraph};
use crate::providers::tokens::TiktokenCounter;

use crate::fsutil::write_atomic;

/// Files of one run. Paths are absolute; `root` is only used to show them relative.
#[derive(Debug, Clone)]
pub struct FsWorkspace {
    pub root: PathBuf,
    pub target: PathBuf,
    pub test_file: Option<PathBuf>,
    pub prompt_file: Option<PathBuf>,
    pub manifest: Option<PathBuf>,
    /// The import graph's cache from the last build of this run (the warm-up's, then each
    /// iteration's): a build reads `.ralph/graph-cache.bin` only when it is empty.
    pub graph: Arc<GraphMemory>,
}

impl FsWorkspace {
    /// `path` relative to the project root when it is inside it.
    pub fn display(&self, path: &Path) -> String {
        path.strip_prefix(&self.root)
            .unwrap_or(path)
            .display()
            .to_string()
    }

    async fn read(&self, path: &Path) -> Result<SourceFile, WorkspaceError> {
        let content = tokio::fs::read_to_string(path)
            .await
            .map_err(|e| WorkspaceError::read(path.display().to_string(), e))?;
        Ok(SourceFile {
            path: self.display(path),
            content,
        })
    }

    async fn read_opt(&self, path: Option<&PathBuf>) -> Result<Option<SourceFile>, WorkspaceError> {
        match path {
            Some(p) => self.read(p).await.map(Some),
            None => Ok(None),
        }
    }
}

#[async_trait::async_trait]
impl Workspace for FsWorkspace {
    async fn target(&self) -> Result<SourceFile, WorkspaceError> {
        self.read(&self.target).await
    }

    async fn write_target(&self, content: String) -> Result<(), WorkspaceError> {
        let path = self.target.clone();
        tokio::task::spawn_blocking(move || write_atomic(&path, content.as_bytes()))
            .await
            .map_err(|e| WorkspaceError::Internal(e.to_string()))?
            .map_err(|e| WorkspaceError::write(self.target.display().to_string(), e))
    }

    async fn test_file(&self) -> Result<Option<SourceFile>, WorkspaceError> {
        self.read_opt(self.test_file.as_ref()).await
    }

    /// A prompt file with YAML front matter (a spec) shows the models its body alone.
    async fn prompt(&self) -> Result<Option<SourceFile>, WorkspaceError> {
        let file = self.read_opt(self.prompt_file.as_ref()).await?;
        Ok(file.map(|f| SourceFile {
            content: crate::spec::body_of(&f.content).to_string(),
            path: f.path,
        }))
    }

    async fn manifest(&self) -> Result<Option<SourceFile>, WorkspaceError> {
        self.read_opt(self.manifest.as_ref()).await
    }

    async fn related(
        &self,
        model: &str,
        budget_tokens: u32,
    ) -> Result<ContextPack, WorkspaceError> {
        let (root, target, test_file) = (
            self.root.clone(),
            self.target.clone(),
            self.test_file.clone(),
        );
        let model = model.to_string();
        let memory = self.graph.clone();
        let (tx, rx) = tokio::sync::oneshot::channel();
        // Parsing, reading and counting are blocking work; the graph's cache, kept in memory
        // for the run, keeps a later iteration to the files that changed (usually the
        // target). The pack goes back first; the cache is saved under `.ralph/` after, off
        // the iteration's path (a run ends only once its blocking work has).
        tokio::task::spawn_blocking(move || {
            let pack = ImportGraph::build_kept(&root, &memory)
                .map_err(|e| WorkspaceError::Graph(e.to_string()))
                .map(|graph| {
                    let counter = TiktokenCounter::new();
                    let request = PackRequest {
                        target: &target,
                        test_file: test_file.as_deref(),
                        budget: budget_tokens,
                    };
                    pack_counted(&graph, &request, &|text| text.len() as u64, &|text| {
                        counter.count_text(&model, text)
                    })
                });
            // The caller may be gone (the run was cancelled): the cache is still worth saving.
            let _ = tx.send(pack);
            memory.persist();
        });
        rx.await
            .map_err(|_| WorkspaceError::Internal("the context's build stopped".into()))?
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use crate::context::cache::cache_path;
    use crate::context::pack::block;
    use crate::context::{BuildOptions, ImportGraph};

    const MODEL: &str = "openai/gpt-4.1";

    /// A Python package: `stats.py` imports `helpers.py`; the test imports `stats`.
    fn project() -> (tempfile::TempDir, FsWorkspace) {
        let dir = tempfile::tempdir().unwrap();
        let files = [
            (
                "stats.py",
                "from helpers import mean\n\ndef median(xs):\n    return mean(sorted(xs))\n",
            ),
            (
                "helpers.py",
                "def mean(xs):\n    return sum(xs) / len(xs)\n",
            ),
            (
                "test_stats.py",
                "from stats import median\n\ndef test_one():\n    assert median([1]) == 1\n",
            ),
        ];
        for (name, content) in files {
            std::fs::write(dir.path().join(name), content).unwrap();
        }
        let root = dir.path().to_path_buf();
        let ws = FsWorkspace {
            target: root.join("stats.py"),
            test_file: Some(root.join("test_stats.py")),
            prompt_file: None,
            manifest: None,
            root,
            graph: Arc::default(),
        };
        (dir, ws)
    }

    #[tokio::test]
    async fn related_context_is_counted_with_tiktoken_when_the_budget_decides_and_cached() {
        let (dir, ws) = project();
        let block_of = |path: &str, reason: &str| {
            let content = std::fs::read_to_string(dir.path().join(path)).unwrap();
            block(path, reason, "python", &content)
        };
        let blocks = [
            block_of("stats.py", "target"),
            block_of("test_stats.py", "test file"),
            block_of("helpers.py", "imported by target"),
        ];
        let bytes: usize = blocks.iter().map(String::len).sum();

        // Far below the budget: counted by the bound (bytes), the tokenizer left unbuilt.
        let pack = ws.related(MODEL, 10_000).await.expect("a pack");
        assert_eq!(pack.related.len(), 1);
        let helper = &pack.related[0];
        assert_eq!(helper.choice.path, "helpers.py");
        assert_eq!(helper.choice.reason, "imported by target");
        assert_eq!(
            helper.content,
            "def mean(xs):\n    return sum(xs) / len(xs)\n"
        );
        assert_eq!(pack.tokens as usize, bytes);

        // Over the budget by the bound: exactly what the model's tokenizer says of the blocks
        // as the prompt shows them.
        let tight = ws.related(MODEL, bytes as u32 - 1).await.expect("a pack");
        let counter = TiktokenCounter::new();
        let exact: Vec<u32> = blocks
            .iter()
            .map(|b| counter.count_text(MODEL, b) as u32)
            .collect();
        assert_eq!(tight.related.len(), 1);
        assert_eq!(tight.related[0].tokens, exact[2]);
        assert_eq!(tight.tokens, exact.iter().sum::<u32>());

        // The graph was saved under `.ralph/`, after the pack went back: the next run parses
        // nothing.
        ws.graph.persist();
        assert!(cache_path(dir.path()).is_file());
        let again =
            ImportGraph::build_with(dir.path(), &BuildOptions { use_cache: true }).expect("graph");
        assert_eq!(again.parsed_files(), 0);
        assert_eq!(ws.related(MODEL, 10_000).await.expect("a pack"), pack);
    }

    #[tokio::test]
    async fn related_context_is_an_error_without_a_project() {
        let (dir, mut ws) = project();
        ws.root = dir.path().join("gone");
        let err = ws.related(MODEL, 10_000).await.expect_err("no root");
        assert!(err.to_string().contains("gone"), "{err}");
    }
}
