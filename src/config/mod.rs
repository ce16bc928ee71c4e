//! `ralph.config.yaml`: discovery, parsing, validation and defaults.
//!
//! Precedence is flags > file > built-in defaults; the caller applies flags to the [`Config`]
//! this returns. Every key is documented in `docs/configuration.md` and shown, with its default,
//! in the repository's `ralph.config.yaml`, which a test keeps in sync with [`Config`].
//!
//! The schema (every key, its default, and the check on its value) is split by what it holds:
//! `sections` (the top level and the plain sections), `roles` (the sections keyed by role),
//! `guard` (LocalGuard's section), `regent` (the agent loop's `regent:` and `git:`),
//! `providers` (connection settings), `hooks` (the `hooks:` section and `ralph-plugins.yaml`)
//! `checks` (the value checks used while deserialising) and `gate` (a `success_criteria` gate
//! that knows whether the file set it); `edit` adds to the file as text, its comments kept.
//! `load` finds and parses the file, `settings` derives what a run needs from it; `nesting`
//! refuses a YAML file nested too deep for the parser before it reads it.

mod batch;
mod checks;
pub(crate) mod edit;
mod error;
mod gate;
mod guard;
pub(crate) mod hooks;
mod load;
pub(crate) mod nesting;
mod providers;
mod regent;
mod roles;
mod sections;
mod settings;
#[cfg(test)]
mod tests;

pub use batch::BatchEntry;
pub use error::ConfigError;
pub use gate::Gate;
pub use guard::{AllowEntry, GuardMode, LocalGuardConfig};
pub use load::{discover, load, load_discovered, parse, FILE_NAME};
pub use providers::{Endpoint, ProviderConfig};
pub use regent::{
    BaselineScope, BootstrapDetection, BuildConfig, GitConfig, RegentConfig, TestMode,
};
pub use roles::{ModelEntry, Models, Prompts};
pub use sections::{
    AgentConfig, Budgets, CircuitBreaker, Config, CriticConfig, EmbedderConfig, EmbedderKind,
    FailedWork, LibrarianConfig, Linting, Memory, Output, SandboxConfig, SandboxType,
    SuccessCriteria, Testing,
};
