//! The agent loop's judgement of an iteration (the seed's Ralph Tracker): what the agent said of
//! its work ([`status`]: `---RALPH_STATUS---` blocks and completion indicators, read as the
//! output streams), the circuit breaker that stops a loop making no progress ([`circuit`]), and
//! the exit gate ([`gate`]). Pure: the loop measures progress and runs the tests, these decide.

pub mod circuit;
pub mod gate;
pub mod status;
