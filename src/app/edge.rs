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
    match result {
        Ok(code) => ExitCode::from(code.clamp(0, 255) as u8),
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(e.exit_code() as u8)
        }
    }
}
