//! Chaos's concurrency strategy for real: a lost update in an async counter, invisible to its
//! unit test, is found by a Chaos file that runs the calls under 100 seeded interleavings with
//! ralph-loop's asyncio harness (`ralph_interleave`, saved beside the file), kept by the Critic,
//! and fixed by the Artisan; the fix passes every interleaving and the default gates. The models
//! are scripted; pytest, asyncio, coverage.py and mutmut run for real.

use serde_json::Value;

use super::support::*;

/// Subtracts: the unit test fails.
const BROKEN: &str = "import asyncio\n\n\nclass Counter:\n    \"\"\"Counts what concurrent tasks add.\"\"\"\n\n    def __init__(self):\n        self.value = 0\n\n    async def add(self, n):\n        current = self.value\n        await asyncio.sleep(0)\n        self.value = current - n\n";

/// Adds, but reads and writes across an `await`: two tasks adding at once lose an update.
const RACY: &str = "import asyncio\n\n\nclass Counter:\n    \"\"\"Counts what concurrent tasks add.\"\"\"\n\n    def __init__(self):\n        self.value = 0\n\n    async def add(self, n):\n        current = self.value\n        await asyncio.sleep(0)\n        self.value = current + n\n";

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
            [text(code("python", RACY)), text(code("python", LOCKED))],
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
