use std::process::ExitCode;

fn main() -> ExitCode {
    ralph_loop::app::init_tracing();
    ralph_loop::app::exit_code(ralph_loop::micro_agent::main(std::env::args_os()))
}
