//! Agent mode with `--parallel` (each spec in its own git worktree, landing in queue order) and
//! `--watch` (specs added later picked up), with real git, real pytest and the mock server.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde_json::Value;
use tempfile::TempDir;

use super::agent::*;
use super::support::*;

/// `project()` whose agent makes its worktrees in a folder of the test's own.
fn parallel_project() -> (TempDir, TempDir) {
    let dir = project();
    let trees = tempfile::tempdir().unwrap();
    let p = dir.path();
    write_config(
        p,
        &format!(
            "memory:\n  enabled: false\nagent:\n  worktrees: {}\n",
            trees.path().display()
        ),
    );
    git(p, &["commit", "-q", "-am", "worktrees of the test's own"]);
    (dir, trees)
}

fn entries(dir: &Path) -> usize {
    std::fs::read_dir(dir).map_or(0, |d| d.count())
}

fn position(log: &str, needle: &str) -> usize {
    log.find(needle)
        .unwrap_or_else(|| panic!("{needle} not in\n{log}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn parallel_specs_run_in_worktrees_and_land_in_queue_order() {
    let (dir, trees) = parallel_project();
    let p = dir.path();
    // The first spec's model is slow: the third finishes first, and waits for it to land.
    let llm = artisan_answers(if_prompt(
        "def median",
        slow(code("python", FIXED_PY), Duration::from_secs(3)),
        from_prompt(|prompt| {
            if prompt.contains("def mean") {
                code("python", "def mean(values):\n    return 0\n")
            } else {
                code("python", FIXED_MODE)
            }
        }),
    ))
    .await;
    // The fourth, on the same file as the first: it waits for the first to land, then starts
    // from its fix.
    let specs = [&THREE_MEAN_ONCE[..], &[("median-again", "median.py", "")]].concat();
    let ids = queue(p, &llm, &specs);
    // Installed dependencies the worktrees link to, and must never remove.
    std::fs::create_dir_all(p.join("node_modules/pkg")).unwrap();
    write(p, "node_modules/pkg/index.js", "module.exports = 1;\n");
    write(
        p,
        ".gitignore",
        "__pycache__/\n.pytest_cache/\nnode_modules/\n",
    );
    git(p, &["commit", "-q", "-am", "ignore node_modules"]);

    let stderr = stderr_at(ralph_in(p, &llm).args(["agent", "--parallel", "3"]), 1);
    let log = agent_log(p);
    assert!(
        stderr.contains("agent: Inbox empty. Agent stopping."),
        "{stderr}"
    );
    // Runs side by side say their lines on stderr, each named by its spec.
    assert!(
        stderr.contains(&format!("agent: RUN {}: starting iteration 1", ids[2])),
        "{stderr}"
    );

    // Commits in queue order, whatever order the runs finished in.
    let completes: Vec<String> = subjects(p)
        .into_iter()
        .filter(|s| s.starts_with("ralph: "))
        .collect();
    assert_eq!(
        completes,
        [
            "ralph: complete median-again",
            "ralph: complete fix-mode",
            "ralph: complete fix-median"
        ],
        "{log}"
    );
    let mode_done = position(&log, &format!("RUN {}: success", ids[2]));
    let median_commit = position(&log, "\"ralph: complete fix-median\"");
    assert!(mode_done < median_commit, "{log}");
    // The spec on the same file started only once the first had landed.
    let again_runs = position(&log, &format!("RUN {}: ", ids[3]));
    assert!(median_commit < again_runs, "{log}");
    assert_eq!(
        git(p, &["show", "--format=", "--name-only", "HEAD~1"]),
        "mode.py\n"
    );

    // The tree holds each fix; the failure's work is in a stash and under its ref.
    assert_file(p, "median.py", FIXED_PY);
    assert_file(p, "mode.py", FIXED_MODE);
    assert_file(p, "mean.py", BROKEN_MEAN);
    assert!(git(p, &["stash", "list"]).contains("ralph: failed fix-mean"));
    assert_eq!(
        git(
            p,
            &["show", &format!("refs/ralph/failed/{}:mean.py", ids[1])]
        ),
        "def mean(values):\n    return 0\n"
    );
    assert_eq!(statuses(p), ["done", "failed", "done", "done"]);

    // No worktree is left, and their links took nothing of the project's with them.
    assert_eq!(entries(trees.path()), 0);
    assert_eq!(git(p, &["worktree", "list"]).lines().count(), 1);
    assert!(p.join("node_modules/pkg/index.js").is_file());
    assert_eq!(git(p, &["status", "--porcelain"]), "?? specs/\n");
}

fn wait_for(what: &str, done: impl FnMut() -> bool) {
    wait_saying(what, done, String::new);
}

/// [`wait_for`], saying `log()` (what the process printed) when the wait fails.
fn wait_saying(what: &str, mut done: impl FnMut() -> bool, log: impl Fn() -> String) {
    let start = Instant::now();
    while !done() {
        assert!(
            start.elapsed() < Duration::from_secs(90),
            "waited for {what}:\n{}",
            log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// CPU time (user + system) of process `pid` so far, in clock ticks.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn watch_picks_up_specs_added_later_and_idles_without_spinning() {
    let (dir, llm) = project_and_fixer().await;
    let p = dir.path();
    spec(p, "fix-median", "median.py", "");
    spec(p, "fix-mode", "mode.py", "");
    let err = tempfile::NamedTempFile::new().unwrap();
    let stderr = Stdio::from(std::fs::File::create(err.path()).unwrap());
    let mut child = spawn_agent_to(p, &llm, &["--watch"], stderr);
    let said = || std::fs::read_to_string(err.path()).unwrap();
    wait_for("the agent to watch", || said().contains("watching it"));

    // Idle: the process sleeps on the notification, it does not poll.
    let before = cpu_ticks(child.id());
    std::thread::sleep(Duration::from_secs(2));
    let idle = cpu_ticks(child.id()) - before;
    assert!(idle <= 5, "{idle} ticks of CPU in 2 s of idling");

    // A spec added by another process is picked up and committed, then another, each added
    // once the agent watches again (added earlier, the second is fetched without a wait).
    inbox_add(p, &llm, &["specs/fix-median.md"]);
    wait_saying(
        "the first commit",
        || subjects(p).contains(&"ralph: complete fix-median".to_string()),
        said,
    );
    wait_saying(
        "the agent to watch after the first",
        || said().matches("watching it").count() >= 2,
        said,
    );
    inbox_add(p, &llm, &["specs/fix-mode.md"]);
    wait_saying(
        "the second commit",
        || subjects(p).contains(&"ralph: complete fix-mode".to_string()),
        said,
    );
    wait_saying(
        "the agent to watch again",
        || said().matches("watching it").count() >= 3,
        said,
    );
    assert!(child.try_wait().unwrap().is_none(), "{}", said());

    // Ctrl+C while it waits ends the session cleanly.
    kill(Pid::from_raw(child.id() as i32), Signal::SIGINT).unwrap();
    assert_eq!(wait_exit(&mut child, Duration::from_secs(30)), 0);
    assert!(said().contains("Stopped watching the inbox"), "{}", said());
    assert!(!p.join(".ralph/agent-session.json").exists());
    assert_eq!(statuses(p), ["done", "done"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn ctrl_c_pauses_every_parallel_spec_and_a_restart_finishes_them_in_their_worktrees() {
    let (dir, trees) = parallel_project();
    let p = dir.path();
    // Each first fix is slow and not yet right.
    let llm = artisan_answers(if_prompt(
        "def median",
        slow(code("python", HALF_FIXED_PY), Duration::from_secs(3)),
        slow(
            code("python", "def mode(values):\n    return values[-3]\n"),
            Duration::from_secs(3),
        ),
    ))
    .await;
    let ids = queue(
        p,
        &llm,
        &[("fix-median", "median.py", ""), ("fix-mode", "mode.py", "")],
    );
    let mut child = spawn_agent(p, &llm, &["--parallel", "2"]);
    wait_for("both specs' first call", || {
        futures::executor::block_on(llm.requests_of("artisan")).len() >= 2
    });
    kill(Pid::from_raw(child.id() as i32), Signal::SIGINT).unwrap();
    assert_eq!(wait_exit(&mut child, Duration::from_secs(60)), 130);

    // Both finished their iteration in their worktrees; the tree is untouched.
    assert_eq!(entries(trees.path()), 2);
    assert_eq!(git(p, &["status", "--porcelain"]), "?? specs/\n");
    let statuses: Vec<Value> = records(p).iter().map(|r| r["status"].clone()).collect();
    assert_eq!(statuses, ["pending", "pending"]);
    let session = read_json(&p.join(".ralph/agent-session.json"));
    assert_eq!(session["in_flight"], serde_json::json!(ids));
    let progress = read_json(&p.join(format!(".ralph/agent/{}/progress.json", ids[0])));
    let tree = progress["worktree"]["path"].as_str().unwrap().to_string();
    assert_file(Path::new(&tree), "median.py", HALF_FIXED_PY);

    // Meanwhile the user edits mode.py in the tree: that spec's fix must not overwrite it.
    let mine = "def mode(values):\n    return values[0]  # mine\n";
    write(p, "mode.py", mine);

    // The restart goes on in the same worktrees, though it runs one spec at a time: one more
    // iteration each, none redone.
    fixer(&llm);
    ralph_in(p, &llm)
        .args(["agent", "--allow-dirty"])
        .assert()
        .code(1);
    assert_eq!(subjects(p)[0], "ralph: complete fix-median");
    for id in &ids {
        let progress = read_json(&p.join(format!(".ralph/agent/{id}/progress.json")));
        assert_eq!(progress["targets"][0]["iterations"], 2, "{progress}");
    }
    assert_eq!(llm.requests_of("artisan").await.len(), 4);
    let log = agent_log(p);
    assert!(
        log.contains(&format!("FETCH: {} specs/fix-median.md (resumed)", ids[0])),
        "{log}"
    );

    // The edit stays; the spec's fix is kept under its ref, and the record says why.
    assert_eq!(std::fs::read_to_string(p.join("mode.py")).unwrap(), mine);
    assert_eq!(
        git(
            p,
            &["show", &format!("refs/ralph/failed/{}:mode.py", ids[1])]
        ),
        FIXED_MODE
    );
    let error = records(p)[1]["error"].as_str().unwrap().to_string();
    assert!(
        error.contains("mode.py changed in the tree while the spec ran in its worktree"),
        "{error}"
    );
    assert_eq!(entries(trees.path()), 0);
    assert_eq!(
        git(p, &["status", "--porcelain"]),
        " M mode.py\n?? specs/\n"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn kill_9_of_a_parallel_agent_loses_nothing_and_commits_each_spec_once_in_order() {
    let (dir, trees) = parallel_project();
    let p = dir.path();
    let llm = MockLlm::start().await;
    two_step_fixer(&llm);
    let specs = median_specs(p, 12);
    let refs: Vec<&str> = specs.iter().map(String::as_str).collect();
    let ids = inbox_add(p, &llm, &refs);
    let args = ["--parallel", "3"];
    let kills = kill_agents_at_random(p, &llm, &args, &ids, 25, Duration::from_millis(2000));
    ralph_in(p, &llm).arg("agent").args(args).assert().code(0);
    // Each kill redid at most the iterations under way: three at once.
    assert_medians_done_once(p, &llm, &ids, kills, 3).await;
    assert_eq!(entries(trees.path()), 0);
    assert_eq!(git(p, &["worktree", "list"]).lines().count(), 1);
}
