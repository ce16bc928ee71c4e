//! Interruption, resumption, hung test commands, and record/replay.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use super::support::*;

fn spawn_ralph(dir: &Path, llm: &MockLlm, args: &[&str]) -> Child {
    start_ralph(
        dir,
        llm,
        &[args, &["--no-adversarial"]].concat(),
        Stdio::piped(),
    )
}

fn sigint(child: &Child) {
    kill(Pid::from_raw(child.id() as i32), Signal::SIGINT).unwrap();
}

fn has_session_file(dir: &Path, name: &str) -> bool {
    std::fs::read_dir(dir.join(".ralph"))
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .any(|e| e.path().join(name).exists())
        })
        .unwrap_or(false)
}

/// Processes whose command line starts with `pattern` (so not ralph-loop, whose arguments hold it).
fn processes_matching(pattern: &str) -> usize {
    let out = Command::new("pgrep")
        .args(["-f", &format!("^{pattern}")])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).lines().count()
}

#[tokio::test(flavor = "multi_thread")]
async fn ctrl_c_leaves_a_consistent_resumable_session() {
    let dir = fixture("py-median");
    let llm = artisan_script([
        slow(code("python", FIXED_PY), Duration::from_secs(20)),
        text(code("python", FIXED_PY)),
    ])
    .await;

    let mut child = spawn_ralph(dir.path(), &llm, &["median.py"]);
    wait_for("the baseline results", Duration::from_secs(30), || {
        has_session_file(dir.path(), "test-results-iteration-0.json")
    });
    // The Artisan's reply takes 20 s; interrupt while it is outstanding.
    wait_for("the artisan's request", Duration::from_secs(10), || {
        futures::executor::block_on(llm.requests_of("artisan")).len() == 1
    });
    let interrupted_at = Instant::now();
    sigint(&child);
    assert_eq!(wait_exit(&mut child, Duration::from_secs(10)), 130);
    assert!(
        interrupted_at.elapsed() < Duration::from_secs(5),
        "the step was cancelled, not waited for"
    );

    let session = session_dir(dir.path());
    let state = read_json(&session.join("state.json"));
    assert_eq!(state["status"], "interrupted");
    assert_eq!(report(dir.path())["status"], "interrupted");
    assert_eq!(report(dir.path())["exit_code"], 130);
    assert_untouched(
        dir.path(),
        "py-median",
        "median.py",
        "the target is untouched",
    );

    // Resume: no second baseline, the cost so far carries over, and the fix lands.
    let spent_before = state["ledger"]["spent"].as_f64().unwrap();
    let resumed = ralph_with_chaos(dir.path(), &llm)
        .arg("resume")
        .assert()
        .code(0);
    // The live view goes on from what the session had spent, not from $0.
    let stderr = stderr_of(&resumed);
    let first_phase = stderr
        .lines()
        .find(|l| l.starts_with('['))
        .unwrap_or_default()
        .to_string();
    assert!(spent_before > 0.0);
    assert!(
        first_phase.contains(&format!("${spent_before:.4}")),
        "{first_phase}\n{stderr}"
    );
    let report = report(dir.path());
    assert_eq!(report["status"], "success");
    assert_eq!(report["iterations"], 1);
    assert!(report["cost_usd"].as_f64().unwrap() >= spent_before);
    assert_eq!(
        report["tests_before"]["failed"], 2,
        "the first run's baseline is kept"
    );
    assert_file(dir.path(), "median.py", FIXED_PY);
    // A finished session cannot be resumed again.
    ralph_with_chaos(dir.path(), &llm)
        .arg("resume")
        .assert()
        .code(2);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_second_ctrl_c_exits_at_once_and_kills_the_tests() {
    let dir = fixture("py-median");
    let llm = MockLlm::start().await;
    let marker = "sleep 41.25";
    let mut child = spawn_ralph(
        dir.path(),
        &llm,
        &["median.py", "-t", &format!("sh -c '{marker}; {marker}'")],
    );
    wait_for("the test command", Duration::from_secs(20), || {
        processes_matching(marker) > 0
    });
    sigint(&child);
    std::thread::sleep(Duration::from_millis(30));
    sigint(&child);
    assert_eq!(wait_exit(&mut child, Duration::from_secs(5)), 130);
    wait_for("the test processes to die", Duration::from_secs(5), || {
        processes_matching(marker) == 0
    });
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hanging_test_command_is_killed_at_the_timeout() {
    let dir = fixture_with_config("py-median", "testing:\n  timeout_seconds: 1\n");
    let llm = artisan_always("python", FIXED_PY).await;
    let marker = "sleep 39.75";
    let started = Instant::now();

    ralph(dir.path(), &llm)
        .args([
            "median.py",
            "-m",
            "1",
            "-t",
            &format!("sh -c '{marker} & {marker}; wait'"),
        ])
        .assert()
        .code(4);

    assert!(
        started.elapsed() < Duration::from_secs(30),
        "took {:?}",
        started.elapsed()
    );
    let session = session_dir(dir.path());
    for n in 0..=1 {
        let results = read_json(&session.join(format!("test-results-iteration-{n}.json")));
        assert_eq!(results["status"], "timeout");
    }
    assert_eq!(
        processes_matching(marker),
        0,
        "the whole process group, grandchildren too, was killed"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn replay_reproduces_a_recorded_run() {
    let recorded = fixture("py-median");
    let llm = artisan_writes("python", [HALF_FIXED_PY, FIXED_PY]).await;

    let recording = recorded.path().join("session.jsonl");
    ralph(recorded.path(), &llm)
        .args(["median.py", "--record", recording.to_str().unwrap()])
        .assert()
        .code(0);
    let live = report(recorded.path());

    // A fresh copy, no server and no key: the recording answers every call.
    let replayed = fixture("py-median");
    let mut cmd = assert_cmd::Command::cargo_bin("ralph-loop").unwrap();
    isolate(&mut cmd, replayed.path());
    cmd.env("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
        .args(["median.py", "--no-adversarial", "--replay"])
        .arg(recording.to_str().unwrap())
        .assert()
        .code(0);
    let replay = report(replayed.path());

    for key in [
        "status",
        "iterations",
        "cost_usd",
        "cost_by_role",
        "cost_by_model",
        "tokens",
        "tests_before",
        "tests_after",
    ] {
        assert_eq!(live[key], replay[key], "{key} differs");
    }
    assert_file(replayed.path(), "median.py", FIXED_PY);
}

/// The README's first command replays this recording; it must keep fixing the example, and
/// show Chaos finding an edge case the unit tests miss and getting it fixed.
#[test]
fn the_bundled_demo_recording_fixes_the_example() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("median-js");
    let status = Command::new("cp")
        .args([
            "-r",
            concat!(env!("CARGO_MANIFEST_DIR"), "/examples/median-js"),
        ])
        .arg(&work)
        .status()
        .unwrap();
    assert!(status.success());
    let mut cmd = assert_cmd::Command::cargo_bin("ralph-loop").unwrap();
    isolate(&mut cmd, &work);
    let out = cmd
        .args([
            "src/median.js",
            "--replay",
            concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/examples/median-js.session.jsonl"
            ),
        ])
        .assert()
        .code(0);
    let report = report(&work);
    assert_eq!(report["iterations"], 2);
    // The live view says what Chaos found, and that it was fixed.
    let shown = stderr_of(&out);
    for line in [
        "chaos round 1: 4 adversarial tests, 1 failing",
        "critic kept 1 finding: test::two equal huge values: the median is that value",
        "chaos findings: 1 fixed, 0 still failing",
        "chaos round 2: 3 adversarial tests, 0 failing",
        "chaos: 2 rounds, 7 adversarial tests written, 1 finding (1 fixed, 0 open), 0 dropped by the critic",
    ] {
        assert!(shown.contains(line), "{line}\n{shown}");
    }
    assert!(std::fs::read_to_string(work.join("src/median.js"))
        .unwrap()
        .contains("ordered[mid - 1] / 2 + ordered[mid] / 2"));
}

/// SIGTERM and SIGHUP stop a run as Ctrl+C does, with their own exit codes; SIGQUIT quits at
/// once. Each, sent while the tests run, leaves no test process behind and a session that
/// resumes to a fix.
#[tokio::test(flavor = "multi_thread")]
async fn every_stopping_signal_kills_the_tests_and_leaves_a_resumable_session() {
    for (signal, exit, reason) in [
        (Signal::SIGTERM, 143, Some("terminated (SIGTERM)")),
        (Signal::SIGHUP, 129, Some("hung up (SIGHUP)")),
        (Signal::SIGQUIT, 131, None),
    ] {
        let dir = fixture("py-median");
        let llm = artisan_writes("python", [FIXED_PY]).await;
        // The tests hang while `slow` exists: long enough to be stopped mid-run.
        let marker = format!("sleep 41.{}", signal as i32);
        std::fs::write(dir.path().join("slow"), "").unwrap();
        let command = format!("sh -c 'if [ -f slow ]; then {marker}; fi; python3 -m pytest -q'");
        let mut child = spawn_ralph(dir.path(), &llm, &["median.py", "-t", &command]);
        wait_for("the test command", Duration::from_secs(30), || {
            processes_matching(&marker) > 0
        });
        kill(Pid::from_raw(child.id() as i32), signal).unwrap();
        assert_eq!(
            wait_exit(&mut child, Duration::from_secs(10)),
            exit,
            "{signal:?}"
        );
        wait_for("the test processes to die", Duration::from_secs(5), || {
            processes_matching(&marker) == 0
        });
        let session = session_dir(dir.path());
        let state = read_json(&session.join("state.json"));
        if let Some(reason) = reason {
            assert_eq!(state["status"], "interrupted", "{signal:?}");
            let report = report(dir.path());
            assert_eq!(report["status"], "interrupted");
            assert_eq!(report["exit_code"], exit);
            assert_eq!(report["reason"], reason);
        } else {
            // Quit at once: the state of the last step, still resumable.
            assert_eq!(state["status"], "running", "{signal:?}");
        }
        std::fs::remove_file(dir.path().join("slow")).unwrap();
        ralph_with_chaos(dir.path(), &llm)
            .arg("resume")
            .assert()
            .code(0);
        assert_eq!(report(dir.path())["status"], "success", "{signal:?}");
        assert_file(dir.path(), "median.py", FIXED_PY);
    }
}

const MEAN_PY: &str = "def mean(values):\n    return sum(values) / (len(values) + 1)\n";
const FIXED_MEAN_PY: &str = "def mean(values):\n    return sum(values) / len(values)\n";
const TEST_MEAN_PY: &str =
    "from mean import mean\n\n\ndef test_mean():\n    assert mean([1, 2, 3]) == 2\n";

/// Two runs on two targets of one project at once both succeed; a third on a target already
/// being fixed is refused, naming the session that holds it.
#[tokio::test(flavor = "multi_thread")]
async fn two_runs_on_two_targets_at_once_and_a_third_on_a_held_target_refused() {
    let dir = fixture("py-median");
    write(dir.path(), "mean.py", MEAN_PY);
    write(dir.path(), "test_mean.py", TEST_MEAN_PY);
    let llm = MockLlm::start().await;
    // Slow enough that the two runs overlap and the third finds its target held.
    let slow_py = |code_: &str| slow(code("python", code_), Duration::from_millis(1500));
    llm.helpful().always(
        "artisan",
        if_prompt("def mean(", slow_py(FIXED_MEAN_PY), slow_py(FIXED_PY)),
    );
    let mut median = spawn_ralph(
        dir.path(),
        &llm,
        &["median.py", "-t", "python3 -m pytest -q test_median.py"],
    );
    let mut mean = spawn_ralph(
        dir.path(),
        &llm,
        &["mean.py", "-t", "python3 -m pytest -q test_mean.py"],
    );
    wait_for(
        "both runs' first model call",
        Duration::from_secs(30),
        || futures::executor::block_on(llm.requests_of("artisan")).len() >= 2,
    );
    let stderr = stderr_at(
        ralph(dir.path(), &llm).args(["median.py", "-t", "python3 -m pytest -q test_median.py"]),
        2,
    );
    assert!(
        stderr.contains("median.py is being fixed by another run (session "),
        "{stderr}"
    );
    assert!(stderr.contains(&format!("pid {}", median.id())), "{stderr}");
    assert_eq!(wait_exit(&mut median, Duration::from_secs(60)), 0);
    assert_eq!(wait_exit(&mut mean, Duration::from_secs(60)), 0);
    assert_file(dir.path(), "median.py", FIXED_PY);
    assert_file(dir.path(), "mean.py", FIXED_MEAN_PY);
    // What the two runs share beside their sessions is whole: both runs' attempts in the vault,
    // and a graph cache (written by whichever saved last) that the next run reads.
    let stats = vault_stats(dir.path());
    assert_eq!(stats["attempts"], 2, "{stats:#}");
    assert_eq!(stats["successful"], 2, "{stats:#}");
    assert!(dir.path().join(".ralph/graph-cache.bin").is_file());
    // Released on exit: the target can be run again.
    ralph(dir.path(), &llm)
        .args(["median.py", "-t", "python3 -m pytest -q test_median.py"])
        .assert()
        .code(0);
}

/// A session stopped at a limit continues with `resume`: past that limit only (`-m`), the
/// money already spent still counting, the user's guidance shown to the Artisan as theirs.
#[tokio::test(flavor = "multi_thread")]
async fn a_stopped_session_resumes_with_a_new_limit_and_the_user_s_guidance() {
    let dir = fixture("py-median");
    let llm = guided_artisan().await;
    ralph(dir.path(), &llm)
        .args(["median.py", "-m", "1"])
        .assert()
        .code(4);
    let spent = report(dir.path())["cost_usd"].as_f64().unwrap();
    let steps = report(dir.path())["next_steps"].to_string();
    assert!(steps.contains("ralph-loop resume"), "{steps}");

    // The same limit would stop it again at once.
    assert_exits_saying(
        ralph_with_chaos(dir.path(), &llm).arg("resume"),
        2,
        &["pass -m N with N above 1"],
    );

    ralph_with_chaos(dir.path(), &llm)
        .args(["resume", "-m", "3", "--guidance"])
        .arg("raise ValueError on an empty list, as the test expects")
        .assert()
        .code(0);
    let report = report(dir.path());
    assert_eq!(report["status"], "success");
    assert_eq!(report["iterations"], 2);
    assert!(report["cost_usd"].as_f64().unwrap() > spent);
    let asked = llm.requests_of("artisan").await;
    let last = asked.last().unwrap().to_string();
    assert!(last.contains("# The user's guidance"), "{last}");
    assert_file(dir.path(), "median.py", FIXED_PY);
}

/// A `py-median` project whose breaker opens after 2 like failures, and a server whose Artisan
/// fixes the file only once the user's guidance reaches it ([`guided_artisan`]).
pub(super) async fn breaker_project() -> (tempfile::TempDir, MockLlm) {
    (breaker_fixture(), guided_artisan().await)
}

/// A `py-median` project whose breaker opens after 2 like failures.
fn breaker_fixture() -> tempfile::TempDir {
    fixture_with_config("py-median", "circuit_breaker:\n  entropy_threshold: 2\n")
}

/// A server whose Artisan fixes `median.py` only when its prompt holds the guidance "raise
/// ValueError on an empty list", and otherwise half fixes it.
async fn guided_artisan() -> MockLlm {
    artisan_answers(if_prompt(
        "raise ValueError on an empty list",
        text(code("python", FIXED_PY)),
        text(code("python", HALF_FIXED_PY)),
    ))
    .await
}

/// FR-019 in a real terminal: the breaker asks, the user types guidance, the Artisan follows it.
#[tokio::test(flavor = "multi_thread")]
async fn at_a_terminal_the_breaker_asks_and_the_user_s_guidance_fixes_it() {
    let (dir, llm) = breaker_project().await;
    let (code, shown) = in_terminal(
        "ralph-loop",
        dir.path(),
        &llm.openai_env(),
        &["median.py", "--no-adversarial", "--ui", "lines"],
        &[
            ("[r] raise the threshold to 4 >", "g"),
            (
                "guidance for the Artisan (one line):",
                "raise ValueError on an empty list",
            ),
        ],
    );
    assert_eq!(code, 0, "{shown}");
    assert!(
        shown.contains("stuck: the same failure ended 2 iterations (threshold 2)"),
        "{shown}"
    );
    assert_file(dir.path(), "median.py", FIXED_PY);
    let report = report(dir.path());
    assert_eq!(report["status"], "success");
    assert_eq!(report["iterations"], 3);

    // Headless (no terminal), the same run stops at the breaker with exit 5, as before.
    let dir = breaker_fixture();
    ralph(dir.path(), &llm).arg("median.py").assert().code(5);
}
