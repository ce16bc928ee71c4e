//! The `micro-agent` binary: micro-agent's flags, environment and `~/.micro-agent` file.

use super::support::*;

fn micro_agent(dir: &std::path::Path) -> assert_cmd::Command {
    let mut cmd = assert_cmd::Command::cargo_bin("micro-agent").unwrap();
    isolate(&mut cmd, dir);
    cmd
}

#[tokio::test(flavor = "multi_thread")]
async fn runs_with_micro_agents_environment() {
    let dir = fixture("py-median");
    let llm = artisan_always("python", FIXED_PY).await;

    micro_agent(dir.path())
        .env("OPENAI_KEY", "sk-micro")
        .env("OPENAI_API_ENDPOINT", llm.base_url())
        .env("MODEL", "gpt-4o-mini")
        .args(["median.py", "-t", "python3 -m pytest", "-m", "3"])
        .assert()
        .code(0);

    let requests = llm.requests().await;
    assert!(!requests.is_empty());
    assert!(
        requests.iter().all(|(_, r)| r["model"] == "gpt-4o-mini"),
        "MODEL runs every role"
    );
    assert!(llm
        .authorizations()
        .await
        .iter()
        .all(|a| a == "Bearer sk-micro"));
    assert_file(dir.path(), "median.py", FIXED_PY);
}

#[tokio::test(flavor = "multi_thread")]
async fn reads_the_ini_file_and_the_environment_wins() {
    let dir = fixture("py-median");
    let llm = artisan_always("python", FIXED_PY).await;
    micro_agent(dir.path())
        .args(["config", "set", "OPENAI_KEY=sk-from-file", "MODEL=gpt-4o"])
        .assert()
        .success();
    write(
        dir.path(),
        ".micro-agent",
        &format!(
            "{}OPENAI_API_ENDPOINT={}\n",
            std::fs::read_to_string(dir.path().join(".micro-agent")).unwrap(),
            llm.base_url()
        ),
    );
    micro_agent(dir.path())
        .args(["config", "get", "MODEL"])
        .assert()
        .success()
        .stdout("MODEL=gpt-4o\n");

    assert_exits_saying(
        micro_agent(dir.path()).env("MODEL", "gpt-4.1-nano").args([
            "median.py",
            "-t",
            "python3 -m pytest",
            "--thread",
            "thread_abc",
        ]),
        0,
        &["--thread thread_abc is ignored"],
    );

    let requests = llm.requests().await;
    assert!(requests.iter().all(|(_, r)| r["model"] == "gpt-4.1-nano"));
    assert!(llm
        .authorizations()
        .await
        .iter()
        .all(|a| a == "Bearer sk-from-file"));
}

#[test]
fn what_it_cannot_honour_is_said_plainly() {
    let dir = fixture("py-median");
    assert_exits_saying(
        micro_agent(dir.path()).args(["median.py", "-t", "pytest", "-v", "http://localhost:3000"]),
        2,
        &["visual matching"],
    );
    // Without a terminal, the interactive mode says what is missing.
    assert_exits_saying(
        &mut micro_agent(dir.path()),
        2,
        &["no file path given, and micro-agent's interactive mode needs a terminal to ask for it"],
    );
    assert_exits_saying(
        micro_agent(dir.path()).arg("median.py"),
        2,
        &["no test command given (-t)"],
    );
    assert_exits_saying(
        micro_agent(dir.path()).arg("config"),
        2,
        &["`micro-agent config` without arguments edits ~/.micro-agent at a terminal"],
    );
    assert_exits_saying(
        micro_agent(dir.path()).args(["config", "set", "COLOR=blue"]),
        2,
        &["Invalid config property: COLOR"],
    );
}

/// micro-agent's interactive mode in a real terminal: what to build, the suggested file, a test
/// written with the user's feedback, the suggested test command, then the loop to a fix.
#[tokio::test(flavor = "multi_thread")]
async fn the_interactive_mode_sets_up_a_run_with_the_user_in_a_terminal() {
    let dir = fixture("py-median");
    std::fs::remove_file(dir.path().join("median.py")).unwrap();
    let test = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/py-median/test_median.py"),
    )
    .unwrap();
    std::fs::remove_file(dir.path().join("test_median.py")).unwrap();
    let llm = MockLlm::start().await;
    // The set-up's calls (no role of the loop's own): the file, a first test, the revised one.
    llm.script(
        "unknown",
        [
            text("`median.py`"),
            text(code("python", "def test_placeholder():\n    assert True\n")),
            text(code("python", &test)),
        ],
    );
    llm.helpful()
        .always("artisan", text(code("python", FIXED_PY)));
    // No key anywhere: micro-agent asks for one first and keeps it.
    let env = [
        ("OPENAI_API_ENDPOINT", llm.base_url()),
        ("MODEL", "gpt-4.1-mini".to_string()),
    ];
    let (code, shown) = in_terminal(
        "micro-agent",
        dir.path(),
        &env,
        &[],
        &[
            (
                "What is your OpenAI key? (kept in ~/.micro-agent)",
                "sk-typed-key",
            ),
            (
                "What would you like to do?",
                "A function median(values) returning the median of a list",
            ),
            (
                "What file would you like to create or edit? (median.py)",
                "",
            ),
            (
                "Reply \"good\", or give feedback (good)",
                "test an empty list and an even-length list",
            ),
            ("Reply \"good\", or give feedback (good)", "good"),
            (
                "What command should I run to test the code? (python3 -m pytest -q test_median.py)",
                "",
            ),
        ],
    );
    assert_eq!(code, 0, "{shown}");
    assert!(
        shown.contains("Test file written: test_median.py"),
        "{shown}"
    );
    assert_file(dir.path(), "test_median.py", test);
    assert_file(dir.path(), "median.py", FIXED_PY);
    assert!(
        std::fs::read_to_string(dir.path().join("median.py.prompt.md"))
            .unwrap()
            .contains("returning the median of a list")
    );
    // The feedback reached the model with the test it was about.
    let revised = llm.requests_of("unknown").await[2].to_string();
    assert!(
        revised.contains("test an empty list and an even-length list"),
        "{revised}"
    );
    let report = report(dir.path());
    assert_eq!(report["status"], "success");
    assert!(report["notes"]
        .to_string()
        .contains("the interactive set-up spent $"));
    assert!(
        std::fs::read_to_string(dir.path().join(".micro-agent"))
            .unwrap_or_default()
            .contains("OPENAI_KEY=sk-typed-key"),
        "{shown}"
    );
    assert!(llm
        .authorizations()
        .await
        .iter()
        .all(|a| a == "Bearer sk-typed-key"));
}

/// `micro-agent config` without arguments edits ~/.micro-agent key by key at a terminal.
#[test]
fn config_without_arguments_edits_the_file_at_a_terminal() {
    let dir = fixture("py-median");
    write(dir.path(), ".micro-agent", "OPENAI_KEY=sk-secret-1234\n");
    let (code, shown) = in_terminal(
        "micro-agent",
        dir.path(),
        &[],
        &["config"],
        &[
            ("Which key to set? (empty to finish)", "COLOR"),
            ("Which key to set? (empty to finish)", "MODEL"),
            ("Value for MODEL", "gpt-4.1-mini"),
            ("Which key to set? (empty to finish)", ""),
        ],
    );
    assert_eq!(code, 0, "{shown}");
    assert!(
        shown.contains("OPENAI_KEY = …1234"),
        "keys are masked: {shown}"
    );
    assert!(!shown.contains("sk-secret"), "{shown}");
    assert!(shown.contains("one of OPENAI_KEY"), "{shown}");
    let file = std::fs::read_to_string(dir.path().join(".micro-agent")).unwrap();
    assert_has(&file, &["MODEL=gpt-4.1-mini", "OPENAI_KEY=sk-secret-1234"]);
}
