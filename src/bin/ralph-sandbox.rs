//! `ralph-sandbox [--read P]... [--write P]... [--net] -- PROGRAM ARGS...`: the hooks' sandbox
//! as a binary of its own. It links only the sandbox, so it starts in a fraction of the time
//! ralph-loop's binary takes; ralph-loop uses it when it sits beside it (see
//! `ralph_loop::process::sandbox`).

use std::process::ExitCode;

fn main() -> ExitCode {
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    // Called as ralph-loop's binary would be (`__sandbox` first), or plainly.
    if args
        .get(1)
        .is_none_or(|a| a != ralph_loop::process::sandbox::SANDBOX_ARG)
    {
        args.insert(1, ralph_loop::process::sandbox::SANDBOX_ARG.into());
    }
    ExitCode::from(ralph_loop::process::sandbox::run_if_asked(&args).unwrap_or(2))
}
