use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if let Some(code) = ralph_loop::process::helper_if_asked(&args) {
        return ExitCode::from(code);
    }
    ralph_loop::app::init_tracing();
    ralph_loop::app::exit_code(ralph_loop::micro_agent::main(args))
}
