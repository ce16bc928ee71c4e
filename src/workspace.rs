//! The project's files as the actors see them, read fresh from disk on every call.

use std::path::{Path, PathBuf};

use ralph_actors::workspace::{SourceFile, Workspace};

use crate::fsutil::write_atomic;

/// Files of one run. Paths are absolute; `root` is only used to show them relative.
#[derive(Debug, Clone)]
pub struct FsWorkspace {
    pub root: PathBuf,
    pub target: PathBuf,
    pub test_file: Option<PathBuf>,
    pub prompt_file: Option<PathBuf>,
    pub manifest: Option<PathBuf>,
}

impl FsWorkspace {
    /// `path` relative to the project root when it is inside it.
    pub fn display(&self, path: &Path) -> String {
        path.strip_prefix(&self.root)
            .unwrap_or(path)
            .display()
            .to_string()
    }

    async fn read(&self, path: &Path) -> Result<SourceFile, String> {
        let content = tokio::fs::read_to_string(path)
            .await
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        Ok(SourceFile {
            path: self.display(path),
            content,
        })
    }

    async fn read_opt(&self, path: Option<&PathBuf>) -> Result<Option<SourceFile>, String> {
        match path {
            Some(p) => self.read(p).await.map(Some),
            None => Ok(None),
        }
    }
}

#[async_trait::async_trait]
impl Workspace for FsWorkspace {
    async fn target(&self) -> Result<SourceFile, String> {
        self.read(&self.target).await
    }

    async fn write_target(&self, content: String) -> Result<(), String> {
        let path = self.target.clone();
        tokio::task::spawn_blocking(move || write_atomic(&path, content.as_bytes()))
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| format!("cannot write {}: {e}", self.target.display()))
    }

    async fn test_file(&self) -> Result<Option<SourceFile>, String> {
        self.read_opt(self.test_file.as_ref()).await
    }

    async fn prompt(&self) -> Result<Option<SourceFile>, String> {
        self.read_opt(self.prompt_file.as_ref()).await
    }

    async fn manifest(&self) -> Result<Option<SourceFile>, String> {
        self.read_opt(self.manifest.as_ref()).await
    }
}
