use std::process::ExitCode;

fn main() -> ExitCode {
    // `__reap ...`: this binary as the reaper of a supervised command's tree.
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    // `__sandbox ...`: this binary restricting itself, then becoming a hook (returns only on
    // an error).
    if let Some(code) = ralph_loop::process::sandbox::run_if_asked(&args) {
        return ExitCode::from(code);
    }
    if let Some(code) = ralph_loop::process::reaper::run_if_asked(&args) {
        return ExitCode::from(code);
    }
    ralph_loop::app::init_tracing();
    ralph_loop::app::exit_code(ralph_loop::micro_agent::main(args))
}
