//! What every target does with its bytes: text as the program would see it, pieces as a pipe or
//! a socket would deliver them, one current-thread runtime, and scratch files.

use std::borrow::Cow;
use std::cell::RefCell;
use std::path::{Path, PathBuf};

/// The byte that splits an input into the pieces a reader receives one by one (a chunk of a
/// reply, a read of a pipe): the fuzzer learns to place it, so every cut is tried.
pub const CUT: u8 = 0xFF;

/// The first byte picks among a target's parsers (modulo their count); the rest is the input.
pub fn pick(data: &[u8], choices: usize) -> (usize, &[u8]) {
    match data.split_first() {
        Some((first, rest)) => (usize::from(*first) % choices.max(1), rest),
        None => (0, data),
    }
}

/// The text a parser reads: the program reads outside text lossily, as here.
pub fn text(data: &[u8]) -> Cow<'_, str> {
    String::from_utf8_lossy(data)
}

/// `data` cut at every [`CUT`], the cut bytes dropped.
pub fn pieces(data: &[u8]) -> Vec<bytes::Bytes> {
    data.split(|b| *b == CUT)
        .map(bytes::Bytes::copy_from_slice)
        .collect()
}

thread_local! {
    static RUNTIME: RefCell<Option<tokio::runtime::Runtime>> = const { RefCell::new(None) };
    static SCRATCH: RefCell<Option<tempfile::TempDir>> = const { RefCell::new(None) };
}

/// Runs `work` to its end on this thread's runtime (built once: a run per input would cost
/// more than the parse).
pub fn block_on<F: std::future::Future>(work: F) -> F::Output {
    RUNTIME.with(|cell| {
        let mut slot = cell.borrow_mut();
        let runtime = slot.get_or_insert_with(|| {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap_or_else(|e| panic!("a runtime for the fuzz target: {e}"))
        });
        runtime.block_on(work)
    })
}

/// A folder kept for the process's life, for the targets whose parser reads a file.
pub fn scratch() -> PathBuf {
    SCRATCH.with(|cell| {
        let mut slot = cell.borrow_mut();
        slot.get_or_insert_with(|| {
            tempfile::Builder::new()
                .prefix("ralph-fuzz-")
                .tempdir()
                .unwrap_or_else(|e| panic!("a scratch folder for the fuzz target: {e}"))
        })
        .path()
        .to_path_buf()
    })
}

/// Writes `data` to `name` under [`scratch`] and returns its path.
pub fn file(name: &str, data: &[u8]) -> PathBuf {
    let path = scratch().join(name);
    if let Some(parent) = path.parent() {
        mkdir(parent);
    }
    std::fs::write(&path, data).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
    path
}

/// `dir` and its parents, or a panic: a scratch folder that cannot be made is the harness's
/// fault, not the parser's.
pub fn mkdir(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("making {}: {e}", dir.display()));
}

/// A parser's result, kept from the optimizer: what a target reads is read in full.
pub fn keep<T>(value: T) {
    std::hint::black_box(value);
}
