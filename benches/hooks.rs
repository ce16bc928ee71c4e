//! Hooks (issue 20): the cost of a no-op shell hook and of a no-op protocol plugin at a stage,
//! beyond spawning the same command plainly (target: under 3 ms each). Each pair runs the plain
//! spawn and the hook back to back, so both see the same machine; the overhead is the median of
//! the pairs' differences. Run with `cargo bench --bench hooks` (`RALPH_BENCH_HOOK_RUNS` sets
//! the pairs). See `docs/performance.md`.

// A benchmark that cannot set up has nothing to measure: panicking with a message is right here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "common/env.rs"]
mod env;

use std::collections::BTreeSet;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Instant;

use ralph_actors::machine::hooks::{Hook, Transition};
use ralph_actors::machine::state::StateKind;
use ralph_actors::prompt::reply::Proposal;
use ralph_loop::hooks::stages::{DeclaredHook, Shared};
use ralph_loop::hooks::{Declared, HookType, OnFailure, Stage};
use ralph_loop::process::groups::ProcessGroups;
use tokio_util::sync::CancellationToken;

const ANSWER: &str = r#"{"protocol":1,"action":"pass"}"#;

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

fn hook(kind: HookType, command: &str, stage: Stage, shared: &Arc<Shared>) -> DeclaredHook {
    DeclaredHook::new(
        Declared {
            name: "bench".into(),
            kind,
            command: command.into(),
            prompt: None,
            model: None,
            stages: BTreeSet::from([stage]),
            on_failure: OnFailure::AbortLoop,
            timeout_seconds: 30.0,
            allow_env: Vec::new(),
            reach: Default::default(),
            config: serde_json::Value::Null,
        },
        shared.clone(),
    )
}

/// `sh -c command` spawned plainly in its own group, `stdin` written and closed, waited for.
async fn plain(command: &str, stdin: &[u8], dir: &std::path::Path) -> f64 {
    let t = Instant::now();
    let mut child = tokio::process::Command::new("sh")
        .args(["-c", command])
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap();
    use tokio::io::AsyncWriteExt;
    let mut pipe = child.stdin.take().unwrap();
    let _ = pipe.write_all(stdin).await;
    drop(pipe);
    let out = child.wait_with_output().await.unwrap();
    assert!(out.status.success());
    t.elapsed().as_secs_f64() * 1e3
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let runs: usize = env::setting("RALPH_BENCH_HOOK_RUNS", 200);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("median.py"),
        "def median(v):\n    return 0\n",
    )
    .unwrap();
    // `RALPH_BENCH_HOOK_SANDBOX=1`: the hooks run in the sandbox (Landlock), through the binary
    // `RALPH_BENCH_BIN` names (or this build's).
    let sandbox = (std::env::var("RALPH_BENCH_HOOK_SANDBOX").as_deref() == Ok("1")).then(|| {
        std::env::var_os("RALPH_BENCH_BIN")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| env!("CARGO_BIN_EXE_ralph-loop").into())
    });
    let tmp = tempfile::tempdir().unwrap();
    let shared = Arc::new(Shared {
        root: dir.path().to_path_buf(),
        target: "median.py".into(),
        groups: ProcessGroups::new(),
        cancel: CancellationToken::new(),
        log: ralph_loop::hooks::log::ErrorLog::new(dir.path().join(".ralph")),
        tmp: tmp.path().to_path_buf(),
        sdk: ralph_loop::hooks::sdk::install(tmp.path()).unwrap(),
        tools: ralph_loop::hooks::stages::tools(),
        sandbox,
        _tmp: tmp,
    });
    let at = |to: StateKind| Transition {
        session: "bench",
        iteration: 1,
        from: StateKind::Recall,
        to,
        spent_usd: 0.01,
        max_cost_usd: 1.0,
        context: None,
        last_run: None,
        ended: None,
        ask: None,
    };
    let plugin_cmd = format!("cat > /dev/null; echo '{ANSWER}'");
    // The request a hook gets is about 300 bytes here; the plain spawn gets as many.
    let request = vec![b'x'; 300];
    let cases: [(&str, HookType, &str, Stage); 4] = [
        (
            "shell hook at on_before_gen",
            HookType::Shell,
            "true",
            Stage::OnBeforeGen,
        ),
        (
            "shell hook at on_after_gen (the proposal's file)",
            HookType::Shell,
            "true",
            Stage::OnAfterGen,
        ),
        (
            "protocol plugin at on_before_gen",
            HookType::Plugin,
            &plugin_cmd,
            Stage::OnBeforeGen,
        ),
        (
            "protocol plugin at on_after_gen",
            HookType::Plugin,
            &plugin_cmd,
            Stage::OnAfterGen,
        ),
    ];
    println!(
        "hooks: {runs} pairs each; overhead = median of (hook − the same command spawned plainly)"
    );
    for (what, kind, command, stage) in cases {
        let h = hook(kind, command, stage, &shared);
        let (mut diffs, mut bases, mut hooked) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..runs {
            let base = plain(command, &request, dir.path()).await;
            let t = Instant::now();
            match stage {
                Stage::OnAfterGen => {
                    let mut proposal = Proposal {
                        code: Some("def median(v):\n    return 1\n".into()),
                        reply: String::new(),
                    };
                    h.amend(&at(StateKind::Check), &mut proposal).await.unwrap();
                }
                _ => h.on_transition(&at(StateKind::Generate)).await.unwrap(),
            }
            let ms = t.elapsed().as_secs_f64() * 1e3;
            diffs.push(ms - base);
            bases.push(base);
            hooked.push(ms);
        }
        println!(
            "hooks: {what}: {:.2} ms against {:.2} ms plainly: overhead {:.2} ms (p90 of the differences {:.2} ms)",
            median(hooked.clone()),
            median(bases.clone()),
            median(diffs.clone()),
            {
                let mut d = diffs.clone();
                d.sort_by(f64::total_cmp);
                d[d.len() * 9 / 10]
            }
        );
        println!(
            "{}",
            serde_json::json!({
                "case": what,
                "hook_ms": median(hooked),
                "plain_ms": median(bases),
                "overhead_ms": median(diffs),
            })
        );
    }
}
