//! The state of a session as its events tell it: what a view opened mid-run starts from, and
//! where the warnings and notes of a run are gathered for its report.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::events::event::{Envelope, Event, Phase};
use crate::role::Role;
use crate::schema::report::{FallbackRecord, Report, TestsSnapshot};

/// A fold of every event of a session up to `seq`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    pub session: String,
    /// The last event folded in (0: none yet).
    pub seq: u64,
    pub target: Option<String>,
    pub test_command: Option<String>,
    /// Each model role and the model it started on.
    pub models: Vec<(Role, String)>,
    pub max_cost_usd: f64,
    pub max_iterations: u32,
    /// The iteration under way (0 before the first: the baseline).
    pub iteration: u32,
    pub phase: Option<Phase>,
    /// Spent so far, as the last model call reported it.
    pub cost_usd: f64,
    /// Model calls finished.
    pub calls: u32,
    /// The baseline run and the last run.
    pub tests_before: Option<TestsSnapshot>,
    pub tests_last: Option<TestsSnapshot>,
    /// The Critic's last verdict: approved, and its first line of reasons.
    pub last_verdict: Option<(bool, String)>,
    /// Per role, the largest share of its model's context window a prompt used.
    pub context_use: BTreeMap<Role, f64>,
    pub fallbacks: Vec<FallbackRecord>,
    pub warnings: Vec<String>,
    pub notes: Vec<String>,
    /// Attempts the MemoryVault recalled and recorded.
    pub memory_recalled: u32,
    pub memory_recorded: u32,
    /// Chaos's findings a fix does not pass yet.
    pub adversarial_open: Vec<String>,
    /// The last mutation score (operational, percent) and the mutants still surviving.
    pub mutation: Option<(f64, u32)>,
    /// The most distinct values LocalGuard said one call carried masked, by kind.
    pub masked: BTreeMap<String, usize>,
    /// The final report, once the session has finished.
    pub report: Option<Box<Report>>,
    /// The user paused the run; it waits before its next step.
    #[serde(default)]
    pub paused: bool,
}

impl Snapshot {
    pub fn new(session: &str) -> Self {
        Self {
            session: session.to_string(),
            ..Self::default()
        }
    }

    /// Folds one more event in.
    pub fn apply(&mut self, envelope: &Envelope) {
        self.seq = envelope.seq;
        match &envelope.event {
            Event::SessionStarted {
                target,
                test_command,
                models,
                max_cost_usd,
                max_iterations,
                resumed_from_iteration,
                spent_usd,
                ..
            } => {
                self.cost_usd = *spent_usd;
                self.target = Some(target.clone());
                self.test_command = Some(test_command.clone());
                self.models = models.clone();
                self.max_cost_usd = *max_cost_usd;
                self.max_iterations = *max_iterations;
                self.iteration = *resumed_from_iteration;
            }
            Event::IterationStarted {
                iteration,
                max_iterations,
            } => {
                self.iteration = *iteration;
                self.max_iterations = *max_iterations;
            }
            Event::PhaseChanged { phase, .. } => self.phase = Some(*phase),
            Event::LlmCallFinished {
                role,
                total_cost_usd,
                context_used,
                ..
            } => {
                self.calls += 1;
                self.cost_usd = *total_cost_usd;
                if let Some(used) = context_used {
                    let peak = self.context_use.entry(*role).or_insert(0.0);
                    *peak = peak.max(*used);
                }
            }
            Event::CriticVerdict {
                approved, reasons, ..
            } => {
                let first = reasons.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
                self.last_verdict = Some((*approved, first.trim().to_string()));
            }
            Event::TestsFinished { tests, .. } => {
                if self.tests_before.is_none() {
                    self.tests_before = Some(tests.clone());
                }
                self.tests_last = Some(tests.clone());
            }
            Event::Fallback(record) => self.fallbacks.push(record.clone()),
            Event::Warning { message } => self.warnings.push(message.clone()),
            Event::Note { message } => self.notes.push(message.clone()),
            Event::MemoryRecalled { attempts, .. } => self.memory_recalled += attempts,
            Event::MemoryRecorded { .. } => self.memory_recorded += 1,
            Event::SessionFinished { report } => {
                self.cost_usd = report.cost_usd;
                self.report = Some(report.clone());
            }
            Event::ChaosJudged { kept, .. } => self.adversarial_open.extend(kept.iter().cloned()),
            Event::ChaosRecheck { open, .. } => self.adversarial_open = open.clone(),
            Event::ChaosMutation {
                score, surviving, ..
            } => self.mutation = Some((*score, *surviving)),
            Event::Masked { kinds, .. } => {
                for (kind, n) in kinds {
                    let most = self.masked.entry(kind.clone()).or_insert(0);
                    *most = (*most).max(*n);
                }
            }
            Event::ChaosSuite { .. }
            | Event::TestIntegrity { .. }
            | Event::ContextReset { .. }
            | Event::ContextHigh { .. }
            | Event::ContextGathered { .. }
            | Event::ProposalAmended { .. }
            | Event::SuccessVetoed { .. }
            | Event::LoopStarted { .. }
            | Event::AgentStarted { .. }
            | Event::AgentOutput { .. }
            | Event::AgentEnded { .. }
            | Event::Regent { .. }
            | Event::StatusRead { .. }
            | Event::ProgressMeasured { .. }
            | Event::BreakerChanged { .. }
            | Event::LoopFinished { .. }
            | Event::Thought { .. } => {}
            Event::Paused { .. } => self.paused = true,
            Event::Resumed { .. } => self.paused = false,
        }
    }
}
