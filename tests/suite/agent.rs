//! Specs, the inbox and agent mode, with real git, real pytest and the mock model server.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde_json::Value;
use tempfile::TempDir;

use super::support::*;

/// `mean.py` returns the mean of all but the last value; `FIXED_MEAN` is right.
pub(super) const BROKEN_MEAN: &str =
    "def mean(values):\n    return sum(values[:-1]) / len(values)\n";
pub(super) const FIXED_MEAN: &str = "def mean(values):\n    return sum(values) / len(values)\n";
pub(super) const TEST_MEAN: &str =
    "from mean import mean\n\n\ndef test_mean():\n    assert mean([1, 2, 3]) == 2\n";
/// `mode.py` returns the first value; `FIXED_MODE` the most common.
pub(super) const BROKEN_MODE: &str = "def mode(values):\n    return values[0]\n";
pub(super) const FIXED_MODE: &str =
    "def mode(values):\n    return max(set(values), key=values.count)\n";
pub(super) const TEST_MODE: &str =
    "from mode import mode\n\n\ndef test_mode():\n    assert mode([1, 2, 2]) == 2\n";

pub(super) fn git(dir: &Path, args: &[&str]) -> String {
    let out = run_ok(Command::new("git").args(args).current_dir(dir));
    String::from_utf8_lossy(&out.stdout).to_string()
}

/// `py-median` with `mean.py` and `mode.py` beside it, each with its test, committed; specs in
/// `specs/`.
pub(super) fn project() -> TempDir {
    let dir = fixture("py-median");
    let p = dir.path();
    write(p, "mean.py", BROKEN_MEAN);
    write(p, "test_mean.py", TEST_MEAN);
    write(p, "mode.py", BROKEN_MODE);
    write(p, "test_mode.py", TEST_MODE);
    write(p, ".gitignore", "__pycache__/\n.pytest_cache/\n");
    // Each spec's model answers from the file it is shown: no recalled attempts at others.
    write_config(p, "memory:\n  enabled: false\n");
    std::fs::create_dir(p.join("specs")).unwrap();
    git(p, &["config", "user.name", "Test"]);
    git(p, &["config", "user.email", "test@example.com"]);
    git(p, &["add", "-A"]);
    git(p, &["commit", "-q", "-m", "init"]);
    dir
}

/// A spec fixing `target` (Chaos off), its tests alone run.
pub(super) fn spec(dir: &Path, name: &str, target: &str, extra: &str) {
    write(
        dir,
        &format!("specs/{name}.md"),
        &format!("---\ntargets: [{target}]\ntest_command: python3 -m pytest -q test_{target}\nadversarial: false\n{extra}---\nMake the tests of {target} pass.\n"),
    );
}

/// A model that fixes whichever file it is shown.
pub(super) fn fixer(llm: &MockLlm) {
    llm.helpful().always(
        "artisan",
        from_prompt(|prompt| {
            if prompt.contains("def mean") {
                code("python", FIXED_MEAN)
            } else if prompt.contains("def mode") {
                code("python", FIXED_MODE)
            } else {
                code("python", FIXED_PY)
            }
        }),
    );
}

/// A [`project`] and a server whose Artisan is the [`fixer`].
pub(super) async fn project_and_fixer() -> (TempDir, MockLlm) {
    let dir = project();
    let llm = MockLlm::start().await;
    fixer(&llm);
    (dir, llm)
}

pub(super) fn ralph_in(dir: &Path, llm: &MockLlm) -> assert_cmd::Command {
    ralph_with_chaos(dir, llm)
}

/// `ralph-loop status --json` in `dir`, which must succeed: what it prints.
pub(super) fn status_json(dir: &Path, llm: &MockLlm) -> Value {
    let out = ralph_in(dir, llm)
        .args(["status", "--json"])
        .assert()
        .code(0);
    serde_json::from_slice(&out.get_output().stdout).unwrap()
}

/// The three specs most tests queue, in the order they queue them.
pub(super) const FIX_THREE: [&str; 3] = [
    "specs/fix-median.md",
    "specs/fix-mean.md",
    "specs/fix-mode.md",
];

/// The three specs, `fix-mean` allowed one iteration, in the order most tests queue them.
pub(super) const THREE_MEAN_ONCE: [(&str, &str, &str); 3] = [
    ("fix-median", "median.py", ""),
    ("fix-mean", "mean.py", "max_iterations: 1\n"),
    ("fix-mode", "mode.py", ""),
];

/// Writes each spec `(name, target, extra)` (see [`spec`]) and queues them all in that order;
/// their ids.
pub(super) fn queue(dir: &Path, llm: &MockLlm, specs: &[(&str, &str, &str)]) -> Vec<String> {
    for (name, target, extra) in specs {
        spec(dir, name, target, extra);
    }
    let paths: Vec<String> = specs
        .iter()
        .map(|(name, _, _)| format!("specs/{name}.md"))
        .collect();
    let paths: Vec<&str> = paths.iter().map(String::as_str).collect();
    inbox_add(dir, llm, &paths)
}

pub(super) fn inbox_add(dir: &Path, llm: &MockLlm, specs: &[&str]) -> Vec<String> {
    let mut cmd = ralph_in(dir, llm);
    cmd.args(["inbox", "add"]).args(specs);
    let out = cmd.assert().code(0).get_output().stdout.clone();
    String::from_utf8(out)
        .unwrap()
        .lines()
        .map(|l| {
            assert!(l.starts_with("Queued: q-"), "{l}");
            l.split_whitespace().nth(1).unwrap().to_string()
        })
        .collect()
}

pub(super) fn records(dir: &Path) -> Vec<Value> {
    read_json_lines(&dir.join(".ralph/inbox.jsonl"))
}

/// Each record's status, in queue order.
pub(super) fn statuses(dir: &Path) -> Vec<String> {
    records(dir)
        .iter()
        .map(|r| r["status"].as_str().unwrap().to_string())
        .collect()
}

pub(super) fn subjects(dir: &Path) -> Vec<String> {
    git(dir, &["log", "--format=%s"])
        .lines()
        .map(String::from)
        .collect()
}

pub(super) fn agent_log(dir: &Path) -> String {
    let logs = dir.join(".ralph/logs");
    let mut all: Vec<_> = std::fs::read_dir(&logs)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .collect();
    all.sort();
    all.iter()
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect::<Vec<_>>()
        .join("")
}

#[tokio::test(flavor = "multi_thread")]
async fn the_inbox_adds_lists_removes_clears_and_answers_queries() {
    let dir = project();
    let p = dir.path();
    let llm = MockLlm::start().await;
    let ids = queue(
        p,
        &llm,
        &[
            ("fix-median", "median.py", ""),
            ("fix-mean", "mean.py", ""),
            ("fix-mode", "mode.py", ""),
        ],
    );
    assert_eq!(ids.len(), 3);
    let list = ralph_in(p, &llm).arg("inbox").assert().code(0);
    let list = stdout_of(&list);
    assert!(list.starts_with("Inbox (3 specs):\n"), "{list}");
    assert!(
        list.contains(&format!(
            "  {}  pending   specs/fix-median.md  (added just now)",
            ids[0]
        )),
        "{list}"
    );

    // A missing spec and bad front matter are refused, and nothing is queued.
    let missing = ralph_in(p, &llm)
        .args(["inbox", "add", "specs/fix-median.md", "specs/nope.md"])
        .assert()
        .code(2);
    assert!(stderr_of(&missing).contains("specs/nope.md: spec not found"));
    write(
        p,
        "specs/bad.md",
        "---\ntargets: [median.py]\nbudget: lots\n---\nx\n",
    );
    let bad = ralph_in(p, &llm)
        .args(["inbox", "add", "specs/bad.md"])
        .assert()
        .code(2);
    let stderr = stderr_of(&bad);
    assert!(
        stderr.contains("specs/bad.md:3:9: budget: invalid type"),
        "{stderr}"
    );
    assert_eq!(records(p).len(), 3);

    // An active record cannot be removed; a pending one can, by id or by spec.
    let text = std::fs::read_to_string(p.join(".ralph/inbox.jsonl")).unwrap();
    std::fs::write(
        p.join(".ralph/inbox.jsonl"),
        text.replacen("\"status\":\"pending\"", "\"status\":\"active\"", 1),
    )
    .unwrap();
    let active = ralph_in(p, &llm)
        .args(["inbox", "remove", &ids[0]])
        .assert()
        .code(2);
    assert!(stderr_of(&active).contains("is active"));
    ralph_in(p, &llm)
        .args(["inbox", "remove", &ids[1]])
        .assert()
        .code(0)
        .stdout(format!("Removed: {} specs/fix-mean.md\n", ids[1]));
    ralph_in(p, &llm)
        .args(["inbox", "remove", "specs/fix-mode.md"])
        .assert()
        .code(0)
        .stdout(format!("Removed: {} specs/fix-mode.md\n", ids[2]));
    ralph_in(p, &llm)
        .args(["inbox", "remove", "q-zzzz"])
        .assert()
        .code(2);

    inbox_add(p, &llm, &["specs/fix-mean.md", "specs/fix-mode.md"]);
    ralph_in(p, &llm)
        .args(["inbox", "clear"])
        .assert()
        .code(0)
        .stdout("Cleared 2 pending specs\n");
    let query = ralph_in(p, &llm).args(["query", "inbox"]).assert().code(0);
    let json: Value = serde_json::from_slice(&query.get_output().stdout).unwrap();
    let all = json.as_array().unwrap();
    assert_eq!(all.len(), 1, "{json}");
    assert_eq!(all[0]["id"], ids[0].as_str());
    assert_eq!(all[0]["status"], "active");
    assert_eq!(all[0]["spec"], "specs/fix-median.md");
    assert!(all[0]["added_at"].as_str().unwrap().ends_with('Z'));
}

#[tokio::test(flavor = "multi_thread")]
async fn eight_processes_adding_at_once_lose_nothing_and_share_no_id() {
    let dir = project();
    let p = dir.path();
    spec(p, "fix-median", "median.py", "");
    let llm = MockLlm::start().await;
    let children: Vec<Child> = (0..8)
        .map(|_| {
            Command::new(assert_cmd::cargo::cargo_bin("ralph-loop"))
                .args(["inbox", "add"])
                .args(std::iter::repeat_n("specs/fix-median.md", 5))
                .current_dir(p)
                .env("HOME", p)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut child in children {
        assert!(child.wait().unwrap().success());
    }
    let all = records(p);
    assert_eq!(all.len(), 40);
    let ids: std::collections::BTreeSet<&str> =
        all.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), 40, "every id is unique");
    drop(llm);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_torn_last_line_is_kept_aside_and_a_corrupt_line_stops_with_its_number() {
    let dir = project();
    let p = dir.path();
    spec(p, "fix-median", "median.py", "");
    let llm = MockLlm::start().await;
    let ids = inbox_add(p, &llm, &["specs/fix-median.md"]);
    let inbox = p.join(".ralph/inbox.jsonl");
    let good = std::fs::read_to_string(&inbox).unwrap();
    std::fs::write(&inbox, format!("{good}{{\"t\":\"inbox\",\"id\":\"q-to")).unwrap();
    let list = ralph_in(p, &llm).args(["inbox", "list"]).assert().code(0);
    let out = list.get_output();
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("Inbox (1 spec):"));
    let warning = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(
        warning.contains("cut short") && warning.contains("inbox.torn.jsonl"),
        "{warning}"
    );
    assert_eq!(std::fs::read_to_string(&inbox).unwrap(), good);
    assert_file(
        p,
        ".ralph/inbox.torn.jsonl",
        "{\"t\":\"inbox\",\"id\":\"q-to\n",
    );

    std::fs::write(&inbox, format!("not a record\n{good}")).unwrap();
    for args in [vec!["inbox"], vec!["query", "inbox"], vec!["agent"]] {
        let stderr = stderr_at(ralph_in(p, &llm).args(&args), 2);
        assert!(
            stderr.contains(".ralph/inbox.jsonl:1: not an inbox record"),
            "{args:?}: {stderr}"
        );
    }
    assert!(std::fs::read_to_string(&inbox).unwrap().contains(&ids[0]));
}

pub(super) fn spawn_agent(dir: &Path, llm: &MockLlm, args: &[&str]) -> Child {
    spawn_agent_to(dir, llm, args, Stdio::null())
}

/// `ralph-loop agent args` in `dir`, its stderr to `stderr`.
pub(super) fn spawn_agent_to(dir: &Path, llm: &MockLlm, args: &[&str], stderr: Stdio) -> Child {
    start_ralph(dir, llm, &[&["agent"], args].concat(), stderr)
}

/// `k` broken copies of the median, each with its test and a spec; the model gives the
/// half-fixed version first and the fix once it is shown the half-fixed one, so each spec takes
/// two iterations.
pub(super) fn median_specs(p: &Path, k: usize) -> Vec<String> {
    let broken = std::fs::read_to_string(p.join("median.py")).unwrap();
    let test = std::fs::read_to_string(p.join("test_median.py")).unwrap();
    let mut specs = Vec::new();
    for i in 0..k {
        write(p, &format!("median_{i}.py"), &broken);
        write(
            p,
            &format!("test_median_{i}.py"),
            &test.replace("from median import", &format!("from median_{i} import")),
        );
        spec(p, &format!("median-{i}"), &format!("median_{i}.py"), "");
        specs.push(format!("specs/median-{i}.md"));
    }
    git(p, &["add", "-A"]);
    git(p, &["commit", "-q", "-m", "medians"]);
    specs
}

/// A model that half fixes a median, then fixes the half-fixed one: two iterations a spec.
pub(super) fn two_step_fixer(llm: &MockLlm) {
    llm.helpful().always(
        "artisan",
        from_prompt(|prompt| {
            if prompt.contains("ordered[mid - 1]") {
                code("python", FIXED_PY)
            } else {
                code("python", HALF_FIXED_PY)
            }
        }),
    );
}

/// Starts `agent args` again and again, each killed with SIGKILL after a random wait of up to
/// `within`, until `kills` kills (or an agent finished everything); after each, every record is
/// still there, once. The kills made.
pub(super) fn kill_agents_at_random(
    p: &Path,
    llm: &MockLlm,
    args: &[&str],
    ids: &[String],
    kills: u64,
    within: Duration,
) -> u64 {
    use rand::Rng;
    let mut rng = rand::rng();
    let mut made = 0;
    while made < kills {
        let mut child = spawn_agent(p, llm, args);
        let wait = rng.random_range(Duration::ZERO..within);
        let start = Instant::now();
        let mut exited = false;
        while start.elapsed() < wait {
            if child.try_wait().unwrap().is_some() {
                exited = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        if !exited {
            kill(Pid::from_raw(child.id() as i32), Signal::SIGKILL).unwrap();
            made += 1;
        }
        child.wait().unwrap();
        // No record lost, none torn, none doubled: every line parses, every id once.
        let all = records(p);
        let mut seen: Vec<&str> = all.iter().map(|r| r["id"].as_str().unwrap()).collect();
        seen.sort();
        let mut want: Vec<&str> = ids.iter().map(String::as_str).collect();
        want.sort();
        assert_eq!(seen, want, "after {made} kills");
        if exited && all.iter().all(|r| r["status"] == "done") {
            // Everything finished between kills.
            break;
        }
    }
    made
}

/// After the agents of `kill_agents_at_random` and one more to the end: every median spec
/// done, committed once, in queue order, and the Artisan asked at most `per_kill` more times
/// per kill than the iterations the reports count.
pub(super) async fn assert_medians_done_once(
    p: &Path,
    llm: &MockLlm,
    ids: &[String],
    kills: u64,
    per_kill: u64,
) {
    let all = records(p);
    assert!(all.iter().all(|r| r["status"] == "done"), "{all:?}");
    let completes: Vec<String> = subjects(p)
        .into_iter()
        .filter(|s| s.starts_with("ralph: complete"))
        .rev()
        .collect();
    let want: Vec<String> = (0..ids.len())
        .map(|i| format!("ralph: complete median-{i}"))
        .collect();
    assert_eq!(completes, want, "{}", agent_log(p));
    let mut iterations = 0;
    for (i, id) in ids.iter().enumerate() {
        assert_eq!(
            std::fs::read_to_string(p.join(format!("median_{i}.py"))).unwrap(),
            FIXED_PY
        );
        let progress = read_json(&p.join(format!(".ralph/agent/{id}/progress.json")));
        iterations += progress["targets"][0]["iterations"].as_u64().unwrap();
    }
    let asked = llm.requests_of("artisan").await.len() as u64;
    eprintln!("{kills} kills; {asked} artisan calls for {iterations} iterations");
    assert!(
        asked <= iterations + per_kill * kills,
        "{asked} artisan calls for {iterations} iterations and {kills} kills"
    );
    assert!(kills >= 1);
}
