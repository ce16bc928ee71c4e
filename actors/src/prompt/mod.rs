//! What the models are shown and what they answer: the [`templates`] (one per role), the
//! [`bundle`] of an iteration's context they render, the last test run as they see it
//! ([`results`]), and the parsing of their [`reply`]s.

pub mod bundle;
pub mod reply;
pub mod results;
pub mod templates;
