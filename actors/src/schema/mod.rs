//! The documents a run produces and reads back: plain data, serialised to the session folder,
//! the report and the event stream. Nothing here calls a port or an actor.
//!
//! - [`test_run`]: the unified test-result schema (`test-results-iteration-<N>.json`);
//! - [`context`]: what the Librarian packed into a prompt, and why;
//! - [`attempt`]: a fix attempt as the MemoryVault keeps and recalls it;
//! - [`agent`]: what a coding-agent CLI's output says (text, tools, tokens, cost, result);
//! - [`adversarial`]: Chaos's findings and the report's `adversarial` section;
//! - [`mutation`]: mutation testing's mutants and scores, whichever tool ran it;
//! - [`promise`]: the completion promise a run kept: its profile and checks;
//! - [`report`]: the final report and its parts (statuses and exit codes);
//! - [`regent`]: the agent loop's state file, report and iteration records;
//! - [`state`]: `state.json` and `iterations.log`, what a resume needs;
//! - [`usage`]: token usage.

pub mod adversarial;
pub mod agent;
pub mod attempt;
pub mod context;
pub mod mutation;
pub mod promise;
pub mod regent;
pub mod report;
pub mod state;
pub mod test_run;
pub mod usage;
