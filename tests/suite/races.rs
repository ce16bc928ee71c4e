//! Chaos's concurrency strategy for real: a lost update in an async counter, invisible to its
//! unit tests, is found by a Chaos file that runs the calls under 100 seeded interleavings,
//! kept by the Critic, and fixed by the Artisan; the fix passes every interleaving. Python runs
//! them with ralph-loop's asyncio harness (`ralph_interleave`, saved beside the file), and the
//! fix passes the default gates too; JavaScript with fast-check's scheduler (installed aside);
//! Rust with threads started together behind a barrier, in the session's harness crate. The
//! models are scripted; pytest, asyncio, coverage.py, mutmut, node's runner, fast-check and
//! cargo run for real.

use serde_json::Value;

use super::support::*;

/// Subtracts: the unit test fails.
const BROKEN: &str = "import asyncio\n\n\nclass Counter:\n    \"\"\"Counts what concurrent tasks add.\"\"\"\n\n    def __init__(self):\n        self.value = 0\n\n    async def add(self, n):\n        current = self.value\n        await asyncio.sleep(0)\n        self.value = current - n\n";

/// The read and the write under one lock.
const LOCKED: &str = "import asyncio\n\n\nclass Counter:\n    \"\"\"Counts what concurrent tasks add.\"\"\"\n\n    def __init__(self):\n        self.value = 0\n        self._lock = asyncio.Lock()\n\n    async def add(self, n):\n        async with self._lock:\n            current = self.value\n            await asyncio.sleep(0)\n            self.value = current + n\n";

const UNIT_TEST: &str = "import asyncio\n\nfrom counter import Counter\n\n\ndef test_add():\n    c = Counter()\n    asyncio.run(c.add(2))\n    assert c.value == 2\n\n\ndef test_adds_in_turn():\n    c = Counter()\n    asyncio.run(c.add(2))\n    asyncio.run(c.add(3))\n    assert c.value == 5\n";

const INTERLEAVED: &str = "from ralph_interleave import interleavings\n\nfrom counter import Counter\n\n\ndef test_concurrent_adds_are_not_lost():\n    for seed, run in interleavings(runs=100):\n        c = Counter()\n        run(c.add(1), c.add(2), c.add(3))\n        assert c.value == 6, f\"an update was lost under seed {seed}: {c.value}\"\n";

const CALM: &str = "from counter import Counter\n\n\ndef test_starts_at_zero():\n    assert Counter().value == 0\n";

fn reply(body: &str) -> Answer {
    text(format!(
        "Two tasks adding at once may lose an update.\n\n```python\n{body}```\n"
    ))
}

/// Fixes `target` in `dir` with Chaos on, which must succeed: the report, and its findings,
/// asserted to be `n`.
fn fixed_with_findings(
    dir: &std::path::Path,
    llm: &MockLlm,
    target: &str,
    n: usize,
) -> (Value, Vec<Value>) {
    let out = ralph_with_chaos(dir, llm)
        .timeout(std::time::Duration::from_secs(300))
        .args([target, "--output", "json"])
        .output()
        .unwrap();
    let report = report(dir);
    assert_eq!(out.status.code(), Some(0), "{report:#}");
    let findings = report["adversarial"]["findings"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(findings.len(), n, "{report:#}");
    (report, findings)
}

/// Asserts `finding` was fixed, its test's name holds `test` and its message `message`.
#[track_caller]
fn assert_fixed_finding(finding: &Value, test: &str, message: &str) {
    assert!(
        finding["test"].as_str().unwrap().contains(test),
        "{finding}"
    );
    assert!(
        finding["message"].as_str().unwrap().contains(message),
        "{finding}"
    );
    assert_eq!(finding["status"], "fixed");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_lost_update_in_an_async_counter_is_found_kept_and_fixed() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "counter.py", BROKEN);
    write(dir.path(), "test_counter.py", UNIT_TEST);
    write(
        dir.path(),
        "pyproject.toml",
        "[project]\nname = \"counter\"\nversion = \"0.1.0\"\n\n[tool.pytest.ini_options]\npythonpath = [\".\"]\n",
    );
    let llm = artisan_script([
        // Adds, but reads and writes across an `await`: two adds at once lose one.
        text(code(
            "python",
            &BROKEN.replace("current - n", "current + n"),
        )),
        text(code("python", LOCKED)),
    ])
    .await;
    llm.script("chaos", [reply(INTERLEAVED), reply(CALM)])
        .always(
            "judge",
            text("KEEP: test_concurrent_adds_are_not_lost\nThe contract counts every addition."),
        );
    // Round 1's interleavings fail on the racy fix, for real; the Critic keeps the finding,
    // and the locked fix passes every one of them.
    let (report, findings) = fixed_with_findings(dir.path(), &llm, "counter.py", 1);
    assert_eq!(report["status"], "success");
    let a = &report["adversarial"];
    assert_fixed_finding(
        &findings[0],
        "test_concurrent_adds_are_not_lost",
        "an update was lost under seed",
    );
    assert_file(dir.path(), "counter.py", LOCKED);
    // The harness sits beside Chaos's files in the session folder, not in the project.
    let session = session_dir(dir.path());
    assert!(session.join("chaos/ralph_interleave.py").is_file());
    assert!(!dir.path().join("ralph_interleave.py").exists());
    // The Artisan's second prompt showed the failing interleaving.
    let second = prompt_to(&llm, "artisan", 1).await;
    assert!(
        second.contains("test_concurrent_adds_are_not_lost"),
        "{second}"
    );
    // Chaos was told how to run interleavings in this stack.
    let first = prompt_to(&llm, "chaos", 0).await;
    assert!(
        first.contains("from ralph_interleave import interleavings"),
        "{first}"
    );
    // The default gates were measured on the locked fix, the interleaving file counting.
    let coverage = &a["coverage"];
    assert_eq!(coverage["pct"], 100.0, "{coverage:#}");
    assert!(a["mutation"]["tool"] == "mutmut", "{a:#}");
    // Met: mutmut's copy of the project ran the interleaving file, so the harness went with it.
    let mutation = report["promise"]["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "mutation")
        .unwrap();
    assert_eq!(mutation["status"], "met", "{mutation}");
}

/// Reads and writes its store across an `await` each: adds at once lose updates. The first
/// version subtracts, so its unit test fails.
const STORE_COUNTER_JS: &str = "// A counter kept in a store that is read and written asynchronously.\nclass Counter {\n  constructor(store) {\n    this.store = store;\n  }\n\n  async add(n) {\n    const current = await this.store.read();\n    await this.store.write(current - n);\n  }\n}\n\nmodule.exports = { Counter };\n";

/// Each add waits for the one before it.
const SERIAL_COUNTER_JS: &str = "// A counter kept in a store that is read and written asynchronously.\nclass Counter {\n  constructor(store) {\n    this.store = store;\n    this.last = Promise.resolve();\n  }\n\n  add(n) {\n    const run = this.last.then(async () => {\n      const current = await this.store.read();\n      await this.store.write(current + n);\n    });\n    this.last = run.catch(() => {});\n    return run;\n  }\n}\n\nmodule.exports = { Counter };\n";

const COUNTER_TEST_JS: &str = "const test = require('node:test');\nconst assert = require('node:assert');\nconst { Counter } = require('../src/counter');\n\nfunction memory() {\n  let value = 0;\n  return { read: async () => value, write: async (v) => { value = v; }, get: () => value };\n}\n\ntest('adds', async () => {\n  const store = memory();\n  await new Counter(store).add(2);\n  assert.strictEqual(store.get(), 2);\n});\n\ntest('adds in turn', async () => {\n  const store = memory();\n  const c = new Counter(store);\n  await c.add(2);\n  await c.add(3);\n  assert.strictEqual(store.get(), 5);\n});\n";

const SCHEDULED_JS: &str = "const test = require('node:test');\nconst assert = require('node:assert');\nconst fc = require('fast-check');\nconst { Counter } = require('../../../src/counter');\n\ntest('concurrent adds are not lost', async () => {\n  await fc.assert(\n    fc.asyncProperty(fc.scheduler(), async (s) => {\n      let value = 0;\n      const store = {\n        read: s.scheduleFunction(async () => value),\n        write: s.scheduleFunction(async (v) => { value = v; }),\n      };\n      const counter = new Counter(store);\n      await s.waitFor(Promise.all([counter.add(1), counter.add(2)]));\n      assert.strictEqual(value, 3);\n    }),\n    { numRuns: 100, seed: 42 },\n  );\n});\n";

/// The replay Chaos's model is asked for (the counterexample is an order of scheduled calls):
/// the two reads answered only once both adds have asked, by hand.
const REPLAY_JS: &str = "test('regression: both reads answered before either write', async () => {\n  let value = 0;\n  const pending = [];\n  const store = {\n    read: () => new Promise((resolve) => pending.push(() => resolve(value))),\n    write: async (v) => { value = v; },\n  };\n  const counter = new Counter(store);\n  const done = Promise.all([counter.add(1), counter.add(2)]);\n  for (let i = 0; i < 10; i++) {\n    await new Promise((r) => setImmediate(r));\n    pending.splice(0).forEach((answer) => answer());\n  }\n  await done;\n  assert.strictEqual(value, 3);\n});\n";

const CALM_JS: &str = "const test = require('node:test');\nconst assert = require('node:assert');\nconst { Counter } = require('../../../src/counter');\n\ntest('a counter starts from its store', async () => {\n  let value = 7;\n  await new Counter({ read: async () => value, write: async (v) => { value = v; } }).add(0);\n  assert.strictEqual(value, 7);\n});\n";

#[tokio::test(flavor = "multi_thread")]
async fn fast_check_s_scheduler_finds_a_lost_update_in_javascript() {
    let dir = tempfile::tempdir().unwrap();
    for folder in ["src", "test"] {
        std::fs::create_dir(dir.path().join(folder)).unwrap();
    }
    write(dir.path(), "src/counter.js", STORE_COUNTER_JS);
    write(dir.path(), "test/counter.test.js", COUNTER_TEST_JS);
    write(
        dir.path(),
        "package.json",
        "{\n  \"name\": \"counter\",\n  \"private\": true,\n  \"scripts\": { \"test\": \"node --test test/\" }\n}\n",
    );
    let racy = STORE_COUNTER_JS.replace("current - n", "current + n");
    let js = |body: &str| {
        text(format!(
            "Adds at once may lose an update.\n\n```javascript\n{body}```\n"
        ))
    };
    let llm = artisan_writes("javascript", [&racy, SERIAL_COUNTER_JS]).await;
    llm.script("chaos", [js(SCHEDULED_JS), js(CALM_JS)])
        .always("replay", js(REPLAY_JS))
        .always(
            "judge",
            text("KEEP: concurrent adds are not lost\nEvery addition must count."),
        );
    // The property's finding, with fast-check's counterexample (the order of the scheduled
    // calls: fast-check's own report of the interleaving), and its replay by hand: both fail on
    // the racy fix and pass on the serial one.
    let (report, findings) = fixed_with_findings(dir.path(), &llm, "src/counter.js", 2);
    assert_fixed_finding(
        &findings[0],
        "concurrent adds are not lost",
        "Counterexample",
    );
    assert_has(
        findings[1]["test"].as_str().unwrap(),
        &["both reads answered before either write"],
    );
    assert!(
        findings.iter().all(|f| f["status"] == "fixed"),
        "{report:#}"
    );
    assert_file(dir.path(), "src/counter.js", SERIAL_COUNTER_JS);
    let first = prompt_to(&llm, "chaos", 0).await;
    assert!(first.contains("fc.scheduler()"), "{first}");
}

/// Reads, yields, then writes: threads adding at once lose updates. This version subtracts,
/// so its unit tests fail.
const THREADED_COUNTER_RS: &str = "//! A counter shared between threads.\n\nuse std::sync::atomic::{AtomicU64, Ordering};\n\n/// Counts what concurrent threads add.\n#[derive(Default)]\npub struct Counter {\n    value: AtomicU64,\n}\n\nimpl Counter {\n    pub fn new() -> Self {\n        Self::default()\n    }\n\n    pub fn value(&self) -> u64 {\n        self.value.load(Ordering::SeqCst)\n    }\n\n    pub fn add(&self, n: u64) {\n        let current = self.value.load(Ordering::SeqCst);\n        std::thread::yield_now();\n        self.value.store(current.wrapping_sub(n), Ordering::SeqCst);\n    }\n}\n";

const COUNTER_TEST_RS: &str = "use rs_counter::Counter;\n\n#[test]\nfn adds() {\n    let c = Counter::new();\n    c.add(2);\n    assert_eq!(c.value(), 2);\n}\n\n#[test]\nfn adds_in_turn() {\n    let c = Counter::new();\n    c.add(2);\n    c.add(3);\n    assert_eq!(c.value(), 5);\n}\n";

/// Chaos's file: four threads behind a barrier, the whole check a hundred times.
const BARRIER_RS: &str = "use std::sync::{Arc, Barrier};\nuse std::thread;\n\nuse rs_counter::Counter;\n\n#[test]\nfn concurrent_adds_are_not_lost() {\n    for run in 0..100 {\n        let counter = Arc::new(Counter::new());\n        let start = Arc::new(Barrier::new(4));\n        let threads: Vec<_> = (0..4)\n            .map(|_| {\n                let (counter, start) = (Arc::clone(&counter), Arc::clone(&start));\n                thread::spawn(move || {\n                    start.wait();\n                    for _ in 0..50 {\n                        counter.add(1);\n                    }\n                })\n            })\n            .collect();\n        for t in threads {\n            t.join().unwrap();\n        }\n        assert_eq!(counter.value(), 200, \"an update was lost in run {run}\");\n    }\n}\n";

const CALM_RS: &str = "use rs_counter::Counter;\n\n#[test]\nfn starts_at_zero() {\n    assert_eq!(Counter::new().value(), 0);\n}\n";

/// The same race in Rust, found by what Chaos's prompt asks for there: threads started together
/// behind a `std::sync::Barrier`, the check repeated; the file runs in the session's harness crate
/// against the user's crate, for real, and fails on the racy fix and passes on `fetch_add`.
#[tokio::test(flavor = "multi_thread")]
async fn threads_behind_a_barrier_find_a_lost_update_in_rust() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("src")).unwrap();
    std::fs::create_dir_all(dir.path().join("tests")).unwrap();
    write(
        dir.path(),
        "Cargo.toml",
        "[package]\nname = \"rs-counter\"\nversion = \"0.1.0\"\nedition = \"2021\"\npublish = false\n\n[dependencies]\n",
    );
    write(dir.path(), "src/lib.rs", THREADED_COUNTER_RS);
    write(dir.path(), "tests/counter.rs", COUNTER_TEST_RS);
    // Chaos's attacks are under test, not the gates (`gates.rs` measures those on Rust).
    without_gates(dir.path());
    let racy = THREADED_COUNTER_RS.replace("current.wrapping_sub(n)", "current + n");
    let fixed = THREADED_COUNTER_RS.replace(
        "let current = self.value.load(Ordering::SeqCst);\n        std::thread::yield_now();\n        self.value.store(current.wrapping_sub(n), Ordering::SeqCst);",
        "self.value.fetch_add(n, Ordering::SeqCst);",
    );
    assert_ne!(fixed, THREADED_COUNTER_RS);
    let rs = |body: &str| {
        text(format!(
            "Threads adding at once may lose an update.\n\n```rust\n{body}```\n"
        ))
    };
    let llm = artisan_writes("rust", [&racy, &fixed]).await;
    llm.script("chaos", [rs(BARRIER_RS), rs(CALM_RS)]).always(
        "judge",
        text("KEEP: concurrent_adds_are_not_lost\nEvery addition must count."),
    );
    let (_, findings) = fixed_with_findings(dir.path(), &llm, "src/lib.rs", 1);
    let finding = &findings[0];
    assert!(finding["test"]
        .as_str()
        .unwrap()
        .ends_with("concurrent_adds_are_not_lost"));
    assert_fixed_finding(
        finding,
        "concurrent_adds_are_not_lost",
        "an update was lost in run",
    );
    assert_file(dir.path(), "src/lib.rs", fixed);
    let first = prompt_to(&llm, "chaos", 0).await;
    assert!(first.contains("std::sync::Barrier"), "{first}");
    // The file ran in the harness crate, the project's manifest untouched.
    assert!(session_dir(dir.path()).join("chaos/Cargo.toml").is_file());
}
