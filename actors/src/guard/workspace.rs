//! The project's files through LocalGuard: read masked, the target written with its values put
//! back.

use std::sync::Arc;

use ralph_guard::Guard;

use crate::ports::workspace::{SourceFile, Workspace, WorkspaceError};
use crate::schema::context::ContextPack;

/// A [`Workspace`] whose reads are masked and whose writes are unmasked.
pub struct GuardedWorkspace {
    inner: Arc<dyn Workspace>,
    guard: Arc<Guard>,
}

impl GuardedWorkspace {
    pub fn new(inner: Arc<dyn Workspace>, guard: Arc<Guard>) -> Self {
        Self { inner, guard }
    }

    fn mask(&self, mut file: SourceFile) -> SourceFile {
        file.content = self.guard.mask(&file.content, Some(&file.path)).text;
        file
    }
}

#[async_trait::async_trait]
impl Workspace for GuardedWorkspace {
    async fn target(&self) -> Result<SourceFile, WorkspaceError> {
        self.inner.target().await.map(|f| self.mask(f))
    }

    async fn write_target(&self, content: String) -> Result<(), WorkspaceError> {
        // A placeholder that cannot be put back stops the write: the file keeps what it held.
        let real = self
            .guard
            .unmask(&content)
            .map_err(|e| WorkspaceError::Unrestorable(e.to_string()))?;
        self.inner.write_target(real).await
    }

    async fn test_file(&self) -> Result<Option<SourceFile>, WorkspaceError> {
        Ok(self.inner.test_file().await?.map(|f| self.mask(f)))
    }

    async fn prompt(&self) -> Result<Option<SourceFile>, WorkspaceError> {
        Ok(self.inner.prompt().await?.map(|f| self.mask(f)))
    }

    async fn manifest(&self) -> Result<Option<SourceFile>, WorkspaceError> {
        Ok(self.inner.manifest().await?.map(|f| self.mask(f)))
    }

    async fn related(
        &self,
        model: &str,
        budget_tokens: u32,
    ) -> Result<ContextPack, WorkspaceError> {
        let mut pack = self.inner.related(model, budget_tokens).await?;
        for file in &mut pack.related {
            file.content = self.guard.mask(&file.content, Some(&file.choice.path)).text;
        }
        for file in &mut pack.excluded {
            for signature in &mut file.signatures {
                *signature = self.guard.mask(signature, Some(&file.path)).text;
            }
        }
        for warning in &mut pack.warnings {
            *warning = self.guard.mask(warning, None).text;
        }
        Ok(pack)
    }
}
