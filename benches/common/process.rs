//! What the whole-process benchmarks share: the binary they measure, their knobs, their runtime
//! and where they write their results.

use std::path::{Path, PathBuf};

/// The binary measured: this build's, or `RALPH_BENCH_BIN` (another build of ralph-loop, such
/// as the previous commit's, measured with the very same harness to compare the two).
pub static RALPH: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    std::env::var("RALPH_BENCH_BIN")
        .unwrap_or_else(|_| env!("CARGO_BIN_EXE_ralph-loop").to_string())
});

/// A command that runs the binary measured: under `RALPH_BENCH_WRAPPER` when it is set (a
/// command, such as `strace -f -tt -o /tmp/ralph.trace`: for a diagnosis only, the timings then
/// mean little).
// Not every benchmark that loads this file runs the binary through it.
#[allow(dead_code)]
pub fn ralph_command() -> std::process::Command {
    let wrapper = std::env::var("RALPH_BENCH_WRAPPER").unwrap_or_default();
    let mut words = wrapper.split_whitespace();
    match words.next() {
        Some(program) => {
            let mut c = std::process::Command::new(program);
            c.args(words).arg(&*RALPH);
            c
        }
        None => std::process::Command::new(&*RALPH),
    }
}

/// The flags that keep Chaos out of a run, for the binary measured: `--no-adversarial` when it
/// knows the flag (builds before Chaos have neither the flag nor Chaos). The loop up to green
/// tests is what these benchmarks time; the scripted server answers no Chaos role.
pub static NO_CHAOS: std::sync::LazyLock<Vec<&'static str>> = std::sync::LazyLock::new(|| {
    let help = std::process::Command::new(&*RALPH)
        .arg("--help")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    if help.contains("--no-adversarial") {
        vec!["--no-adversarial"]
    } else {
        Vec::new()
    }
});

/// A positive whole number from the environment, or `default`.
pub fn knob(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(default)
}

/// One worker thread for the mock servers: the machine's other core is the binary's.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// `target/`, from the binary's own path (`target/release/ralph-loop`).
pub fn target_dir() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_ralph-loop"))
        .parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("target"))
}
