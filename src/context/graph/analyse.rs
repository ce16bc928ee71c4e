//! Reading one changed file: an unchanged hash keeps what the cache knew; otherwise binary and
//! generated files are told apart from source, and source is searched for its imports.

use std::io::Read;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::walk::Found;
use crate::context::cache::{Entry, EntryKind};
use crate::context::imports::extract_imports;

/// A NUL byte within this many leading bytes marks a file as binary (git's rule).
const BINARY_PROBE_BYTES: usize = 8 * 1024;

/// Generated-file markers looked for in the first lines.
const GENERATED_MARKERS: &[&str] = &[
    "@generated",
    "DO NOT EDIT",
    "auto-generated",
    "Auto-generated",
];
const GENERATED_PROBE_LINES: usize = 5;

/// Reads a changed (or new) file: an unchanged hash keeps the cached entry; otherwise the file
/// is classified and, if it is source, parsed. `Err` is a warning for an unreadable file.
pub(super) fn analyse(
    found: &Found,
    cached: Option<&Entry>,
    parsed: &AtomicUsize,
) -> Result<Entry, String> {
    let mut bytes = Vec::with_capacity(usize::try_from(found.size).unwrap_or(0));
    std::fs::File::open(&found.abs)
        .and_then(|mut f| f.read_to_end(&mut bytes))
        .map_err(|e| format!("{}: {e}; left out of the graph", found.rel))?;
    let hash = xxhash_rust::xxh3::xxh3_64(&bytes);
    let size = bytes.len() as u64;
    if let Some(entry) = cached.filter(|e| e.hash == hash) {
        return Ok(Entry {
            size,
            mtime_ns: found.mtime_ns,
            ..entry.clone()
        });
    }
    let skipped = |reason: &str| Entry {
        size,
        mtime_ns: found.mtime_ns,
        hash,
        lines: 0,
        kind: EntryKind::Skipped {
            reason: reason.to_string(),
        },
    };
    let probe = &bytes[..bytes.len().min(BINARY_PROBE_BYTES)];
    if probe.contains(&0) {
        return Ok(skipped("binary"));
    }
    // Not UTF-8 after the NUL probe: a legacy encoding; read what can be read.
    let text = String::from_utf8_lossy(&bytes);
    let generated = text
        .lines()
        .take(GENERATED_PROBE_LINES)
        .any(|line| GENERATED_MARKERS.iter().any(|m| line.contains(m)));
    if generated {
        return Ok(skipped("generated"));
    }
    let lines = text.lines().count();
    let imports = extract_imports(found.language, &text);
    parsed.fetch_add(1, Ordering::Relaxed);
    Ok(Entry {
        size,
        mtime_ns: found.mtime_ns,
        hash,
        lines,
        kind: EntryKind::Source {
            language: found.language,
            imports,
        },
    })
}
