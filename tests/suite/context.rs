//! The Librarian's context engine in a whole run: the target's imports reach the Artisan.

use serde_json::Value;

use super::regent::of_type;
use super::support::*;

const HELPER: &str = "def middle_pair(ordered):\n    \"\"\"The two middle values of a sorted even-length list.\"\"\"\n    mid = len(ordered) // 2\n    return ordered[mid - 1], ordered[mid]\n";

#[tokio::test(flavor = "multi_thread")]
async fn the_artisan_sees_the_helper_the_target_imports() {
    let dir = fixture("py-median");
    write(dir.path(), "helpers.py", HELPER);
    let median = std::fs::read_to_string(dir.path().join("median.py")).unwrap();
    write(
        dir.path(),
        "median.py",
        &format!("from helpers import middle_pair\n\n\n{median}"),
    );
    let llm = artisan_writes("python", [FIXED_PY]).await;

    let out = ralph(dir.path(), &llm)
        .args(["median.py", "--output", "jsonl"])
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    let events: Vec<Value> = json_lines(&String::from_utf8(out).unwrap());
    let gathered = of_type(&events, "context_gathered");
    assert_eq!(gathered.len(), 1, "one per iteration: {events:?}");
    assert_eq!(gathered[0]["iteration"], 1);
    assert_eq!(gathered[0]["included"][2]["path"], "helpers.py");
    assert_eq!(gathered[0]["included"][2]["relation"], "imported");

    let prompt = last_prompt_of(&llm, "artisan", 1).await;
    assert!(
        prompt.contains(&format!(
            "# Related files, nearest first\n\n## `helpers.py` (imported by target)\n```python\n{HELPER}\n```"
        )),
        "{prompt}"
    );
    // The test file imports the target too, but has its own section: it is not repeated.
    assert_eq!(prompt.matches("def test_odd_length").count(), 1, "{prompt}");

    let log = std::fs::read_to_string(session_dir(dir.path()).join("iterations.log")).unwrap();
    let first: Value = serde_json::from_str(log.lines().next().unwrap()).unwrap();
    let context = &first["context"];
    let included: Vec<(&str, &str)> = context["included"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["path"].as_str().unwrap(), c["reason"].as_str().unwrap()))
        .collect();
    assert_eq!(
        included,
        [
            ("median.py", "target"),
            ("test_median.py", "test file"),
            ("helpers.py", "imported by target"),
        ],
        "{context}"
    );
    assert_eq!(context["excluded"], 0);
    let (tokens, budget) = (
        context["tokens"].as_u64().unwrap(),
        context["budget"].as_u64().unwrap(),
    );
    assert!(tokens > 0 && tokens <= budget, "{context}");
}
