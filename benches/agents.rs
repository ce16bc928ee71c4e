//! Coding agents (issue 19): reading their output, the status-block scanner over 100 MB of agent
//! text (target: over 200 MB/s) and the whole path from Claude Code's stream-JSON lines through
//! its reader to the scanner, beside the least any line reader costs (finding the line breaks
//! of the same bytes); running them, a supervised run's overhead beyond the agent's own (the
//! same script run plainly) and how soon after its hang timeout a hung agent is stopped
//! (target: within 1 s). Run with `cargo bench --bench agents` (`RALPH_BENCH_AGENT_MB` sets the
//! size, `RALPH_BENCH_AGENT_RUNS` the runs; `RALPH_BENCH_BIN` another build of the binary for
//! the Regent's overhead, and `RALPH_BENCH_AGENT_ONLY=regent` that part alone). See
//! `docs/performance.md`.

// A benchmark that cannot set up has nothing to measure: panicking with a message is right here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use ralph_actors::schema::agent::AgentEvent;
use ralph_actors::tracker::status::{Found, StatusScanner};
use ralph_loop::agents::invoke::{invoke, AgentEnding, Limits};
use ralph_loop::agents::output::Format;
use ralph_loop::process::groups::ProcessGroups;

#[path = "common/env.rs"]
mod env;
#[path = "../tests/suite/agent_script.rs"]
mod agent_script;

/// The limits of the benchmark's agent runs, with `hang`.
fn limits(hang: Duration) -> Limits {
    Limits {
        hang,
        active: Duration::from_secs(60),
        result_grace: Duration::from_secs(5),
        max_output_bytes: 1 << 20,
    }
}

/// What an agent prints over an iteration: prose, code, tool output, now and then a status
/// block and a completion indicator, and one long line (a JSON blob) in a hundred.
fn agent_text(bytes: usize) -> String {
    let mut out = String::with_capacity(bytes + 4096);
    let mut i = 0usize;
    while out.len() < bytes {
        match i % 100 {
            0 => out.push_str(
                "---RALPH_STATUS---\nSTATUS: IN_PROGRESS\nTASKS_COMPLETED_THIS_LOOP: 1\nFILES_MODIFIED: 2\nTESTS_STATUS: FAILING\nWORK_TYPE: IMPLEMENTATION\nEXIT_SIGNAL: false\nRECOMMENDATION: go on with the parser\n---END_RALPH_STATUS---\n",
            ),
            37 => out.push_str("All tasks are complete for this part of the work.\n"),
            50 => {
                out.push_str("{\"blob\":\"");
                out.push_str(&"QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo".repeat(60));
                out.push_str("\"}\n");
            }
            n if n % 3 == 0 => out.push_str(&format!(
                "    let value_{i} = parse(&input[{i}..]).map_err(|e| Error::at({i}, e))?;\n"
            )),
            n if n % 3 == 1 => out.push_str(&format!(
                "I am reading src/module_{i}.rs to see how the tokens are counted before the edit.\n"
            )),
            _ => out.push_str(&format!(
                "tests/test_{i}.py::test_case PASSED                                        [ {}%]\n",
                i % 100
            )),
        }
        i += 1;
    }
    out
}

/// The same text as Claude Code's stream-JSON: an assistant event per ten lines.
fn claude_stream(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 5 / 4);
    let lines: Vec<&str> = text.lines().collect();
    for (n, chunk) in lines.chunks(10).enumerate() {
        let event = serde_json::json!({
            "type": "assistant",
            "message": {
                "id": format!("msg_{n}"),
                "content": [{"type": "text", "text": chunk.join("\n")}],
                "usage": {"input_tokens": 1000, "output_tokens": 200}
            },
            "session_id": "s"
        });
        out.push_str(&event.to_string());
        out.push('\n');
    }
    out
}

fn mb_per_s(bytes: usize, took: Duration) -> f64 {
    bytes as f64 / 1e6 / took.as_secs_f64()
}

/// The best of `rounds` timings of `f`.
fn best<T>(rounds: usize, mut f: impl FnMut() -> T) -> (Duration, T) {
    let mut best = Duration::MAX;
    let mut last = None;
    for _ in 0..rounds {
        let t = Instant::now();
        let out = f();
        best = best.min(t.elapsed());
        last = Some(out);
    }
    (best, last.expect("one round at least"))
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

/// A supervised run against the same script run plainly, and the hang detection's latency.
fn running(runs: usize) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let result = r#"{"type":"result","subtype":"success","is_error":false,"result":"Done.\n---RALPH_STATUS---\nSTATUS: COMPLETE\nEXIT_SIGNAL: true\n---END_RALPH_STATUS---","total_cost_usd":0.02}"#;
    let body = format!("cat > /dev/null\nprintf '%s\\n' '{result}'");
    let groups = ProcessGroups::new();
    let (mut plain, mut supervised) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        let run = agent_script::scripted(dir.path(), &body, limits(Duration::from_secs(30)));
        let t = Instant::now();
        let out = std::process::Command::new(&run.binary)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert!(out.status.success());
        plain.push(t.elapsed().as_secs_f64() * 1e3);
        let t = Instant::now();
        let outcome = rt
            .block_on(invoke(run, Default::default(), &groups, |_| {}))
            .unwrap();
        assert_eq!(outcome.ending, AgentEnding::Exited(Some(0)));
        supervised.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let paired: Vec<f64> = supervised.iter().zip(&plain).map(|(s, p)| s - p).collect();
    eprintln!(
        "agents: a supervised run {:.2} ms against {:.2} ms for the script alone: overhead {:.2} ms (median of {runs} pairs, max {:.2})",
        median(supervised.clone()),
        median(plain.clone()),
        median(paired.clone()),
        paired.iter().copied().fold(f64::MIN, f64::max),
    );
    let hang = Duration::from_millis(500);
    let mut late = Vec::new();
    for _ in 0..runs.min(10) {
        let run = agent_script::scripted(dir.path(), "cat > /dev/null\nsleep 30", limits(hang));
        let outcome = rt
            .block_on(invoke(run, Default::default(), &groups, |_| {}))
            .unwrap();
        assert_eq!(outcome.ending, AgentEnding::Hung);
        late.push((outcome.duration.as_secs_f64() - hang.as_secs_f64()) * 1e3);
    }
    eprintln!(
        "agents: a hung agent stopped {:.0} ms after its hang timeout (median of {}, max {:.0})",
        median(late.clone()),
        late.len(),
        late.iter().copied().fold(f64::MIN, f64::max)
    );
    println!(
        "{}",
        serde_json::json!({
            "supervised_run_ms": median(supervised),
            "plain_run_ms": median(plain),
            "supervision_overhead_ms": median(paired),
            "hang_latency_ms": median(late),
        })
    );
}

fn main() {
    if !env::benchmarking("agents") {
        return;
    }
    let runs: usize = env::setting("RALPH_BENCH_AGENT_RUNS", 30);
    let mb: usize = env::setting("RALPH_BENCH_AGENT_MB", 100);
    // `RALPH_BENCH_AGENT_ONLY=regent`: only the Regent's overhead, which times the binary
    // (`RALPH_BENCH_BIN`) and not this harness's code.
    if std::env::var("RALPH_BENCH_AGENT_ONLY").as_deref() == Ok("regent") {
        regent(runs.min(20));
        return;
    }
    let text = agent_text(mb << 20);
    let bytes = text.as_bytes();

    let (newlines, count) = best(3, || memchr::memchr_iter(b'\n', bytes).count());
    let (lines, _) = best(3, || black_box(text.lines().count()));
    let (scan, found) = best(3, || {
        let mut scanner = StatusScanner::new();
        let mut found = Vec::new();
        // As a pipe delivers it: 16 KiB at a time, cut anywhere.
        for piece in bytes.chunks(16 * 1024) {
            scanner.feed(piece, &mut found);
        }
        scanner.finish(&mut found);
        found
    });
    let blocks = found
        .iter()
        .filter(|f| matches!(f, Found::Block(_)))
        .count();
    let indicators = found
        .iter()
        .filter(|f| matches!(f, Found::Indicator(_)))
        .count();
    eprintln!(
        "agents: {:.0} MB of agent text, {count} lines, {blocks} status blocks, {indicators} indicators",
        bytes.len() as f64 / 1e6
    );
    eprintln!(
        "agents: status scanner {:.0} MB/s ({:.0} ms); baseline: line breaks (memchr) {:.0} MB/s, str::lines {:.0} MB/s",
        mb_per_s(bytes.len(), scan),
        scan.as_secs_f64() * 1e3,
        mb_per_s(bytes.len(), newlines),
        mb_per_s(bytes.len(), lines),
    );

    let stream = claude_stream(&text);
    let (whole, events) = best(3, || {
        let mut reader = Format::ClaudeStreamJson.reader();
        let mut scanner = StatusScanner::new();
        let mut events = Vec::new();
        let mut found = Vec::new();
        let mut count = 0usize;
        for line in stream.lines() {
            reader.line(line, &mut events);
            for event in events.drain(..) {
                if let AgentEvent::Text { text } = event {
                    scanner.feed(text.as_bytes(), &mut found);
                    scanner.feed(b"\n", &mut found);
                }
                count += 1;
            }
        }
        scanner.finish(&mut found);
        (count, found.len())
    });
    eprintln!(
        "agents: Claude stream-JSON through its reader and the scanner: {:.0} MB/s over {:.0} MB ({} events, {} found)",
        mb_per_s(stream.len(), whole),
        stream.len() as f64 / 1e6,
        events.0,
        events.1
    );
    println!(
        "{}",
        serde_json::json!({
            "agent_text_mb": bytes.len() as f64 / 1e6,
            "status_scanner_mb_per_s": mb_per_s(bytes.len(), scan),
            "baseline_memchr_mb_per_s": mb_per_s(bytes.len(), newlines),
            "baseline_lines_mb_per_s": mb_per_s(bytes.len(), lines),
            "claude_stream_mb_per_s": mb_per_s(stream.len(), whole),
            "status_blocks": blocks,
            "indicators": indicators,
        })
    );
    running(runs);
    regent(runs.min(20));
}

/// The Regent's overhead per iteration beyond the agent's own run and the tests': `ralph-loop
/// loop` over `iterations` iterations of an agent that only answers, against the same agent
/// script and test command run plainly as many times (and the binary's start-up once), in the
/// same git repository. Twice: an agent that changes nothing, and one that changes a file each
/// iteration (so each iteration also makes a commit); the latter also against the plain loop
/// that commits too (`git add -A && git commit`, as a shell Ralph loop does), so the commit
/// git itself takes is told apart from what the Regent adds around it.
fn regent(iterations: usize) {
    // Another build of ralph-loop (a release one, measured with a debug harness) when named.
    let bin = std::env::var_os("RALPH_BENCH_BIN")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_ralph-loop").into());
    for changes in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("project");
        let bindir = dir.path().join("bin");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(&bindir).unwrap();
        let result = r#"{"type":"result","subtype":"success","is_error":false,"result":"Working.","total_cost_usd":0.001}"#;
        let edit = if changes {
            "date +%s%N > work.txt\n"
        } else {
            ""
        };
        let agent = bindir.join("bench-agent");
        std::fs::write(
            &agent,
            format!("#!/bin/sh\ncat > /dev/null\n{edit}printf '%s\\n' '{result}'\n"),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::write(root.join("PROMPT.md"), "Work.\n").unwrap();
        std::fs::write(root.join(".gitignore"), ".ralph/\n").unwrap();
        std::fs::write(
            root.join("ralph.config.yaml"),
            format!(
                "testing:\n  command: \"true\"\n  mode: report\nbudgets:\n  max_iterations: {iterations}\nregent:\n  agent: bench\n  breaker:\n    half_open_after: 100000\n    open_after: 100000\n    same_error: 100000\n    tests_failing: 100000\nagents:\n  - name: bench\n    binaries: [bench-agent]\n    args: []\n    format: claude-stream-json\n    reports_cost: true\n"
            ),
        )
        .unwrap();
        let git = |args: &[&str]| {
            let ok = std::process::Command::new("git")
                .args(args)
                .current_dir(&root)
                .output()
                .unwrap()
                .status
                .success();
            assert!(ok, "git {args:?}");
        };
        git(&["init", "-q", "-b", "main"]);
        git(&["config", "user.email", "b@example.com"]);
        git(&["config", "user.name", "B"]);
        git(&["add", "-A"]);
        git(&["commit", "-q", "-m", "init"]);
        let path = format!("{}:/usr/bin:/bin", bindir.display());
        let (mut looped, mut plain, mut plain_git) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..5 {
            let _ = std::fs::remove_dir_all(root.join(".ralph"));
            let t = Instant::now();
            let out = std::process::Command::new(&bin)
                .args(["loop", "PROMPT.md", "--output", "json"])
                .current_dir(&root)
                .env("PATH", &path)
                .output()
                .unwrap();
            looped.push(t.elapsed().as_secs_f64() * 1e3);
            assert_eq!(
                out.status.code(),
                Some(4),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            plain.push(plain_loop(&bin, &agent, &root, iterations, false));
            if changes {
                plain_git.push(plain_loop(&bin, &agent, &root, iterations, true));
            }
        }
        let per = |ms: f64| ms / iterations as f64;
        let overhead = per(median(looped.clone()) - median(plain.clone()));
        let what = if changes {
            "a file changed and committed each iteration"
        } else {
            "no change"
        };
        eprintln!(
            "agents: the Regent, {iterations} iterations ({what}): {:.1} ms against {:.1} ms for the agent and the tests run plainly: {overhead:.2} ms per iteration (median of 5)",
            median(looped.clone()),
            median(plain.clone()),
        );
        let beyond_git = (!plain_git.is_empty()).then(|| {
            let beyond = per(median(looped.clone()) - median(plain_git.clone()));
            eprintln!(
                "agents: the Regent, {iterations} iterations ({what}): {:.1} ms against {:.1} ms for the agent, the tests and `git add -A && git commit` run plainly: {beyond:.2} ms per iteration (median of 5)",
                median(looped.clone()),
                median(plain_git.clone()),
            );
            beyond
        });
        println!(
            "{}",
            serde_json::json!({
                "regent_changes": changes,
                "regent_iterations": iterations,
                "regent_loop_ms": median(looped),
                "regent_plain_ms": median(plain),
                "regent_overhead_per_iteration_ms": overhead,
                "regent_plain_with_commit_ms": (!plain_git.is_empty()).then(|| median(plain_git)),
                "regent_overhead_beyond_commit_per_iteration_ms": beyond_git,
            })
        );
    }
}

/// The loop without ralph-loop, timed in ms: the binary's start-up once, then the tests once
/// before the first iteration and, after each run of the agent, again; with `commit`, each
/// iteration ends with `git add -A && git commit`.
fn plain_loop(
    bin: &std::path::Path,
    agent: &std::path::Path,
    root: &std::path::Path,
    iterations: usize,
    commit: bool,
) -> f64 {
    let t = Instant::now();
    let version = std::process::Command::new(bin)
        .arg("--version")
        .output()
        .unwrap();
    assert!(version.status.success());
    // The tests run once before the first iteration and once after each.
    for i in 0..=iterations {
        if i > 0 {
            let mut child = std::process::Command::new(agent)
                .current_dir(root)
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap();
            use std::io::Write;
            child.stdin.take().unwrap().write_all(b"Work.\n").unwrap();
            assert!(child.wait().unwrap().success());
        }
        sh(root, "true");
        if commit && i > 0 {
            sh(root, "git add -A && git commit -q -m 'Iteration'");
        }
    }
    t.elapsed().as_secs_f64() * 1e3
}

/// Runs `script` with `sh -c` in `root`, as a loop runs the tests and commits; it must succeed.
fn sh(root: &std::path::Path, script: &str) {
    let status = std::process::Command::new("sh")
        .args(["-c", script])
        .current_dir(root)
        .status()
        .unwrap();
    assert!(status.success(), "sh -c {script}");
}
