//! The one stream of typed events a run emits. Printers (human, JSON lines, JSON) render it.

use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

use crate::llm::Usage;
use crate::report::{Report, TestsSnapshot};
use crate::roles::Role;

/// The steps of one iteration, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    Baseline,
    Context,
    Generate,
    Review,
    Test,
    Decide,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Baseline => "baseline",
            Phase::Context => "context",
            Phase::Generate => "generate",
            Phase::Review => "review",
            Phase::Test => "test",
            Phase::Decide => "decide",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    SessionStarted {
        session_id: String,
        target: String,
        test_command: String,
        models: Vec<(Role, String)>,
        max_cost_usd: f64,
        max_iterations: u32,
        resumed_from_iteration: u32,
    },
    IterationStarted {
        iteration: u32,
        max_iterations: u32,
    },
    PhaseChanged {
        iteration: u32,
        phase: Phase,
    },
    LlmCallFinished {
        iteration: u32,
        role: Role,
        model: String,
        usage: Usage,
        cost_usd: f64,
        total_cost_usd: f64,
        duration_ms: u64,
        /// Share of the model's context window the prompt used, when the window is known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        context_used: Option<f64>,
    },
    CriticVerdict {
        iteration: u32,
        approved: bool,
        reasons: String,
    },
    TestsFinished {
        iteration: u32,
        tests: TestsSnapshot,
    },
    /// The Artisan's proposal edited, deleted or skipped tests and was sent back.
    TestIntegrity {
        iteration: u32,
        violations: Vec<String>,
    },
    ContextReset {
        iteration: u32,
    },
    /// A role's prompt used at least 40% of its model's context window: its history is dropped
    /// before its next call.
    ContextHigh {
        iteration: u32,
        role: Role,
        model: String,
        /// The share of the window the prompt used, 0 to 1.
        used: f64,
    },
    /// A role's model failed and the next of its fallbacks takes over.
    Fallback(crate::roles::FallbackRecord),
    /// The project files the Librarian put in the iteration's prompt, nearest first.
    ContextGathered {
        iteration: u32,
        included: Vec<crate::workspace::ContextChoice>,
        /// Files near the target left out for the budget.
        excluded: u32,
        tokens: u32,
        budget: u32,
    },
    Warning {
        message: String,
    },
    /// The MemoryVault found attempts at similar failures for this iteration's Artisan.
    MemoryRecalled {
        iteration: u32,
        attempts: u32,
        /// How many of them worked.
        worked: u32,
        best_similarity: f32,
    },
    /// This iteration's attempt was recorded in the vault.
    MemoryRecorded {
        iteration: u32,
        success: bool,
    },
    SessionFinished {
        report: Box<Report>,
    },
}

/// Where actors send events. Cheap to clone; a closed receiver drops events silently, because a
/// printer that went away must not stop the run.
#[derive(Debug, Clone)]
pub struct EventSink(mpsc::UnboundedSender<Event>);

impl EventSink {
    pub fn channel() -> (Self, mpsc::UnboundedReceiver<Event>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (Self(tx), rx)
    }

    /// A sink nobody reads, for tests and embedders that want only the report.
    pub fn discard() -> Self {
        Self::channel().0
    }

    pub fn emit(&self, event: Event) {
        let _ = self.0.send(event);
    }
}
