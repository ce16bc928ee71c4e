//! The port to the person running the loop, when one is there to answer: the circuit breaker
//! asks them before it stops a run stuck on one failure (FR-019). A headless run has none, and
//! the breaker stops the run as it always did.

/// What the breaker tells the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stuck {
    pub iteration: u32,
    /// The failure that keeps ending iterations, in one line.
    pub failure: String,
    /// How many iterations it ended.
    pub seen: u32,
    pub threshold: u32,
}

/// What the user chose.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BreakerChoice {
    /// Stop here, `entropy_detected` (exit 5).
    Stop,
    /// Go on; the guidance, if any, is shown to the Artisan as the user's words.
    Continue { guidance: Option<String> },
    /// Go on, stopping only when a failure ends this many iterations.
    RaiseThreshold(u32),
}

/// Why the user could not be asked.
#[derive(Debug, Clone, thiserror::Error)]
#[error("cannot ask the user: {0}")]
pub struct UserError(pub String);

impl UserError {
    /// Asking again will not help: the terminal is gone.
    pub fn is_transient(&self) -> bool {
        false
    }
}

/// Someone at a terminal.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait::async_trait]
pub trait User: Send + Sync {
    async fn on_entropy(&self, stuck: &Stuck) -> Result<BreakerChoice, UserError>;
}
