//! Whole runs of the loop on real projects against the local model server.

use serde_json::Value;

use super::support::*;

#[tokio::test(flavor = "multi_thread")]
async fn python_fixed_in_two_iterations() {
    let dir = fixture("py-median");
    let llm = artisan_writes("python", [HALF_FIXED_PY, FIXED_PY]).await;

    ralph(dir.path(), &llm)
        .args(["median.py", "--output", "json"])
        .assert()
        .code(0);

    assert_file(dir.path(), "median.py", FIXED_PY);
    let report = report(dir.path());
    assert_eq!(report["status"], "success");
    assert_eq!(report["exit_code"], 0);
    assert_eq!(report["iterations"], 2);
    assert_eq!(report["tests_before"]["failed"], 2);
    assert_eq!(report["tests_after"]["failed"], 0);
    assert_eq!(report["tests_after"]["passed"], 3);
    for key in [
        "reason",
        "duration_ms",
        "cost_usd",
        "cost_by_role",
        "cost_by_model",
        "tokens",
        "session_id",
    ] {
        assert!(report.get(key).is_some(), "report lacks {key}: {report}");
    }
    // The Artisan and the Critic in each of 2 iterations, 200 output tokens each. The Librarian
    // reads the project but asks its model nothing: each failure was new and the Artisan saw
    // it whole (`librarian.analyze: auto`).
    let roles = report["cost_by_role"].as_object().unwrap();
    assert_eq!(roles.len(), 2, "{roles:?}");
    assert_eq!(report["tokens"]["output_tokens"], 800);
    // Each role's prompt measured against its model's context window (gpt-4.1: 1M tokens).
    let artisan_use = report["context_use"]["artisan"].as_f64().unwrap();
    assert!(artisan_use > 0.0 && artisan_use < 0.4, "{report:#}");

    let session = session_dir(dir.path());
    let log = std::fs::read_to_string(session.join("iterations.log")).unwrap();
    let lines: Vec<Value> = json_lines(&log);
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["passed"], false);
    assert_eq!(lines[1]["passed"], true);
    for line in &lines {
        // pytest takes longer than this mock's replies: the review runs beside the tests and
        // binds.
        assert_eq!(line["critic"], "binding", "{line}");
        assert!(line.get("analysis").is_none(), "{line}");
    }
    for n in 0..=2 {
        let results = read_json(&session.join(format!("test-results-iteration-{n}.json")));
        assert_eq!(results["schema_version"], 2);
    }
    assert!(session.join("original/median.py").is_file());

    // Fresh context each iteration: the second Artisan request has no history and carries the
    // failure the first iteration's tests left on disk.
    let artisan = llm.requests_of("artisan").await;
    assert_eq!(artisan.len(), 2);
    assert_eq!(artisan[1]["messages"].as_array().unwrap().len(), 2);
    let second = user_prompt(&artisan[1]);
    assert!(second.contains("test_empty_list_is_an_error"), "{second}");
    assert!(!second.contains("The Librarian's analysis"), "{second}");
    assert!(artisan[0]["max_completion_tokens"].as_u64().unwrap() <= 8192);
    assert_eq!(artisan[0]["model"], "gpt-4.1");
}

#[tokio::test(flavor = "multi_thread")]
async fn javascript_fixed_with_node_test_runner() {
    let dir = fixture("js-median");
    let llm = artisan_writes("javascript", [FIXED_JS]).await;

    assert_exits_saying(
        ralph(dir.path(), &llm).args(["src/median.js", "--models", "gpt-mini"]),
        0,
        &["success"],
    );

    let report = report(dir.path());
    assert_eq!(report["iterations"], 1);
    assert_eq!(report["test_command"], "npm test --silent");
    let requests = llm.requests().await;
    assert!(
        requests.iter().all(|(_, r)| r["model"] == "gpt-4.1-mini"),
        "--models applies to every role"
    );
    assert!(
        requests.iter().all(|(_, r)| r["stream"] == true),
        "streams by default"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn critic_rejects_once_then_approves() {
    let dir = fixture("py-median");
    let llm = artisan_writes("python", [HALF_FIXED_PY, FIXED_PY]).await;
    llm.script(
        "critic",
        [
            text("VERDICT: REJECT\n- median([]) must raise ValueError"),
            text("VERDICT: APPROVE"),
        ],
    );

    let report = ralph_report(
        dir.path(),
        &llm,
        &["median.py", "-t", "python3 -m pytest -q"],
        0,
    );
    assert_eq!(report["iterations"], 1);
    assert_eq!(report["critic_rejections"], 1);
    let revision = last_prompt_of(&llm, "artisan", 2).await;
    assert_has(
        &revision,
        &[
            "The Critic rejected your previous proposal",
            "median([]) must raise ValueError",
        ],
    );
    // The rejected proposal never reached the disk or the tests: one baseline + one test run.
    assert!(!session_dir(dir.path())
        .join("test-results-iteration-2.json")
        .exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn the_same_failure_three_times_trips_the_breaker() {
    let dir = fixture("py-median");
    let llm = artisan_always("python", HALF_FIXED_PY).await;

    ralph(dir.path(), &llm).args(["median.py"]).assert().code(5);

    let report = report(dir.path());
    assert_eq!(report["status"], "entropy_detected");
    assert_eq!(report["iterations"], 3);
    assert!(
        report["stuck_on"].as_str().unwrap().contains("IndexError"),
        "{report}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn max_iterations_stops_the_run_without_streaming() {
    let dir = fixture_with_config("py-median", "providers:\n  openai:\n    stream: false\n");
    let llm = artisan_always("python", HALF_FIXED_PY).await;

    let report = ralph_report(dir.path(), &llm, &["median.py", "-m", "2"], 4);
    assert_eq!(report["status"], "max_iterations");
    assert_eq!(report["iterations"], 2);
    assert_eq!(
        report["tokens"]["output_tokens"], 800,
        "usage is read from plain JSON replies too (the Artisan and the Critic, twice)"
    );
    let requests = llm.requests().await;
    assert!(
        requests.iter().all(|(_, r)| r["stream"] != true),
        "config turns streaming off"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn budget_stops_before_the_cap_is_crossed() {
    let dir = fixture("py-median");
    // $10 per million tokens in and out: each call costs about a cent.
    write_config(dir.path(), "prices:\n  openai/gpt-4.1: { input: 10, output: 10 }\n  openai/gpt-4.1-mini: { input: 10, output: 10 }\n");
    let llm = artisan_always("python", HALF_FIXED_PY).await;

    let report = ralph_report(dir.path(), &llm, &["median.py", "--budget", "0.05"], 3);
    assert_eq!(report["status"], "budget_exceeded");
    let spent = report["cost_usd"].as_f64().unwrap();
    assert!(spent > 0.0 && spent <= 0.05, "spent {spent}");
    assert!(
        report["reason"].as_str().unwrap().contains("cost limit"),
        "{report}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn rate_limit_then_success() {
    let dir = fixture("py-median");
    let llm = MockLlm::start().await;
    llm.helpful().script(
        "artisan",
        [
            Answer::Status {
                status: 429,
                body: r#"{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}"#.into(),
                headers: vec![("retry-after".into(), "1".into())],
            },
            text(code("python", FIXED_PY)),
        ],
    );

    ralph(dir.path(), &llm).args(["median.py"]).assert().code(0);

    assert_eq!(
        llm.requests_of("artisan").await.len(),
        2,
        "one 429, one retry"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn unauthorized_names_the_provider_and_the_variable() {
    let dir = fixture("py-median");
    let llm = MockLlm::start().await;
    llm.always(
        "artisan",
        Answer::Status {
            status: 401,
            body: r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}"#.into(),
            headers: vec![],
        },
    );

    assert_exits_saying(
        ralph(dir.path(), &llm).args(["median.py"]),
        1,
        &["openai", "OPENAI_API_KEY"],
    );

    assert_eq!(report(dir.path())["status"], "error");
}

/// Found with a real small model: a failed run left the file worse than it started. Now a
/// proposal that does worse (here a syntax error) is undone, and the run leaves the best state
/// it reached, saying so and where the original is.
#[tokio::test(flavor = "multi_thread")]
async fn a_failed_run_leaves_the_best_state_and_says_where_the_original_is() {
    let dir = fixture("py-median");
    let llm = artisan_script([
        text(code("python", HALF_FIXED_PY)),
        text(code("python", "def median(values:\n    return 0\n")),
    ])
    .await;
    let out = ralph(dir.path(), &llm)
        .args(["median.py", "-m", "2"])
        .assert()
        .code(4);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("median.py")).unwrap(),
        HALF_FIXED_PY,
        "iteration 1's version, which failed one test where the original failed two"
    );
    let first = report(dir.path());
    assert_eq!(first["reverts"], 1);
    assert_eq!(first["file_left"]["policy"], "best");
    assert_eq!(first["file_left"]["iteration"], 1);
    assert_eq!(first["file_left"]["tests"]["failed"], 1);
    let session = session_dir(dir.path());
    assert!(session.join("checkpoints/iteration-2").is_file());
    assert_eq!(
        std::fs::read_to_string(session.join("checkpoints/iteration-0")).unwrap(),
        std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/py-median/median.py")
        )
        .unwrap()
    );
    // iterations.log holds the fields docs/report.md names, no more.
    let documented = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/report.md"),
    )
    .unwrap();
    let row = documented
        .lines()
        .find(|l| l.starts_with("| `iterations.log`"))
        .unwrap();
    let log = std::fs::read_to_string(session.join("iterations.log")).unwrap();
    let outcomes: Vec<String> = log
        .lines()
        .map(|line| {
            let record: serde_json::Value = serde_json::from_str(line).unwrap();
            for key in record.as_object().unwrap().keys() {
                assert!(
                    row.contains(&format!("`{key}`")),
                    "{key} is not documented: {row}"
                );
            }
            record["outcome"].as_str().unwrap().to_string()
        })
        .collect();
    assert_eq!(outcomes, ["failed", "undone"]);
    assert!(
        first["next_steps"][0].as_str().unwrap().contains("-m 7`"),
        "{}",
        first["next_steps"]
    );
    let stderr = stderr_of(&out);
    assert!(
        stderr.contains(
            "iteration 2: the proposal made things worse (it brought a new SYNTAX failure)"
        ),
        "{stderr}"
    );
    assert_has(
        &stderr,
        &[
            "file: median.py holds the best state reached, iteration 1's version",
            "1 worse proposal undone",
        ],
    );
    let original = format!(
        "the original is in .ralph/{}/original/median.py",
        session.file_name().unwrap().to_string_lossy()
    );
    assert!(stderr.contains(&original), "{stderr}");

    // `--on-failure last` keeps whatever the run left last, and `original` the original.
    for (policy, expected) in [("original", None), ("last", Some(HALF_FIXED_PY))] {
        let dir = fixture("py-median");
        let before = std::fs::read_to_string(dir.path().join("median.py")).unwrap();
        llm.script("artisan", [text(code("python", HALF_FIXED_PY))]);
        ralph(dir.path(), &llm)
            .args(["median.py", "-m", "1", "--on-failure", policy])
            .assert()
            .code(4);
        assert_eq!(
            std::fs::read_to_string(dir.path().join("median.py")).unwrap(),
            expected.map_or(before, str::to_string),
            "{policy}"
        );
        assert_eq!(report(dir.path())["file_left"]["policy"], policy);
    }
}
