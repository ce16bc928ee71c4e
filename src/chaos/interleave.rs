//! Interleavings for Chaos's concurrency tests, with each stack's own tool: fast-check's
//! scheduler for JavaScript and TypeScript (installed aside like its properties, `property`),
//! std's threads and a barrier for Rust (shuttle or loom when the crate depends on one), and for
//! Python asyncio a small harness of ralph-loop's, `ralph_interleave` (`ralph_interleave.py`):
//! an event loop that takes ready tasks in a seeded random order, saved beside Chaos's file when
//! the file imports it, and copied with it wherever the file goes (a mutation run's copy, the
//! project under `chaos.keep_tests`).

use std::path::Path;

use crate::runner::language::Language;

/// The Python harness's file name: its module is `ralph_interleave`.
pub const PY_MODULE: &str = "ralph_interleave.py";

/// The harness itself.
const PY_SOURCE: &str = include_str!("ralph_interleave.py");

/// How Chaos's prompt says to run interleavings in `language`.
pub fn setup(language: Language) -> &'static str {
    match language {
        Language::Python => {
            "for asyncio code, ralph-loop's harness, saved beside your file: `from ralph_interleave import interleavings`, \
             then `for seed, run in interleavings(runs=100):` and `run(coro1, coro2, ...)`, which drives the coroutines \
             together on an event loop that takes ready tasks in an order drawn from the seed; put the seed in each \
             assertion's message. For threads, start the calls together behind a `threading.Barrier`, many times over"
        }
        Language::JavaScript | Language::TypeScript => {
            "fast-check's scheduler: `await fc.assert(fc.asyncProperty(fc.scheduler(), async (s) => { ... }), \
             { numRuns: 100, seed: 42 })`, wrapping the asynchronous functions the target awaits (a store, a \
             client it is given) with `s.scheduleFunction(fn)` (or their promises with `s.schedule(p)`), starting \
             the target's calls together, then `await s.waitFor(Promise.all([...]))` before checking"
        }
        Language::Rust => {
            "threads started together behind a `std::sync::Barrier`, the whole check repeated many times; when the \
             crate itself depends on `shuttle` or `loom`, their checkers (`shuttle::check_random(|| ..., 100)`, \
             `loom::model(|| ...)`)"
        }
    }
}

/// Whether `suite` imports the Python harness.
pub fn uses_harness(language: Language, suite: &str) -> bool {
    language == Language::Python && suite.contains("ralph_interleave")
}

/// Writes the Python harness into `dir` unless a file of its name is there already.
pub fn write_harness(dir: &Path) -> std::io::Result<()> {
    let to = dir.join(PY_MODULE);
    if to.exists() {
        return Ok(());
    }
    std::fs::create_dir_all(dir)?;
    crate::fsutil::write_atomic(&to, PY_SOURCE.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The harness finds a lost update in an async counter that FIFO order may hide, and passes
    /// the same counter behind a lock: real Python, real asyncio.
    #[test]
    fn the_python_harness_interleaves_asyncio_tasks_by_seed() {
        let dir = tempfile::tempdir().expect("dir");
        write_harness(dir.path()).expect("written");
        write_harness(dir.path()).expect("kept as it is");
        let script = |locked: bool| {
            format!(
                "import asyncio\nfrom ralph_interleave import interleavings, replay\n\n\
                 class Counter:\n    def __init__(self):\n        self.value = 0\n        self.lock = asyncio.Lock()\n\
                 \n    async def increment(self):\n        {guard}\n            current = self.value\n            await asyncio.sleep(0)\n            self.value = current + 1\n\n\
                 seen = set()\nfor seed, run in interleavings(runs=40):\n    c = Counter()\n    run(c.increment(), c.increment(), c.increment())\n    seen.add(c.value)\n\
                 c = Counter()\nassert replay(7, c.increment()) == [None]\nprint(sorted(seen))\n",
                guard = if locked { "async with self.lock:" } else { "if True:" }
            )
        };
        let run = |locked: bool| {
            let out = std::process::Command::new("python3")
                .arg("-c")
                .arg(script(locked))
                .current_dir(dir.path())
                .stdin(std::process::Stdio::null())
                .output()
                .expect("python3 runs");
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            String::from_utf8_lossy(&out.stdout).trim().to_string()
        };
        let racy = run(false);
        assert!(
            racy.contains("1") && racy.contains("3"),
            "orders vary by seed: {racy}"
        );
        assert_eq!(run(true), "[3]", "a lock makes every order count");
    }
}
