//! Coding-agent CLIs as ralph-loop runs them (Claude Code, Codex, Antigravity, Aider, Cursor,
//! Auggie, OpenCode, goose, and any configured in `agents:`).
//!
//! - [`definition`]: one agent: its executables, its sign-in check, where its models come
//!   from, the arguments of a headless run and its output format;
//! - [`gateway`]: a definition's `gateway` section, and the agent's environment pointed at the
//!   model gateway;
//! - [`wire`]: whether a run goes through the model gateway, and the run pointed at it;
//! - [`builtin`]: the agents known without configuration;
//! - [`registry`]: the built-ins and the configured ones together, what is installed and
//!   signed in here, and model lists (cached);
//! - [`output`]: readers of each output format into `AgentEvent`s;
//! - [`invoke`]: one supervised run of an agent on a prompt, and how it ended; [`backoff`]: the
//!   wait before restarting one that crashed or hung; [`cost`]: what a run cost, reported or
//!   estimated;
//! - [`acp`]: the run of an agent that speaks the Agent Client Protocol (`format: acp`);
//!   [`launch`]: one run of any agent, by its format;
//! - [`artisan`]: an agent as the fix loop's Artisan (`--models artisan=agent:claude`).

pub(crate) mod acp;
pub(crate) mod artisan;
pub(crate) mod backoff;
pub(crate) mod builtin;
pub(crate) mod cost;
pub mod definition;
pub(crate) mod gateway;
pub mod invoke;
pub(crate) mod launch;
pub mod output;
pub(crate) mod registry;
pub(crate) mod wire;

pub use definition::AgentDef;
pub use registry::Registry;
