//! `ralph-loop batch`: many files and specs, in order or in parallel, under one total budget.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use super::support::*;

/// `py-median` with `n` broken copies of the median (`median_<i>.py`, each with its test, and
/// `specs/median-<i>.md` fixing it with its own tests alone).
pub(super) fn medians(n: usize) -> tempfile::TempDir {
    let dir = fixture("py-median");
    let p = dir.path();
    std::fs::create_dir(p.join("specs")).unwrap();
    let broken = std::fs::read_to_string(p.join("median.py")).unwrap();
    let test = std::fs::read_to_string(p.join("test_median.py")).unwrap();
    for i in 0..n {
        write(p, &format!("median_{i}.py"), &broken);
        write(
            p,
            &format!("test_median_{i}.py"),
            &test.replace("from median import", &format!("from median_{i} import")),
        );
        write(
            p,
            &format!("specs/median-{i}.md"),
            &format!("---\ntargets: [median_{i}.py]\ntest_command: python3 -m pytest -q test_median_{i}.py\n---\nFix the median.\n"),
        );
    }
    write_config(p, "memory:\n  enabled: false\n");
    dir
}

/// The report of the (first) batch run in `dir`.
pub(super) fn batch_report(dir: &Path) -> Value {
    let batch = ralph_dirs(dir, "batch-");
    let batch = batch.first().expect("a batch folder");
    read_json(&batch.join("batch-report.json"))
}

fn session_report(dir: &Path, id: &str) -> Value {
    read_json(&dir.join(format!(".ralph/session-{id}/report.json")))
}

#[tokio::test(flavor = "multi_thread")]
async fn files_and_specs_run_in_order_each_with_its_report_and_the_batch_s_summary() {
    let dir = medians(2);
    let p = dir.path();
    let llm = artisan_always("python", FIXED_PY).await;
    write(
        p,
        "specs/first.md",
        "---\ntargets: [median_0.py]\ntest_command: python3 -m pytest -q test_median_0.py\nmax_iterations: 3\n---\nFix the median.\n",
    );
    let stderr = stderr_at(
        ralph_with_chaos(p, &llm).args([
            "batch",
            "specs/first.md",
            "median_1.py",
            "--no-adversarial",
            "-t",
            "python3 -m pytest -q test_median_1.py",
        ]),
        0,
    );
    assert!(
        stderr.contains("batch: [1/2] specs/first.md: started"),
        "{stderr}"
    );
    // At --parallel 1 each run's live view is shown too.
    assert_has(
        &stderr,
        &[
            "iter 1/3",
            "✔ median_1.py: success, 1 iteration, $",
            "batch success: 2 of 2 entries succeeded",
        ],
    );

    let report = batch_report(p);
    assert_eq!(report["status"], "success");
    assert_eq!(report["exit_code"], 0);
    let entries = report["entries"].as_array().unwrap();
    assert_eq!(entries[0]["name"], "specs/first.md");
    assert_eq!(entries[0]["kind"], "spec");
    assert_eq!(entries[1]["name"], "median_1.py");
    assert_eq!(entries[1]["kind"], "file");
    let mut total = 0.0;
    for e in entries {
        assert_eq!(e["status"], "success");
        assert_eq!(e["iterations"], 1);
        let session = session_report(p, e["sessions"][0].as_str().unwrap());
        assert_eq!(session["status"], "success");
        assert_eq!(session["cost_usd"], e["cost_usd"]);
        total += e["cost_usd"].as_f64().unwrap();
    }
    assert!((report["totals"]["cost_usd"].as_f64().unwrap() - total).abs() < 1e-9);
    assert_eq!(report["totals"]["succeeded"], 2);
    for i in 0..2 {
        assert_eq!(
            std::fs::read_to_string(p.join(format!("median_{i}.py"))).unwrap(),
            FIXED_PY
        );
    }
}

/// `batch --parallel 3 --output json` of the six specs of [`medians`]`(6)` in `dir`.
fn six_at_a_time(dir: &Path, llm: &MockLlm) -> assert_cmd::Command {
    let mut cmd = ralph_with_chaos(dir, llm);
    cmd.args(["batch", "--no-adversarial"])
        .args(["--parallel", "3", "--output", "json"])
        .args((0..6).map(|i| format!("specs/median-{i}.md")));
    cmd
}

#[tokio::test(flavor = "multi_thread")]
async fn parallel_entries_overlap_within_a_total_budget_no_entry_overdraws() {
    let dir = medians(6);
    let p = dir.path();
    let llm = artisan_answers(slow(code("python", FIXED_PY), Duration::from_millis(1500))).await;
    let out = six_at_a_time(p, &llm).assert().code(0);
    let report: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(report["totals"]["succeeded"], 6, "{report}");
    // Three at once: the six 1.5 s replies took about two rounds of three, not six in a row.
    let wall = report["totals"]["wall_ms"].as_u64().unwrap();
    let run = report["totals"]["run_ms"].as_u64().unwrap();
    assert!(wall * 2 < run, "wall {wall} ms, entries' own {run} ms");

    // A total budget that pays for about two entries: the others stop or are skipped, and
    // the spending, summed from every session's own report, stays within it.
    let one = report["entries"][0]["cost_usd"].as_f64().unwrap();
    let total = one * 2.5;
    let again = medians(6);
    let q = again.path();
    let out = six_at_a_time(q, &llm)
        .args(["--total-budget", &format!("{total}")])
        .assert()
        .code(3);
    let report: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(report["status"], "budget_exceeded");
    let mut spent = 0.0;
    for e in report["entries"].as_array().unwrap() {
        for id in e["sessions"].as_array().unwrap() {
            spent += session_report(q, id.as_str().unwrap())["cost_usd"]
                .as_f64()
                .unwrap();
        }
    }
    assert!(spent <= total + 1e-9, "spent {spent} of {total}");
    assert!(
        report["totals"]["succeeded"].as_u64().unwrap() < 6,
        "{report}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn two_entries_on_one_file_never_run_at_once_and_the_worst_status_is_the_exit_code() {
    let dir = medians(1);
    let p = dir.path();
    let llm = artisan_always("python", HALF_FIXED_PY).await;
    write(
        p,
        "specs/again.md",
        "---\ntargets: [median_0.py]\nmax_iterations: 1\n---\nFix it.\n",
    );
    let stderr = stderr_at(
        ralph_with_chaos(p, &llm)
            .args([
                "batch",
                "median_0.py",
                "specs/again.md",
                "--parallel",
                "2",
                "--no-adversarial",
            ])
            .args(["-m", "1", "-t", "python3 -m pytest -q test_median_0.py"]),
        4,
    );
    assert!(
        !stderr.contains("is being fixed by another run"),
        "{stderr}"
    );
    let report = batch_report(p);
    assert_eq!(report["status"], "max_iterations");
    let entries = report["entries"].as_array().unwrap();
    let first = session_report(p, entries[0]["sessions"][0].as_str().unwrap());
    let second = session_report(p, entries[1]["sessions"][0].as_str().unwrap());
    assert!(
        second["started_at"].as_str().unwrap() >= first["finished_at"].as_str().unwrap(),
        "{first}\n{second}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_config_s_batch_section_runs_without_arguments_and_a_bad_entry_is_placed() {
    let dir = medians(1);
    let p = dir.path();
    let llm = artisan_always("python", FIXED_PY).await;
    write_config(p, "memory:\n  enabled: false\nbatch:\n  - file: median_0.py\n    test_file: test_median_0.py\n    test_command: python3 -m pytest -q test_median_0.py\n    adversarial: false\n");
    ralph_with_chaos(p, &llm).arg("batch").assert().code(0);
    assert_eq!(batch_report(p)["entries"][0]["name"], "median_0.py");
    assert_file(p, "median_0.py", FIXED_PY);

    write_config(p, "batch:\n  - file: median_0.py\n    spec: specs/x.md\n");
    let stderr = stderr_at(ralph_with_chaos(p, &llm).arg("batch"), 2);
    assert!(
        stderr.contains("ralph.config.yaml:1:1: batch: entry 1 must name one of `spec` or `file`"),
        "{stderr}"
    );
    write_config(p, "batch:\n  - file: median_0.py\n    budgett: 1\n");
    let stderr = stderr_at(ralph_with_chaos(p, &llm).arg("batch"), 2);
    assert!(
        stderr.contains("ralph.config.yaml:3:5: batch[0].budgett: unknown key"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn ctrl_c_stops_the_batch_and_a_bad_entry_stops_it_before_anything_runs() {
    let dir = medians(2);
    let p = dir.path();
    let llm = artisan_answers(slow(code("python", FIXED_PY), Duration::from_secs(20))).await;
    // A missing file: refused before any entry runs.
    let missing = ralph_with_chaos(p, &llm)
        .args([
            "batch",
            "specs/median-0.md",
            "nowhere.py",
            "--no-adversarial",
        ])
        .assert()
        .code(2);
    assert!(stderr_of(&missing).contains("nowhere.py"));
    assert!(llm.requests().await.is_empty());

    let mut child = start_ralph(
        p,
        &llm,
        &[
            "batch",
            "specs/median-0.md",
            "specs/median-1.md",
            "--no-adversarial",
        ],
        std::process::Stdio::null(),
    );
    let start = std::time::Instant::now();
    while llm.requests_of("artisan").await.is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no artisan request"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    assert_eq!(wait_exit(&mut child, Duration::from_secs(15)), 130);
    let report = batch_report(p);
    assert_eq!(report["status"], "interrupted");
    let entries = report["entries"].as_array().unwrap();
    assert_eq!(entries[0]["status"], "interrupted");
    let session = session_report(p, entries[0]["sessions"][0].as_str().unwrap());
    assert_eq!(
        session["status"], "interrupted",
        "resumable with `ralph-loop resume`"
    );
    assert_eq!(entries[1]["status"], "interrupted");
    assert_eq!(
        entries[1]["reason"],
        "the batch was stopped before it started"
    );
}

/// A batch in the TUI, in a real terminal: the task list, a pending task skipped before it
/// starts, the running one skipped mid-call, the other run to its end; the report says which
/// were skipped, and the batch does not fail for them.
#[tokio::test(flavor = "multi_thread")]
async fn a_batch_in_the_tui_lists_its_tasks_and_skips_the_ones_asked() {
    use super::tui::{bin, quit, Pane};
    let dir = medians(3);
    let p = dir.path();
    // The first entry's call is the slow one (the mock counts only answered calls).
    let llm = artisan_answers(if_prompt(
        "median_0.py",
        slow(code("python", FIXED_PY), Duration::from_secs(30)),
        text(code("python", FIXED_PY)),
    ))
    .await;
    let command = format!(
        "'{}' batch specs/median-0.md specs/median-1.md specs/median-2.md --no-adversarial",
        bin().display()
    );
    let pane = Pane::start(p, &llm.openai_env(), &command, 120, 34);
    let screen = pane.wait_for("· generate", Duration::from_secs(60));
    assert_has(
        &screen,
        &[
            "Tasks 0/3 done",
            "›→ specs/median-0.md",
            "○ specs/median-2.md",
        ],
    );
    // The last one, not started yet: it never starts.
    pane.keys(&["Tab"]);
    pane.keys(&["Tab"]);
    pane.wait_for("›○ specs/median-2.md", Duration::from_secs(5));
    pane.keys(&["s"]);
    pane.wait_for("Skip specs/median-2.md?", Duration::from_secs(5));
    pane.keys(&["y"]);
    pane.wait_for("skipping specs/median-2.md", Duration::from_secs(5));
    // The one running, in the middle of the Artisan's call: the call is not waited for.
    pane.keys(&["f"]);
    pane.wait_for("›→ specs/median-0.md", Duration::from_secs(5));
    pane.keys(&["s"]);
    pane.keys(&["y"]);
    let skipped = std::time::Instant::now();
    let screen = pane.wait_for("✓ specs/median-1.md", Duration::from_secs(60));
    assert!(
        skipped.elapsed() < Duration::from_secs(25),
        "the skipped call was waited for"
    );
    assert!(screen.contains("⊘ specs/median-0.md"), "{screen}");
    pane.wait_for("q to quit", Duration::from_secs(30));
    let screen = pane.wait_for("⊘ specs/median-2.md", Duration::from_secs(5));
    assert!(screen.contains("Tasks 1/3 done"), "{screen}");
    let screen = quit(&pane, 0);
    assert!(screen.contains("1 of 3 entries succeeded"), "{screen}");
    let report = batch_report(p);
    let status: Vec<&str> = report["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["status"].as_str().unwrap())
        .collect();
    assert_eq!(status, ["skipped_by_user", "success", "skipped_by_user"]);
    assert_eq!(report["entries"][0]["reason"], "skipped in the view");
    assert_eq!(report["totals"]["skipped"], 2);
    // The skipped run's session is saved, resumable; its call was abandoned, not waited for.
    let first = report["entries"][0]["sessions"][0].as_str().unwrap();
    let session = p.join(format!(".ralph/session-{first}"));
    assert_eq!(
        read_json(&session.join("state.json"))["status"],
        "interrupted"
    );
    let events = std::fs::read_to_string(session.join("events.jsonl")).unwrap();
    assert!(events.contains("abandoned as the run stopped"), "{events}");
    assert_file(p, "median_1.py", FIXED_PY);
}

/// `p` in a batch's TUI holds its runs before their next step, and `p` again lets them go on.
#[tokio::test(flavor = "multi_thread")]
async fn a_batch_in_the_tui_pauses_its_runs() {
    use super::tui::{bin, quit, Pane};
    let dir = medians(1);
    let llm = artisan_always("python", FIXED_PY).await;
    let command = format!(
        "'{}' batch specs/median-0.md --no-adversarial",
        bin().display()
    );
    let pane = Pane::start(dir.path(), &llm.openai_env(), &command, 120, 34);
    pane.wait_for("→ specs/median-0.md", Duration::from_secs(60));
    pane.keys(&["p"]);
    pane.wait_for("PAUSED", Duration::from_secs(30));
    let asked = llm.requests().await.len();
    std::thread::sleep(Duration::from_millis(800));
    assert_eq!(
        llm.requests().await.len(),
        asked,
        "nothing runs while paused"
    );
    pane.keys(&["p"]);
    pane.wait_for("✓ specs/median-0.md", Duration::from_secs(60));
    quit(&pane, 0);
    assert_eq!(batch_report(dir.path())["entries"][0]["status"], "success");
}

/// `a` in a batch's TUI stops it as Ctrl+C does: the step under way ends, its session is saved,
/// no other entry starts.
#[tokio::test(flavor = "multi_thread")]
async fn a_batch_in_the_tui_aborts_as_ctrl_c_does() {
    use super::tui::{bin, quit, Pane};
    let dir = medians(2);
    let llm = artisan_answers(slow(code("python", FIXED_PY), Duration::from_secs(30))).await;
    let command = format!(
        "'{}' batch specs/median-0.md specs/median-1.md --no-adversarial",
        bin().display()
    );
    let pane = Pane::start(dir.path(), &llm.openai_env(), &command, 120, 34);
    pane.wait_for("· generate", Duration::from_secs(60));
    let asked = std::time::Instant::now();
    pane.keys(&["a"]);
    pane.wait_for(
        "every entry under way ends its step",
        Duration::from_secs(5),
    );
    pane.keys(&["y"]);
    pane.wait_for("q to quit", Duration::from_secs(20));
    assert!(
        asked.elapsed() < Duration::from_secs(20),
        "the call was waited for"
    );
    quit(&pane, 130);
    let report = batch_report(dir.path());
    assert_eq!(report["entries"][0]["status"], "interrupted");
    assert_eq!(report["entries"][1]["status"], "interrupted");
}

/// `--ui web` on a batch: the dashboard's URL beside the lines, and the batch runs as ever.
#[tokio::test(flavor = "multi_thread")]
async fn a_batch_under_ui_web_prints_its_dashboard() {
    let dir = medians(1);
    let llm = artisan_always("python", FIXED_PY).await;
    let stderr = stderr_at(
        ralph_with_chaos(dir.path(), &llm).args([
            "batch",
            "specs/median-0.md",
            "--no-adversarial",
            "--ui",
            "web",
        ]),
        0,
    );
    assert!(
        stderr.contains("dashboard: http://127.0.0.1:") && stderr.contains("?token="),
        "{stderr}"
    );
    assert!(
        stderr.contains("batch success: 1 of 1 entries succeeded"),
        "{stderr}"
    );
}
