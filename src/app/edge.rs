//! The process's edge: diagnostics on stderr, and a run's outcome as the exit code.

use std::process::ExitCode;

use crate::error::Result;

pub fn init_tracing() {
    // Diagnostics go to stderr at `warn` unless RUST_LOG says otherwise; the live view is
    // separate (events), so logs never mix into `--output json`.
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("error"));
    // Colour only on a terminal: redirected to a file, escape codes are noise.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
}

/// Turns a run's outcome into the process exit code, printing errors plainly.
pub fn exit_code(result: Result<i32>) -> ExitCode {
    log_peak_memory();
    match result {
        Ok(code) => ExitCode::from(code.clamp(0, 255) as u8),
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(e.exit_code() as u8)
        }
    }
}

/// The process's peak resident set as its last diagnostic, with `RUST_LOG=ralph_loop::exit=debug`
/// (`peak_rss_kib=…`): the kernel's high-water mark of this process alone (its tests not
/// counted), kept to the very end of the run, which sampling `/proc` from outside can miss
/// (the benchmarks and the test suite's memory gate read it). `VmHWM` from `/proc` (so Linux
/// only): `getrusage` would also count the image of the process that forked this one, as it
/// was before the exec.
fn log_peak_memory() {
    if !tracing::enabled!(target: "ralph_loop::exit", tracing::Level::DEBUG) {
        return;
    }
    let hwm = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        });
    if let Some(kib) = hwm {
        tracing::debug!(target: "ralph_loop::exit", peak_rss_kib = kib, "exiting");
    }
}
