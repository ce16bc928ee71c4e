use std::process::ExitCode;

fn main() -> ExitCode {
    // `__reap ...`: this binary as the reaper of a supervised command's tree.
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if let Some(code) = ralph_loop::process::reaper::run_if_asked(&args) {
        return ExitCode::from(code);
    }
    ralph_loop::app::init_tracing();
    ralph_loop::app::exit_code(ralph_loop::micro_agent::main(args))
}
