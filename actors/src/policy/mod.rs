//! The rules a run is judged and bounded by, each a pure function of its inputs: the money
//! ([`budget`]), Chaos's rounds and how its runs are read ([`adversarial`]), the circuit breaker ([`entropy`]), the completion promise ([`criteria`]),
//! flaky-test re-runs ([`flaky`]), the check that a proposal leaves the tests alone
//! ([`integrity`]), and which calls an iteration waits for ([`pace`]). The agent loop's rules
//! are in [`crate::tracker`].

pub mod adversarial;
pub mod budget;
pub mod criteria;
pub mod entropy;
pub mod flaky;
pub mod integrity;
pub mod pace;
