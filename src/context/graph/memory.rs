//! The graph's cache kept in memory for a run ([`GraphMemory`]), so that an iteration's build
//! neither reads `.ralph/graph-cache.bin` again nor waits for it to be written.
//!
//! Each build still walks the project and checks every file's size and time: the memory only
//! replaces the cache file's load, and its save moves off the caller's path
//! ([`GraphMemory::persist`], called once the caller has what it needed).

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::context::cache::CacheFile;

/// What the last build of one root left: the cache as it would be saved, and whether the copy
/// on disk is behind it.
#[derive(Debug, Default)]
pub struct GraphMemory {
    kept: Mutex<Option<Kept>>,
}

#[derive(Debug)]
struct Kept {
    root: PathBuf,
    cache: CacheFile,
    /// Where the cache is saved; `None` once the copy there is current.
    unsaved: Option<PathBuf>,
}

impl GraphMemory {
    /// An empty memory: the first build loads the cache file, as a build without memory does.
    pub fn new() -> GraphMemory {
        GraphMemory::default()
    }

    /// The cache the last build of `root` left, taken out (the build puts its own back). A
    /// save still owed is made first, so that taking never loses one.
    pub(super) fn take(&self, root: &Path) -> Option<CacheFile> {
        let mut kept = self.lock();
        if let Some(k) = kept.as_mut() {
            save(k);
        }
        kept.take().filter(|k| k.root == root).map(|k| k.cache)
    }

    /// Keeps `cache`, the build of `root` just made; `unsaved` names the file it is owed to.
    pub(super) fn keep(&self, root: PathBuf, cache: CacheFile, unsaved: Option<PathBuf>) {
        *self.lock() = Some(Kept {
            root,
            cache,
            unsaved,
        });
    }

    /// Writes the kept cache to `.ralph/` when the file there is behind it. A failure is a
    /// diagnostic, not an error: the next run then parses what changed again.
    pub fn persist(&self) {
        if let Some(k) = self.lock().as_mut() {
            save(k);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Kept>> {
        // A panic while saving leaves nothing half-done in memory: the data is still good.
        self.kept.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn save(kept: &mut Kept) {
    if let Some(path) = kept.unsaved.take() {
        if let Err(e) = kept.cache.save(&path) {
            tracing::warn!(
                "could not save the graph cache {}: {e}; the next run parses the project again",
                path.display()
            );
        }
    }
}
