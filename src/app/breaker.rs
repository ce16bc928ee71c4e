//! `ralph-loop breaker reset`: closes the agent loop's circuit breaker and clears its counters,
//! in `.ralph/regent-state.json`; a loop running now is asked to do it before its next
//! iteration (it owns the file while it runs).

use chrono::Utc;

use crate::cli::{BreakerAction, BreakerArgs};
use crate::error::{Error, Result};
use crate::regent::state::{is_running, StateFile};
use crate::runner::detect;

pub fn run(args: BreakerArgs) -> Result<i32> {
    let BreakerAction::Reset = args.action;
    let cwd =
        std::env::current_dir().map_err(|e| Error::io("cannot read the current directory", e))?;
    let root = detect::project_root(&cwd);
    let ralph_dir = root.join(crate::session::RALPH_DIR);
    let file = StateFile::new(&ralph_dir);
    let state = match file.peek().map_err(|e| Error::Internal(e.to_string()))? {
        None => {
            println!("no agent loop has run here: there is no breaker to reset");
            return Ok(0);
        }
        Some(Err(why)) => {
            return Err(Error::Internal(format!(
                "{} cannot be read ({why}); the next `ralph-loop loop` replaces it",
                file.path().display()
            )))
        }
        Some(Ok(state)) => state,
    };
    if is_running(&state, &ralph_dir) {
        file.request_reset()
            .map_err(|e| Error::Internal(e.to_string()))?;
        println!(
            "the loop running now (pid {}) resets its breaker ({} now) before its next iteration",
            state.ralph_pid,
            state.breaker.state.as_str()
        );
        return Ok(0);
    }
    let mut state = state;
    let was = state.breaker.state;
    let why = state.breaker.reason;
    state.breaker.reset(Utc::now().timestamp_millis());
    state.updated_at = Utc::now();
    file.save(&state)
        .map_err(|e| Error::Internal(e.to_string()))?;
    println!(
        "breaker reset: it was {} ({}), it is CLOSED",
        was.as_str(),
        why.as_str()
    );
    Ok(0)
}
