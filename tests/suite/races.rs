//! Chaos's concurrency strategy for real: a lost update in an async counter, invisible to its
//! unit tests, is found by a Chaos file that runs the calls under 100 seeded interleavings,
//! kept by the Critic, and fixed by the Artisan; the fix passes every interleaving. Python runs
//! them with ralph-loop's asyncio harness (`ralph_interleave`, saved beside the file), and the
//! fix passes the default gates too; JavaScript with fast-check's scheduler (installed aside).
//! The models are scripted; pytest, asyncio, coverage.py, mutmut, node's runner and fast-check
//! run for real.

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
    let llm = MockLlm::start().await;
    llm.helpful()
        .script(
            "artisan",
            [
                // Adds, but reads and writes across an `await`: two adds at once lose one.
                text(code(
                    "python",
                    &BROKEN.replace("current - n", "current + n"),
                )),
                text(code("python", LOCKED)),
            ],
        )
        .script("chaos", [reply(INTERLEAVED), reply(CALM)])
        .always(
            "judge",
            text("KEEP: test_concurrent_adds_are_not_lost\nThe contract counts every addition."),
        );
    let out = ralph_with_chaos(dir.path(), &llm)
        .args(["counter.py", "--output", "json"])
        .output()
        .unwrap();
    let report: Value = report(dir.path());
    assert_eq!(out.status.code(), Some(0), "{report:#}");
    assert_eq!(report["status"], "success");
    let a = &report["adversarial"];
    // Round 1's interleavings fail on the racy fix, for real; the Critic keeps the finding,
    // and the locked fix passes every one of them.
    let findings = a["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 1, "{a:#}");
    let finding = &findings[0];
    assert!(finding["test"]
        .as_str()
        .unwrap()
        .contains("test_concurrent_adds_are_not_lost"));
    assert!(
        finding["message"]
            .as_str()
            .unwrap()
            .contains("an update was lost under seed"),
        "{finding}"
    );
    assert_eq!(finding["status"], "fixed");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("counter.py")).unwrap(),
        LOCKED
    );
    // The harness sits beside Chaos's files in the session folder, not in the project.
    let session = session_dir(dir.path());
    assert!(session.join("chaos/ralph_interleave.py").is_file());
    assert!(!dir.path().join("ralph_interleave.py").exists());
    // The Artisan's second prompt showed the failing interleaving.
    let artisan = llm.requests_of("artisan").await;
    let second = user_prompt(&artisan[1]);
    assert!(
        second.contains("test_concurrent_adds_are_not_lost"),
        "{second}"
    );
    // Chaos was told how to run interleavings in this stack.
    let first = user_prompt(&llm.requests_of("chaos").await[0]);
    assert!(
        first.contains("from ralph_interleave import interleavings"),
        "{first}"
    );
    // The default gates were measured on the locked fix, the interleaving file counting.
    let coverage = &a["coverage"];
    assert_eq!(coverage["pct"], 100.0, "{coverage:#}");
    assert!(a["mutation"]["tool"] == "mutmut", "{a:#}");
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
    let llm = MockLlm::start().await;
    llm.helpful()
        .script(
            "artisan",
            [
                text(code("javascript", &racy)),
                text(code("javascript", SERIAL_COUNTER_JS)),
            ],
        )
        .script("chaos", [js(SCHEDULED_JS), js(CALM_JS)])
        .always("replay", js(REPLAY_JS))
        .always(
            "judge",
            text("KEEP: concurrent adds are not lost\nEvery addition must count."),
        );
    let out = ralph_with_chaos(dir.path(), &llm)
        .args(["src/counter.js", "--output", "json"])
        .output()
        .unwrap();
    let report: Value = report(dir.path());
    assert_eq!(out.status.code(), Some(0), "{report:#}");
    // The property's finding, with fast-check's counterexample (the order of the scheduled
    // calls), and its replay by hand: both fail on the racy fix and pass on the serial one.
    let findings = report["adversarial"]["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 2, "{report:#}");
    let property = &findings[0];
    assert!(property["test"]
        .as_str()
        .unwrap()
        .contains("concurrent adds are not lost"));
    assert!(
        property["message"]
            .as_str()
            .unwrap()
            .contains("Counterexample"),
        "fast-check's own report of the interleaving: {property}"
    );
    assert!(findings[1]["test"]
        .as_str()
        .unwrap()
        .contains("both reads answered before either write"));
    assert!(
        findings.iter().all(|f| f["status"] == "fixed"),
        "{report:#}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("src/counter.js")).unwrap(),
        SERIAL_COUNTER_JS
    );
    let first = user_prompt(&llm.requests_of("chaos").await[0]);
    assert!(first.contains("fc.scheduler()"), "{first}");
}
