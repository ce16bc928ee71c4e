//! Interleavings for Chaos's concurrency tests, with each stack's own tool: fast-check's
//! scheduler for JavaScript and TypeScript (installed aside like its properties, `property`),
//! std's threads and a barrier for Rust (shuttle or loom when the crate depends on one), and for
//! Python a small harness of ralph-loop's, `ralph_interleave` (`ralph_interleave.py`): for
//! asyncio an event loop that takes ready tasks in a seeded random order, for threads a scheduler
//! that runs one thread at a time and passes the turn at each line to a thread drawn from the
//! seed; saved beside Chaos's file when
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
             assertion's message. For threads, the same harness: `from ralph_interleave import thread_interleavings`, \
             then `for seed, run in thread_interleavings(runs=100):` and `run(lambda: obj.call(), lambda: ...)`, which \
             runs each callable in a thread of its own, one at a time, the turn passing at each line to a thread drawn \
             from the seed"
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
        let run = |locked: bool| python(dir.path(), &["-c", &script(locked)]);
        let racy = run(false);
        assert!(
            racy.contains("1") && racy.contains("3"),
            "orders vary by seed: {racy}"
        );
        assert_eq!(run(true), "[3]", "a lock makes every order count");
    }

    /// The threads harness splits a read from its write on another line, by seed, and replays a
    /// seed's order; a lock still works under it; and coverage.py still sees the lines its
    /// threads run.
    #[test]
    fn the_python_harness_interleaves_threads_by_seed_under_coverage_too() {
        let dir = tempfile::tempdir().expect("dir");
        write_harness(dir.path()).expect("written");
        std::fs::write(
            dir.path().join("account.py"),
            "import threading\n\n\nclass Account:\n    def __init__(self, locked):\n        self.balance = 0\n        self.lock = threading.Lock() if locked else None\n\n    def deposit(self, amount):\n        if self.lock is None:\n            current = self.balance\n            self.balance = current + amount\n            return\n        with self.lock:\n            current = self.balance\n            self.balance = current + amount\n",
        )
        .expect("write");
        std::fs::write(
            dir.path().join("check.py"),
            "import sys\nfrom account import Account\nfrom ralph_interleave import thread_interleavings, replay_threads\n\n\n\
             def balances(locked):\n    seen = []\n    for seed, run in thread_interleavings(runs=40):\n        a = Account(locked)\n        run(lambda: a.deposit(5), lambda: a.deposit(7))\n        seen.append(a.balance)\n    return seen\n\n\n\
             def order(seed):\n    log = []\n    def worker(tag):\n        def go():\n            for _ in range(3):\n                log.append(tag)\n            return tag\n        return go\n    assert replay_threads(seed, worker('a'), worker('b')) == ['a', 'b']\n    return ''.join(log)\n\n\n\
             locked = 'locked' in sys.argv\nprint(sorted(set(balances(locked))), order(3) == order(3))\n",
        )
        .expect("write");
        let run = |args: &[&str]| python(dir.path(), args);
        let racy = run(&["check.py"]);
        assert!(
            racy.starts_with("[5, 7, 12]")
                || racy.starts_with("[7, 12]")
                || racy.starts_with("[5, 12]"),
            "some seeds lose an update: {racy}"
        );
        assert!(racy.ends_with("True"), "a seed replays its order: {racy}");
        assert_eq!(run(&["check.py", "locked"]), "[12] True", "a lock holds");
        // coverage.py (scripts/setup-deps installs it) still sees the lines the threads run.
        run(&["-m", "coverage", "run", "check.py"]);
        let report = run(&["-m", "coverage", "report", "-m", "--include=account.py"]);
        let account = report
            .lines()
            .find(|l| l.starts_with("account.py"))
            .unwrap_or_default()
            .to_string();
        // The racy branch ran in the harness's threads only: lines 11-13 are covered; the
        // locked branch (14-16) did not run.
        assert!(account.ends_with("14-16"), "{report}");
    }

    /// `python3 ARGS` in `dir`, which must succeed: what it printed.
    fn python(dir: &Path, args: &[&str]) -> String {
        let out = std::process::Command::new("python3")
            .args(args)
            .current_dir(dir)
            .stdin(std::process::Stdio::null())
            .output()
            .expect("python3 runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }
}
