//! The fuzz targets' entry points (built with the `fuzzing` feature, and for the unit tests,
//! which run every seed and every input a fuzzer failed on through them; the targets are in
//! `fuzz/`, run by `scripts/fuzz`): one function per surface of outside input, each taking the
//! fuzzer's bytes and reaching the parsers through the functions the program itself calls.
//!
//! - [`wire`]: the providers' replies (four protocols, streamed and whole, and their errors)
//!   and what the gateway relays to a coding agent.
//! - [`reports`]: test reports (five formats), coverage reports (six tools), test and lint
//!   output.
//! - [`agents`]: coding agents' output (six formats, and model listings), `RALPH_STATUS`
//!   blocks, task lists, and the replies the roles read.
//! - [`files`]: specs, configs, hook imports, gitleaks rules, plugins' answers, recordings,
//!   the inbox and the event logs the dashboard tails.
//! - [`web`]: requests to the dashboard.
//! - [`guard`]: LocalGuard masking and restoring.
//!
//! [`input`] holds what they share: the first byte picks a parser, a `0xFF` byte cuts the
//! rest into the pieces a pipe or a socket would deliver.

mod agents;
mod files;
mod guard;
pub mod input;
mod reports;
mod web;
mod wire;

pub use agents::{agent_output, model_reply};
pub use files::{event_log, inbox, plugin_reply, recording, spec_config};
pub use guard::local_guard;
pub use reports::{test_output, test_report};
pub use web::dashboard_request;
pub use wire::{gateway_relay, provider_reply};

#[cfg(test)]
mod tests;

/// A fuzz target: its name (its fuzz binary's and its corpus's), the function that reads the
/// fuzzer's bytes, and how many parsers its first byte picks among.
pub struct Target {
    pub name: &'static str,
    pub run: fn(&[u8]),
    pub parsers: u8,
}

const fn target(name: &'static str, run: fn(&[u8]), parsers: u8) -> Target {
    Target { name, run, parsers }
}

/// Every target.
pub const TARGETS: [Target; 13] = [
    target("provider_reply", wire::provider_reply, 10),
    target("gateway_relay", wire::gateway_relay, 8),
    target("test_report", reports::test_report, 11),
    target("test_output", reports::test_output, 5),
    target("agent_output", agents::agent_output, 7),
    target("model_reply", agents::model_reply, 9),
    target("spec_config", files::spec_config, 5),
    target("plugin_reply", files::plugin_reply, 7),
    target("recording", files::recording, 1),
    target("inbox", files::inbox, 1),
    target("event_log", files::event_log, 1),
    target("dashboard_request", web::dashboard_request, 8),
    target("local_guard", guard::local_guard, 2),
];
