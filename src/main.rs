use std::process::ExitCode;

use clap::Parser;
use ralph_loop::cli::{Cli, Command};

fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if let Some(code) = ralph_loop::process::helper_if_asked(&args) {
        return ExitCode::from(code);
    }
    let cli = Cli::parse_from(args);
    ralph_loop::app::init_tracing();
    let result = match cli.command {
        Some(Command::Run(args)) => ralph_loop::app::run(*args, Default::default()),
        Some(Command::Resume(args)) => ralph_loop::app::resume(args),
        Some(Command::Status(args)) => ralph_loop::app::status(args),
        Some(Command::Vault(args)) => ralph_loop::app::vault::run(args),
        Some(Command::Guard(args)) => ralph_loop::app::guard::run(args),
        Some(Command::Inbox(args)) => ralph_loop::app::queue::inbox(args),
        Some(Command::Query(args)) => ralph_loop::app::queue::query(args),
        Some(Command::Agent(args)) => ralph_loop::app::agent::run(args),
        Some(Command::Batch(args)) => ralph_loop::app::batch::run(args),
        Some(Command::Agents(args)) => ralph_loop::app::agents::run(args),
        Some(Command::Loop(args)) => ralph_loop::app::agent_loop::run(args),
        Some(Command::Breaker(args)) => ralph_loop::app::breaker::run(args),
        Some(Command::Dashboard(args)) => ralph_loop::app::dashboard::run(args),
        Some(Command::Replay(args)) => ralph_loop::app::replay::run(args),
        Some(Command::Hooks(args)) => ralph_loop::app::hooks::run(args),
        None => ralph_loop::app::run(cli.run, Default::default()),
    };
    ralph_loop::app::exit_code(result)
}
