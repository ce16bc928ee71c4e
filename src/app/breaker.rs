//! `ralph-loop breaker reset`: closes the agent loop's circuit breaker and clears its counters,
//! in `.ralph/regent-state.json`; a loop running now is asked to do it before its next
//! iteration (it owns the file while it runs).

use crate::cli::{BreakerAction, BreakerArgs};
use crate::error::{Error, Result};
use crate::regent::state::reset_breaker;
use crate::runner::detect;

pub fn run(args: BreakerArgs) -> Result<i32> {
    let BreakerAction::Reset = args.action;
    let cwd =
        std::env::current_dir().map_err(|e| Error::io("cannot read the current directory", e))?;
    let root = detect::project_root(&cwd);
    let ralph_dir = root.join(crate::session::RALPH_DIR);
    // The state file is the loop's: one that cannot be read or written is an I/O failure.
    let done = reset_breaker(&ralph_dir).map_err(|e| Error::Io {
        context: "cannot reset the agent loop's breaker".into(),
        source: std::io::Error::other(e),
    })?;
    println!("{done}");
    Ok(0)
}
