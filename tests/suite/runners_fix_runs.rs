//! A whole fix run through the binary on each stack's project.

use ralph_loop::runner::detect::Probe;
use ralph_loop::runner::plan::Framework;

use super::runners::*;
use super::support::*;

async fn fix_run(stack: Stack, fence: &str) {
    let dir = project(&stack);
    let fixed = std::fs::read_to_string(dir.path().join(stack.module)).unwrap();
    write(
        dir.path(),
        stack.module,
        &module_source(stack.kind, Variant::Failing).unwrap(),
    );
    let git = |args: &[&str]| {
        let ok = std::process::Command::new("git")
            .args(args)
            .current_dir(dir.path())
            .output()
            .unwrap()
            .status
            .success();
        assert!(ok, "git {args:?}");
    };
    // node_modules is a link to the shared tools: never part of the project.
    std::fs::write(dir.path().join(".gitignore"), "node_modules\ntarget\n").unwrap();
    git(&["add", "-A"]);
    git(&[
        "-c",
        "user.email=t@example.com",
        "-c",
        "user.name=t",
        "commit",
        "-qm",
        "base",
    ]);
    let llm = artisan_script([text(code(fence, &fixed))]).await;

    ralph(dir.path(), &llm)
        .args([stack.module])
        .assert()
        .code(0);

    assert_eq!(
        std::fs::read_to_string(dir.path().join(stack.module)).unwrap(),
        fixed
    );
    let session = session_dir(dir.path());
    let before = read_json(&session.join("test-results-iteration-0.json"));
    assert_eq!(before["status"], "failed", "{before:#}");
    let after = read_json(&session.join("test-results-iteration-1.json"));
    assert_schema_valid(&after);
    assert_eq!(after["status"], "passed", "{after:#}");
    assert_eq!(after["framework"], stack.framework.as_str(), "{after:#}");
    assert_eq!(after["source"], "report", "{after:#}");
    assert_eq!(after["totals"]["passed"], 3, "{after:#}");
}

#[tokio::test(flavor = "multi_thread")]
async fn typescript_vitest_fix_run() {
    fix_run(VITEST, "typescript").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn javascript_jest_fix_run() {
    fix_run(JEST, "javascript").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn javascript_mocha_fix_run() {
    fix_run(MOCHA, "javascript").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn python_pytest_fix_run() {
    fix_run(PYTEST, "python").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn rust_fix_run() {
    // The binary asks this machine: nextest when installed, else cargo test.
    let framework = if Probe::system().nextest() {
        Framework::Nextest
    } else {
        Framework::Cargo
    };
    fix_run(Stack { framework, ..CARGO }, "rust").await;
}
