//! Errors at the edge of a run, each with the exit code of the brief: 2 for what the user can fix
//! in a flag, a file or the config before anything ran; 1 for the rest.
//!
//! Every layer's own error travels here typed ([`crate::config::ConfigError`],
//! [`crate::runner::project::BuildError`], [`crate::session::SessionError`], ...), so that
//! the edge picks the exit code from the kind, not from the text.

use std::path::PathBuf;

use ralph_actors::ports::llm::LlmError;
use ralph_actors::settings::SettingsError;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    /// A flag, an argument or a file named on the command line.
    #[error(transparent)]
    Usage(#[from] UsageError),
    /// A session folder that is missing, ambiguous, damaged or cannot be resumed.
    #[error(transparent)]
    Session(#[from] crate::session::SessionError),
    /// No tests were found, or a coverage or lint tool asked for is missing.
    #[error(transparent)]
    Tests(#[from] crate::runner::project::BuildError),
    /// The Docker sandbox was asked for and cannot be used.
    #[error(transparent)]
    Sandbox(#[from] crate::runner::sandbox::SandboxError),
    #[error(transparent)]
    Settings(#[from] SettingsError),
    #[cfg(feature = "vault")]
    #[error(transparent)]
    Vault(#[from] crate::vault::VaultError),
    /// `local_guard.rules` names a gitleaks file that cannot be read or holds a bad rule.
    #[error(transparent)]
    Rules(#[from] ralph_guard::rules::RuleError),
    /// Another run holds the target.
    #[error(transparent)]
    Lock(#[from] crate::lock::LockError),
    /// Agent mode cannot start or go on.
    #[error(transparent)]
    Agent(#[from] crate::agent::AgentError),
    #[error(transparent)]
    Inbox(#[from] crate::inbox::InboxError),
    /// A spec that is missing or has bad front matter.
    #[error(transparent)]
    Spec(#[from] crate::spec::SpecError),
    #[error(transparent)]
    Git(#[from] crate::git::GitError),
    /// An unknown or missing coding-agent CLI, or one whose models cannot be listed.
    #[error(transparent)]
    Agents(#[from] crate::agents::registry::AgentsError),
    #[error("{context}: {source}")]
    Io {
        context: String,
        source: std::io::Error,
    },
    #[error(transparent)]
    Llm(#[from] LlmError),
    /// Hooks that cannot run as configured (no Landlock where it is required, or not trusted).
    #[error(transparent)]
    Hooks(#[from] crate::hooks::HooksError),
    /// The model gateway a coding agent's calls go through could not start.
    #[error(transparent)]
    Gateway(#[from] crate::gateway::GatewayError),
    #[error("{0}")]
    Internal(String),
}

/// What was wrong with the command line.
#[derive(Debug, thiserror::Error)]
pub enum UsageError {
    #[error("no file to fix was given")]
    NoTarget,
    #[error(
        "target file not found: {} (create it, even empty, to have it written from its tests)",
        .0.display()
    )]
    TargetNotFound(PathBuf),
    /// `-f`, `-p` or their config keys name a file that is not there.
    #[error("{what} not found: {}", path.display())]
    FileNotFound { what: &'static str, path: PathBuf },
    #[error(
        "{} is a test file, and the Artisan may not edit tests: pass --allow-test-edits \
         (or set testing.allow_test_edits: true) to let it",
        .0.display()
    )]
    TargetIsATest(PathBuf),
    /// A flag's value: the message names the flag.
    #[error("{message}")]
    Flag { flag: &'static str, message: String },
    /// Something micro-agent offers that ralph-loop does not, said plainly.
    #[error("{0}")]
    Unsupported(&'static str),
    /// `~/.micro-agent`, a `micro-agent config` argument, or what micro-agent's interactive mode
    /// needs and does not have (a terminal).
    #[error("{0}")]
    MicroAgent(String),
    /// A `ralph-loop vault` argument (no vault yet, an import file that is not an export).
    #[error("{0}")]
    Vault(String),
    /// A model the run may call has no price, so the budget could not bound it.
    #[error(
        "no price is known for {model} (a model of the {role}), so the budget cannot bound its \
         calls: set its price in dollars per million tokens under `prices:` in \
         ralph.config.yaml (prices: {{\"{model}\": {{input: 0.5, output: 1.5}}}}), or run it \
         unbounded with `budgets.allow_unpriced: true`"
    )]
    Unpriced { model: String, role: String },
}

impl UsageError {
    pub fn flag(flag: &'static str, message: impl Into<String>) -> Self {
        UsageError::Flag {
            flag,
            message: message.into(),
        }
    }

    /// `value` of `flag` when it is a positive (finite) number of `unit`; else the error that
    /// says so, alike for every such flag.
    pub(crate) fn positive(flag: &'static str, value: f64, unit: &str) -> Result<f64, Self> {
        if value.is_finite() && value > 0.0 {
            Ok(value)
        } else {
            Err(Self::flag(
                flag,
                format!("{flag} must be a positive number of {unit}, not {value}"),
            ))
        }
    }
}

impl Error {
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            context: context.into(),
            source,
        }
    }

    /// 2 for usage and configuration errors, 1 for everything else.
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Config(_)
            | Error::Usage(_)
            | Error::Tests(_)
            | Error::Sandbox(_)
            | Error::Rules(_)
            | Error::Settings(_) => 2,
            Error::Hooks(crate::hooks::HooksError::NoLandlock) => 2,
            // Hooks not trusted as they are, or a store the user must fix: nothing ran.
            Error::Hooks(crate::hooks::HooksError::Trust(
                crate::hooks::trust::TrustError::Io { .. },
            )) => 1,
            Error::Hooks(crate::hooks::HooksError::Trust(_)) => 2,
            Error::Hooks(_) => 1,
            Error::Session(e) => e.exit_code(),
            Error::Agent(e) => e.exit_code(),
            Error::Inbox(e) => e.exit_code(),
            Error::Spec(_) => 2,
            Error::Git(_) => 1,
            // A provider's base URL that is no URL is the user's setting to fix.
            Error::Gateway(crate::gateway::GatewayError::BaseUrl { .. }) => 2,
            Error::Gateway(_) => 1,
            Error::Agents(crate::agents::registry::AgentsError::ListFailed { .. }) => 1,
            Error::Agents(_) => 2,
            Error::Lock(crate::lock::LockError::Held { .. }) => 2,
            Error::Lock(_) => 1,
            // A recording given by `--record`/`--replay` that cannot be opened: a bad flag.
            Error::Llm(LlmError::Config { .. } | LlmError::Replay(_)) => 2,
            #[cfg(feature = "vault")]
            Error::Vault(_) => 1,
            Error::Io { .. } | Error::Llm(_) | Error::Internal(_) => 1,
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
