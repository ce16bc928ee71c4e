//! The `micro-agent` binary: micro-agent's flags, environment and `~/.micro-agent` file.

use predicates::prelude::*;

use super::support::*;

fn micro_agent(dir: &std::path::Path) -> assert_cmd::Command {
    let mut cmd = assert_cmd::Command::cargo_bin("micro-agent").unwrap();
    isolate(&mut cmd, dir);
    cmd
}

#[tokio::test(flavor = "multi_thread")]
async fn runs_with_micro_agents_environment() {
    let dir = fixture("py-median");
    let llm = MockLlm::start().await;
    llm.helpful()
        .always("artisan", text(code("python", FIXED_PY)));

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
    assert_eq!(
        std::fs::read_to_string(dir.path().join("median.py")).unwrap(),
        FIXED_PY
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn reads_the_ini_file_and_the_environment_wins() {
    let dir = fixture("py-median");
    let llm = MockLlm::start().await;
    llm.helpful()
        .always("artisan", text(code("python", FIXED_PY)));
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

    micro_agent(dir.path())
        .env("MODEL", "gpt-4.1-nano")
        .args([
            "median.py",
            "-t",
            "python3 -m pytest",
            "--thread",
            "thread_abc",
        ])
        .assert()
        .code(0)
        .stderr(predicate::str::contains("--thread thread_abc is ignored"));

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
    micro_agent(dir.path())
        .args(["median.py", "-t", "pytest", "-v", "http://localhost:3000"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("visual matching"));
    micro_agent(dir.path())
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "interactive mode is not supported",
        ));
    micro_agent(dir.path())
        .args(["config", "set", "COLOR=blue"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("Invalid config property: COLOR"));
}
