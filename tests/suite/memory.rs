//! The MemoryVault end to end: a repeated bug recalled and fixed sooner, concurrent writers,
//! a damaged vault, and the `vault` command.

use std::path::Path;

use ralph_actors::ports::memory::{Embedder, GuardedTexts};
use ralph_actors::schema::attempt::FixAttempt;
use ralph_loop::vault::embed::HashedNgrams;
use ralph_loop::vault::{vault_path, LanceStore};
use serde_json::Value;

use super::support::*;

/// The first run's second answer, and what a model shown it answers at once.
const NEEDLE: &str = "## WORKED";
/// A change that leaves the bug as it is: the tests fail the same way.
const COSMETIC_PY: &str = "def median(values):\n    \"\"\"The median of a non-empty list of numbers (sorted first).\"\"\"\n    ordered = sorted(values)\n    return ordered[len(ordered) // 2]\n";
const ORIGINAL_PY: &str = "def median(values):\n    \"\"\"The median of a non-empty list of numbers.\"\"\"\n    ordered = sorted(values)\n    return ordered[len(ordered) // 2]\n";

/// A model that answers from what it is shown: given a fix that worked, it applies it;
/// otherwise it makes a change that leaves the bug as it is.
fn reads_memory() -> Answer {
    if_prompt(
        NEEDLE,
        text(code("python", FIXED_PY)),
        text(code("python", COSMETIC_PY)),
    )
}

/// The model of a run that meets the bug for the first time: a useless first try, then the fix.
async fn learner() -> MockLlm {
    let llm = artisan_script([reads_memory(), text(code("python", FIXED_PY))]).await;
    llm
}

/// The model of a later run: it fixes the bug at once only when shown how.
async fn memory_reader() -> MockLlm {
    let llm = artisan_answers(reads_memory()).await;
    llm
}

fn run_json(dir: &Path, llm: &MockLlm) -> Value {
    let out = ralph(dir, llm)
        .args(["median.py", "--output", "json"])
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_repeated_bug_is_recalled_and_fixed_in_fewer_iterations() {
    let dir = fixture("py-median");
    let llm = learner().await;
    let first = run_json(dir.path(), &llm);
    assert_eq!(first["status"], "success", "{first:#}");
    assert_eq!(first["iterations"], 2);
    assert_eq!(first["memory"]["status"], "on");
    assert_eq!(first["memory"]["embedder"], "hashed-ngrams-v1/256");
    assert_eq!(first["memory"]["recorded"], 2);
    assert_eq!(
        first["memory"]["recalled"], 1,
        "iteration 2 recalls iteration 1's attempt"
    );

    // The same bug again.
    std::fs::write(dir.path().join("median.py"), ORIGINAL_PY).unwrap();
    let llm2 = memory_reader().await;
    let second = run_json(dir.path(), &llm2);
    assert_eq!(second["status"], "success", "{second:#}");
    assert_eq!(second["iterations"], 1);
    assert!(second["iterations"].as_u64() < first["iterations"].as_u64());
    assert_eq!(second["memory"]["recalls"], 1);
    assert_eq!(second["memory"]["recalled"], 2);

    // The Artisan saw the fix that worked first, with its diff, then the one that did not.
    let prompt = user_prompt(&llm2.requests_of("artisan").await[0]);
    let worked = prompt.find("## WORKED").expect("a fix that worked");
    let failed = prompt
        .find("## DID NOT WORK")
        .expect("the attempt that did not");
    assert!(worked < failed, "{prompt}");
    assert_has(
        &prompt,
        &[
            "similarity 1.00; 1 of 2 attempts at this failure worked",
            "+    return (ordered[mid - 1] + ordered[mid]) / 2",
        ],
    );
    // The hypothesis is the reply without its code block.
    let tried = prompt
        .find("What was tried: Here is the whole file.")
        .expect("a hypothesis");
    let end = prompt[tried..]
        .find("```diff")
        .map_or(prompt.len(), |e| tried + e);
    let shown = &prompt[tried..end];
    assert!(shown.contains("I fixed the median."), "{shown}");
    assert!(!shown.contains("def median"), "{shown}");

    // Three attempts on disk: `vault stats` counts them.
    let stats = vault_stats(dir.path());
    assert_eq!(stats["attempts"], 3, "{stats:#}");
    assert_eq!(stats["successful"], 2, "{stats:#}");
    assert_eq!(stats["by_language"]["python"], 3, "{stats:#}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_damaged_vault_is_a_warning_and_the_run_goes_on() {
    let dir = fixture("py-median");
    // Where the database directory should be, a file.
    std::fs::create_dir_all(dir.path().join(".ralph")).unwrap();
    std::fs::write(vault_path(dir.path()), "not a database").unwrap();
    let llm = artisan_writes("python", [FIXED_PY]).await;
    let report = run_json(dir.path(), &llm);
    assert_eq!(report["status"], "success", "{report:#}");
    assert_eq!(report["memory"]["status"], "unavailable");
    let reason = report["memory"]["reason"].as_str().unwrap();
    assert!(reason.contains("memory.db"), "{reason}");
    let warnings = report["warnings"].to_string();
    assert!(
        warnings.contains("the run goes on without memory"),
        "{warnings}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_corrupt_table_is_a_warning_and_the_run_goes_on() {
    let dir = fixture("py-median");
    let llm = artisan_writes("python", [FIXED_PY]).await;
    assert_eq!(run_json(dir.path(), &llm)["memory"]["status"], "on");

    // Every manifest of the table overwritten with garbage, as a crashed disk might leave it.
    let mut damaged = 0;
    let vault = vault_path(dir.path());
    assert!(vault.is_dir(), "{}", vault.display());
    for entry in files_below(&vault) {
        if entry.extension().is_some_and(|e| e == "manifest") {
            std::fs::write(&entry, b"\x00garbage").unwrap();
            damaged += 1;
        }
    }
    assert!(damaged > 0);
    std::fs::write(dir.path().join("median.py"), ORIGINAL_PY).unwrap();
    std::fs::remove_dir_all(session_dir(dir.path())).unwrap();
    let llm = artisan_writes("python", [FIXED_PY]).await;
    let report = run_json(dir.path(), &llm);
    assert_eq!(report["status"], "success", "{report:#}");
    assert_eq!(report["memory"]["status"], "unavailable", "{report:#}");

    // The store opens beside the run's first steps: a run that never needs it (its tests pass
    // at once) still reports that it did not open, in the report it leaves.
    std::fs::remove_dir_all(session_dir(dir.path())).unwrap();
    let llm = MockLlm::start().await;
    assert_eq!(run_json(dir.path(), &llm)["status"], "success");
    let report = read_json(&session_dir(dir.path()).join("report.json"));
    assert_eq!(report["memory"]["status"], "unavailable", "{report:#}");
    let warnings = report["warnings"].to_string();
    assert!(warnings.contains("without memory"), "{warnings}");
}

const WRITERS: usize = 8;
const WRITES: usize = 100;

fn attempt(writer: &str, n: usize) -> FixAttempt {
    FixAttempt {
        id: format!("{writer}-{n}"),
        project_id: "p".into(),
        signature: format!("LOGIC test_{n}: AssertionError: writer {writer} attempt {n}"),
        category: None,
        test_ids: vec![format!("t::{n}")],
        hypothesis: String::new(),
        diff: String::new(),
        success: n.is_multiple_of(2),
        timestamp_ms: n as i64,
        tokens: 1,
        cost_usd: 0.0,
        model: "m".into(),
        language: "python".into(),
    }
}

/// The body of each writer process of the test below, which runs this test binary once per
/// writer with `--ignored` and the writer's name and directory in the environment; on its own
/// it has nothing to write to.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "a child process of eight_processes_write_and_rewrite_at_once_and_lose_nothing"]
async fn vault_writer_process() {
    let dir = std::env::var("RALPH_VAULT_DIR").expect("run by the concurrency test");
    let writer = std::env::var("RALPH_VAULT_WRITER").expect("run by the concurrency test");
    let (store, embedder) = hashed_store(&dir).await;
    for n in 0..WRITES {
        let a = attempt(&writer, n);
        let texts =
            GuardedTexts::seal(&ralph_guard::Guard::off(), vec![a.signature.clone()]).unwrap();
        let vector = embedder.embed(texts).await.unwrap().remove(0);
        store.add(vec![(a, vector)]).await.unwrap();
        // One writer also rewrites the table now and then (what a prune or a compaction
        // does) while the others append: the write lock keeps every append out of a rewrite's
        // way, so none is dropped.
        if writer == "w0" && n % 20 == 19 {
            store.compact().await.unwrap();
        }
    }
}

#[test]
fn eight_processes_write_and_rewrite_at_once_and_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let uri = dir.path().join("memory.db");
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..WRITERS)
        .map(|w| {
            std::process::Command::new(&exe)
                .args([
                    "--exact",
                    "suite::memory::vault_writer_process",
                    "--ignored",
                    "--test-threads=1",
                ])
                .env("RALPH_VAULT_DIR", &uri)
                .env("RALPH_VAULT_WRITER", format!("w{w}"))
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        // A writer that failed shows what it said.
        let out = child.wait_with_output().unwrap();
        assert_exit(&out, 0);
        assert!(String::from_utf8_lossy(&out.stdout).contains("1 passed"));
    }
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let (store, embedder) = hashed_store(&uri.to_string_lossy()).await;
        let all = store.all().await.unwrap();
        let ids: std::collections::HashSet<_> = all.iter().map(|a| a.id.clone()).collect();
        let lost: Vec<String> = (0..WRITERS)
            .flat_map(|w| (0..WRITES).map(move |n| format!("w{w}-{n}")))
            .filter(|id| !ids.contains(id))
            .collect();
        assert!(lost.is_empty(), "{} writes lost: {lost:?}", lost.len());
        assert_eq!(all.len(), WRITERS * WRITES);
        assert_eq!(ids.len(), WRITERS * WRITES, "no attempt written twice");
        // Compaction merges the single-row files; nothing is lost.
        let stats = store.compact().await.unwrap();
        assert_eq!(stats.fragments_after, 1, "{stats:?}");
        assert_eq!(store.count().await.unwrap(), WRITERS * WRITES);
        // Recall, from the rows the compaction left in the snapshot, finds any one of them.
        let texts = GuardedTexts::seal(
            &ralph_guard::Guard::off(),
            vec![attempt("w5", 42).signature],
        )
        .unwrap();
        let query = embedder.embed(texts).await.unwrap().remove(0);
        let found = store.search(&query, 1, 0.0).await.unwrap();
        assert_eq!(found[0].attempt.id, "w5-42");
    });
}

#[tokio::test(flavor = "multi_thread")]
async fn vault_export_import_search_and_prune_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(
        root.join("ralph.config.yaml"),
        "memory:\n  max_patterns: 3\n",
    )
    .unwrap();
    let vault = |args: &[&str]| {
        let out = assert_cmd::Command::cargo_bin("ralph-loop")
            .unwrap()
            .current_dir(root)
            .env("HOME", root)
            .arg("vault")
            .args(args)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    // No vault yet.
    let (code, _, err) = vault(&["stats"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("no memory vault"), "{err}");

    let export = root.join("in.jsonl");
    let lines: Vec<String> = (0..6)
        .map(|n| serde_json::to_string(&attempt("cli", n)).unwrap())
        .collect();
    std::fs::write(&export, lines.join("\n")).unwrap();
    let (code, out, err) = vault(&["import", export.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("imported 6 attempts"), "{out}");
    // Importing again adds nothing.
    let (_, out, _) = vault(&["import", export.to_str().unwrap()]);
    assert!(out.contains("imported 0 attempts"), "{out}");

    let (code, out, err) = vault(&["search", "AssertionError: writer cli attempt 4", "--json"]);
    assert_eq!(code, Some(0), "{err}");
    let found: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(found[0]["attempt"]["id"], "cli-4", "{found:#}");
    assert!(found[0]["similarity"].as_f64().unwrap() > 0.85, "{found:#}");

    // Prune to memory.max_patterns: the three newest successful attempts stay.
    let (code, out, err) = vault(&["prune"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("pruned 3 attempts"), "{out}");
    let back = root.join("out.jsonl");
    vault(&["export", back.to_str().unwrap()]);
    let mut ids: Vec<String> = std::fs::read_to_string(&back)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<FixAttempt>(l).unwrap().id)
        .collect();
    ids.sort();
    assert_eq!(ids, ["cli-0", "cli-2", "cli-4"]);

    // A bad line is named.
    std::fs::write(&export, "{\"id\": 1}\n").unwrap();
    let (code, _, err) = vault(&["import", export.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("in.jsonl:1"), "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_fix_shared_by_one_project_is_recalled_by_another_anonymised() {
    let shared = tempfile::tempdir().unwrap();
    let config = format!(
        "memory:\n  global_sharing: true\n  global_uri: {}\n",
        shared.path().join("store").display()
    );
    let first = fixture("py-median");
    std::fs::write(first.path().join("ralph.config.yaml"), &config).unwrap();
    let llm = learner().await;
    assert_eq!(run_json(first.path(), &llm)["status"], "success");

    // What left the project: only the successful attempt, without its names or paths.
    let runtime_dir = shared.path().join("store");
    let embedder = HashedNgrams::default();
    let store = LanceStore::open(
        &runtime_dir.to_string_lossy(),
        ralph_loop::vault::SHARED_TABLE,
        &embedder.id(),
        embedder.dims(),
    )
    .await
    .unwrap();
    let exported = store.all().await.unwrap();
    assert_eq!(exported.len(), 1, "{exported:#?}");
    let a = &exported[0];
    assert!(a.success);
    assert_eq!(a.project_id, "shared");
    assert!(a.test_ids.is_empty());
    let public = format!("{}\n{}\n{}", a.signature, a.hypothesis, a.diff);
    for name in ["median", "ordered", "values", "test_", "median.py"] {
        assert!(!public.contains(name), "{name} left the project:\n{public}");
    }
    assert!(public.contains("sorted("), "{public}");

    // Another project with the same bug and no memory of its own.
    let second = fixture("py-median");
    std::fs::write(second.path().join("ralph.config.yaml"), &config).unwrap();
    let llm2 = memory_reader().await;
    let report = run_json(second.path(), &llm2);
    assert_eq!(report["status"], "success", "{report:#}");
    assert_eq!(report["iterations"], 1);
    let prompt = user_prompt(&llm2.requests_of("artisan").await[0]);
    assert_has(&prompt, &["; shared)", "anonymised patterns"]);
}
