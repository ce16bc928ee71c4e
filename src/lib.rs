//! ralph-loop: the command line, config, and the real implementations of the core's traits.
//!
//! Layout:
//! - [`cli`], [`app`], [`micro_agent`]: the two binaries' front ends and the wiring of a run.
//! - [`config`]: `ralph.config.yaml` discovery, validation and defaults.
//! - [`models`]: `provider/model` names and the alias table.
//! - [`providers`]: LLM clients over HTTP (OpenAI-compatible), retries, record and replay, prices,
//!   token counting.
//! - [`runner`], [`detect`]: test commands run as process groups, and finding them from manifests.
//! - [`workspace`], [`session`]: the project's files and the `.ralph/session-<uuid>/` store.
//! - [`printers`]: the human, JSON lines and JSON renderings of the event stream.

pub mod app;
pub mod cli;
pub mod config;
pub mod context;
pub mod error;
pub mod fsutil;
pub mod http;
pub mod micro_agent;
pub mod models;
pub mod printers;
pub mod process;
pub mod providers;
pub mod runner;
pub mod session;
pub mod vault;
pub mod workspace;

pub use error::{Error, Result};
