//! The iteration as an explicit state machine: the [`state`]s a run passes through and how a
//! step ends ([`state::Next`]), and the [`hooks`] that may observe every transition, amend a
//! proposal or veto a success. The Supervisor ([`crate::supervisor`]) steps it.

pub mod hooks;
pub mod state;
