//! Hooks in their sandbox: kept to the project and off the network (UDP too), the sandbox off, other
//! processes out of reach, Ctrl-C during a hook, and hosts without Landlock.

use std::time::{Duration, Instant};

use super::hooks::*;
use super::support::*;

/// `py-median` with the hooks' output folder in it, a folder outside it, and a server whose
/// Artisan fixes the median at once.
async fn with_a_folder_outside() -> (
    tempfile::TempDir,
    std::path::PathBuf,
    tempfile::TempDir,
    MockLlm,
) {
    let dir = fixture("py-median");
    let out = out_dir(dir.path());
    let outside = tempfile::tempdir().unwrap();
    (dir, out, outside, artisan_always("python", FIXED_PY).await)
}

#[tokio::test(flavor = "multi_thread")]
async fn the_sandbox_keeps_a_hook_to_the_project_and_off_the_network() {
    let (dir, out, outside, llm) = with_a_folder_outside().await;
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
    let (dir, out, outside, llm) = with_a_folder_outside().await;
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
    write_config(dir.path(), &yaml);
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
    write_config(dir.path(), "hooks:\n  on_before_gen:\n    - type: shell\n      name: slow\n      command: touch .hook-out/started; exec sleep 120\n      on_failure: abort_loop\n");
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
        write_config(dir.path(), &format!(
                "sandbox:\n  hooks: {mode}\nhooks:\n  on_success:\n    - type: shell\n      name: escape\n      command: touch {}/escaped-{mode}\n      on_failure: warn_continue\n",
                outside.path().display()
            ));
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
