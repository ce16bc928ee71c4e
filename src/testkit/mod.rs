//! The one test-support module of the library's unit tests (the integration tests have theirs in
//! `tests/suite/support.rs`): built only for `cargo test`.
//!
//! - [`wire`]: the providers' scripted servers (wiremock) and what their tests ask and expect.
//! - [`server`]: a raw TCP server for what wiremock cannot send (a stream that stalls midway).
//! - [`projects`]: temporary projects on disk, linked to the JavaScript test tools, the lint
//!   tests' fixtures, and `git` run in them.
//! - [`plans`]: temporary projects for test detection, the plans found in them, and the plan
//!   the coverage tests start from.

pub(crate) mod plans;
pub(crate) mod projects;
pub(crate) mod server;
pub(crate) mod wire;
