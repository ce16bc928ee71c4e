//! What the benchmark binaries read alike: whether `cargo bench` ran them, their settings from
//! the environment, and their own memory.

// Each benchmark that loads this file uses only some of it.
#![allow(dead_code)]

/// Whether `cargo bench` ran this binary (with `--bench`). `cargo test --benches` runs it
/// without: benchmarks belong to `cargo bench` only, so `name` then says on stderr that it was
/// skipped, and measures nothing.
pub fn benchmarking(name: &str) -> bool {
    let asked = std::env::args().any(|a| a == "--bench");
    if !asked {
        eprintln!("{name}: skipped (run it with `cargo bench --bench {name}`)");
    }
    asked
}

/// The environment variable `name` read as a `T`, or `default` when it is unset or not one.
pub fn setting<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A line of `/proc/self/status` (`VmRSS:`, `VmHWM:`), in KiB; 0 where there is none.
pub fn status_kib(key: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(key))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}
