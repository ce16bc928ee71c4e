//! The iteration as an explicit state machine: the [`state`]s a run passes through and how a
//! step ends ([`state::Next`]), the [`hooks`] that may observe every transition, amend a
//! proposal or veto a success, the [`driver`] that steps any [`driver::Machine`] (the
//! Supervisor's fix loop, [`crate::supervisor`], and the Regent's agent loop in the binary's
//! crate), and the pause between two steps ([`hold`]), the same for both.

pub mod hooks;
pub mod state;
pub mod driver;
pub mod hold;
