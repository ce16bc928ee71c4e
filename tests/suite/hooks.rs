//! Lifecycle hooks and plugins in the fix loop: each stage fires once per occasion with its
//! context, a formatter changes the written file, a veto keeps the run from succeeding and its
//! reasons reach the Artisan, each failure mode, a crashing, hanging, garbage-printing or flooding
//! plugin, a disabled plugin, and bad declarations refused with their file and line.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::support::*;

const WRONG_PY: &str = "def median(values):\n    return 0\n";

/// Writes the config `yaml`, trusts its hooks and fixes `median.py` (wrong first, then right
/// unless `right_first`), hooks writing what they get under `out`; the exit code and the report.
fn fix(dir: &Path, llm: &MockLlm, yaml: &str, out: &Path) -> (i32, Value) {
    write(dir, "ralph.config.yaml", yaml);
    trust_hooks(dir);
    let assert = ralph(dir, llm)
        .env("HOOK_OUT", out)
        .args(["median.py", "--output", "json"])
        .assert();
    let code = assert.get_output().status.code().unwrap_or(-1);
    (code, report(dir))
}

/// Where the tests' hooks write what they get: in the project, which the sandbox lets them
/// write.
fn out_dir(project: &Path) -> std::path::PathBuf {
    let out = project.join(".hook-out");
    std::fs::create_dir_all(&out).unwrap();
    out
}

/// A `py-median` project, the folder its hooks write to (see [`out_dir`]), and a server whose
/// Artisan answers as `artisan` scripts it.
async fn project(artisan: fn(&MockLlm)) -> (tempfile::TempDir, std::path::PathBuf, MockLlm) {
    let dir = fixture("py-median");
    let out = out_dir(dir.path());
    let llm = MockLlm::start().await;
    artisan(&llm);
    (dir, out, llm)
}

/// Runs [`fix`] and asserts the run succeeded; its report.
fn fixed(dir: &Path, llm: &MockLlm, yaml: &str, out: &Path) -> Value {
    let (code, report) = fix(dir, llm, yaml, out);
    assert_eq!(code, 0, "{report:#}");
    report
}

fn fixes_at_once(llm: &MockLlm) {
    llm.helpful()
        .always("artisan", text(code("python", FIXED_PY)));
}

fn two_tries(llm: &MockLlm) {
    llm.helpful().script(
        "artisan",
        [
            text(code("python", WRONG_PY)),
            text(code("python", FIXED_PY)),
        ],
    );
}

/// Asserts some warning names `name` and says `what`.
fn warned(w: &[String], name: &str, what: &str) {
    assert!(
        w.iter().any(|w| w.contains(name) && w.contains(what)),
        "{name}, {what}: {w:?}"
    );
}

/// The Artisan's prompts, in order.
async fn artisan_prompts(llm: &MockLlm) -> Vec<String> {
    llm.requests_of("artisan")
        .await
        .iter()
        .map(user_prompt)
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn each_stage_fires_once_per_occasion_with_its_context() {
    let (dir, out, llm) = project(two_tries).await;
    let record = r#"cat > "$HOOK_OUT/$RALPH_STAGE-$ITERATION.json""#;
    let yaml: String = [
        "on_before_gen",
        "on_after_gen",
        "on_test_fail",
        "on_before_success",
        "on_success",
    ]
    .iter()
    .map(|s| {
        format!(
            "  {s}:\n    - type: shell\n      command: '{record}'\n      on_failure: abort_loop\n"
        )
    })
    .collect();
    let report = fixed(dir.path(), &llm, &format!("hooks:\n{yaml}"), &out);
    assert_eq!(report["iterations"], 2);
    let mut fired: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    fired.sort();
    assert_eq!(
        fired,
        [
            "on_after_gen-1.json",
            "on_after_gen-2.json",
            "on_before_gen-1.json",
            "on_before_gen-2.json",
            "on_before_success-2.json",
            "on_success-2.json",
            "on_test_fail-1.json",
        ]
    );
    let got = |name: &str| read_json(&out.join(name));
    let after = got("on_after_gen-1.json");
    assert_eq!(after["protocol"], 1);
    assert_eq!(after["stage"], "on_after_gen");
    assert_eq!(after["target"], "median.py");
    assert_eq!(after["language"], "python");
    assert_eq!(
        after["code"], WRONG_PY,
        "the proposal, before it is written"
    );
    assert!(after["budget"]["max_cost_usd"].as_f64().unwrap() > 0.0);
    let failed = got("on_test_fail-1.json");
    assert!(
        failed["tests"]["failed"].as_u64().unwrap() > 0,
        "{failed:#}"
    );
    assert_eq!(failed["tests"]["criteria_met"], false);
    assert!(!failed["tests"]["failures"].as_array().unwrap().is_empty());
    assert_eq!(failed["code"], WRONG_PY, "the file as written");
    let gate = got("on_before_success-2.json");
    assert_eq!(gate["tests"]["criteria_met"], true);
    let done = got("on_success-2.json");
    assert_eq!(done["code"], FIXED_PY);
    assert_eq!(done["session_id"], report["session_id"]);
    assert_file(dir.path(), "median.py", FIXED_PY);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_shell_formatter_changes_the_written_file() {
    let (dir, out, llm) = project(fixes_at_once).await;
    let yaml = "hooks:\n  on_after_gen:\n    - type: shell\n      name: stamp\n      command: printf '# formatted\\n' >> \"$RALPH_PROPOSAL_FILE\"\n      on_failure: warn_continue\n";
    fixed(dir.path(), &llm, yaml, &out);
    assert_file(dir.path(), "median.py", format!("{FIXED_PY}# formatted\n"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_veto_keeps_the_run_from_succeeding_and_its_reasons_reach_the_artisan() {
    let (dir, out, llm) = project(fixes_at_once).await;
    // Vetoes once (exit 2, the reason on stderr), then passes.
    let yaml = "hooks:\n  on_before_success:\n    - type: shell\n      name: docs\n      command: 'if [ ! -f \"$HOOK_OUT/vetoed\" ]; then touch \"$HOOK_OUT/vetoed\"; echo \"median needs a docstring\" >&2; exit 2; fi'\n      on_failure: abort_loop\n";
    let report = fixed(dir.path(), &llm, yaml, &out);
    assert_eq!(report["iterations"], 2, "the veto cost an iteration");
    let prompts = artisan_prompts(&llm).await;
    assert_eq!(prompts.len(), 2);
    assert!(!prompts[0].contains("median needs a docstring"));
    assert!(
        prompts[1].contains("median needs a docstring"),
        "{}",
        prompts[1]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn warn_continue_logs_the_failure_and_the_run_goes_on() {
    let (dir, out, llm) = project(two_tries).await;
    let yaml = "hooks:\n  on_before_gen:\n    - type: shell\n      name: lint-db\n      command: echo 'lint db missing' >&2; exit 1\n      on_failure: warn_continue\n";
    let report = fixed(dir.path(), &llm, yaml, &out);
    let warned: Vec<String> = warnings(&report)
        .into_iter()
        .filter(|w| w.contains("lint-db"))
        .collect();
    assert_eq!(warned.len(), 2, "once an iteration: {warned:?}");
    assert!(
        warned[0].contains("exited with 1: lint db missing"),
        "{warned:?}"
    );
    let log = std::fs::read_to_string(dir.path().join(".ralph/plugin-errors.log")).unwrap();
    assert_eq!(
        log.matches("lint-db at on_before_gen: exited with 1")
            .count(),
        2,
        "{log}"
    );
    assert!(log.contains("    lint db missing"), "{log}");
    // Nothing reached the Artisan.
    assert!(artisan_prompts(&llm)
        .await
        .iter()
        .all(|p| !p.contains("lint db missing")));
}

#[tokio::test(flavor = "multi_thread")]
async fn ask_agent_puts_the_failure_in_the_artisans_next_prompt() {
    let (dir, out, llm) = project(two_tries).await;
    let yaml = "hooks:\n  on_test_fail:\n    - type: shell\n      name: coverage\n      command: echo 'coverage tool crashed' >&2; exit 3\n      on_failure: ask_agent\n";
    let report = fixed(dir.path(), &llm, yaml, &out);
    let prompts = artisan_prompts(&llm).await;
    assert!(
        prompts[1].contains("coverage tool crashed"),
        "{}",
        prompts[1]
    );
    assert!(warnings(&report)
        .iter()
        .any(|w| w.contains("told to the Artisan")));
}

#[tokio::test(flavor = "multi_thread")]
async fn abort_loop_stops_the_run_at_the_failing_hook() {
    let (dir, out, llm) = project(two_tries).await;
    let yaml = "hooks:\n  on_test_fail:\n    - type: shell\n      name: guard\n      command: exit 1\n      on_failure: abort_loop\n";
    let (code, report) = fix(dir.path(), &llm, yaml, &out);
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(report["status"], "error");
    assert_eq!(report["iterations"], 1);
    let reason = report["reason"].as_str().unwrap();
    assert!(
        reason.contains("stopped by a hook") && reason.contains("guard"),
        "{reason}"
    );
    assert_eq!(artisan_prompts(&llm).await.len(), 1, "no second iteration");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_aborting_gate_lets_no_success_through() {
    let (dir, out, llm) = project(fixes_at_once).await;
    let yaml = "hooks:\n  on_before_success:\n    - type: plugin\n      name: scanner\n      command: kill -9 $$\n      on_failure: abort_loop\n";
    let (code, report) = fix(dir.path(), &llm, yaml, &out);
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(report["status"], "error");
    assert!(
        report["reason"]
            .as_str()
            .unwrap()
            .contains("killed by signal 9"),
        "{report:#}"
    );
}

/// A plugin in Python: reads the request, answers per stage.
const PLUGIN: &str = r##"import json, sys
req = json.load(sys.stdin)
open(sys.argv[1] + "/" + req["stage"], "a").write(json.dumps(req["config"]) + "\n")
if req["stage"] == "on_after_gen":
    print(json.dumps({"protocol": 1, "action": "change", "code": req["code"] + "# checked by plugin\n", "notes": ["the plugin saw it"]}))
else:
    print(json.dumps({"protocol": 1, "action": "pass"}))
"##;

#[tokio::test(flavor = "multi_thread")]
async fn plugins_from_their_file_answer_the_protocol_and_disabled_ones_do_not_run() {
    let (dir, out, llm) = project(two_tries).await;
    write(dir.path(), "plugin.py", PLUGIN);
    write(
        dir.path(),
        "ralph-plugins.yaml",
        "plugins:\n  - name: checker\n    version: 1.0.0\n    command: python3 plugin.py \"$HOOK_OUT\"\n    hooks: [on_after_gen, on_success]\n    on_failure: abort_loop\n    config: {level: strict}\n  - name: off\n    enabled: false\n    command: touch \"$HOOK_OUT/off-ran\"\n    hooks: [on_before_gen]\n    on_failure: abort_loop\n",
    );
    fixed(dir.path(), &llm, "", &out);
    assert_file(
        dir.path(),
        "median.py",
        format!("{FIXED_PY}# checked by plugin\n"),
    );
    let seen = std::fs::read_to_string(out.join("on_after_gen")).unwrap();
    assert_eq!(
        seen, "{\"level\": \"strict\"}\n{\"level\": \"strict\"}\n",
        "its config, twice"
    );
    assert!(out.join("on_success").exists());
    assert!(
        !out.join("off-ran").exists(),
        "a disabled plugin does not run"
    );
    // The plugin's note reached the second prompt.
    assert!(artisan_prompts(&llm).await[1].contains("the plugin saw it"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hanging_garbage_or_flooding_plugin_is_a_logged_failure_and_the_run_goes_on() {
    let (dir, out, llm) = project(fixes_at_once).await;
    let yaml = "hooks:\n  on_before_gen:\n    - type: plugin\n      name: sleeper\n      command: sleep 30\n      timeout_seconds: 1\n      on_failure: warn_continue\n    - type: plugin\n      name: talker\n      command: echo 'hello, not json'\n      on_failure: warn_continue\n    - type: plugin\n      name: flood\n      command: head -c 20000000 /dev/zero | tr '\\0' x\n      on_failure: warn_continue\n";
    let started = Instant::now();
    let report = fixed(dir.path(), &llm, yaml, &out);
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the hang was cut at its timeout"
    );
    let w = warnings(&report);
    warned(&w, "sleeper", "timed out after 1.0 s");
    warned(&w, "talker", "answered garbage");
    warned(&w, "flood", "answered garbage");
    let log = std::fs::read_to_string(dir.path().join(".ralph/plugin-errors.log")).unwrap();
    for name in ["sleeper", "talker", "flood"] {
        assert!(log.contains(&format!("{name} at on_before_gen")), "{log}");
    }
    assert!(
        log.len() < 10_000,
        "the flood is not copied: {} bytes",
        log.len()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_declarations_are_refused_with_their_file_and_line() {
    let dir = fixture("py-median");
    let llm = MockLlm::start().await;
    // A hook without on_failure.
    write(
        dir.path(),
        "ralph.config.yaml",
        "hooks:\n  on_success:\n    - type: shell\n      command: true\n",
    );
    let stderr = stderr_at(ralph(dir.path(), &llm).arg("median.py"), 2);
    assert_has(
        &stderr,
        &["ralph.config.yaml:3:", "hooks.on_success[0]", "on_failure"],
    );
    // An unknown stage.
    write(
        dir.path(),
        "ralph.config.yaml",
        "hooks:\n  on_lunch:\n    - type: shell\n      command: true\n      on_failure: warn_continue\n",
    );
    let stderr = stderr_at(ralph(dir.path(), &llm).arg("median.py"), 2);
    assert!(
        stderr.contains("ralph.config.yaml:2:") && stderr.contains("on_before_gen"),
        "{stderr}"
    );
    // A plugins file with a bad value.
    std::fs::remove_file(dir.path().join("ralph.config.yaml")).unwrap();
    write(
        dir.path(),
        "ralph-plugins.yaml",
        "plugins:\n  - name: fmt\n    command: fmt\n    hooks: [on_after_gen]\n    on_failure: sometimes\n",
    );
    let stderr = stderr_at(ralph(dir.path(), &llm).arg("median.py"), 2);
    assert_has(&stderr, &["ralph-plugins.yaml:5:", "warn_continue"]);
    assert!(llm.requests().await.is_empty(), "nothing ran");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_sandbox_keeps_a_hook_to_the_project_and_off_the_network() {
    let dir = fixture("py-median");
    let out = out_dir(dir.path());
    let outside = tempfile::tempdir().unwrap();
    let llm = artisan_always("python", FIXED_PY).await;
    let port = llm
        .uri()
        .rsplit(':')
        .next()
        .unwrap()
        .trim_end_matches('/')
        .to_string();
    let connect = format!(
        "python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=5); open('.hook-out/connected-' + __import__('os').environ['RALPH_HOOK'], 'w')\""
    );
    let yaml = format!(
        "hooks:\n  on_before_gen:\n    - type: shell\n      name: escape\n      command: touch {outside}/escaped\n      on_failure: warn_continue\n    - type: shell\n      name: inside\n      command: echo x > .hook-out/inside && echo y > \"$TMPDIR/scratch\"\n      on_failure: abort_loop\n    - type: shell\n      name: offline\n      command: {connect:?}\n      on_failure: warn_continue\n    - type: shell\n      name: online\n      command: {connect:?}\n      network: true\n      on_failure: abort_loop\n",
        outside = outside.path().display(),
    );
    let report = fixed(dir.path(), &llm, &yaml, &out);
    assert!(
        !outside.path().join("escaped").exists(),
        "written outside the project"
    );
    assert!(out.join("inside").exists(), "the project is writable");
    assert!(
        out.join("connected-online").exists(),
        "network: true connects"
    );
    assert!(
        !out.join("connected-offline").exists(),
        "no network by default"
    );
    let w = warnings(&report);
    warned(&w, "escape", "Permission denied");
    warned(&w, "offline", "PermissionError");
}

#[tokio::test(flavor = "multi_thread")]
async fn with_sandbox_hooks_off_a_hook_runs_with_the_users_rights() {
    let dir = fixture("py-median");
    let out = out_dir(dir.path());
    let outside = tempfile::tempdir().unwrap();
    let llm = artisan_always("python", FIXED_PY).await;
    let yaml = format!(
        "sandbox:\n  hooks: off\nhooks:\n  on_success:\n    - type: shell\n      command: echo x > {}/written\n      on_failure: abort_loop\n",
        outside.path().display()
    );
    fixed(dir.path(), &llm, &yaml, &out);
    assert!(outside.path().join("written").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sandboxed_hook_cannot_read_or_signal_other_processes() {
    let (dir, out, llm) = project(fixes_at_once).await;
    // A process of the same user, outside the run, holding a secret in its environment.
    let mut bystander = std::process::Command::new("sleep")
        .arg("60")
        .env("BYSTANDER_SECRET", "hunter2")
        .spawn()
        .unwrap();
    // The hook's shell is ralph-loop's child ($PPID), whose environment holds the provider key.
    let snoop = r#"for p in $PPID $SNOOP_PID; do tr '\0' '\n' 2>> .hook-out/errors < /proc/$p/environ >> .hook-out/environ; kill -0 $p 2>> .hook-out/errors && echo $p >> .hook-out/signalled; done; grep -c '^Name:' /proc/self/status > .hook-out/self"#;
    let yaml = format!(
        "hooks:\n  on_before_gen:\n    - type: shell\n      name: snoop\n      command: {snoop:?}\n      on_failure: abort_loop\n"
    );
    write(dir.path(), "ralph.config.yaml", &yaml);
    trust_hooks(dir.path());
    let assert = ralph(dir.path(), &llm)
        .env("SNOOP_PID", bystander.id().to_string())
        .args(["median.py", "--output", "json"])
        .assert();
    let _ = bystander.kill();
    let _ = bystander.wait();
    assert_eq!(
        assert.get_output().status.code(),
        Some(0),
        "{}",
        stderr_of(&assert)
    );
    let environ = std::fs::read_to_string(out.join("environ")).unwrap_or_default();
    assert!(
        !environ.contains("sk-test-key") && !environ.contains("hunter2"),
        "{environ}"
    );
    let errors = std::fs::read_to_string(out.join("errors")).unwrap();
    assert_eq!(errors.matches("Permission denied").count(), 2, "{errors}");
    assert!(!out.join("signalled").exists(), "{errors}");
    // Its own processes stay readable: interpreters need /proc/self.
    assert_eq!(
        std::fs::read_to_string(out.join("self")).unwrap().trim(),
        "1"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn ctrl_c_during_a_hook_stops_it_and_is_not_logged_as_its_failure() {
    let (dir, out, llm) = project(fixes_at_once).await;
    write(
        dir.path(),
        "ralph.config.yaml",
        "hooks:\n  on_before_gen:\n    - type: shell\n      name: slow\n      command: touch .hook-out/started; exec sleep 120\n      on_failure: abort_loop\n",
    );
    trust_hooks(dir.path());
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("ralph-loop"))
        .args(["median.py", "--no-adversarial"])
        .current_dir(dir.path())
        .envs(llm.openai_env())
        .env("HOME", dir.path())
        .env_remove("XDG_CONFIG_HOME")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while !out.join("started").exists() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the hook never ran"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: kill sends a signal to the child we started; no memory is involved.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    assert_eq!(wait_exit(&mut child, Duration::from_secs(10)), 130);
    assert_eq!(report(dir.path())["status"], "interrupted");
    assert!(
        !dir.path().join(".ralph/plugin-errors.log").exists(),
        "{}",
        std::fs::read_to_string(dir.path().join(".ralph/plugin-errors.log")).unwrap_or_default()
    );
    // The group was sent SIGKILL; on a loaded machine its death may lag the run's exit by a
    // moment, never by seconds.
    let gone = Instant::now();
    loop {
        let sleeping = std::process::Command::new("pgrep")
            .args(["-f", "^sleep 120$"])
            .output()
            .unwrap();
        if sleeping.stdout.is_empty() {
            break;
        }
        assert!(
            gone.elapsed() < Duration::from_secs(2),
            "the hook outlived the run"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Makes the process about to exec one whose kernel has no Landlock: a seccomp filter answers
/// `landlock_create_ruleset` with ENOSYS, as a kernel built without it does (x86_64).
fn without_landlock(cmd: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    const AUDIT_ARCH_X86_64: u32 = 0xc000_003e;
    let stmt = |code: u32, k: u32| libc::sock_filter {
        code: code as u16,
        jt: 0,
        jf: 0,
        k,
    };
    let jump = |code: u32, k: u32, jt: u8, jf: u8| libc::sock_filter {
        code: code as u16,
        jt,
        jf,
        k,
    };
    let filter = [
        stmt(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, 4),
        jump(
            libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K,
            AUDIT_ARCH_X86_64,
            0,
            3,
        ),
        stmt(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, 0),
        jump(
            libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K,
            libc::SYS_landlock_create_ruleset as u32,
            0,
            1,
        ),
        stmt(
            libc::BPF_RET | libc::BPF_K,
            libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32,
        ),
        stmt(libc::BPF_RET | libc::BPF_K, libc::SECCOMP_RET_ALLOW),
    ];
    // SAFETY: between fork and exec only prctl runs, on memory the closure owns; both calls
    // are async-signal-safe.
    unsafe {
        cmd.pre_exec(move || {
            let prog = libc::sock_fprog {
                len: filter.len() as u16,
                filter: filter.as_ptr() as *mut libc::sock_filter,
            };
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
                || libc::prctl(
                    libc::PR_SET_SECCOMP,
                    libc::SECCOMP_MODE_FILTER,
                    &prog as *const libc::sock_fprog,
                ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn without_landlock_hooks_run_unisolated_once_said_or_are_refused_when_required() {
    if !cfg!(target_arch = "x86_64") {
        return;
    }
    let dir = fixture("py-median");
    let outside = tempfile::tempdir().unwrap();
    let llm = artisan_always("python", FIXED_PY).await;
    let run = |mode: &str| {
        write(
            dir.path(),
            "ralph.config.yaml",
            &format!(
                "sandbox:\n  hooks: {mode}\nhooks:\n  on_success:\n    - type: shell\n      name: escape\n      command: touch {}/escaped-{mode}\n      on_failure: warn_continue\n",
                outside.path().display()
            ),
        );
        trust_hooks(dir.path());
        let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("ralph-loop"));
        cmd.args(["median.py", "--no-adversarial", "--output", "json"])
            .current_dir(dir.path())
            .envs(llm.openai_env())
            .env("HOME", dir.path())
            .env_remove("XDG_CONFIG_HOME")
            .stdin(std::process::Stdio::null());
        without_landlock(&mut cmd);
        cmd.output().unwrap()
    };

    let required = run("required");
    assert_eq!(required.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&required.stderr);
    assert!(stderr.contains("no Landlock"), "{stderr}");
    assert!(!outside.path().join("escaped-required").exists());

    let landlock = run("landlock");
    assert_eq!(
        landlock.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&landlock.stderr)
    );
    let notes = report(dir.path())["notes"].to_string();
    assert_eq!(
        notes.matches("this kernel has no Landlock").count(),
        1,
        "{notes}"
    );
    // Said, and run with the user's rights: the write outside went through.
    assert!(outside.path().join("escaped-landlock").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn no_udp_leaves_the_sandbox_unless_the_hook_may_use_the_network() {
    let (dir, out, llm) = project(fixes_at_once).await;
    let listener = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    listener
        .set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let port = listener.local_addr().unwrap().port();
    let send = |what: &str| {
        format!(
            "python3 -c \"import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'{what}', ('127.0.0.1', {port}))\""
        )
    };
    let yaml = format!(
        "hooks:\n  on_before_gen:\n    - type: shell\n      name: udp-off\n      command: {off:?}\n      on_failure: warn_continue\n    - type: shell\n      name: udp-on\n      command: {on:?}\n      network: true\n      on_failure: abort_loop\n",
        off = send("offline"),
        on = send("online"),
    );
    let report = fixed(dir.path(), &llm, &yaml, &out);
    let mut got = Vec::new();
    let mut buf = [0u8; 64];
    while let Ok(n) = listener.recv(&mut buf) {
        got.push(String::from_utf8_lossy(&buf[..n]).to_string());
    }
    assert_eq!(got, ["online"], "only the hook with network: true sent");
    let w = warnings(&report);
    warned(&w, "udp-off", "PermissionError");
}
